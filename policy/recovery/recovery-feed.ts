/**
 * What the recovery and hot-switch FSMs are fed for one job, from the informer caches and the fault
 * view (docs/rules.md#job.device-map to #job.subscriber-levels, #recover.register, #recover.hardware-entry, #hotswitch.entry): the job's knobs as FSM config, its pods, its
 * PodGroup phase, its health state and its fault ranks. A pure function of its inputs.
 *
 * Fault ranks (the recovery service's subscription to the job fault center, docs/rules.md#job.fault-ranks, #job.subscriber-levels):
 * - faults are attributed through the job's last complete placement when it has one (ClusterD's
 *   PreServerList, policy/jobs/job-placement.ts), else through its live pods: a pod the scheduler
 *   deleted as the fault landed keeps its rank's fault in the job until the job is complete again;
 * - global rank = pod rank x NPUs per pod + the chip's index in the pod's `huawei.com/AscendReal`;
 *   a node-wide fault (NodeD, UB switch, public fault without devices) hits every rank of the pod;
 * - NotHandleFault, PreSeparateNPU and NormalNPU are dropped (docs/rules.md#job.subscriber-levels);
 * - a NotReady node marks its ranks `nodeNotReadyOnly` (never drives the FSM, docs/rules.md#job.node-not-ready);
 * - SubHealthFault marks `subHealth` (the FSM drops it unless the job is SubHealthy);
 * - fault type "0" for 80E01801 (UCE), "2" for 8C1F860B (HCCL), else "1"; a normal fault wins. A
 *   retry code in device-info is a retry fault only when the business plane (the agent's
 *   ReportProcessFault with a retry type) reported that rank at most 10 s after the fault, or in
 *   the last 10 s (ClusterD's CanDoStepRetry on the job's RecoverTime); else it is a normal fault
 *   ("1", the preExit / recover path): the device plugin alone cannot tell a step retry will work;
 * - RestartRequest / RestartBusiness faults at most 60 s old may restart in place (docs/rules.md#recover.in-place);
 * - the pod labels `fault-type=Separate` (relation fault) and `fault-type=SubHealth` count as faults
 *   of every rank of the pod; hot-switch backup pods hold no rank.
 * Retry faults the agent reported (ReportProcessFault, retry-only, docs/rules.md#recover.software-entry) are merged in for 10 s
 * from the report (ClusterD's business-plane window), then only through device-info.
 */
import { jobOnA5, RACK_BLOCK_ANNOTATION } from './a5-recovery.ts';
import { aggregateJob, type JobHealthState } from '../jobs/job-aggregation.ts';
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import type { FaultyPod, HotSwitchConfig, HotSwitchPod } from './hot-switch-types.ts';
import { jobNodes, npuId, rankPods, type JobPodView } from '../jobs/job-view.ts';
import { strategyMenu } from './recovery-choice.ts';
import type { FaultType } from './recovery-signals.ts';
import type { ObservedFaultRank, PlatformAnnotations, PodObservation, RecoveryJobConfig } from './recovery-types.ts';
import { platformAnnotationsOf } from './platform-mode.ts';
import { RETRY_FAULT_TYPES } from '../filters/step-retry-filter.ts';
import type { JobFacts, PodShape } from '../jobs/job-facts.ts';
import type { JobPlacement } from '../jobs/job-placement.ts';

/** Levels the recovery service's subscription drops (docs/rules.md#job.subscriber-levels). */
const DROPPED_LEVELS: ReadonlySet<string> = new Set(['NotHandleFault', 'PreSeparateNPU', 'NormalNPU']);
const IN_PLACE_LEVELS: ReadonlySet<string> = new Set(['RestartRequest', 'RestartBusiness']);
/** docs/rules.md#recover.in-place / docs/rules.md#timing.clusterd JobRestartInPlaceTimeout. */
export const RESTART_IN_PLACE_MAX_AGE_MS = 60_000;
export const HOT_SWITCH_MAX_FAULT_PODS = 10;
const NPU_RESOURCES = ['huawei.com/Ascend910', 'huawei.com/npu'];

export interface RetryReport {
  readonly rankId: number;
  readonly faultType: '0' | '2';
  readonly atMs: number;
}

export interface FeedInput {
  /** The job, with its last complete placement when the index keeps one. */
  readonly entry: JobFacts & { readonly placement?: JobPlacement };
  /** The raw pod `ns/name` from the cache. */
  readonly pod: (key: string) => PodShape | undefined;
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  readonly nowMs: number;
  /** Retry faults fed back from ReportProcessFault (still fresh). */
  readonly retryReports?: readonly RetryReport[];
  readonly hotSwitchDowngraded: boolean;
  /** `--rescheduling`: we delete pods ourselves instead of `needVolcanoOpe=delete`. */
  readonly holdsReschedulingRole: boolean;
  /** The node's super-pod device says server type `npu` (docs/rules.md#recover.force-release-a5). */
  readonly a5Node?: (node: string) => boolean;
}

export interface RecoveryFeed {
  readonly config: RecoveryJobConfig;
  readonly hotSwitchConfig: HotSwitchConfig;
  readonly pods: PodObservation[];
  readonly hotSwitchPods: HotSwitchPod[];
  readonly podGroup: { readonly exists: boolean; readonly phase: string; readonly platform: PlatformAnnotations };
  readonly jobHealth: JobHealthState;
  readonly ranks: ObservedFaultRank[];
  /** Pods with sub-health ranks, when the job is SubHealthy. */
  readonly subHealthPods: FaultyPod[];
}

interface RankAcc { hard: Set<FaultType>; sub: boolean; notReady: boolean; inPlace: boolean }

const numericNpu = (n: string): number => {
  const id = Number(npuId(n));
  return Number.isFinite(id) ? id : Number.MAX_SAFE_INTEGER;
};

function requestedNpus(p: PodShape | undefined): number {
  let n = 0;
  for (const c of p?.spec?.containers ?? []) {
    for (const r of NPU_RESOURCES) n += Number(c.resources?.limits?.[r] ?? c.resources?.requests?.[r] ?? 0) || 0;
  }
  return n;
}

/** NPUs (ranks) per pod: the widest AscendReal of the job, else the NPU request, else 1. */
export function ranksPerPodOf(pods: ReadonlyArray<Pick<JobPodView, 'name' | 'npus'>>, raw: (name: string) => PodShape | undefined): number {
  const allocated = Math.max(0, ...pods.map((p) => p.npus.length));
  if (allocated > 0) return allocated;
  const requested = Math.max(0, ...pods.map((p) => requestedNpus(raw(p.name))));
  return requested > 0 ? requested : 1;
}

/** ClusterD's JobReportRecoverTimeout: how far a business-plane report may lag the fault (and how long it counts as recent). */
export const RETRY_REPORT_WINDOW_MS = 10_000;

/** Fault type of a device-info code on `rank`, given the agent's retry reports (ClusterD getGrpcFormatFaults + CanDoStepRetry). */
function faultTypeOf(code: string, rank: number, faultMs: number, reports: readonly RetryReport[], nowMs: number): FaultType {
  const retryType = RETRY_FAULT_TYPES[code.toUpperCase()];
  if (retryType === undefined) return '1';
  const r = reports.filter((x) => x.rankId === rank).reduce<number | undefined>((m, x) => (m === undefined || x.atMs > m ? x.atMs : m), undefined);
  if (r === undefined) return '1';
  return nowMs - RETRY_REPORT_WINDOW_MS <= r || faultMs + RETRY_REPORT_WINDOW_MS >= r ? retryType : '1';
}

/** Where a rank's faults are looked for: its pod's node and chips. */
interface RankHolder {
  readonly rank: number;
  readonly node?: string;
  readonly npus: readonly string[];
}

/**
 * The pods faults are attributed to: the job's last complete placement (ClusterD's PreServerList:
 * GetJobServerInfoMap), else its live rank pods.
 */
function rankHolders(placement: JobPlacement | undefined, live: readonly JobPodView[]): RankHolder[] {
  if (placement !== undefined) return [...placement.pods];
  return live.map((p) => ({ rank: p.rank!, ...(p.node === undefined ? {} : { node: p.node }), npus: p.npus }));
}

function recordHits(r: FaultRecord, p: Pick<JobPodView, 'npus'>): boolean {
  if (r.source === 'node-ready' || r.source === 'node' || r.source === 'switch' || r.device === undefined) return true;
  const id = npuId(r.device);
  return p.npus.some((n) => n === r.device || npuId(n) === id);
}

/** Global ranks a record hits on pod `p` (rank base `base`, `per` ranks per pod). */
function ranksHit(r: FaultRecord, p: Pick<JobPodView, 'npus'>, base: number, per: number): number[] {
  if (r.device === undefined || r.source === 'node' || r.source === 'switch' || r.source === 'node-ready') {
    return Array.from({ length: per }, (_, i) => base + i);
  }
  const npus = [...p.npus].sort((a, b) => numericNpu(a) - numericNpu(b));
  const id = npuId(r.device);
  const idx = npus.findIndex((n) => n === r.device || npuId(n) === id);
  return idx < 0 || idx >= per ? [] : [base + idx];
}

function accumulate(acc: Map<number, RankAcc>, ranks: readonly number[], f: (a: RankAcc) => void): void {
  for (const r of ranks) {
    let a = acc.get(r);
    if (a === undefined) acc.set(r, (a = { hard: new Set(), sub: false, notReady: false, inPlace: false }));
    f(a);
  }
}

export function recoveryFeed(i: FeedInput): RecoveryFeed {
  const { entry, nowMs } = i;
  const view = entry.view;
  const raw = (name: string): PodShape | undefined => i.pod(`${view.namespace}/${name}`);
  const live = rankPods(view).filter((p) => p.rank !== undefined && p.terminating !== true);
  const holders = rankHolders(entry.placement, live);
  const per = ranksPerPodOf(entry.placement?.pods ?? live, raw);
  const nodes = [...new Set([...jobNodes(view), ...holders.flatMap((h) => (h.node === undefined ? [] : [h.node]))])];
  const records = new Map(nodes.map((n) => [n, i.faultsOf(n)]));
  const acc = new Map<number, RankAcc>();
  for (const p of live) {
    const all = Array.from({ length: per }, (_, k) => p.rank! * per + k);
    if (p.faultTypeLabel === 'Separate') accumulate(acc, all, (a) => a.hard.add('1'));
    if (p.faultTypeLabel === 'SubHealth') accumulate(acc, all, (a) => (a.sub = true));
  }
  for (const p of holders) {
    if (p.node === undefined) continue;
    const base = p.rank * per;
    for (const r of records.get(p.node) ?? []) {
      if (DROPPED_LEVELS.has(r.level) || !recordHits(r, p)) continue;
      const hit = ranksHit(r, p, base, per);
      if (r.source === 'node-ready') accumulate(acc, hit, (a) => (a.notReady = true));
      else if (r.level === 'SubHealthFault') accumulate(acc, hit, (a) => (a.sub = true));
      else {
        const inPlace = IN_PLACE_LEVELS.has(r.level) && nowMs - r.firstSeenMs <= RESTART_IN_PLACE_MAX_AGE_MS;
        for (const rank of hit) accumulate(acc, [rank], (a) => { a.hard.add(faultTypeOf(r.code, rank, r.firstSeenMs, i.retryReports ?? [], nowMs)); a.inPlace ||= inPlace; });
      }
    }
  }
  // A business-plane report alone puts its rank in the job's fault list for 10 s only (ClusterD's
  // retryInBusinessPlane / ValidBusinessRecoverTime); the report itself is kept 60 s for faultTypeOf.
  for (const rep of i.retryReports ?? []) {
    if (nowMs - rep.atMs <= RETRY_REPORT_WINDOW_MS) accumulate(acc, [rep.rankId], (a) => a.hard.add(rep.faultType));
  }
  const ranks: ObservedFaultRank[] = [...acc.entries()].sort((a, b) => a[0] - b[0]).map(([rankId, a]) => {
    const hard = a.hard.size > 0;
    const faultType: FaultType = !hard || a.hard.has('1') ? '1' : a.hard.has('2') && !a.hard.has('0') ? '2' : '0';
    return {
      rankId, faultType,
      ...(!hard && a.sub ? { subHealth: true } : {}),
      ...(!hard && !a.sub && a.notReady ? { nodeNotReadyOnly: true } : {}),
      ...(hard && a.inPlace ? { restartInPlace: true } : {}),
    };
  });
  // The job's health counts the placed pods gone since (ClusterD's job fault center reads PreServerList too).
  const gone = (entry.placement?.pods ?? []).filter((p) => !view.pods.some((v) => v.uid === p.uid))
    .map((p): JobPodView => ({ name: p.name, uid: p.uid, node: p.node, rank: p.rank, npus: p.npus, phase: 'Running', ready: true }));
  const jobHealth = aggregateJob({ job: { ...view, pods: [...view.pods, ...gone] }, faults: nodes.flatMap((n) => records.get(n) ?? []) }).healthState;
  const knobs = entry.knobs;
  const menu = strategyMenu({ recoverStrategy: knobs.recoverStrategies, faultScheduling: knobs.faultScheduling, podRescheduling: knobs.podRescheduling });
  const subHealthyStrategy = i.hotSwitchDowngraded && knobs.subHealthyStrategy === 'hotSwitch' ? 'ignore' : knobs.subHealthyStrategy;
  const subRanks = new Set(ranks.filter((r) => r.subHealth === true).map((r) => r.rankId));
  // A rank's faults belong to the pod placed there (ClusterD's fault list carries the PreServerList
  // pod's uid, fault_recover_service.go skipHandleSubHealthyHotSwitch): once a hot switch has moved
  // the rank, the new pod is not the faulty one until the placement is complete again with it, so
  // it is not switched again for the fault it left behind.
  const placedUid = new Map((entry.placement?.pods ?? []).map((p) => [p.rank, p.uid]));
  const subHealthPods: FaultyPod[] = jobHealth !== 'SubHealthy' ? [] : live.flatMap((p) => {
    if (entry.placement !== undefined && placedUid.get(p.rank!) !== p.uid) return [];
    const all = Array.from({ length: per }, (_, k) => p.rank! * per + k);
    // The hot-switch signal names every rank of the pod (component/clusterd/pkg/application/recover/controller.go normalFaultAssociateSameNodeRank).
    return all.some((r) => subRanks.has(r)) ? [{ podName: p.name, podRank: p.rank!, rankIds: all }] : [];
  });
  return {
    config: {
      jobId: view.uid, strategies: [...menu.strategies], jobRescheduling: menu.jobRescheduling, podRescheduling: menu.podRescheduling,
      subHealthyStrategy, ranksPerPod: per, waitRescheduleTimeoutS: knobs.waitRescheduleTimeoutS, platformMode: knobs.platformMode,
      // ClusterD looks at every pod of the job with a node (pod.GetPodByJobId), terminating or not.
      a5: jobOnA5(view.pods.flatMap((p) => (p.node === undefined ? [] : [p.node])), i.a5Node ?? (() => false)),
      rackBlock: entry.podGroup.metadata?.annotations?.[RACK_BLOCK_ANNOTATION] !== undefined,
    },
    hotSwitchConfig: {
      jobId: view.uid, framework: knobs.framework ?? '', subHealthyStrategy: knobs.subHealthyStrategy,
      holdsReschedulingRole: i.holdsReschedulingRole, maxFaultPods: HOT_SWITCH_MAX_FAULT_PODS,
    },
    pods: live.map((p) => ({ name: p.name, uid: p.uid, podRank: p.rank!, phase: p.phase, npusAllocated: p.npus.length > 0 })),
    hotSwitchPods: view.pods.filter((p) => p.terminating !== true).map((p) => ({
      name: p.name, uid: p.uid, podRank: p.rank ?? -1, phase: p.phase, annotations: { ...(raw(p.name)?.metadata?.annotations ?? {}) },
    })),
    podGroup: { exists: true, phase: entry.podGroup.status?.phase ?? '', platform: platformAnnotationsOf(entry.podGroup.metadata?.annotations) },
    jobHealth,
    ranks,
    subHealthPods,
  };
}

/**
 * Where the agent's retry-only fault reports (docs/rules.md#recover.software-entry) sit: rank -> (node, chip) of the job's pods,
 * for the UCE-accompany filter's business-plane input (docs/rules.md#filter.uce-accompany).
 */
export function retryReportDevices(entry: JobFacts & { readonly placement?: JobPlacement }, raw: (name: string) => PodShape | undefined, reports: readonly RetryReport[]): Array<{ node: string; device: string; atMs: number; faultType: '0' | '2' }> {
  const live = rankPods(entry.view).filter((p) => p.rank !== undefined && p.terminating !== true && p.node !== undefined);
  const holders = rankHolders(entry.placement, live);
  const per = ranksPerPodOf(entry.placement?.pods ?? live, raw);
  return reports.flatMap((r) => {
    const pod = holders.find((p) => p.rank === Math.floor(r.rankId / per));
    const chip = pod === undefined ? undefined : [...pod.npus].sort((a, b) => numericNpu(a) - numericNpu(b))[r.rankId % per];
    return pod?.node === undefined || chip === undefined ? [] : [{ node: pod.node, device: chip, atMs: r.atMs, faultType: r.faultType }];
  });
}
