/**
 * Process-level recovery FSM, one instance per registered job (docs/rules.md#recover.fsm, #recover.register to #recover.force-release).
 *
 *   step(state, event, nowMs) -> { state, commands, reasons, accepted }
 *
 * A pure transition function: no I/O, no clock, no timers. Timers live in `state.timers` as
 * `{id, dueAtMs}` and come back as `{type:'timerFired', id}` (runFsm$ in recovery-driver.ts does
 * that on a SchedulerLike; a reconciler can use nextTimerDue() as its requeueAfter).
 *
 * Wiring (controllers/recovery.controller.ts):
 * - feed `faultObserved` every fault-pipeline cycle with the job's full current fault-rank view,
 *   `processFaultReported` / `stopCompleteReported` / `recoverStrategyReported` /
 *   `recoverStatusReported` from the gRPC Recover service, `clientSubscribed` / `streamClosed` from
 *   the signal stream, `podsObserved` / `podGroupObserved` from the informers (full snapshots),
 *   `configChanged` when the PodGroup knobs change;
 * - execute every command in order; for each command with `awaitResult: true` feed back
 *   `{type:'effectResult', commandId, ok}` (a signal counts as failed after its 3 tries);
 * - send a keep-alive (keepAliveSignal(state)) every 5 s on the stream: it is transport, not state.
 * - route hot-switch reports to hot-switch-fsm.ts while that FSM is busy, and start a hot switch
 *   only while this FSM is idle (recoveryIdle).
 */
import { chooseAgain, HANDLERS, RecoveryHandlerError } from './recovery-handlers.ts';
import { cancelTimer, cancelTimersExcept, newCtx, result, settle, takeTimer, type StepResult } from './recovery-kit.ts';
import { CONTINUATIONS, consumeReport, observe, listenLook, pollSchedule, rankTableFailed, resetRecovery, retryRunningDue } from './recovery-progress.ts';
import { RECOVERY_RULES } from './recovery-rules.ts';
import { consumeOmReport, isOmPhase, OM_CONTINUATIONS, omNotified, omReportTimeout } from './om-handlers.ts';
import { cmd, timer, type Ctx } from './recovery-facts.ts';
import type { ProcessManageSignal } from '../../vocabulary/process-manage-signal.ts';
import { RULE } from '../../vocabulary/rule-ids.ts';
import { RACK_WAIT_MS } from './a5-recovery.ts';
import { buildSignal, fromWire, isRetryType, podsOf, SIGNAL_TYPE } from './recovery-signals.ts';
import {
  RECOVERY_TIMER,
  idleRecoveryFields,
  type PodObservation,
  type RecoveryCommand,
  type RecoveryCommandBody,
  type RecoveryEvent,
  type RecoveryFsmEvent,
  type RecoveryJobConfig,
  type RecoveryNext,
  type RecoveryState,
  type RecoveryTimings,
} from './recovery-types.ts';

/** docs/rules.md#timing.clusterd. */
export const DEFAULT_RECOVERY_TIMINGS: Readonly<RecoveryTimings> = {
  reportMs: 15 * 60_000,
  flushMs: 1_000,
  preExitWaitMs: 10_000,
  rackWaitMs: RACK_WAIT_MS,
  forceReleaseMs: 10_000,
  inPlaceCheckMs: 15_000,
  hcclConvergeMs: 3_000,
  hcclRetryTimeoutS: 33,
  scaleInWaitMs: 20_000,
  inPlaceClearMs: 5_000,
  scheduleCheckMs: 20_000,
  restartAllMs: 60_000,
  retryRunningMs: 135_000,
  processControlMs: 300_000,
};

export interface RecoveryInit {
  readonly config: RecoveryJobConfig;
  readonly timings?: Partial<RecoveryTimings>;
  readonly pods?: readonly PodObservation[];
  readonly podGroup?: { readonly exists: boolean; readonly phase: string };
}

/** The state at Register: INIT, the current pods taken as the original pods. */
export function initialRecoveryState(init: RecoveryInit): RecoveryState {
  const pods = (init.pods ?? []).map((p) => ({ ...p }));
  return {
    kind: 'recovery',
    version: 1,
    config: { ...init.config, strategies: [...init.config.strategies] },
    timings: { ...DEFAULT_RECOVERY_TIMINGS, ...init.timings },
    phase: 'INIT',
    step: '',
    uuid: '',
    uuidSeq: 0,
    nextCommandId: 1,
    awaiting: null,
    timers: [],
    pods,
    podGroup: { exists: init.podGroup?.exists ?? true, phase: init.podGroup?.phase ?? 'Running' },
    originalPodUids: Object.fromEntries(pods.map((p) => [String(p.podRank), p.uid])),
    jobHealth: 'Healthy',
    lastFeed: [],
    mustExitAtMs: {},
    ...idleRecoveryFields(),
  };
}

export const recoveryIdle = (s: RecoveryState): boolean => s.phase === 'INIT';

/** The 5 s keep-alive carries only the current uuid and the jobId (docs/grpc.md#recover-vocabulary). */
export const keepAliveSignal = (s: RecoveryState): ProcessManageSignal => buildSignal(s.config.jobId, s.uuid, SIGNAL_TYPE.keepAlive);

/** Timers that outlive a state change: the schedule poller (rows 14-20) and the preExit wait. */
const CROSS_STATE_TIMERS = [RECOVERY_TIMER.schedule, RECOVERY_TIMER.schedulePoll, RECOVERY_TIMER.preExit];
const MAX_CHAIN = 64;

/** Runs an FSM event or continuation and whatever they chain to. False if the first event was refused. */
function run(ctx: Ctx, first: RecoveryNext): boolean {
  let next: RecoveryNext | undefined = first;
  let chained = 0;
  while (next !== undefined) {
    if (++chained > MAX_CHAIN) throw new RecoveryHandlerError('event chain too long (queue full)');
    let out: RecoveryFsmEvent | undefined;
    if ('cont' in next) {
      out = next.cont === 'chooseAgain' ? chooseAgain(ctx) : next.cont === 'omSendFailed' ? OM_CONTINUATIONS.omSendFailed(ctx) : CONTINUATIONS[next.cont](ctx);
    } else {
      const from = ctx.s.phase;
      const rule = RECOVERY_RULES[from]?.[next.ev];
      if (rule === undefined) {
        ctx.why.push(`refused ${next.ev} in ${from} (order mixed)`);
        return chained > 1;
      }
      cancelTimersExcept(ctx, CROSS_STATE_TIMERS);
      ctx.s.awaiting = null;
      ctx.s.step = '';
      ctx.s.phase = rule.to;
      ctx.why.push(`${from} -(${next.ev})-> ${rule.to} [${RULE.recover.fsm} #${rule.row}]`);
      out = HANDLERS[rule.run](ctx);
    }
    next = out === undefined ? undefined : { ev: out };
  }
  return true;
}

const runIf = (ctx: Ctx, out: RecoveryFsmEvent | undefined): boolean => (out === undefined ? true : run(ctx, { ev: out }));

/** docs/rules.md#recover.hardware-entry: the hardware fault entry. */
function onFeed(ctx: Ctx, e: Extract<RecoveryEvent, { type: 'faultObserved' }>): boolean {
  const s = ctx.s;
  s.jobHealth = e.jobHealth;
  let ranks = e.ranks.filter((r) => r.nodeNotReadyOnly !== true).map((r) => ({ ...r }));
  if (e.jobHealth === 'SubHealthy') {
    const dumpGrace = s.config.subHealthyStrategy === 'graceExit' && s.config.strategies[0] === 'dump';
    if (!dumpGrace) {
      s.lastFeed = ranks;
      ctx.why.push(s.config.subHealthyStrategy === 'hotSwitch' ? 'sub-healthy hotSwitch job: left to the hot-switch FSM' : 'sub-healthy job ignored');
      return true;
    }
  } else {
    ranks = ranks.filter((r) => r.subHealth !== true);
  }
  const fresh = ranks.filter((r) => !s.lastFeed.some((o) => o.rankId === r.rankId && o.faultType === r.faultType));
  s.lastFeed = ranks;
  runIf(ctx, observe(ctx));
  // ClusterD's saveCacheFault: every rank of every fault-center tick joins the cache, new or not, and
  // stays until the next reset. A rank seen after a reset (a step-retried rank whose business-plane
  // report is still fresh, a fault not yet recovered) is part of the next recovery's fault ranks
  // even though only new ranks start one.
  for (const f of ranks) {
    const i = s.faults.findIndex((c) => c.rankId === f.rankId);
    const entry = { rankId: f.rankId, faultType: f.faultType, software: false, restartInPlace: f.restartInPlace === true };
    if (i < 0) s.faults.push(entry);
    else if (isRetryType(s.faults[i]!.faultType) && !isRetryType(f.faultType)) s.faults[i] = entry;
  }
  if (fresh.length === 0) return true;
  ctx.why.push(`new faults: ${fresh.map((f) => `${f.rankId}:${f.faultType}`).join(',')}`);
  const retryOnly = fresh.every((f) => isRetryType(f.faultType)) && s.config.strategies.includes('retry');
  if (retryOnly) {
    if (s.phase === 'INIT' || s.phase === 'ScaleRunningState') return run(ctx, { ev: 'faultOccur' });
    ctx.why.push('retry faults cached for the recovery in flight');
    return true;
  }
  s.preExitRanks = [...new Set([...s.preExitRanks, ...fresh.map((f) => f.rankId)])].sort((a, b) => a - b);
  if (s.phase === 'INIT') {
    if (!s.timers.some((t) => t.id === RECOVERY_TIMER.preExit)) {
      timer(ctx, RECOVERY_TIMER.preExit, s.timings.preExitWaitMs);
      ctx.why.push('normal fault: preExitProcess once the FSM leaves INIT, at most 10 s from now');
    }
    return true;
  }
  run(ctx, { cont: 'sendPreExit' });
  return s.phase === 'ScaleRunningState' ? run(ctx, { ev: 'faultOccur' }) : true;
}

/** docs/rules.md#recover.software-entry: the software fault entry (ReportProcessFault). */
function onProcessFault(ctx: Ctx, e: Extract<RecoveryEvent, { type: 'processFaultReported' }>): boolean {
  const s = ctx.s;
  const faults = fromWire(e.faultRanks);
  if (faults.length === 0) return false;
  const normal = faults.filter((f) => !isRetryType(f.faultType));
  const retryPods = podsOf(faults.filter((f) => isRetryType(f.faultType)).map((f) => f.rankId), s.config.ranksPerPod);
  const normalPods = podsOf(normal.map((f) => f.rankId), s.config.ranksPerPod);
  // ClusterD labels a pod only once per recovery: a pod already in the job's fault set (its device
  // fault came first, or it was labelled before) is not labelled again (labelPodFault's labeledMap).
  const known = new Set(podsOf(s.faults.map((f) => f.rankId), s.config.ranksPerPod));
  const onlyRetryPods = retryPods.filter((p) => !normalPods.includes(p) && !known.has(p));
  if (onlyRetryPods.length > 0) cmd(ctx, { type: 'labelPods', podRanks: onlyRetryPods, key: 'fault-type', value: 'retry-fault' });
  if (normal.length === 0) {
    cmd(ctx, { type: 'forwardRetryFaults', faults });
    ctx.why.push('retry-only process fault: fed back to the fault center');
    return true;
  }
  const unlabelled = normalPods.filter((p) => !known.has(p));
  if (unlabelled.length > 0) cmd(ctx, { type: 'labelPods', podRanks: unlabelled, key: 'fault-type', value: 'software' });
  for (const f of faults) {
    const i = s.faults.findIndex((c) => c.rankId === f.rankId);
    const entry = { rankId: f.rankId, faultType: f.faultType, software: true, restartInPlace: false };
    if (i < 0) s.faults.push(entry);
    else if (isRetryType(s.faults[i]!.faultType) && !isRetryType(f.faultType)) s.faults[i] = entry;
  }
  s.jobHealth = 'UnHealthy';
  return run(ctx, { ev: 'faultOccur' });
}

function buffer<K extends keyof RecoveryState['reports']>(ctx: Ctx, kind: K, value: NonNullable<RecoveryState['reports'][K]>): boolean {
  if ((ctx.s.reports[kind] ?? null) !== null) {
    ctx.why.push(`${kind} report dropped: an earlier one is still queued`);
    return false;
  }
  ctx.s.reports[kind] = value;
  return runIf(ctx, consumeReport(ctx) ?? consumeOmReport(ctx));
}

/** docs/rules.md#recover.stress-test, #recover.switch-nic: StressTest / SwitchNicTrack, only from INIT (else 411). */
function onOmStart(ctx: Ctx, e: Extract<RecoveryEvent, { type: 'omStarted' }>): boolean {
  const s = ctx.s;
  if (s.phase !== 'INIT') {
    ctx.why.push(`${e.om.kind} refused in ${s.phase}: an operation or a recovery runs`);
    return false;
  }
  s.om = { ...structuredClone(e.om), isolateNodes: [], notified: false };
  return run(ctx, { ev: e.om.kind === 'stressTest' ? 'startStressTest' : 'startSwitchNic' });
}

function onTimer(ctx: Ctx, id: string): boolean {
  const s = ctx.s;
  if (!takeTimer(s, id)) {
    ctx.why.push(`stale timer ${id}`);
    return false;
  }
  const T = RECOVERY_TIMER;
  switch (id) {
    case T.report:
      if (isOmPhase(s.phase)) omReportTimeout(ctx);
      return run(ctx, { ev: 'receiveTimeout' });
    case T.flush: return run(ctx, { ev: 'flushFinished' });
    case T.preExit: return run(ctx, { cont: 'sendPreExit' });
    case T.rackWait: return run(ctx, { cont: 'rackWait' });
    case T.forceRelease: return run(ctx, { cont: 'afterForceRelease' });
    case T.inPlaceCheck: return run(ctx, { cont: 'afterInPlaceCheck' });
    case T.hcclWait: return run(ctx, { cont: 'sendDecided' });
    case T.scaleInWait: return run(ctx, { cont: 'chooseAgain' });
    case T.inPlaceClear: return run(ctx, { cont: 'clearAfterReschedule' });
    case T.scheduleCheck: return runIf(ctx, listenLook(ctx));
    case T.restartAll: return run(ctx, { ev: 'restartFinish' });
    case T.retryRunning: return runIf(ctx, retryRunningDue(ctx));
    case T.platform:
      // ClusterD's ProcessControlTimeout for the platform wait of this state (docs/rules.md#recover.platform-mode).
      ctx.why.push(`platform: no answer within ${s.timings.processControlMs ?? 300_000} ms`);
      if (s.phase === 'NotifyWaitFaultFlushingState') return run(ctx, { ev: 'waitPlatStrategyTimeout' });
      if (s.phase === 'NotifyGlobalFaultState') return run(ctx, { ev: 'writeConfirmFaultOrWaitResultFaultTimeout' });
      if (s.phase === 'NotifyDecidedStrategyState') return runIf(ctx, rankTableFailed(ctx));
      return false;
    case T.schedulePoll:
      pollSchedule(ctx);
      return runIf(ctx, observe(ctx));
    case T.schedule:
      if (s.schedule === 'pending') {
        cancelTimer(ctx, T.schedulePoll);
        s.schedule = 'timeout';
        ctx.why.push(`fault pods not rescheduled within ${s.config.waitRescheduleTimeoutS} s`);
      }
      return runIf(ctx, observe(ctx));
    default:
      return false;
  }
}

function dispatch(ctx: Ctx, e: RecoveryEvent): boolean {
  const s = ctx.s;
  switch (e.type) {
    case 'faultObserved':
      return onFeed(ctx, e);
    case 'processFaultReported':
      return onProcessFault(ctx, e);
    case 'clientSubscribed':
      if (e.resumed === true) {
        ctx.why.push(`client subscribed again after a restore: ${s.phase} goes on [${RULE.recover.resume}]`);
        return true;
      }
      resetRecovery(ctx, false, 'client subscribed');
      return true;
    case 'streamClosed':
      resetRecovery(ctx, false, 'signal stream closed');
      return true;
    case 'stopCompleteReported':
      return buffer(ctx, 'stopComplete', { code: e.code });
    case 'recoverStrategyReported':
      return buffer(ctx, 'recoverStrategy', { strategies: [...e.strategies] });
    case 'recoverStatusReported': {
      const isolateRankIds = (e.isolateRankIds ?? []).filter((r) => /^\d{1,9}$/.test(r)).map(Number);
      return buffer(ctx, 'recoverStatus', { code: e.code, strategy: e.strategy, isolateRankIds });
    }
    case 'podsObserved':
      s.pods = e.pods.map((p) => ({ ...p }));
      for (const p of s.pods) s.originalPodUids[String(p.podRank)] ??= p.uid;
      return runIf(ctx, observe(ctx));
    case 'podGroupObserved':
      s.podGroup = { exists: e.exists, phase: e.phase };
      if (e.platform !== undefined) s.platformView = { ...e.platform };
      return runIf(ctx, observe(ctx));
    case 'configChanged':
      s.config = { ...s.config, ...e.config };
      return true;
    case 'omStarted':
      return onOmStart(ctx, e);
    case 'omNotified': {
      const out = omNotified(ctx, e.ok);
      return out === 'refused' ? false : runIf(ctx, out);
    }
    case 'stressTestResultReported':
      return buffer(ctx, 'stressResult', structuredClone(e.result) as Record<string, Record<string, { code: string; result: string }>>);
    case 'switchNicResultReported':
      return buffer(ctx, 'switchResult', e.result);
    case 'effectResult': {
      const settled = settle(s, e);
      if (settled === undefined) return false;
      if (settled === 'pending') return true;
      if (settled.next === null) throw new RecoveryHandlerError(`command ${e.commandId} failed${e.error ? `: ${e.error}` : ''}`);
      return run(ctx, settled.next);
    }
    case 'timerFired':
      return onTimer(ctx, e.id);
  }
}

/** Runs `body`; a handler error resets the controller, as in ClusterD (docs/rules.md#recover.fsm mechanics). */
function guarded(state: RecoveryState, nowMs: number, body: (ctx: Ctx) => boolean): StepResult<RecoveryState, RecoveryCommand> {
  const ctx = newCtx<RecoveryState, RecoveryCommandBody>(state, nowMs);
  let accepted: boolean;
  try {
    accepted = body(ctx);
  } catch (err) {
    if (!(err instanceof RecoveryHandlerError)) throw err;
    ctx.why.push(`handler error: ${err.message}`);
    resetRecovery(ctx, true, 'handler error');
    accepted = true;
  }
  return result(ctx, accepted);
}

/** The docs/rules.md#recover.fsm transition function. */
export function step(state: RecoveryState, event: RecoveryEvent, nowMs: number): StepResult<RecoveryState, RecoveryCommand> {
  return guarded(state, nowMs, (ctx) => dispatch(ctx, event));
}

/**
 * Fires one docs/rules.md#recover.fsm FSM event directly, as ClusterD's `Trigger` does (no translation from inputs). For
 * transition-table tests and tools; controllers feed RecoveryEvents through step().
 */
export function trigger(state: RecoveryState, event: RecoveryFsmEvent, nowMs: number): StepResult<RecoveryState, RecoveryCommand> {
  return guarded(state, nowMs, (ctx) => run(ctx, { ev: event }));
}

export const recoveryStep = step;
export { nextTimerDue } from './recovery-kit.ts';
