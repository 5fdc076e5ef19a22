/**
 * The `ProcessManageSignal` vocabulary of recover.proto (docs/grpc.md#recover-service, #recover-vocabulary; docs/rules.md#recover.fsm) and the
 * rank arithmetic the recovery FSMs share. Values are spelt exactly as on the wire (some contain
 * spaces, some underscores, some hyphens). The signal message itself is
 * vocabulary/process-manage-signal.ts, shared with grpc/.
 */
import type { ProcessManageSignal, WireFaultRank } from '../../vocabulary/process-manage-signal.ts';

export const SIGNAL_TYPE = {
  keepAlive: 'keep-alive',
  stopTrain: 'stopTrain',
  globalFault: 'globalFault',
  changeStrategy: 'changeStrategy',
  saveAndExit: 'saveAndExit',
  killMaster: 'killMaster',
  faultNodesExit: 'faultNodesExit',
  preExitProcess: 'preExitProcess',
  hotSwitch: 'hot-switch',
  pauseStartAgent: 'pauseStartAgent',
  continueStartAgent: 'continueStartAgent',
} as const;
export type SignalType = (typeof SIGNAL_TYPE)[keyof typeof SIGNAL_TYPE];

export const SIGNAL_ACTION = {
  stopTrain: 'stop_train',
  pauseTrain: 'pause_train',
  onGlobalRank: 'on_global_rank',
  faultNodesExit: 'fault_nodes_exit',
  faultNodesRestart: 'fault_nodes_restart',
  changeStrategy: 'change_strategy',
  saveAndExit: 'save_and_exit',
  preExitProcess: 'pre exit process',
  hotSwitch: 'hot switch',
  stopSwitch: 'stop switch',
  newPodRunning: 'new pod running',
  pauseStartAgent: 'pause_start_agent',
  continueStartAgent: 'continue_start_agent',
} as const;

/** `changeStrategy` field values. */
export const CHANGE_STRATEGY = {
  retry: 'retry',
  recover: 'recover',
  dump: 'dump',
  exit: 'exit',
  continue: 'continue',
  downgrade: 'downgrade',
  upgrade: 'upgrade',
  migration: 'migration',
} as const;

/** `extraParams` values (the scale ones carry a space after the colon, docs/grpc.md#wire-gotchas). */
export const EXTRA_PARAMS = {
  recoverInPlace: 'recover-in-place',
  dumpExit: 'dump_exit',
  scaleIn: '{"scale-in-strategy": "DP"}',
  scaleOut: '{"scale-out-strategy": "DP"}',
} as const;

/** Status codes a client puts into its reports (docs/grpc.md#recover-vocabulary, #response-codes). */
export const REPORT_CODE = {
  ok: 0,
  exitIsolateRanks: 201,
  processNotReady: 404,
  recoverableRetryError: 405,
  unRecoverableRetryError: 406,
  clientError: 499,
} as const;

/** `FaultRank.faultType`: "0" UCE (retryable), "1" normal, "2" HCCL (retryable). */
export type FaultType = '0' | '1' | '2';
export const FAULT_TYPE = { uce: '0', normal: '1', hccl: '2' } as const;

export interface RankFault {
  readonly rankId: number;
  readonly faultType: FaultType;
}

export type SignalParts = Partial<Omit<ProcessManageSignal, 'uuid' | 'jobId' | 'signalType'>>;

export function buildSignal(jobId: string, uuid: string, signalType: SignalType, parts: SignalParts = {}): ProcessManageSignal {
  return {
    uuid,
    jobId,
    signalType,
    actions: parts.actions ?? [],
    faultRanks: parts.faultRanks ?? [],
    changeStrategy: parts.changeStrategy ?? '',
    timeout: parts.timeout ?? 0,
    nodeRankIds: parts.nodeRankIds ?? [],
    extraParams: parts.extraParams ?? '',
  };
}

export const isRetryType = (t: string): boolean => t === FAULT_TYPE.uce || t === FAULT_TYPE.hccl;

/** Sorted by rank, one entry per rank (the first type seen wins, normal beats retry). */
export function normaliseFaults(faults: readonly RankFault[]): RankFault[] {
  const byRank = new Map<number, FaultType>();
  for (const f of faults) {
    const had = byRank.get(f.rankId);
    if (had === undefined || (isRetryType(had) && !isRetryType(f.faultType))) byRank.set(f.rankId, f.faultType);
  }
  return [...byRank.entries()].sort((a, b) => a[0] - b[0]).map(([rankId, faultType]) => ({ rankId, faultType }));
}

export const toWire = (faults: readonly RankFault[]): WireFaultRank[] =>
  normaliseFaults(faults).map((f) => ({ rankId: String(f.rankId), faultType: f.faultType }));

/** Parses wire fault ranks like the Go TaskD does (Atoi both, silently drop pairs that do not parse). */
export function fromWire(ranks: readonly WireFaultRank[]): RankFault[] {
  const out: RankFault[] = [];
  for (const r of ranks) {
    if (!/^\d{1,9}$/.test(r.rankId)) continue;
    if (r.faultType !== '0' && r.faultType !== '1' && r.faultType !== '2') continue;
    out.push({ rankId: Number(r.rankId), faultType: r.faultType });
  }
  return normaliseFaults(out);
}

/** Pod rank (`hccl/rankIndex`) of a global rank. */
export const podOf = (rankId: number, ranksPerPod: number): number => Math.floor(rankId / Math.max(1, ranksPerPod));

export function podsOf(rankIds: readonly number[], ranksPerPod: number): number[] {
  return [...new Set(rankIds.map((r) => podOf(r, ranksPerPod)))].sort((a, b) => a - b);
}

/**
 * Fault expansion to the node (docs/rules.md#recover.node-expansion): every rank of a pod with a faulty rank becomes faulty
 * (type "1" unless it has its own type), except on pods restarted in place, which keep only their
 * own fault ranks.
 */
export function expandToPods(faults: readonly RankFault[], ranksPerPod: number, inPlacePods: readonly number[] = []): RankFault[] {
  const per = Math.max(1, ranksPerPod);
  const out: RankFault[] = [...faults];
  for (const pod of podsOf(faults.map((f) => f.rankId), per)) {
    if (inPlacePods.includes(pod)) continue;
    for (let r = pod * per; r < (pod + 1) * per; r++) out.push({ rankId: r, faultType: FAULT_TYPE.normal });
  }
  return normaliseFaults(out);
}

export const strList = (ns: readonly number[]): string[] => [...ns].sort((a, b) => a - b).map(String);
