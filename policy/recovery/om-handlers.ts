/**
 * O&M operations on the process-recovery FSM (docs/rules.md#recover.stress-test, #recover.switch-nic): an online stress
 * test and a NIC switch pause training (stopTrain + pause_train), hand the agents their work on a
 * notify stream, wait for the agents' result, then resume (changeStrategy `continue`) or fall into
 * the recovery path (stopTrain). ClusterD runs them on the job's one controller, so they share its
 * state: only from INIT, and a reset ends them. MindCluster: `CD/application/recover/om_controller.go`,
 * `CD/application/recover/om_service.go`, `CD/application/recover/rules.go`.
 */
import { cmd, cont, type Ctx, ev, normalFaults, retryFaults, send, timer } from './recovery-facts.ts';
import { cancelTimer, makeUuid } from './recovery-kit.ts';
import { resetRecovery } from './recovery-progress.ts';
import { CHANGE_STRATEGY, FAULT_TYPE, REPORT_CODE, SIGNAL_ACTION, SIGNAL_TYPE, podsOf, strList, toWire } from './recovery-signals.ts';
import type { OmKind, OmState, RecoveryFsmEvent, RecoveryState, StressOpResult } from './recovery-types.ts';

type Handler = (ctx: Ctx) => RecoveryFsmEvent | undefined;

/** ClusterD's stressTestTimeout (om_controller.go): the pause signal of a stress test carries 15 min. */
export const STRESS_TEST_PAUSE_TIMEOUT_S = 15 * 60;

/** Stress-test op result codes (CD/common/constant/const.go StressTest*). */
export const STRESS_CODE = { ok: '0', execFail: '1', findFault: '2', timeout: '3', volRecoverFail: '4' } as const;

/** Node annotation a failed stress test writes (read by Volcano's predicate). */
export const NODE_HEALTHY_STATUS = { key: 'NodeHealthyStatus', unhealthy: 'UnHealthy' } as const;

export const omOf = (s: RecoveryState): OmState | null => s.om ?? null;
/** ClusterD's isStressTest / isSwitchingNic: an operation with ranks (an empty SwitchNics passes the checks and has none). */
export const isStressTest = (s: RecoveryState): boolean => omOf(s)?.kind === 'stressTest' && Object.keys(omOf(s)!.stress).length > 0;
export const isSwitchingNic = (s: RecoveryState): boolean => omOf(s)?.kind === 'switchNic' && omOf(s)!.switchRanks.length > 0;

function newUuid(ctx: Ctx): void {
  ctx.s.uuidSeq += 1;
  ctx.s.uuid = makeUuid(ctx.now, ctx.s.config.jobId, ctx.s.uuidSeq);
}

/** replyOMResponse: a message for the operation's result stream (none when no operation runs). */
export function omReply(ctx: Ctx, msg: string): void {
  if (isSwitchingNic(ctx.s)) cmd(ctx, { type: 'omResponse', kind: 'switchNic', msg });
  else if (isStressTest(ctx.s)) cmd(ctx, { type: 'omResponse', kind: 'stressTest', msg });
}

const stressNodes = (s: RecoveryState): string[] => Object.keys(omOf(s)?.stress ?? {}).sort();

function filterOff(ctx: Ctx): void {
  if (ctx.s.step === 'stressTest' || ctx.s.step === 'stressTestFault') cmd(ctx, { type: 'setStressTestFilter', nodes: stressNodes(ctx.s), on: false });
}

/** sendAgentSignal: pauseStartAgent / continueStartAgent under a new uuid; ClusterD waits for neither. */
function agentSignal(ctx: Ctx, type: typeof SIGNAL_TYPE.pauseStartAgent | typeof SIGNAL_TYPE.continueStartAgent): void {
  newUuid(ctx);
  const action = type === SIGNAL_TYPE.pauseStartAgent ? SIGNAL_ACTION.pauseStartAgent : SIGNAL_ACTION.continueStartAgent;
  send(ctx, type, { actions: [action] });
}

const omSend = { ok: ev('notifySuccess'), fail: cont('omSendFailed') };

/** Rows 53, 54 (handleNotifyPauseTrain): new uuid, stopTrain + pause_train (15 min for a stress test). */
const pauseTrain: Handler = (ctx) => {
  newUuid(ctx);
  const timeout = isStressTest(ctx.s) ? STRESS_TEST_PAUSE_TIMEOUT_S : 0;
  send(ctx, SIGNAL_TYPE.stopTrain, { actions: [SIGNAL_ACTION.pauseTrain], timeout }, omSend);
  return undefined;
};

/** Row 55 (handleWaitPauseTrainComplete): wait for ReportStopComplete (15 min). */
const waitPause: Handler = (ctx) => {
  timer(ctx, 'report', ctx.s.timings.reportMs);
  return consumeOmReport(ctx);
};

/** Rows 57, 58 (notifyStressTest, notifySwitchNic): the notify message; its delivery comes back as omNotified. */
const notifyOm: Handler = (ctx) => {
  const om = omOf(ctx.s);
  if (om === null) return undefined;
  om.notified = false;
  cmd(ctx, { type: 'notifyOm', kind: om.kind });
  return undefined;
};

/** Row 59 (handleWaitStressTestFinish): hide the stress codes, pauseStartAgent, FaultFlushing, wait for the result. */
const waitStressTest: Handler = (ctx) => {
  ctx.s.step = 'stressTest';
  cmd(ctx, { type: 'setStressTestFilter', nodes: stressNodes(ctx.s), on: true });
  agentSignal(ctx, SIGNAL_TYPE.pauseStartAgent);
  cmd(ctx, { type: 'writeResetConfig', op: 'notifyFaultFlushing' });
  timer(ctx, 'report', ctx.s.timings.reportMs);
  return consumeOmReport(ctx);
};

/** Row 63 (handleWaitSwitchNicFinish): wait for ReplySwitchNicResult. */
const waitSwitchNic: Handler = (ctx) => {
  ctx.s.step = 'switchNic';
  timer(ctx, 'report', ctx.s.timings.reportMs);
  return consumeOmReport(ctx);
};

/** Row 62 (handleStressTestFail): the ranks of nodes found faulty become normal faults, the nodes UnHealthy; stopTrain. */
const stressTestFail: Handler = (ctx) => {
  const s = ctx.s;
  const om = omOf(s);
  const isolate = om?.isolateNodes ?? [];
  const ranks = Object.entries(om?.rankNode ?? {}).filter(([, node]) => isolate.includes(node)).map(([rank]) => Number(rank));
  saveNormalFaults(s, ranks);
  if (isolate.length > 0) cmd(ctx, { type: 'annotateNodes', nodes: isolate, annotations: { [NODE_HEALTHY_STATUS.key]: NODE_HEALTHY_STATUS.unhealthy } });
  newUuid(ctx);
  send(ctx, SIGNAL_TYPE.stopTrain, { actions: [SIGNAL_ACTION.stopTrain], faultRanks: [...toWire(retryFaults(s)), ...toWire(normalFaults(s))] }, { ok: ev('notifySuccess'), fail: ev('notifyFail') });
  return undefined;
};

/** Row 60, 64 (notifyContinueTrain): changeStrategy `continue` with the normal faults, same uuid. */
const notifyContinue: Handler = (ctx) => {
  const s = ctx.s;
  const faults = normalFaults(s);
  send(ctx, SIGNAL_TYPE.changeStrategy, {
    actions: [SIGNAL_ACTION.changeStrategy],
    changeStrategy: CHANGE_STRATEGY.continue,
    faultRanks: toWire(faults),
    nodeRankIds: strList(podsOf(faults.map((f) => f.rankId), s.config.ranksPerPod)),
  }, { ok: ev('notifyContinueSuccessEvent'), fail: cont('omSendFailed') });
  return undefined;
};

/** Row 66 (handleDecideContinueTrainComplete): wait for ReportRecoverStatus. */
const waitContinue: Handler = (ctx) => {
  timer(ctx, 'report', ctx.s.timings.reportMs);
  return consumeOmReport(ctx);
};

/** Rows 68, 69 (handleStressTestFinish, handleSwitchNicFinish): reset; a NIC switch says so first. */
const omFinish: Handler = (ctx) => {
  if (isSwitchingNic(ctx.s)) omReply(ctx, 'switch nic finish');
  resetRecovery(ctx, true, isSwitchingNic(ctx.s) ? 'switch nic finished' : 'stress test finished');
  return undefined;
};

export const OM_HANDLERS = { pauseTrain, waitPause, notifyOm, waitStressTest, waitSwitchNic, stressTestFail, notifyContinue, waitContinue, omFinish } as const;
export type OmHandler = keyof typeof OM_HANDLERS;

/** saveCacheFault: ranks join the cached faults as normal faults. */
function saveNormalFaults(s: RecoveryState, ranks: readonly number[]): void {
  for (const rankId of ranks) {
    const i = s.faults.findIndex((f) => f.rankId === rankId);
    const entry = { rankId, faultType: FAULT_TYPE.normal, software: false, restartInPlace: false };
    if (i < 0) s.faults.push(entry);
    else s.faults[i] = entry;
  }
}

/** Go's `%v` of a sorted-key map of sets (`map[a:{} b:{}]`). */
const goSet = (xs: readonly string[]): string => `map[${[...xs].sort().map((x) => `${x}:{}`).join(' ')}]`;

/** Go's json.Marshal of the node -> device -> StressTestRankResult map (sorted keys, omitempty). */
function resultJson(m: Record<string, Record<string, Record<string, StressOpResult>>>): string {
  const sortObj = <T>(o: Record<string, T>, f: (v: T) => unknown): Record<string, unknown> =>
    Object.fromEntries(Object.keys(o).sort().map((k) => [k, f(o[k]!)]));
  const op = (r: StressOpResult): Record<string, string> => ({ ...(r.code !== '' ? { code: r.code } : {}), ...(r.result !== '' ? { result: r.result } : {}) });
  return JSON.stringify(sortObj(m, (devs) => sortObj(devs, (ops) => (Object.keys(ops).length === 0 ? {} : { rankResult: sortObj(ops, op) }))));
}

/**
 * parseStressTestResult: continueStartAgent, then per rank: code "2" isolates the rank's node, "3"
 * or "4" makes the rank a normal fault. Returns (ok, message for the result stream).
 */
function parseStressResult(ctx: Ctx, result: Record<string, Record<string, StressOpResult>>): { ok: boolean; msg: string } {
  const s = ctx.s;
  const om = omOf(s)!;
  agentSignal(ctx, SIGNAL_TYPE.continueStartAgent);
  const byNode: Record<string, Record<string, Record<string, StressOpResult>>> = {};
  const faultRanks: string[] = [];
  const isolate = new Set(om.isolateNodes);
  for (const rank of Object.keys(result).sort((a, b) => Number(a) - Number(b))) {
    const node = om.rankNode[rank] ?? '';
    const dev = om.rankDevice[rank] ?? '';
    (byNode[node] ??= {})[dev] = result[rank]!;
    for (const r of Object.values(result[rank]!)) {
      if (r.code === STRESS_CODE.findFault) isolate.add(node);
      if (r.code === STRESS_CODE.timeout || r.code === STRESS_CODE.volRecoverFail) faultRanks.push(rank);
    }
  }
  om.isolateNodes = [...isolate].sort();
  saveNormalFaults(s, faultRanks.filter((r) => /^\d{1,9}$/.test(r)).map(Number));
  const ret = resultJson(byNode);
  ctx.why.push(`stress test result: isolate nodes [${om.isolateNodes.join(',')}], fault ranks [${faultRanks.join(',')}]`);
  if (om.isolateNodes.length > 0) return { ok: false, msg: `stress test find fault, isolate node:${goSet(om.isolateNodes)},result:${ret}` };
  if (faultRanks.length > 0) {
    const list = faultRanks.map((r) => `rankId:"${r}" faultType:"${FAULT_TYPE.normal}"`).join(' ');
    return { ok: false, msg: `stress test timeout fault, faultRank:[${list}],result:${ret}` };
  }
  return { ok: true, msg: `stress test finish, result:${ret}` };
}

/** The waits of the O&M states over the buffered reports (om_controller.go select arms). */
export function consumeOmReport(ctx: Ctx): RecoveryFsmEvent | undefined {
  const s = ctx.s;
  const r = s.reports;
  // A stalled wait reads nothing more: reports stay buffered, as in ClusterD's unread channels.
  if (s.step === 'stalled') return undefined;
  switch (s.phase) {
    case 'WaitReportPauseCompleteState': {
      if (r.stopComplete === null) return undefined;
      const { code } = r.stopComplete;
      r.stopComplete = null;
      if (code === REPORT_CODE.clientError) {
        omReply(ctx, 'om failed, pause train failed');
        return 'processPauseFail';
      }
      if (isSwitchingNic(s)) return 'switchNicRecvPause';
      if (isStressTest(s)) return 'stressTestRecvPause';
      return stall(ctx, 'pause reported without an O&M operation');
    }
    case 'WaitStressTestFinishedState': {
      const result = r.stressResult ?? null;
      if (result !== null) {
        r.stressResult = null;
        const fault = s.step === 'stressTestFault';
        // The fault arm (waitStressTestFinishRecvFault) neither clears reset-config nor looks at the result.
        if (!fault) cmd(ctx, { type: 'writeResetConfig', op: 'clear' });
        const parsed = parseStressResult(ctx, result);
        omReply(ctx, parsed.msg);
        filterOff(ctx);
        return fault || !parsed.ok ? 'stressTestFail' : 'receiveReport';
      }
      if (s.step !== 'stressTest' || r.recoverStatus === null) return undefined;
      const status = r.recoverStatus;
      r.recoverStatus = null;
      if (status.code === REPORT_CODE.unRecoverableRetryError) {
        omReply(ctx, 'recv fault, when stressing test');
        s.step = 'stressTestFault';
        timer(ctx, 'report', s.timings.reportMs);
        return undefined;
      }
      filterOff(ctx);
      return stall(ctx, `recover status ${status.code} while stress testing`);
    }
    case 'WaitSwitchNicFinishedState': {
      if (s.step !== 'switchNic') return undefined;
      const result = r.switchResult ?? null;
      if (result !== null) {
        r.switchResult = null;
        if (!result) {
          omReply(ctx, 'switch nic failed, switch nic failed');
          return 'switchNicFail';
        }
        return 'receiveReport';
      }
      if (r.recoverStatus === null) return undefined;
      const status = r.recoverStatus;
      r.recoverStatus = null;
      // MindIO reports an error of the switch with ReportRecoverStatus.
      if (status.code === REPORT_CODE.unRecoverableRetryError) {
        omReply(ctx, 'switch nic failed, report error when switching nic');
        return 'waitSwitchNicRecvFault';
      }
      return stall(ctx, `recover status ${status.code} while switching nic`);
    }
    case 'WaitContinueTrainState': {
      if (r.recoverStatus === null) return undefined;
      const { code } = r.recoverStatus;
      r.recoverStatus = null;
      if (code === REPORT_CODE.clientError) {
        omReply(ctx, 'switch nic failed, continue train failed');
        return 'continueTrainFail';
      }
      if (isSwitchingNic(s)) return 'switchNicRecvContinue';
      if (isStressTest(s)) return 'stressTestRecvContinue';
      return stall(ctx, 'continue reported without an O&M operation');
    }
    default:
      return undefined;
  }
}

/**
 * ClusterD's handler returned without an event (a report its select does not act on): the state
 * stays, nothing is awaited any more, until a reset.
 */
function stall(ctx: Ctx, why: string): undefined {
  cancelTimer(ctx, 'report');
  ctx.s.step = 'stalled';
  ctx.why.push(`${why}: ClusterD's handler ends without an event; the job waits for a reset`);
  return undefined;
}

/** The report timer of an O&M wait: the message ClusterD replies, then receiveTimeout. */
export function omReportTimeout(ctx: Ctx): void {
  const msg: Partial<Record<string, string>> = {
    WaitReportPauseCompleteState: 'pause train timeout',
    WaitStressTestFinishedState: 'stress test failed, report stress test timeout',
    WaitSwitchNicFinishedState: 'switch nic failed, report switch nic timeout',
    WaitContinueTrainState: 'switch nic failed, continue train timeout',
  };
  const m = msg[ctx.s.phase];
  if (m !== undefined) omReply(ctx, m);
  filterOff(ctx);
}

export const isOmPhase = (phase: string): boolean =>
  ['NotifyPauseTrainState', 'WaitReportPauseCompleteState', 'NotifyStressTestState', 'WaitStressTestFinishedState',
    'NotifySwitchNicState', 'WaitSwitchNicFinishedState', 'NotifyContinueTrainState', 'WaitContinueTrainState'].includes(phase);

/** The notify stream delivered (or failed to deliver) the notify message of rows 57/58. */
export function omNotified(ctx: Ctx, ok: boolean): RecoveryFsmEvent | 'refused' | undefined {
  const s = ctx.s;
  const om = omOf(s);
  if (om === null || om.notified || (s.phase !== 'NotifyStressTestState' && s.phase !== 'NotifySwitchNicState')) return 'refused';
  om.notified = true;
  if (ok) return 'notifySuccess';
  omReply(ctx, om.kind === 'stressTest' ? 'send stress test signal failed, please check manually' : 'send switch nic signal failed, please check manually');
  return 'notifyFail';
}

/** Continuations: a signal of an O&M state failed after its tries (handleSendResult). */
export const OM_CONTINUATIONS = {
  omSendFailed: (ctx: Ctx): RecoveryFsmEvent => {
    omReply(ctx, 'om failed, send signal failed');
    return 'notifyFail';
  },
} as const;

/** The notify message of the operation in flight (StressTestRankParams / SwitchRankList), from the state. */
export function omNotifyMessage(s: RecoveryState): { kind: OmKind; message: Record<string, unknown> } | undefined {
  const om = omOf(s);
  if (om === null) return undefined;
  if (om.kind === 'stressTest') {
    const stressParam: Record<string, { ops: number[] }> = {};
    for (const ranks of Object.values(om.stress)) for (const [rank, ops] of Object.entries(ranks)) stressParam[rank] = { ops: [...ops] };
    return { kind: 'stressTest', message: { stressParam, jobId: s.config.jobId } };
  }
  return { kind: 'switchNic', message: { rankID: [...om.switchRanks], op: [...om.switchOps], jobId: s.config.jobId } };
}
