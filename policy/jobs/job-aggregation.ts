/**
 * Job aggregation (docs/rules.md#job.device-map to #job.health-state, #resched.fault-nodes, #resched.fault-tasks): join per-node/per-device FaultRecords with a
 * job's pods and return the job's fault ranks and health state.
 *
 * The aggregate is knob-independent: it lists every cause that touches a pod and says what Volcano
 * would call it. Which causes make a pod a *fault task* (sub-health strategy, retry budget, hidden
 * windows) is decided in `job-fault-tasks.ts`.
 *
 * Rules, per cause origin:
 * - `node-ready` (Node NotReady / missing): every pod on the node, `NodeUnhealthy`, code
 *   `heartbeatTimeOut`, reason level PreSeparateNPU (VC reason record) while the rank level stays the
 *   record's (ClusterD: SeparateNPU) (docs/rules.md#job.fault-ranks, #resched.fault-tasks, #job.node-not-ready).
 * - `node` (NodeD) and `switch` (UB switch): every pod on the node. SubHealthFault -> `SubHealthFault`;
 *   PreSeparate / NotHandle -> no effect on a running job (docs/rules.md#decision.no-effect, #ingest.pre-separate); anything else ->
 *   `NodeUnhealthy` (docs/rules.md#resched.fault-nodes).
 * - `npu` and `public` on a device: pods whose AscendReal holds the device; on no device: every NPU pod
 *   on the node. SubHealthFault -> `SubHealthFault`; PreSeparateNPU / NotHandle -> no effect on the
 *   running job; anything else -> `CardUnhealthy` (the card is in `-Unhealthy`, docs/rules.md#levels.card-health).
 * - `network`: `CardNetworkUnhealthy`; never makes a task faulty (docs/rules.md#resched.fault-tasks) but counts for health.
 * - the pod itself: Failed -> `pod-failed` (`process-exception` when labelled fault-type
 *   software/retry-fault, docs/rules.md#resched.lifecycle); label `fault-type=Separate` -> `RelationFaultSeparate`;
 *   `fault-type=SubHealth` -> `SubHealthFault`.
 */
import { faultKey, mostSerious, type FaultRecord, type FaultSource, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { RescheduleFaultType } from '../../vocabulary/job-decision-state.ts';
import { npuId, podFailed, podRefOf, rankPods, type JobPodView, type JobView, type PodRef } from './job-view.ts';

/** The task fault types Volcano writes into job-reschedule-reason (vocabulary/job-decision-state.ts). */
export type { RescheduleFaultType };

export type CauseOrigin = FaultSource | 'pod';
export type JobHealthState = 'Healthy' | 'SubHealthy' | 'UnHealthy';

/** Pseudo code for NotReady nodes, as in vcjob-fault-npu-cm (Volcano's reason code `heartbeatTimeOut`, `component/ascend-for-volcano/internal/rescheduling/type.go`). */
export const HEARTBEAT_TIMEOUT_CODE = 'heartbeatTimeOut';

/** A fault hidden by an upstream filter (custom filter, UCE-accompany, step retry, recover-in-place). */
export interface HiddenFault {
  readonly by: string;
  readonly untilMs: number;
}

export interface JobFaultSnapshot {
  readonly job: JobView;
  /** Fault records of the job's nodes (others are ignored). */
  readonly faults: readonly FaultRecord[];
  /** faultKey(record) -> hide window, for docs/rules.md#decision.hidden-by-filter. */
  readonly hidden?: ReadonlyMap<string, HiddenFault>;
}

export interface FaultCause {
  readonly key: string;
  readonly origin: CauseOrigin;
  readonly node?: string;
  readonly device?: string;
  readonly code: string;
  /** Undefined for pod-failed / process-exception (no hardware level). */
  readonly level?: NpuFaultLevel;
  readonly faultType: RescheduleFaultType;
  /** Would Volcano count it against the task at all (before knobs)? false = docs/rules.md#decision.no-effect. */
  readonly affectsTask: boolean;
  /** Code and level Volcano puts in its eviction reason. */
  readonly reasonCode: string;
  readonly reasonLevel: string;
  readonly hidden?: HiddenFault;
  readonly note: string;
}

export interface JobFaultRank {
  readonly pod: PodRef;
  readonly podRank?: number;
  readonly node?: string;
  readonly devices: readonly string[];
  readonly codes: readonly string[];
  readonly worstLevel?: NpuFaultLevel;
  /** Volcano's classification of the task from the causes that affect it (docs/rules.md#resched.fault-tasks order). */
  readonly faultType: RescheduleFaultType;
  readonly causes: readonly FaultCause[];
}

export interface JobFaultAggregate {
  readonly job: JobView;
  readonly ranks: readonly JobFaultRank[];
  readonly healthState: JobHealthState;
  /** Order-independent identity of the cause set (pod uid + cause keys). */
  readonly fingerprint: string;
}

/** docs/rules.md#resched.fault-tasks precedence: NodeD/switch node fault, card, NotReady node, failed pod, relation, sub-health. */
export function causeOrder(c: FaultCause): number {
  switch (c.faultType) {
    case 'NodeUnhealthy':
      return c.origin === 'node-ready' ? 2 : 0;
    case 'CardUnhealthy':
      return 1;
    case 'pod-failed':
    case 'process-exception':
      return 3;
    case 'RelationFaultSeparate':
      return 4;
    case 'SubHealthFault':
      return 5;
    case 'CardNetworkUnhealthy':
      return 6;
  }
}

/** The cause that names the task: the first by docs/rules.md#resched.fault-tasks order among `causes`. */
export function primaryCause(causes: readonly FaultCause[]): FaultCause | undefined {
  let best: FaultCause | undefined;
  for (const c of causes) if (best === undefined || causeOrder(c) < causeOrder(best)) best = c;
  return best;
}

const NO_EFFECT_LEVELS: ReadonlySet<string> = new Set(['NotHandleFault', 'NormalNPU', 'PreSeparateNPU']);

function recordCause(r: FaultRecord, hidden: HiddenFault | undefined): FaultCause {
  const base = { key: faultKey(r), origin: r.source, node: r.node, level: r.level, ...(hidden ? { hidden } : {}) };
  const dev = r.device === undefined ? {} : { device: r.device };
  if (r.source === 'node-ready') {
    return {
      ...base, code: HEARTBEAT_TIMEOUT_CODE, faultType: 'NodeUnhealthy', affectsTask: true,
      reasonCode: HEARTBEAT_TIMEOUT_CODE, reasonLevel: 'PreSeparateNPU', note: `node ${r.node} NotReady or missing`,
    };
  }
  const at = r.device === undefined ? `node ${r.node}` : `${r.node}/${r.device}`;
  const common = { ...base, ...dev, code: r.code, reasonCode: r.code, reasonLevel: r.level };
  if (r.source === 'network') {
    return { ...common, faultType: 'CardNetworkUnhealthy', affectsTask: false,
      note: `${r.code} ${r.level} on ${at} (network-unhealthy cards do not make a task faulty)` };
  }
  const nodeWide = r.source === 'node' || r.source === 'switch';
  const hard: RescheduleFaultType = nodeWide ? 'NodeUnhealthy' : 'CardUnhealthy';
  if (r.level === 'SubHealthFault') {
    return { ...common, faultType: 'SubHealthFault', affectsTask: true, note: `${r.code} SubHealthFault on ${at} (${r.source})` };
  }
  if (NO_EFFECT_LEVELS.has(r.level)) {
    return { ...common, faultType: hard, affectsTask: false,
      note: `${r.code} ${r.level} on ${at} (${r.source}): running job keeps its ${nodeWide ? 'node' : 'chip'}` };
  }
  return { ...common, faultType: hard, affectsTask: true, note: `${r.code} ${r.level} on ${at} (${r.source})` };
}

function podCauses(p: JobPodView): FaultCause[] {
  const out: FaultCause[] = [];
  const node = p.node === undefined ? {} : { node: p.node };
  if (podFailed(p)) {
    const software = p.faultTypeLabel === 'software' || p.faultTypeLabel === 'retry-fault';
    const faultType: RescheduleFaultType = software ? 'process-exception' : 'pod-failed';
    out.push({ key: `${p.uid}/pod/${faultType}`, origin: 'pod', ...node, code: faultType, faultType, affectsTask: true,
      reasonCode: faultType, reasonLevel: '', note: `pod ${p.name} failed${software ? ' (software fault)' : ''}` });
  }
  if (p.faultTypeLabel === 'Separate') {
    out.push({ key: `${p.uid}/pod/RelationFaultSeparate`, origin: 'pod', ...node, code: 'Separate', level: 'SeparateNPU',
      faultType: 'RelationFaultSeparate', affectsTask: true, reasonCode: 'Separate', reasonLevel: 'SeparateNPU',
      note: `pod ${p.name} labelled fault-type=Separate (relation fault)` });
  }
  if (p.faultTypeLabel === 'SubHealth') {
    out.push({ key: `${p.uid}/pod/SubHealthFault`, origin: 'pod', ...node, code: 'SubHealth', level: 'SubHealthFault',
      faultType: 'SubHealthFault', affectsTask: true, reasonCode: 'SubHealth', reasonLevel: 'SubHealthFault',
      note: `pod ${p.name} labelled fault-type=SubHealth` });
  }
  return out;
}

function recordHitsPod(r: FaultRecord, p: JobPodView): boolean {
  if (p.node === undefined || p.node !== r.node) return false;
  if (r.source === 'node-ready' || r.source === 'node' || r.source === 'switch') return true;
  if (r.device === undefined) return p.npus.length > 0;
  const id = npuId(r.device);
  return p.npus.some((n) => n === r.device || npuId(n) === id);
}

function toRank(p: JobPodView, causes: readonly FaultCause[]): JobFaultRank {
  const primary = primaryCause(causes.filter((c) => c.affectsTask)) ?? primaryCause(causes);
  const devices = [...new Set(causes.flatMap((c) => (c.device === undefined ? [] : [c.device])))].sort();
  const codes = [...new Set(causes.map((c) => c.code))].sort();
  const worstLevel = mostSerious(causes.flatMap((c) => (c.level === undefined ? [] : [c.level])));
  return {
    pod: podRefOf(p),
    ...(p.rank === undefined ? {} : { podRank: p.rank }),
    ...(p.node === undefined ? {} : { node: p.node }),
    devices, codes,
    ...(worstLevel === undefined ? {} : { worstLevel }),
    faultType: primary?.faultType ?? 'pod-failed',
    causes,
  };
}

const HEALTHY_LEVELS: ReadonlySet<string> = new Set(['SubHealthFault', 'NotHandleFault', 'PreSeparateNPU', 'NormalNPU']);

/** docs/rules.md#job.health-state over hardware causes (failed pods are Volcano's business, not ClusterD's health state). */
export function jobHealthState(ranks: readonly JobFaultRank[]): JobHealthState {
  let sub = false;
  for (const c of ranks.flatMap((r) => r.causes)) {
    if (c.faultType === 'pod-failed' || c.faultType === 'process-exception') continue;
    if (c.faultType === 'RelationFaultSeparate') return 'UnHealthy';
    if (c.level !== undefined && !HEALTHY_LEVELS.has(c.level)) return 'UnHealthy';
    if (c.level === 'SubHealthFault') sub = true;
  }
  return sub ? 'SubHealthy' : 'Healthy';
}

const byRank = (a: JobFaultRank, b: JobFaultRank): number =>
  (a.podRank ?? Number.MAX_SAFE_INTEGER) - (b.podRank ?? Number.MAX_SAFE_INTEGER) || a.pod.name.localeCompare(b.pod.name);

/** Join the job's pods with the fault records on their nodes (pure). */
export function aggregateJob(s: JobFaultSnapshot): JobFaultAggregate {
  const byNode = new Map<string, FaultRecord[]>();
  for (const r of s.faults) {
    const list = byNode.get(r.node);
    if (list === undefined) byNode.set(r.node, [r]);
    else list.push(r);
  }
  const ranks: JobFaultRank[] = [];
  for (const p of rankPods(s.job)) {
    const records = p.node === undefined ? [] : (byNode.get(p.node) ?? []);
    const causes = [
      ...records.filter((r) => recordHitsPod(r, p)).map((r) => recordCause(r, s.hidden?.get(faultKey(r)))),
      ...podCauses(p),
    ].sort((a, b) => causeOrder(a) - causeOrder(b) || a.key.localeCompare(b.key));
    if (causes.length > 0) ranks.push(toRank(p, causes));
  }
  ranks.sort(byRank);
  const fingerprint = ranks.map((r) => `${r.pod.uid}:${r.causes.map((c) => c.key).join(',')}`).join(';');
  return { job: s.job, ranks, healthState: jobHealthState(ranks), fingerprint };
}
