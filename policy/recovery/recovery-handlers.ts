/**
 * Handlers of the docs/rules.md#recover.fsm rules (docs/rules.md#recover.fsm, #recover.hardware-entry to #recover.force-release). A handler runs right after its rule moved
 * the FSM into the destination state; it emits commands, may wait for their results, start timers,
 * and returns the next FSM event (or undefined to wait for input). See recovery-rules.ts.
 */
import { chooseStrategy, type ScaleInGate } from './recovery-choice.ts';
import {
  annotateStatus,
  cmd,
  cont,
  convertRetryFaults,
  type Ctx,
  ev,
  expandedFaults,
  exitPods,
  faultPods,
  hasNormalFaults,
  platformOn,
  platformMs,
  rank0PodFaulty,
  RecoveryHandlerError,
  releaseRetryHold,
  requestReplacement,
  rescheduled,
  retryFaults,
  send,
  timer,
  waitFor,
} from './recovery-facts.ts';
import { makeUuid } from './recovery-kit.ts';
import { OM_HANDLERS } from './om-handlers.ts';
import {
  consumeReport,
  CONTINUATIONS,
  flushingNotify,
  platStrategyLook,
  rankTableLook,
  resetRecovery,
  scaleWatch,
  SCHEDULE_POLL_MS,
  schedulePoll,
  scheduleProgress,
  sendRetryGlobal,
  startPlatformExchange,
} from './recovery-progress.ts';
import type { RecoveryHandler } from './recovery-rules.ts';
import {
  CHANGE_STRATEGY,
  EXTRA_PARAMS,
  FAULT_TYPE,
  REPORT_CODE,
  SIGNAL_ACTION,
  SIGNAL_TYPE,
  podsOf,
  strList,
  toWire,
} from './recovery-signals.ts';
import type { RecoveryFsmEvent, RecoveryState } from './recovery-types.ts';

export { RecoveryHandlerError };

type Handler = (ctx: Ctx) => RecoveryFsmEvent | undefined;

export function newUuid(ctx: Ctx): void {
  ctx.s.uuidSeq += 1;
  ctx.s.uuid = makeUuid(ctx.now, ctx.s.config.jobId, ctx.s.uuidSeq);
}

const notify = { ok: ev('notifySuccess'), fail: ev('notifyFail') };

/** Row 1. */
const faultOccur: Handler = (ctx) => {
  const s = ctx.s;
  if (s.preExitRanks.length > 0) CONTINUATIONS.sendPreExit(ctx);
  s.retryPath = !hasNormalFaults(s) && s.config.strategies.includes('retry');
  if (s.retryPath) {
    const held = retryFaults(s).map((f) => f.rankId);
    cmd(ctx, { type: 'setStepRetryHold', rankIds: held, hold: true });
    s.retryHeld = held;
    ctx.why.push(`step retry: ranks ${held.join(',')} held back from rescheduling`);
  }
  if (platformOn(s)) {
    // docs/rules.md#recover.platform-mode: wait for the platform's strategy first (WaitPlatFormStrategyReady).
    s.step = 'platStrategy';
    timer(ctx, 'platform', platformMs(s));
    return platStrategyLook(ctx);
  }
  return flushingNotify(ctx);
};

/** Rows 2 and 51: new uuid, stopTrain with all cached faults. */
const stopTrain: Handler = (ctx) => {
  newUuid(ctx);
  send(ctx, SIGNAL_TYPE.stopTrain, { actions: [SIGNAL_ACTION.stopTrain], faultRanks: toWire(ctx.s.faults) }, notify);
  return undefined;
};

/** Row 4 (docs/rules.md#recover.dump): fault list to reset-config, saveAndExit to the fault pods. */
const dumpForFault: Handler = (ctx) => {
  const s = ctx.s;
  newUuid(ctx);
  s.current = 'dump';
  const faults = expandedFaults(s);
  const w = cmd(ctx, { type: 'writeResetConfig', op: 'fault', rankIds: faults.map((f) => f.rankId), restartFaultProcess: false }, true);
  requestReplacement(ctx, 'dump on fault');
  // The fault ranks' pod ranks, replaced or not (GetNodeRankIdsByRankIds, pkg/domain/common/utils.go).
  const nodeRankIds = strList(faultPods(s));
  // No fault ranks: ClusterD's saveAndExit names the fault pods only (handleNotifyElagantDump).
  const sig = send(ctx, SIGNAL_TYPE.saveAndExit, { actions: [SIGNAL_ACTION.saveAndExit], nodeRankIds }, 'await');
  waitFor(ctx, [w, sig], notify.ok, notify.fail);
  return undefined;
};

/** Rows 5, 12, 15, 40, 42 (docs/rules.md#recover.kill-job): killMaster; once sent (or not) the controller resets. */
const killJob: Handler = (ctx) => {
  send(ctx, SIGNAL_TYPE.killMaster, {}, { ok: ev('finish'), fail: ev('finish') });
  return undefined;
};

/** Wait for the report of this state (15 min); a report that came early is consumed at once. */
const waitReport: Handler = (ctx) => {
  timer(ctx, 'report', ctx.s.timings.reportMs);
  return consumeReport(ctx);
};

const clearConfig: Handler = (ctx) => {
  const id = cmd(ctx, { type: 'writeResetConfig', op: 'clear' }, true);
  waitFor(ctx, [id], ev('clearSuccess'), ev('clearFail'));
  return undefined;
};

/** Row 10: 1 s for faults to settle, skipped on the retry-only path. */
const flushWait: Handler = (ctx) => {
  const s = ctx.s;
  // Platform mode: retry faults stay retry faults only when the platform chose retry (takeRetryFault2NormalFault).
  if (platformOn(s) && s.retryPath && s.platStrategy !== 'retry') convertRetryFaults(ctx, `platform strategy '${s.platStrategy ?? ''}' is not retry`);
  if (s.retryPath) return 'flushFinished';
  timer(ctx, 'flush', ctx.s.timings.flushMs);
  return undefined;
};

/** Row 13. Retry path: globalFault with the retry ranks only. Normal path: A5 rack wait, force release, in-place check, notify. */
const globalFault: Handler = (ctx) => {
  const s = ctx.s;
  if (s.retryPath) return platformOn(s) ? startPlatformExchange(ctx, retryFaults(s), 'retry') : sendRetryGlobal(ctx);
  s.rackWaitTries = 0;
  return CONTINUATIONS.rackWait(ctx);
};

/** Row 14: start the "listen schedule result" poller, wait for ReportRecoverStrategy. */
const waitStrategy: Handler = (ctx) => {
  schedulePoll(ctx, true);
  return waitReport(ctx);
};

function scaleInGate(s: RecoveryState): ScaleInGate {
  if (!s.config.jobRescheduling && !s.config.podRescheduling) return 'allowed';
  if (!s.scaleInWaitDone) return 'wait';
  return rescheduled(s, exitPods(s)) ? 'blocked' : 'allowed';
}

/** Rows 17, 31, 34, 46, 47: choose (docs/rules.md#recover.strategy-choice) and send changeStrategy. */
const decide: Handler = (ctx) => {
  const s = ctx.s;
  // ClusterD's chooseStrategy goes by the last status report received in this recovery
  // (latestRecoverResult), not by the strategy sent: after a scale-in's report timeout (row 46) there
  // may be none, and the choice is the first one again (docs/grpc.md#fsm-timeouts).
  const c = s.lastStatus?.strategy ?? '';
  const after = c === '' ? 'first' : c === 'retry' ? 'retry-failed' : c === 'recover' || c === 'downgrade' || c === 'upgrade' ? 'recover-failed' : 'other-failed';
  const choice = chooseStrategy({
    after,
    configured: s.config.strategies,
    agent: s.agentStrategies ?? [],
    retryPath: s.retryPath,
    hasNormalFaults: hasNormalFaults(s),
    canRestartInPlace: (s.inPlace?.restartPods.length ?? 0) > 0,
    rank0PodFaulty: rank0PodFaulty(s),
    scaleIn: scaleInGate(s),
    ...(platformOn(s) ? { platform: s.platStrategy ?? '' } : {}),
  });
  ctx.why.push(choice.reason);
  if (choice.convertRetryFaults) convertRetryFaults(ctx, 'agent did not report retry');
  if (choice.waitForScaleIn) {
    s.step = 'scaleInWait';
    timer(ctx, 'scaleInWait', s.timings.scaleInWaitMs);
    return undefined;
  }
  s.current = choice.strategy;
  if (platformOn(s) && choice.strategy === 'recover') {
    // docs/rules.md#recover.platform-mode: recover waits for RankTableReady (WaitRankTableReady).
    s.step = 'rankTable';
    timer(ctx, 'platform', platformMs(s));
    return rankTableLook(ctx);
  }
  if (choice.strategy === 'retry' && retryFaults(s).some((f) => f.faultType === FAULT_TYPE.hccl)) {
    s.step = 'hcclWait';
    timer(ctx, 'hcclWait', s.timings.hcclConvergeMs);
    return undefined;
  }
  return CONTINUATIONS.sendDecided(ctx);
};

/** Row 20: wait for the recover status while consuming the schedule result (a result already there first, as ClusterD's poller posted it earlier). */
const waitRecoverStatus: Handler = (ctx) => {
  timer(ctx, 'report', ctx.s.timings.reportMs);
  if (ctx.s.schedule === 'idle') schedulePoll(ctx, false);
  return scheduleProgress(ctx) ?? consumeReport(ctx);
};

/** Rows 22, 26, 28, 44, 48, 52 -> row 29: evaluate the result. */
const evaluate: Handler = (ctx) => {
  const s = ctx.s;
  // Row 22: ClusterD's handleDecideExitStrategy goes on at once, no status report read and no
  // ProcessRecoverStatus written; exit-completed is only for a status report naming exit.
  if (s.current === 'exit') return 'checkFinish';
  const st = s.lastStatus;
  if (st === null) throw new RecoveryHandlerError('no status report to evaluate');
  const ok = st.code === REPORT_CODE.ok;
  switch (st.strategy) {
    case CHANGE_STRATEGY.retry:
      if (ok) {
        annotateStatus(ctx, 'retry-success');
        releaseRetryHold(ctx, true);
        return 'recoverSuccess';
      }
      annotateStatus(ctx, 'retry-failed');
      if (st.code === REPORT_CODE.recoverableRetryError) return 'recoverableRetryError';
      if (st.code !== REPORT_CODE.unRecoverableRetryError) {
        // Not the "retry cannot work, the processes are fine" answer: the agent cannot recover either.
        const drop = st.code === REPORT_CODE.clientError ? ['recover', 'dump'] : ['recover'];
        s.agentStrategies = (s.agentStrategies ?? []).filter((a) => !drop.includes(a));
        ctx.why.push(`retry answer ${st.code}: agent strategies without ${drop.join(', ')}`);
      }
      return 'unRecoverableRetryError';
    case CHANGE_STRATEGY.recover:
      if (ok) {
        cmd(ctx, { type: 'clearFaultJobInfo' });
        annotateStatus(ctx, 'recover-success');
        return 'recoverSuccess';
      }
      annotateStatus(ctx, 'recover-failed');
      return 'recoverFail';
    case CHANGE_STRATEGY.dump: {
      annotateStatus(ctx, ok ? 'dump-success' : 'dump-failed');
      const nodeRankIds = strList(exitPods(s)); // as saveAndExit's: replaced or not
      send(ctx, SIGNAL_TYPE.changeStrategy, {
        actions: [SIGNAL_ACTION.changeStrategy],
        changeStrategy: CHANGE_STRATEGY.exit,
        extraParams: EXTRA_PARAMS.dumpExit,
        nodeRankIds, // no fault ranks, as ClusterD's sendDumpExit
      });
      return 'checkFinish';
    }
    case CHANGE_STRATEGY.exit:
      annotateStatus(ctx, 'exit-completed');
      return 'checkFinish';
    case CHANGE_STRATEGY.downgrade:
      return ok ? 'scaleInSuccessEvent' : 'recoverFail';
    case CHANGE_STRATEGY.upgrade:
      return ok ? 'scaleOutSuccessEvent' : 'recoverFail';
    default:
      throw new RecoveryHandlerError(`status report names unknown strategy '${st.strategy}'`);
  }
};

/** Row 32: recoverable retry error: retry faults become normal, global fault again. */
const retryToNormal: Handler = (ctx) => {
  convertRetryFaults(ctx, 'recoverable retry error (405)');
  ctx.s.current = '';
  return flushWait(ctx);
};

/** Row 33: unrecoverable retry error: fault list to reset-config (fault pods exit) -> choose again. */
const killPods: Handler = (ctx) => {
  const s = ctx.s;
  convertRetryFaults(ctx, 'unrecoverable retry error');
  s.inPlace = null;
  const id = cmd(ctx, { type: 'writeResetConfig', op: 'fault', rankIds: expandedFaults(s).map((f) => f.rankId), restartFaultProcess: false }, true);
  requestReplacement(ctx, 'unrecoverable retry error');
  // The pods are only now being replaced: give the schedule wait its full budget from here.
  schedulePoll(ctx, true);
  waitFor(ctx, [id], ev('finishKillPod'), null);
  return undefined;
};

/**
 * Row 35: after exit/dump, 4 x 5 s for the job to run again with the fault pods replaced; ClusterD
 * sleeps before each look (handleListenScheduleResult), so the first is 5 s in (listenLook).
 */
const listenSchedule: Handler = (ctx) => {
  if (platformOn(ctx.s)) {
    ctx.why.push('platform mode: the platform does not reschedule pods, schedule taken as done');
    return 'scheduleSuccess';
  }
  ctx.s.step = 'listen:1';
  timer(ctx, 'scheduleCheck', Math.min(SCHEDULE_POLL_MS, ctx.s.timings.scheduleCheckMs));
  return undefined;
};

/** Row 36: reset-config RetryTime+1 (agents restart all processes). */
const restartAll: Handler = (ctx) => {
  const id = cmd(ctx, { type: 'writeResetConfig', op: 'restartAllProcess' }, true);
  waitFor(ctx, [id], notify.ok, notify.fail);
  return undefined;
};

const waitRestartAll: Handler = (ctx) => {
  if (platformOn(ctx.s)) return 'restartFinish'; // handleWaitRestartAllProcess: no wait in platform mode
  timer(ctx, 'restartAll', ctx.s.timings.restartAllMs);
  return undefined;
};

/** Row 39 (docs/rules.md#recover.fault-retry): label pause first; the rest runs once the label is written (retryPaused). */
const faultRetry: Handler = (ctx) => {
  releaseRetryHold(ctx); // the scheduler must see the faults again
  ctx.s.step = 'pausing';
  const id = cmd(ctx, { type: 'setPodGroupLabel', key: 'process-recover-enable', value: 'pause' }, true);
  waitFor(ctx, [id], cont('retryPaused'), ev('changeSwitchPauseError'));
  return undefined;
};

/** Rows 30, 41, 43, 49, 51: reset; the client re-subscribes. */
const finish: Handler = (ctx) => {
  resetRecovery(ctx, true, 'finished');
  return undefined;
};

/** Row 28 -> 45: schedule timed out and elastic training is possible: scale in. */
const scaleIn: Handler = (ctx) => {
  ctx.s.current = 'elastic-training';
  requestReplacement(ctx, 'scale-in');
  send(
    ctx,
    SIGNAL_TYPE.changeStrategy,
    {
      actions: [SIGNAL_ACTION.changeStrategy],
      changeStrategy: CHANGE_STRATEGY.downgrade,
      extraParams: EXTRA_PARAMS.scaleIn,
      faultRanks: toWire(expandedFaults(ctx.s)),
      // Every fault pod, replaced or gone (handleNotifyScaleInStrategy filters none).
      nodeRankIds: strList(exitPods(ctx.s)),
    },
    { ok: ev('notifyScaleInStrategySuccessEvent'), fail: ev('notifyFail') },
  );
  return undefined;
};

/**
 * Row 46: 201 + isolateRankIds -> faultNodesExit, no fault ranks, to the isolated ranks' pods that
 * are not fault pods already (handleCheckScaleStrategyRecoverResult, RemoveDuplicateNodeRanks);
 * 0 parks the job until the next reset, any other code is a failed scale-in.
 */
const checkIsolate: Handler = (ctx) => {
  const s = ctx.s;
  const st = s.lastStatus;
  if (st !== null && st.code === REPORT_CODE.exitIsolateRanks) {
    const known = faultPods(s);
    send(
      ctx,
      SIGNAL_TYPE.faultNodesExit,
      {
        actions: [SIGNAL_ACTION.faultNodesExit],
        nodeRankIds: strList(podsOf(st.isolateRankIds, s.config.ranksPerPod).filter((p) => !known.includes(p))),
      },
      { ok: ev('notifyFaultNodesExitSuccessEvent'), fail: ev('notifyFail') },
    );
    return undefined;
  }
  if (st !== null && st.code === REPORT_CODE.ok) {
    // ClusterD's handler returns ScaleInSuccessEvent here, which this state has no rule for: addEvent
    // drops it and the job stays put until the next reset (docs/rules.md#recover.elastic-training).
    ctx.why.push('scale-in answered 0 before any ranks to isolate: no rule for it in this state, the job waits for the next reset');
    return undefined;
  }
  return 'recoverFail';
};

/** Rows 49, 51: scaled in; wait for the replaced pods, then scale out. */
const scaleRunning: Handler = (ctx) => {
  ctx.s.scaleInRunning = true;
  ctx.s.step = 'watch';
  return scaleWatch(ctx);
};

/** scaleInWait timer: the reschedule wait before a scale-in decision has elapsed; choose again. */
export const chooseAgain: Handler = (ctx) => {
  ctx.s.scaleInWaitDone = true;
  return decide(ctx);
};

export const HANDLERS: Readonly<Record<RecoveryHandler, Handler>> = {
  faultOccur,
  stopTrain,
  dumpForFault,
  killJob,
  waitReport,
  clearConfig,
  flushWait,
  globalFault,
  waitStrategy,
  decide,
  waitRecoverStatus,
  evaluate,
  retryToNormal,
  killPods,
  listenSchedule,
  restartAll,
  waitRestartAll,
  faultRetry,
  finish,
  scaleIn,
  checkIsolate,
  scaleRunning,
  ...OM_HANDLERS,
};
