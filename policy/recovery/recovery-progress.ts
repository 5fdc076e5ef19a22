/**
 * The level-triggered half of the recovery FSM: consuming buffered reports, the "listen schedule
 * result" poller (as a deadline plus pod/PodGroup observations instead of a 5 s poll), the waits for
 * the job to run again, the continuations that finish a wait inside a state, and reset.
 */
import {
  cmd,
  allFaults,
  cont,
  type Ctx,
  ev,
  expandedFaults,
  exitPods,
  faultPods,
  lingeringInPlaceRanks,
  originalOnly,
  planInPlace,
  rank0PodFaulty,
  releaseRetryHold,
  requestReplacement,
  pgRunning,
  platformMs,
  platformOn,
  RecoveryHandlerError,
  rescheduled,
  retryFaults,
  send,
  setInPlacePlan,
  timer,
  waitFor,
} from './recovery-facts.ts';
import { cancelTimer, cancelTimersExcept, makeUuid } from './recovery-kit.ts';
import { chooseStrategy, dumpFirst } from './recovery-choice.ts';
import {
  dedupeFaults,
  faultsAnnotation,
  onlyRetryFaults,
  PLATFORM_KEY,
  platformResult,
  platformStrategy,
  rankTableState,
} from './platform-mode.ts';
import {
  buildSignal,
  CHANGE_STRATEGY,
  EXTRA_PARAMS,
  FAULT_TYPE,
  SIGNAL_ACTION,
  SIGNAL_TYPE,
  podsOf,
  strList,
  toWire,
  type RankFault,
} from './recovery-signals.ts';
import { RACK_WAIT_MS, rackWaitStep } from './a5-recovery.ts';
import { RULE } from '../../vocabulary/rule-ids.ts';
import { idleRecoveryFields, type RecoveryContinuation, type RecoveryFsmEvent, type RecoveryState } from './recovery-types.ts';

type Step = (ctx: Ctx) => RecoveryFsmEvent | undefined;

/** ClusterD's listenScheduleResult sleeps 5 s between looks (constant.SleepSecondBeforeCheckPGRunning). */
export const SCHEDULE_POLL_MS = 5_000;

const STATUS_WAITS: readonly string[] = [
  'WaitReportStepRetryStatusState',
  'WaitReportProcessRecoverStatusState',
  'WaitReportDumpStatusState',
  'WaitReportScaleInIsolateRanksState',
  'WaitReportScaleInStatusState',
  'WaitReportScaleOutStatusState',
];

/** Takes the report this state waits for out of its one-slot buffer (docs/grpc.md#server-behaviour). */
export const consumeReport: Step = (ctx) => {
  const s = ctx.s;
  if (s.phase === 'WaitReportStopCompleteState' && s.reports.stopComplete !== null) {
    const { code } = s.reports.stopComplete;
    s.reports.stopComplete = null;
    return code === 404 ? 'processNotReadyEvent' : 'receiveReport';
  }
  if (s.phase === 'WaitReportRecoverStrategyState' && s.reports.recoverStrategy !== null) {
    s.agentStrategies = [...s.reports.recoverStrategy.strategies];
    s.reports.recoverStrategy = null;
    return 'receiveReport';
  }
  // Rescheduled: ClusterD sleeps (in place) and clears reset-config before it reads the report
  // (handleDecideRecoverStrategy); rescheduleCleared takes it then.
  const clearing = s.phase === 'WaitReportProcessRecoverStatusState' && (s.step === 'inPlaceClear' || s.step === 'clearing');
  if (STATUS_WAITS.includes(s.phase) && s.reports.recoverStatus !== null && !clearing) {
    s.lastStatus = s.reports.recoverStatus;
    s.reports.recoverStatus = null;
    return 'receiveReport';
  }
  return undefined;
};

/**
 * Starts the schedule wait (docs/rules.md#recover.fsm note under the table): only when recover or recover-in-place is
 * configured and no scale-in runs. `restart` re-arms an existing one.
 */
export function schedulePoll(ctx: Ctx, restart: boolean): void {
  const s = ctx.s;
  const wanted = s.config.strategies.includes('recover') || s.config.strategies.includes('recover-in-place');
  if (!wanted || s.scaleInRunning || (!restart && s.schedule !== 'idle')) return;
  s.schedule = 'pending';
  timer(ctx, 'schedule', s.config.waitRescheduleTimeoutS * 1000);
  pollSchedule(ctx);
}

/**
 * One look of ClusterD's listenScheduleResult poller: at its start, then every 5 s
 * (SleepSecondBeforeCheckPGRunning) until the fault pods are replaced and the PodGroup is Running.
 * Only these looks count, so the reset-config fault list stays up as long as ClusterD's does.
 */
export function pollSchedule(ctx: Ctx): void {
  if (ctx.s.schedule !== 'pending') return;
  if (rescheduled(ctx.s, exitPods(ctx.s))) {
    ctx.s.schedule = 'ok';
    cancelTimer(ctx, 'schedule');
    cancelTimer(ctx, 'schedulePoll');
    ctx.why.push('fault pods rescheduled and PodGroup Running');
  } else {
    timer(ctx, 'schedulePoll', SCHEDULE_POLL_MS);
  }
}

/**
 * Row 28's scale-in after a schedule timeout: elastic-training configured and the agent reported
 * downgrade, nothing else; ClusterD's handleDecideRecoverStrategy does not look at the rank-0 pod
 * here, unlike its strategy choice (docs/rules.md#recover.elastic-training).
 */
const canScaleIn = (s: RecoveryState): boolean =>
  s.config.strategies.includes('elastic-training') && (s.agentStrategies ?? []).includes('downgrade');

/** Row 20's select over the schedule result. */
export const scheduleProgress: Step = (ctx) => {
  const s = ctx.s;
  if (s.phase !== 'WaitReportProcessRecoverStatusState') return undefined;
  if (s.schedule === 'ok' && s.step === '') {
    if ((s.inPlace?.restartPods.length ?? 0) > 0) {
      s.step = 'inPlaceClear';
      timer(ctx, 'inPlaceClear', s.timings.inPlaceClearMs);
      return undefined;
    }
    return CONTINUATIONS.clearAfterReschedule(ctx);
  }
  if (s.schedule === 'timeout') return canScaleIn(s) ? 'needTryScaleStrategyInEvent' : 'scheduleTimeout';
  return undefined;
};

/**
 * FaultRetryState: the job runs -> label back to `on`. ClusterD looks at the job running only
 * (GetJobIsRunning in handleFaultRetry), not at the fault pods being replaced.
 */
const retryRunningCheck: Step = (ctx) => {
  const s = ctx.s;
  if (s.step !== 'waitRunning' || !pgRunning(s)) return undefined;
  s.step = 'enabling';
  cancelTimer(ctx, 'retryRunning');
  const id = cmd(ctx, { type: 'setPodGroupLabel', key: 'process-recover-enable', value: 'on' }, true);
  waitFor(ctx, [id], ev('finish'), ev('changeSwitchEnableError'));
  return undefined;
};

/** ScaleRunningState: PodGroup gone -> finish; replaced pods running -> scale out. */
export const scaleWatch: Step = (ctx) => {
  const s = ctx.s;
  if (!s.podGroup.exists) return 'finish';
  if (s.step !== 'watch' || !rescheduled(s, exitPods(s))) return undefined;
  s.step = 'upgrading';
  s.current = 'upgrade';
  // ClusterD's waitScaleOut: the fault ranks and their pods, as the downgrade.
  send(
    ctx,
    SIGNAL_TYPE.changeStrategy,
    {
      actions: [SIGNAL_ACTION.changeStrategy],
      changeStrategy: CHANGE_STRATEGY.upgrade,
      extraParams: EXTRA_PARAMS.scaleOut,
      faultRanks: toWire(expandedFaults(s)),
      nodeRankIds: strList(exitPods(s)),
    },
    { ok: ev('notifyScaleOutStrategySuccessEvent'), fail: ev('notifyFail') },
  );
  return undefined;
};

/** After a pod or PodGroup observation (or a new fault feed): advance whatever waits on them. */
export const observe: Step = (ctx) => {
  const s = ctx.s;
  switch (s.phase) {
    case 'WaitReportProcessRecoverStatusState':
      return scheduleProgress(ctx);
    case 'ListenScheduleResultState':
      return undefined; // only its 5 s looks count (listenLook)
    case 'FaultRetryState':
      return retryRunningCheck(ctx);
    case 'ScaleRunningState':
      return scaleWatch(ctx);
    case 'NotifyWaitFaultFlushingState':
      return s.step === 'platStrategy' ? platStrategyLook(ctx) : undefined;
    case 'NotifyDecidedStrategyState':
      return s.step === 'rankTable' ? rankTableLook(ctx) : undefined;
    case 'NotifyGlobalFaultState':
      if (s.step === 'platResult') return platResultLook(ctx);
      if (s.step === 'inPlaceCheck' && lingeringInPlaceRanks(s).length === 0) {
        cancelTimer(ctx, 'inPlaceCheck');
        ctx.why.push('recover-in-place: L2/L3 faults disappeared');
        return CONTINUATIONS.notifyGlobal(ctx);
      }
      return undefined;
    default:
      return undefined;
  }
};

const sendPreExit: Step = (ctx) => {
  const s = ctx.s;
  const ranks = s.preExitRanks;
  s.preExitRanks = [];
  cancelTimer(ctx, 'preExit');
  const pods = originalOnly(s, podsOf(ranks, s.config.ranksPerPod));
  if (pods.length === 0) {
    ctx.why.push('preExitProcess skipped: the fault pods are no longer the original pods');
    return undefined;
  }
  // Its own fresh event id (ClusterD: common.NewEventId per preExit signal); the recovery's uuid is
  // left alone (keep-alives and stopTrain carry that). TaskD acts on a preExit only when its uuid
  // differs from the last one it saw, which starts as "" (taskd prerecover.go).
  s.uuidSeq += 1;
  const uuid = makeUuid(ctx.now, s.config.jobId, s.uuidSeq);
  const faults = s.faults.filter((f) => ranks.includes(f.rankId));
  cmd(ctx, { type: 'sendSignal', signal: buildSignal(s.config.jobId, uuid, SIGNAL_TYPE.preExitProcess, { actions: [SIGNAL_ACTION.preExitProcess], faultRanks: toWire(faults), nodeRankIds: strList(pods) }) });
  return undefined;
};

/**
 * docs/rules.md#recover.rack-wait: an A5 job scheduled by rack (`ra-block`) waits for its PodGroup to
 * run again before the global fault is notified (else its fault information is incomplete).
 */
const rackWait: Step = (ctx) => {
  const s = ctx.s;
  const waitMs = s.timings.rackWaitMs ?? RACK_WAIT_MS;
  const d = rackWaitStep({ a5: s.config.a5 === true, rackBlock: s.config.rackBlock === true, podGroupRunning: s.podGroup.phase === 'Running', tries: s.rackWaitTries ?? 0, waitMs });
  if (d.wait) {
    s.rackWaitTries = d.tries;
    s.step = 'rackWait';
    ctx.why.push(`${d.reason} [${RULE.recover.rackWait}]`);
    timer(ctx, 'rackWait', waitMs);
    return undefined;
  }
  if (d.applies) ctx.why.push(`${d.reason} [${RULE.recover.rackWait}]`);
  return forceRelease(ctx);
};

/**
 * docs/rules.md#recover.force-release: the job's fault-job-info entry, then the wait for NodeD.
 * An A5 job has neither (docs/rules.md#recover.force-release-a5); the executor still logs and counts it.
 */
const forceRelease: Step = (ctx) => {
  const s = ctx.s;
  const podRanks = podsOf(expandedFaults(s).map((f) => f.rankId), s.config.ranksPerPod);
  if (s.config.a5 === true) {
    cmd(ctx, { type: 'publishFaultJobInfo', podRanks, a5: true });
    ctx.why.push(`A5 job: no SDID-based force release, no wait for NodeD [${RULE.recover.forceReleaseA5}]`);
    return afterForceRelease(ctx);
  }
  cmd(ctx, { type: 'publishFaultJobInfo', podRanks });
  if (s.timings.forceReleaseMs > 0) {
    s.step = 'forceRelease';
    timer(ctx, 'forceRelease', s.timings.forceReleaseMs);
    return undefined;
  }
  return afterForceRelease(ctx);
};

const afterForceRelease: Step = (ctx) => {
  const s = ctx.s;
  setInPlacePlan(ctx, planInPlace(s));
  if (s.inPlace !== null && lingeringInPlaceRanks(s).length > 0) {
    s.step = 'inPlaceCheck';
    timer(ctx, 'inPlaceCheck', s.timings.inPlaceCheckMs);
    return undefined;
  }
  return CONTINUATIONS.notifyGlobal(ctx);
};

const afterInPlaceCheck: Step = (ctx) => {
  const s = ctx.s;
  const lingering = lingeringInPlaceRanks(s);
  if (s.inPlace !== null && lingering.length > 0) {
    const stuck = podsOf(lingering, s.config.ranksPerPod);
    setInPlacePlan(ctx, {
      restartPods: s.inPlace.restartPods.filter((p) => !stuck.includes(p)),
      exitPods: [...new Set([...s.inPlace.exitPods, ...stuck])].sort((a, b) => a - b),
    });
    ctx.why.push(`recover-in-place: faults remain on pods ${stuck.join(',')}; they exit instead`);
  }
  return CONTINUATIONS.notifyGlobal(ctx);
};

/** Row 13, normal case, last part: (platform mode: the fault exchange first) then notifyGlobalSend. */
const notifyGlobal: Step = (ctx) => (platformOn(ctx.s) ? startPlatformExchange(ctx, allFaults(ctx.s), 'normal') : notifyGlobalSend(ctx));

/** Row 13, normal case: reset-config fault list + globalFault to the job. */
const notifyGlobalSend: Step = (ctx) => {
  const s = ctx.s;
  s.step = 'notify';
  const faults = expandedFaults(s);
  const restartFaultProcess = (s.inPlace?.restartPods.length ?? 0) > 0;
  const w = cmd(ctx, { type: 'writeResetConfig', op: 'fault', rankIds: faults.map((f) => f.rankId), restartFaultProcess }, true);
  requestReplacement(ctx, 'process-level recovery: fault pods exit');
  const sig = send(ctx, SIGNAL_TYPE.globalFault, {
    actions: [SIGNAL_ACTION.onGlobalRank, SIGNAL_ACTION.faultNodesExit],
    faultRanks: toWire(faults),
    nodeRankIds: strList(originalOnly(s, exitPods(s))),
  }, 'await');
  waitFor(ctx, [w, sig], ev('notifySuccess'), ev('notifyFail'));
  return undefined;
};

/** Sends the changeStrategy of `state.current` (row 17 and the HCCL-wait continuation). */
const sendDecided: Step = (ctx) => {
  const s = ctx.s;
  s.step = 'notify';
  const base = { actions: [SIGNAL_ACTION.changeStrategy] as string[], faultRanks: toWire(expandedFaults(s)) };
  const nodes = strList(originalOnly(s, exitPods(s)));
  const fail = ev('notifyFail');
  switch (s.current) {
    case 'retry':
      send(ctx, SIGNAL_TYPE.changeStrategy, {
        actions: base.actions,
        changeStrategy: CHANGE_STRATEGY.retry,
        faultRanks: toWire(retryFaults(s)),
        nodeRankIds: strList(originalOnly(s, faultPods(s))),
      }, { ok: ev('notifyRetryStrategySuccess'), fail });
      return undefined;
    case 'recover-in-place':
      send(ctx, SIGNAL_TYPE.changeStrategy, {
        ...base,
        actions: [SIGNAL_ACTION.changeStrategy, SIGNAL_ACTION.faultNodesRestart],
        changeStrategy: CHANGE_STRATEGY.recover,
        extraParams: EXTRA_PARAMS.recoverInPlace,
        nodeRankIds: strList(s.inPlace?.restartPods ?? []),
      }, { ok: ev('notifyRecoverStrategySuccess'), fail });
      return undefined;
    case 'recover':
      requestReplacement(ctx, 'strategy recover');
      send(ctx, SIGNAL_TYPE.changeStrategy, { ...base, changeStrategy: CHANGE_STRATEGY.recover, nodeRankIds: nodes },
        { ok: ev('notifyRecoverStrategySuccess'), fail });
      return undefined;
    case 'elastic-training':
      requestReplacement(ctx, 'strategy elastic-training (scale-in)');
      // Every fault pod, replaced or gone: ClusterD filters nodeRankIds for recover only (filterRecoverPodsNodeRankIds).
      send(ctx, SIGNAL_TYPE.changeStrategy, { ...base, changeStrategy: CHANGE_STRATEGY.downgrade, extraParams: EXTRA_PARAMS.scaleIn, nodeRankIds: strList(exitPods(s)) },
        { ok: ev('notifyScaleInStrategySuccessEvent'), fail });
      return undefined;
    case 'dump':
      requestReplacement(ctx, 'strategy dump');
      send(ctx, SIGNAL_TYPE.changeStrategy, { ...base, changeStrategy: CHANGE_STRATEGY.dump, nodeRankIds: nodes },
        { ok: ev('notifyDumpStrategySuccess'), fail });
      return undefined;
    default:
      requestReplacement(ctx, 'strategy exit');
      send(ctx, SIGNAL_TYPE.changeStrategy, { ...base, changeStrategy: CHANGE_STRATEGY.exit, nodeRankIds: nodes },
        { ok: ev('notifyExitStrategySuccess'), fail });
      return undefined;
  }
};

const clearAfterReschedule: Step = (ctx) => {
  ctx.s.step = 'clearing';
  const id = cmd(ctx, { type: 'writeResetConfig', op: 'clear' }, true);
  waitFor(ctx, [id], cont('rescheduleCleared'), ev('clearFail'));
  return undefined;
};

const rescheduleCleared: Step = (ctx) => {
  ctx.s.step = 'cleared';
  ctx.why.push('reset-config cleared after rescheduling; still waiting for the recover status');
  return consumeReport(ctx);
};

/**
 * Row 39 after the pause label is written: exit + dump_exit to the fault nodes (no fault ranks, as
 * ClusterD's sendDumpExit), escalate, wait 135 s for the job to run; the first look is 5 s later
 * (handleFaultRetry sleeps before each look), so the rescheduling the label starts can show first.
 */
const retryPaused: Step = (ctx) => {
  const s = ctx.s;
  s.step = RETRY_FIRST_LOOK;
  const pods = faultPods(s);
  send(ctx, SIGNAL_TYPE.changeStrategy, {
    actions: [SIGNAL_ACTION.changeStrategy],
    changeStrategy: CHANGE_STRATEGY.exit,
    extraParams: EXTRA_PARAMS.dumpExit,
    nodeRankIds: strList(pods), // the fault ranks' pod ranks, replaced or not (GetNodeRankIdsByRankIds)
  });
  const level = s.config.podRescheduling && !rank0PodFaulty(s) ? 'pod' : s.config.jobRescheduling ? 'job' : null;
  if (level === null) ctx.why.push('fault retry: neither pod- nor job-level rescheduling is configured');
  else cmd(ctx, { type: 'escalateRescheduling', level, podRanks: pods, reason: 'process-level recovery gave up' });
  timer(ctx, 'retryRunning', SCHEDULE_POLL_MS);
  return undefined;
};

const RETRY_FIRST_LOOK = 'retryFirstLook';

/**
 * One look of ListenScheduleResultState (the scheduleCheck timer, every 5 s): rescheduled -> success;
 * after the last look a job that still runs counts as scheduled too (handleListenScheduleResult).
 */
export function listenLook(ctx: Ctx): RecoveryFsmEvent | undefined {
  const s = ctx.s;
  const look = Number(s.step.startsWith('listen:') ? s.step.slice('listen:'.length) : '0');
  s.step = '';
  if (rescheduled(s, exitPods(s))) return 'scheduleSuccess';
  const every = Math.min(SCHEDULE_POLL_MS, s.timings.scheduleCheckMs);
  if (look * every < s.timings.scheduleCheckMs) {
    s.step = `listen:${look + 1}`;
    timer(ctx, 'scheduleCheck', every);
    return undefined;
  }
  return pgRunning(s) ? 'scheduleSuccess' : 'scheduleTimeout';
}

/** The retryRunning timer: the first look 5 s after the pause, else the 135 s are over. */
export function retryRunningDue(ctx: Ctx): RecoveryFsmEvent | undefined {
  const s = ctx.s;
  if (s.step !== RETRY_FIRST_LOOK) return 'scheduleTimeout';
  s.step = 'waitRunning';
  timer(ctx, 'retryRunning', s.timings.retryRunningMs - SCHEDULE_POLL_MS);
  return retryRunningCheck(ctx);
}

/** Row 13, retry path: globalFault with the retry ranks only. */
export const sendRetryGlobal: Step = (ctx) => {
  const s = ctx.s;
  const faults = retryFaults(s);
  const timeout = faults.some((f) => f.faultType === FAULT_TYPE.hccl) ? s.timings.hcclRetryTimeoutS : 0;
  send(ctx, SIGNAL_TYPE.globalFault, { actions: [SIGNAL_ACTION.onGlobalRank], faultRanks: toWire(faults), timeout }, { ok: ev('notifySuccess'), fail: ev('notifyFail') });
  return undefined;
};

/** Row 1 after the platform's strategy (platform mode): dump on fault, or reset-config FaultFlushing. */
export const flushingNotify: Step = (ctx) => {
  const s = ctx.s;
  s.step = '';
  const dumpHealth = s.jobHealth === 'UnHealthy' || (s.jobHealth === 'SubHealthy' && s.config.subHealthyStrategy === 'graceExit');
  // onlySupportDumpStrategy: in platform mode the platform must have chosen dump (and dump be configured).
  const dump = platformOn(s) ? s.platStrategy === 'dump' && s.config.strategies.includes('dump') : dumpFirst(s.config.strategies);
  if (dump && dumpHealth) return 'dumpForFault';
  const id = cmd(ctx, { type: 'writeResetConfig', op: 'notifyFaultFlushing' }, true);
  waitFor(ctx, [id], ev('notifyFinish'), ev('notifyFail'));
  return undefined;
};

// ---- AI platform mode (docs/rules.md#recover.platform-mode) ----

/** NotifyWaitFaultFlushingState: one look at ProcessRecoverStrategy (WaitPlatFormStrategyReady; exit not accepted). */
export const platStrategyLook: Step = (ctx) => {
  const s = ctx.s;
  const r = platformStrategy(s.platformView, false);
  if (!r.ok) {
    ctx.why.push(`platform: waiting for its strategy (${r.why})`);
    return undefined;
  }
  cancelTimer(ctx, 'platform');
  s.platStrategy = r.value;
  ctx.why.push(`platform: strategy ${r.value}`);
  return flushingNotify(ctx);
};

/**
 * NotifyGlobalFaultState: write ProcessConfirmFault (UpdateProcessConfirmFault), refused while the platform
 * has not cleared the previous one; then wait for ProcessResultFault.
 */
export function startPlatformExchange(ctx: Ctx, faults: readonly RankFault[], path: 'retry' | 'normal'): RecoveryFsmEvent | undefined {
  const s = ctx.s;
  s.step = 'platConfirm';
  const prev = s.platformView?.confirm ?? '';
  if (prev.length > 0) {
    ctx.why.push(`platform: did not clear the previous ${PLATFORM_KEY.confirm} (${JSON.stringify(prev.slice(0, 64))}); not written`);
    return 'writeConfirmFaultOrWaitResultFaultTimeout';
  }
  const written = dedupeFaults(faults);
  s.platExchange = { written, path };
  const id = cmd(ctx, { type: 'setPodGroupAnnotations', annotations: { [PLATFORM_KEY.confirm]: faultsAnnotation(written) } }, true);
  waitFor(ctx, [id], cont('platConfirmWritten'), ev('writeConfirmFaultOrWaitResultFaultTimeout'));
  return undefined;
}

const platConfirmWritten: Step = (ctx) => {
  ctx.s.step = 'platResult';
  timer(ctx, 'platform', platformMs(ctx.s));
  return platResultLook(ctx);
};

/**
 * NotifyGlobalFaultState: one look at ProcessResultFault (WaitProcessResultFault). Answered: merge the
 * faults, confirm the strategy (exit allowed) and send the global fault.
 */
export const platResultLook: Step = (ctx) => {
  const s = ctx.s;
  const x = s.platExchange;
  if (x === null || x === undefined) return undefined;
  const r = platformResult(s.platformView);
  if (!r.answered) return undefined;
  cancelTimer(ctx, 'platform');
  if (r.bad.length > 0) ctx.why.push(`platform: malformed fault items ignored: ${r.bad.slice(0, 5).map((b) => JSON.stringify(b)).join(', ')}`);
  const all = dedupeFaults([...x.written, ...r.faults]);
  const st = platformStrategy(s.platformView, true);
  if (!st.ok) {
    ctx.why.push(`platform: strategy not confirmed (${st.why})`);
    return 'writeConfirmFaultOrWaitResultFaultTimeout';
  }
  s.platStrategy = st.value;
  s.platExchange = null;
  ctx.why.push(`platform: merged faults ${faultsAnnotation(all) || '(none)'}, strategy ${st.value}`);
  if (x.path === 'retry' && onlyRetryFaults(all)) {
    s.step = '';
    return sendRetryGlobal(ctx); // the retry ranks as cached (notifyFaultForRetryFaultCasePlatFormMode)
  }
  if (x.path === 'retry') {
    // docs/rules.md#recover.platform-mode: the platform added normal faults to a retry case; we go on as a
    // normal global fault with the merged faults (ClusterD's own cache holds no normal fault there).
    releaseRetryHold(ctx);
    s.retryPath = false;
  }
  s.faults = all.map((f) => {
    const had = s.faults.find((c) => c.rankId === f.rankId);
    return { ...f, software: had?.software ?? false, restartInPlace: had?.restartInPlace ?? false };
  });
  return notifyGlobalSend(ctx);
};

/** NotifyDecidedStrategyState, recover chosen: one look at RankTableReady (WaitRankTableReady). */
export const rankTableLook: Step = (ctx) => {
  const s = ctx.s;
  const st = rankTableState(s.platformView);
  if (st === 'wait') return undefined;
  cancelTimer(ctx, 'platform');
  s.step = '';
  if (st === 'ready') {
    ctx.why.push('platform: rank table ready');
    return CONTINUATIONS.sendDecided(ctx);
  }
  ctx.why.push(`platform: ${PLATFORM_KEY.rankTableReady}=${JSON.stringify((s.platformView?.rankTableReady ?? '').slice(0, 64))}: rank table failed`);
  return rankTableFailed(ctx);
};

/**
 * RankTableReady failed or timed out: read the platform's strategy again (exit allowed; unreadable: a
 * handler error, the job resets) and fall back as after a failed recover (chooseForRecoverFail: dump, exit).
 */
export const rankTableFailed: Step = (ctx) => {
  const s = ctx.s;
  s.step = '';
  const st = platformStrategy(s.platformView, true);
  if (!st.ok) throw new RecoveryHandlerError(`flush platform strategy failed: ${st.why}`);
  s.platStrategy = st.value;
  const choice = chooseStrategy({
    after: 'recover-failed', configured: s.config.strategies, agent: s.agentStrategies ?? [], retryPath: false, hasNormalFaults: true,
    canRestartInPlace: false, rank0PodFaulty: false, scaleIn: 'blocked', platform: st.value,
  });
  ctx.why.push(`platform: rank table not ready, ${choice.reason}`);
  s.current = choice.strategy;
  return CONTINUATIONS.sendDecided(ctx);
};

export const CONTINUATIONS: Readonly<Record<Exclude<RecoveryContinuation, 'chooseAgain' | 'omSendFailed'>, Step>> = {
  sendPreExit,
  rackWait,
  afterForceRelease,
  afterInPlaceCheck,
  notifyGlobal,
  sendDecided,
  clearAfterReschedule,
  rescheduleCleared,
  retryPaused,
  platConfirmWritten,
};

/**
 * ClusterD `reset` (docs/rules.md#recover.fsm mechanics): clear reset-config, cancel everything in flight, forget cached
 * faults/strategies, re-read the original pod UIDs, back to INIT. `closeStream` ends the client's
 * stream (OK) when the reset was not caused by the stream itself. The fault feed memory is kept so
 * that faults still present do not count as new.
 */
export function resetRecovery(ctx: Ctx, closeStream: boolean, why: string): void {
  const s = ctx.s;
  cancelTimersExcept(ctx, []);
  s.awaiting = null;
  releaseRetryHold(ctx);
  // A stress test cut short: its nodes' stress-test codes are shown again (ClusterD's deferred filter removal).
  if (s.phase === 'WaitStressTestFinishedState' && (s.step === 'stressTest' || s.step === 'stressTestFault')) {
    cmd(ctx, { type: 'setStressTestFilter', nodes: Object.keys(s.om?.stress ?? {}).sort(), on: false });
  }
  cmd(ctx, { type: 'writeResetConfig', op: 'clear' });
  if (closeStream) cmd(ctx, { type: 'closeSignalStream' });
  cmd(ctx, { type: 'endOmStreams' });
  Object.assign(s, {
    phase: 'INIT',
    step: '',
    uuid: '', // ClusterD's reset: keep-alives until the next stopTrain carry ""
    ...idleRecoveryFields(),
    originalPodUids: Object.fromEntries(s.pods.map((p) => [String(p.podRank), p.uid])),
  } satisfies Partial<RecoveryState>);
  ctx.why.push(`reset (${why})`);
}

