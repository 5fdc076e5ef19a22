/**
 * Hot-switch FSM for `subHealthyStrategy=hotSwitch` jobs (docs/rules.md#hotswitch.fsm, #hotswitch.entry, #hotswitch.failure):
 * backup pod first, pause training, delete only the old pod, resume. Pure: step(state, event, nowMs).
 *
 * Wiring: feed `subHealthFault` each cycle the job is SubHealthy (with `recoveryIdle` from the
 * recovery FSM: ClusterD runs both on one controller and only starts from INIT), `podsObserved`
 * (the job's pods including backups, with annotations), and while this FSM is not idle route
 * ReportRecoverStrategy / ReportRecoverStatus here instead of to the recovery FSM. Feed
 * `effectResult` for commands with awaitResult, `timerFired` for due timers.
 *
 * Decisions beyond ClusterD (docs/rules.md#hotswitch.failure and judgement):
 * - every failure path emits `persistDowngrade` (ClusterD keeps the downgrade in memory only);
 * - a guard timer (15 min) on WaitOldPodDeletedState, which ClusterD leaves unbounded: stop job;
 * - a stream reset mid-flow rolls the annotations back (before the old pod is gone) instead of
 *   leaving them behind, without downgrading.
 * Following the spec over the seed: a backup pod that never runs (1 min) ends in stop switch +
 * cleanup + downgrade, not job-level rescheduling (docs/rules.md#hotswitch.fsm table).
 */
import { awaitAll, cancelTimersExcept, emit, newCtx, result, settle, startTimer, takeTimer, type StepCtx, type StepResult } from './recovery-kit.ts';
import { buildSignal, CHANGE_STRATEGY, SIGNAL_ACTION, SIGNAL_TYPE, toWire, type SignalParts } from './recovery-signals.ts';
import { RULE } from '../../vocabulary/rule-ids.ts';
import {
  HOT_SWITCH_ANNOTATION as A,
  HOT_SWITCH_TIMER,
  type FaultyPod,
  type HotSwitchCommand,
  type HotSwitchCommandBody,
  type HotSwitchConfig,
  type HotSwitchEvent,
  type HotSwitchFsmEvent,
  type HotSwitchNext,
  type HotSwitchPhase,
  type HotSwitchPod,
  type HotSwitchState,
  type HotSwitchTimings,
} from './hot-switch-types.ts';

export * from './hot-switch-types.ts';

export const DEFAULT_HOT_SWITCH_TIMINGS: Readonly<HotSwitchTimings> = { newPodRunningMs: 60_000, reportMs: 15 * 60_000, oldPodDeleteMs: 15 * 60_000 };

export function initialHotSwitchState(config: Partial<HotSwitchConfig> & { jobId: string }, opts: { timings?: Partial<HotSwitchTimings>; downgraded?: boolean } = {}): HotSwitchState {
  return {
    kind: 'hotSwitch',
    version: 1,
    config: { framework: 'pytorch', subHealthyStrategy: 'hotSwitch', holdsReschedulingRole: false, maxFaultPods: 10, ...config },
    timings: { ...DEFAULT_HOT_SWITCH_TIMINGS, ...opts.timings },
    phase: 'INIT',
    downgraded: opts.downgraded ?? false,
    faultPod: null,
    backupPodName: '',
    uuid: '',
    uuidSeq: 0,
    nextCommandId: 1,
    awaiting: null,
    timers: [],
    pods: [],
    reports: { pause: null, restart: null },
  };
}

export const hotSwitchIdle = (s: HotSwitchState): boolean => s.phase === 'INIT';

type Ctx = StepCtx<HotSwitchState, HotSwitchCommandBody>;
type Handler = (ctx: Ctx) => HotSwitchFsmEvent | undefined;
type Cleanup = 'cleanupFailure' | 'cleanupSuccess';
type HandlerName = 'prepare' | 'annotateForBackup' | 'newPodRunning' | 'stopSwitch' | 'waitPause' | 'stopJob' | 'deleteOldPod' | 'migrate' | 'waitRestart' | Cleanup;

const cmd = (ctx: Ctx, body: HotSwitchCommandBody, wait = false): number => emit(ctx, body, wait);
const notify: { ok: HotSwitchNext; fail: HotSwitchNext } = { ok: { ev: 'notifySuccess' }, fail: { ev: 'notifyFail' } };

/**
 * One hot-switch signal as ClusterD sends it (component/clusterd/pkg/application/recover/hot_switch_controller.go):
 * the uuid is the controller's, empty outside a recovery (its reset clears it and the hot switch sets
 * none); only the first signal names fault ranks (every rank of the fault pod), none names node ranks.
 */
function send(ctx: Ctx, parts: SignalParts & { signalType?: 'hot-switch' | 'changeStrategy'; withRanks?: boolean }, next: { ok: HotSwitchFsmEvent; fail: HotSwitchFsmEvent }): void {
  const { signalType = SIGNAL_TYPE.hotSwitch, withRanks = false, ...rest } = parts;
  const fp = ctx.s.faultPod;
  const signal = buildSignal(ctx.s.config.jobId, ctx.s.uuid, signalType, {
    faultRanks: withRanks ? toWire((fp?.rankIds ?? []).map((rankId) => ({ rankId, faultType: '1' as const }))) : [],
    nodeRankIds: [],
    ...rest,
  });
  awaitAll(ctx, [cmd(ctx, { type: 'sendSignal', signal }, true)], { ev: next.ok }, { ev: next.fail });
}

const podNamed = (s: HotSwitchState, name: string): HotSwitchPod | undefined => s.pods.find((p) => p.name === name);

function backupPod(s: HotSwitchState): HotSwitchPod | undefined {
  const src = s.faultPod?.podName;
  if (src === undefined) return undefined;
  return s.pods.find((p) => p.annotations[A.podType] === 'backup' && p.annotations[A.backupSourcePodName] === src)
    ?? (s.backupPodName ? podNamed(s, s.backupPodName) : undefined);
}

const oldPodGone = (s: HotSwitchState): boolean => {
  const p = s.faultPod === null ? undefined : podNamed(s, s.faultPod.podName);
  return p === undefined || p.uid !== s.faultPod?.uid;
};

function downgrade(ctx: Ctx, reason: string): void {
  if (!ctx.s.downgraded) cmd(ctx, { type: 'persistDowngrade', subHealthyStrategy: 'ignore', reason });
  ctx.s.downgraded = true;
  ctx.why.push(`hot switch downgraded to ignore: ${reason}`);
}

/** ClusterD's reset(false) after a hot switch, failed or done: reset-config cleared, the client's stream ended (it registers again). */
function reset(ctx: Ctx, why: string): void {
  cancelTimersExcept(ctx, []);
  cmd(ctx, { type: 'writeResetConfig', op: 'clear' });
  cmd(ctx, { type: 'closeSignalStream' });
  Object.assign(ctx.s, { phase: 'INIT', awaiting: null, faultPod: null, backupPodName: '', reports: { pause: null, restart: null } } satisfies Partial<HotSwitchState>);
  ctx.why.push(`reset (${why})`);
}

/** docs/formats.md#pod-contract rollback: backup pod `needOperatorOpe=delete`, markers off the old pod. */
function rollback(ctx: Ctx): void {
  const s = ctx.s;
  const backup = backupPod(s);
  if (s.faultPod !== null && !oldPodGone(s)) {
    cmd(ctx, { type: 'annotatePod', podName: s.faultPod.podName, set: {}, remove: [A.inHotSwitchFlow, A.backupNewPodName, A.needOperatorOpe] });
  }
  if (backup !== undefined) cmd(ctx, { type: 'annotatePod', podName: backup.name, set: { [A.needOperatorOpe]: 'delete' }, remove: [] });
}

const H: Readonly<Record<HandlerName, Handler>> = {
  prepare: (ctx) => {
    ctx.s.uuid = '';
    send(ctx, { actions: [SIGNAL_ACTION.hotSwitch], withRanks: true }, { ok: 'notifySuccess', fail: 'notifyFail' });
    return undefined;
  },
  annotateForBackup: (ctx) => {
    cmd(ctx, { type: 'annotatePod', podName: ctx.s.faultPod!.podName, set: { [A.inHotSwitchFlow]: 'true', [A.needOperatorOpe]: 'create' }, remove: [] });
    startTimer(ctx, HOT_SWITCH_TIMER.newPod, ctx.s.timings.newPodRunningMs);
    return progress(ctx);
  },
  newPodRunning: (ctx) => {
    send(ctx, { actions: [SIGNAL_ACTION.newPodRunning] }, { ok: 'notifySuccess', fail: 'notifyFail' });
    return undefined;
  },
  stopSwitch: (ctx) => {
    send(ctx, { actions: [SIGNAL_ACTION.stopSwitch] }, { ok: 'notifySuccess', fail: 'notifyFail' });
    return undefined;
  },
  waitPause: (ctx) => {
    startTimer(ctx, HOT_SWITCH_TIMER.report, ctx.s.timings.reportMs);
    return consume(ctx);
  },
  /**
   * docs/rules.md#hotswitch.stop-job: rank-0 pod `fault-type=SubHealth` + `needVolcanoOpe=delete`, no
   * signal; the rescheduler restarts the whole job. Holding Volcano's role, the job decisions are that
   * rescheduler: they read the same marks (so the restart is a new decision, not the hand-off again).
   */
  stopJob: (ctx) => {
    const s = ctx.s;
    const rank0 = s.pods.find((p) => p.podRank === 0 && p.annotations[A.podType] !== 'backup');
    ctx.why.push(`${RULE.hotswitch.stopJob}: ${rank0 === undefined ? 'no rank-0 pod' : `mark ${rank0.name} for deletion`}`);
    const ids: number[] = [];
    if (rank0 !== undefined) {
      cmd(ctx, { type: 'labelPod', podName: rank0.name, key: 'fault-type', value: 'SubHealth' });
      ids.push(cmd(ctx, { type: 'annotatePod', podName: rank0.name, set: { [A.needVolcanoOpe]: 'delete' }, remove: [] }, true));
    }
    if (s.config.holdsReschedulingRole || rank0 === undefined) ids.push(cmd(ctx, { type: 'escalateRescheduling', level: 'job', reason: 'hot switch failed' }, true));
    awaitAll(ctx, ids, notify.ok, notify.fail);
    return undefined;
  },
  /** MigrationEvent: only the old pod goes. */
  deleteOldPod: (ctx) => {
    const s = ctx.s;
    const fp = s.faultPod!;
    cmd(ctx, { type: 'labelPod', podName: fp.podName, key: 'fault-type', value: 'SubHealth' });
    if (s.config.holdsReschedulingRole) cmd(ctx, { type: 'deletePod', podName: fp.podName, uid: fp.uid, reason: 'hot switch: backup pod took over' });
    else cmd(ctx, { type: 'annotatePod', podName: fp.podName, set: { [A.needVolcanoOpe]: 'delete' }, remove: [] });
    startTimer(ctx, HOT_SWITCH_TIMER.oldPodDeleted, s.timings.oldPodDeleteMs);
    return progress(ctx);
  },
  migrate: (ctx) => {
    send(ctx, { signalType: SIGNAL_TYPE.changeStrategy, actions: [SIGNAL_ACTION.changeStrategy], changeStrategy: CHANGE_STRATEGY.migration }, { ok: 'notifySuccess', fail: 'notifyFail' });
    return undefined;
  },
  waitRestart: (ctx) => {
    startTimer(ctx, HOT_SWITCH_TIMER.report, ctx.s.timings.reportMs);
    return consume(ctx);
  },
  cleanupFailure: (ctx) => {
    downgrade(ctx, 'hot switch failed');
    rollback(ctx);
    reset(ctx, 'hot switch failed');
    return undefined;
  },
  cleanupSuccess: (ctx) => {
    const backup = backupPod(ctx.s);
    if (backup !== undefined) cmd(ctx, { type: 'annotatePod', podName: backup.name, set: {}, remove: [A.inHotSwitchFlow] });
    reset(ctx, 'hot switch done');
    return undefined;
  },
};

const r = (to: HotSwitchPhase, run: HandlerName) => ({ to, run });
export const HOT_SWITCH_RULES: Readonly<Partial<Record<HotSwitchPhase, Partial<Record<HotSwitchFsmEvent, { to: HotSwitchPhase; run: HandlerName }>>>>> = {
  INIT: { BeginHotSwitchEvent: r('notifyPrepareHotSwitchState', 'prepare') },
  notifyPrepareHotSwitchState: { notifySuccess: r('WaitNewPodState', 'annotateForBackup'), notifyFail: r('INIT', 'cleanupFailure') },
  WaitNewPodState: { NewPodRunningEvent: r('WaitNotifyPodRunningResultState', 'newPodRunning'), NewPodTimeoutEvent: r('WaitNotifyPodFailedResultState', 'stopSwitch') },
  WaitNotifyPodFailedResultState: { notifySuccess: r('INIT', 'cleanupFailure'), notifyFail: r('INIT', 'cleanupFailure') },
  WaitNotifyPodRunningResultState: { notifySuccess: r('WaitReportPauseResultState', 'waitPause'), notifyFail: r('WaitReportPauseResultState', 'waitPause') },
  WaitReportPauseResultState: {
    receiveTimeout: r('NotifyStopJobState', 'stopJob'),
    ExitEvent: r('NotifyStopJobState', 'stopJob'),
    MigrationEvent: r('WaitOldPodDeletedState', 'deleteOldPod'),
  },
  NotifyStopJobState: { notifySuccess: r('INIT', 'cleanupFailure'), notifyFail: r('INIT', 'cleanupFailure') },
  WaitOldPodDeletedState: { OldPodDeletedEvent: r('WaitNotifyRestartTrainResultState', 'migrate'), receiveTimeout: r('NotifyStopJobState', 'stopJob') },
  WaitNotifyRestartTrainResultState: { notifySuccess: r('WaitReportRestartTrainResultState', 'waitRestart'), notifyFail: r('NotifyStopJobState', 'stopJob') },
  WaitReportRestartTrainResultState: {
    RestartSuccessEvent: r('INIT', 'cleanupSuccess'),
    RestartFaildEvent: r('NotifyStopJobState', 'stopJob'),
    receiveTimeout: r('NotifyStopJobState', 'stopJob'),
  },
};

function consume(ctx: Ctx): HotSwitchFsmEvent | undefined {
  const s = ctx.s;
  if (s.phase === 'WaitReportPauseResultState' && s.reports.pause !== null) {
    const list = s.reports.pause;
    s.reports.pause = null;
    return list.length === 0 || list.every((x) => x === 'exit') ? 'ExitEvent' : 'MigrationEvent';
  }
  if (s.phase === 'WaitReportRestartTrainResultState' && s.reports.restart !== null) {
    const { code } = s.reports.restart;
    s.reports.restart = null;
    return code === 0 ? 'RestartSuccessEvent' : 'RestartFaildEvent';
  }
  return undefined;
}

function progress(ctx: Ctx): HotSwitchFsmEvent | undefined {
  const s = ctx.s;
  if (s.phase === 'WaitNewPodState') {
    const backup = backupPod(s);
    if (backup !== undefined) s.backupPodName = backup.name;
    return backup?.phase === 'Running' ? 'NewPodRunningEvent' : undefined;
  }
  if (s.phase === 'WaitOldPodDeletedState' && oldPodGone(s)) return 'OldPodDeletedEvent';
  return undefined;
}

function run(ctx: Ctx, first: HotSwitchFsmEvent | undefined): boolean {
  let next = first;
  let n = 0;
  while (next !== undefined) {
    const from = ctx.s.phase;
    const rule = HOT_SWITCH_RULES[from]?.[next];
    if (rule === undefined || ++n > 32) {
      ctx.why.push(`refused ${next} in ${from} (order mixed)`);
      return n > 1;
    }
    cancelTimersExcept(ctx, []);
    ctx.s.awaiting = null;
    ctx.s.phase = rule.to;
    ctx.why.push(`${from} -(${next})-> ${rule.to} [B2]`);
    next = H[rule.run](ctx);
  }
  return true;
}

/** docs/rules.md#hotswitch.entry entry: which pod, or why not. */
function begin(ctx: Ctx, faultyPods: readonly FaultyPod[], recoveryIdle: boolean): boolean {
  const s = ctx.s;
  if (s.phase !== 'INIT' || !recoveryIdle) return false;
  if (s.downgraded || s.config.subHealthyStrategy !== 'hotSwitch') {
    ctx.why.push('hot switch not enabled for this job');
    return false;
  }
  if (!['pytorch', 'mindspore'].includes(s.config.framework.toLowerCase())) {
    downgrade(ctx, `framework '${s.config.framework}' cannot hot switch`);
    return true;
  }
  const distinct = new Set(faultyPods.map((p) => p.podName));
  if (distinct.size > s.config.maxFaultPods) {
    downgrade(ctx, `${distinct.size} faulty pods (more than ${s.config.maxFaultPods})`);
    return true;
  }
  const candidates = faultyPods.filter((p) => p.podRank !== 0).sort((a, b) => a.podRank - b.podRank);
  if (candidates.length === 0) {
    if (faultyPods.length > 0) ctx.why.push('sub-health fault on the rank-0 pod: hot switch refused');
    return faultyPods.length === 0;
  }
  const pick = candidates[0]!;
  const pod = podNamed(s, pick.podName);
  if (pod === undefined) {
    ctx.why.push(`faulty pod ${pick.podName} not observed yet`);
    return false;
  }
  s.faultPod = { ...pick, rankIds: [...pick.rankIds], uid: pod.uid };
  ctx.why.push(`hot switch pod ${pick.podName} (rank ${pick.podRank})`);
  return run(ctx, 'BeginHotSwitchEvent');
}

function dispatch(ctx: Ctx, e: HotSwitchEvent): boolean {
  const s = ctx.s;
  switch (e.type) {
    case 'subHealthFault':
      return begin(ctx, e.faultyPods, e.recoveryIdle);
    case 'podsObserved':
      s.pods = e.pods.map((p) => ({ ...p, annotations: { ...p.annotations } }));
      return run(ctx, progress(ctx));
    case 'recoverStrategyReported':
      if (s.phase === 'INIT' || s.reports.pause !== null) return false;
      s.reports.pause = [...e.strategies];
      return run(ctx, consume(ctx));
    case 'recoverStatusReported':
      if (s.phase === 'INIT' || s.reports.restart !== null) return false;
      s.reports.restart = { code: e.code, strategy: e.strategy };
      return run(ctx, consume(ctx));
    case 'clientSubscribed':
    case 'streamClosed':
      if (s.phase === 'INIT') return true;
      if (e.type === 'clientSubscribed' && e.resumed === true) {
        ctx.why.push(`client subscribed again after a restore: ${s.phase} goes on [${RULE.recover.resume}]`);
        return true;
      }
      if (oldPodGone(s)) {
        const backup = backupPod(s);
        if (backup !== undefined) cmd(ctx, { type: 'annotatePod', podName: backup.name, set: {}, remove: [A.inHotSwitchFlow] });
      } else rollback(ctx);
      reset(ctx, e.type);
      return true;
    case 'configChanged':
      s.config = { ...s.config, ...e.config };
      return true;
    case 'effectResult': {
      const settled = settle(s, e);
      if (settled === undefined) return false;
      if (settled === 'pending') return true;
      return run(ctx, settled.next?.ev);
    }
    case 'timerFired':
      if (!takeTimer(s, e.id)) return false;
      if (e.id === HOT_SWITCH_TIMER.newPod) return run(ctx, 'NewPodTimeoutEvent');
      return run(ctx, 'receiveTimeout');
  }
}

export function hotSwitchStep(state: HotSwitchState, event: HotSwitchEvent, nowMs: number): StepResult<HotSwitchState, HotSwitchCommand> {
  const ctx: Ctx = newCtx(state, nowMs);
  const accepted = dispatch(ctx, event);
  return result(ctx, accepted);
}

/** Fires one docs/rules.md#hotswitch.fsm event directly (ClusterD Trigger): for transition-table tests and tools. */
export function hotSwitchTrigger(state: HotSwitchState, event: HotSwitchFsmEvent, nowMs: number): StepResult<HotSwitchState, HotSwitchCommand> {
  const ctx: Ctx = newCtx(state, nowMs);
  return result(ctx, run(ctx, event));
}

export { hotSwitchStep as step };
