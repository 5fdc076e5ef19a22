/**
 * SuperPod IPC force release (docs/rules.md#recover.force-release): what `cluster-system/fault-job-info`
 * says about a job before its global-fault notification, and how the ConfigMap's data changes as
 * entries are published and cleared. Pure: the reconciler (reconcilers/fault-job-info.reconciler.ts)
 * reads and writes. MindCluster: `component/clusterd/pkg/domain/job/job_storage.go`
 * (GetJobFaultSdIdAndNodeName, getFaultSuperID), `component/clusterd/pkg/interface/kube/kube_client.go`
 * (CreateOrUpdateSuperPodFaultInfo, RecoverFaultJobInfoCm*, runRecoverFaultJobInfoCmTask).
 */
import type { FaultJobEntry, SuperPodFaultInfo } from '../../schemas/fault-job-info/fault-job-info.ts';
import type { SuperPodNode } from '../../schemas/super-pod-device/super-pod-device.ts';

/** One rank pod of the job's last complete placement (ClusterD's PreServerList, rank order). */
export interface ForceReleaseServer {
  readonly podRank: number;
  readonly node: string;
  /** The pod's device annotation `super_pod_id` (0 when absent, as Go's zero value). */
  readonly superPodId: number;
}

export interface ForceReleaseInput {
  readonly jobId: string;
  readonly servers: readonly ForceReleaseServer[];
  /** Pod ranks of the recovery's fault pods (ClusterD's faultPod cache). */
  readonly faultPodRanks: readonly number[];
  /** The cluster's SuperPod nodes from the Node annotations (ClusterD's ListClusterDevice). */
  readonly superPodNodes: readonly SuperPodNode[];
  readonly nowSec: number;
}

export type ForceReleasePlan =
  | { readonly write: true; readonly entry: FaultJobEntry; readonly faultNodes: readonly string[] }
  | { readonly write: false; readonly reason: string };

const byNumber = (a: string, b: string): number => Number(a) - Number(b) || (a < b ? -1 : a > b ? 1 : 0);

/**
 * The job's entry, or why there is none: a pod of the job outside any SuperPod (`super_pod_id` < 0:
 * not an A3 SuperPod job), no other node of the job outside the fault nodes, or no fault node in a
 * SuperPod the Node annotations describe. Every chip of a fault node is listed, the job's or not.
 * ClusterD lists SuperPods, nodes and chips in Go map order; here SuperPods and chips by number and
 * nodes by name.
 */
export function forceReleasePlan(input: ForceReleaseInput): ForceReleasePlan {
  const ranks = new Set(input.faultPodRanks);
  const faultNodes = [...new Set(input.servers.filter((s) => ranks.has(s.podRank) && s.node !== '').map((s) => s.node))].sort();
  const fault = new Set(faultNodes);
  const others = new Map<number, string[]>();
  for (const s of input.servers) {
    if (s.superPodId < 0) return { write: false, reason: `pod rank ${s.podRank} on ${s.node} is in no SuperPod (super_pod_id ${s.superPodId})` };
    if (!fault.has(s.node)) others.set(s.superPodId, [...(others.get(s.superPodId) ?? []), s.node]);
  }
  const sdIds = new Map<number, string[]>();
  const nodes = [...input.superPodNodes].sort((a, b) => a.superPodId - b.superPodId || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  for (const n of nodes) {
    if (!fault.has(n.node)) continue;
    const chips = [...n.devices].sort((a, b) => byNumber(a[0], b[0])).map(([, sd]) => sd);
    sdIds.set(n.superPodId, [...(sdIds.get(n.superPodId) ?? []), ...chips]);
  }
  if (others.size === 0) return { write: false, reason: 'no node of the job outside the fault nodes' };
  if (sdIds.size === 0) return { write: false, reason: `no fault node (${faultNodes.join(', ') || 'none'}) in a SuperPod of the Node annotations` };
  const entry = new Map<number, SuperPodFaultInfo>([...sdIds].map(([sp, ids]) => [sp, {
    SdIds: ids, FaultNodes: faultNodes, NodeNames: others.get(sp) ?? null, FaultTimes: input.nowSec, JobId: input.jobId,
  }]));
  return { write: true, entry, faultNodes };
}

/** Why an entry is cleared (each after ClusterD's wait, see clearDelayMs). */
export type ClearCause = 'recover-success' | 'podgroup-deleted' | 'reschedule-in-place';

export type FaultJobInfoOp =
  | { readonly kind: 'publish'; readonly jobId: string; readonly value: string; readonly dueMs: number }
  /** `node` set (reschedule-in-place): cleared only when the entry names that node a fault node. */
  | { readonly kind: 'clear'; readonly jobId: string; readonly node: string; readonly cause: ClearCause; readonly dueMs: number };

/** ClusterD's ReleaseTimeOut: the wait for NodeD, and the delay of every clear. */
export const RELEASE_WAIT_MS = 10_000;
/** ClusterD's PreReleaseWaitTimeOut: added to a reschedule-in-place clear of a job whose entry was not written by an update. */
export const PRE_RELEASE_WAIT_MS = 60_000;

/**
 * The delay of a clear from its cause. A reschedule-in-place waits 60 s more unless the job's entry
 * was last written into an existing ConfigMap: ClusterD marks the job "refreshed" only after an
 * update, not after the create of the ConfigMap.
 */
export function clearDelayMs(cause: ClearCause, updatedBefore: boolean): number {
  return cause === 'reschedule-in-place' && !updatedBefore ? RELEASE_WAIT_MS + PRE_RELEASE_WAIT_MS : RELEASE_WAIT_MS;
}

export type OpOutcome = 'created' | 'updated' | 'cleared' | 'no-configmap' | 'no-entry' | 'not-a-fault-node' | 'unreadable-entry';

export interface FaultJobInfoStep {
  /** The data to hold; undefined: the ConfigMap stays absent. */
  readonly data: Readonly<Record<string, string>> | undefined;
  /** Jobs whose entry was last published by an update (ClusterD's refreshCMIds). */
  readonly updated: ReadonlySet<string>;
  readonly outcomes: ReadonlyArray<{ readonly op: FaultJobInfoOp; readonly outcome: OpOutcome }>;
}

/**
 * Applies due operations in order to the ConfigMap's data (`actual` undefined: no ConfigMap), as
 * ClusterD's one get-and-update per operation would. `faultNodes` reads an entry's fault nodes
 * (undefined: unreadable, so a node-scoped clear leaves it, as ClusterD's checkNodeExist does).
 */
export function applyFaultJobInfoOps(
  actual: Readonly<Record<string, string>> | undefined, ops: readonly FaultJobInfoOp[], updated: ReadonlySet<string>,
  faultNodes: (value: string) => ReadonlySet<string> | undefined,
): FaultJobInfoStep {
  let data = actual === undefined ? undefined : { ...actual };
  const upd = new Set(updated);
  const outcomes: Array<{ op: FaultJobInfoOp; outcome: OpOutcome }> = [];
  for (const op of ops) {
    if (op.kind === 'publish') {
      const created = data === undefined;
      data = { ...data, [op.jobId]: op.value };
      if (!created) upd.add(op.jobId);
      outcomes.push({ op, outcome: created ? 'created' : 'updated' });
      continue;
    }
    const value = data?.[op.jobId];
    let outcome: OpOutcome;
    if (data === undefined) outcome = 'no-configmap';
    else if (value === undefined) outcome = 'no-entry';
    else if (op.node !== '' && faultNodes(value) === undefined) outcome = 'unreadable-entry';
    else if (op.node !== '' && !faultNodes(value)!.has(op.node)) outcome = 'not-a-fault-node';
    else {
      const { [op.jobId]: _gone, ...rest } = data;
      data = rest;
      upd.delete(op.jobId);
      outcome = 'cleared';
    }
    outcomes.push({ op, outcome });
  }
  return { data, updated: upd, outcomes };
}

/** The hourly prune: entries of jobs the controller does not know are dropped (ClusterD's refreshFaultJobInfoCmData). */
export function pruneFaultJobInfo(actual: Readonly<Record<string, string>>, known: (jobId: string) => boolean): { data: Record<string, string>; dropped: string[] } {
  const keys = Object.keys(actual);
  const dropped = keys.filter((k) => !known(k));
  return { data: Object.fromEntries(keys.filter((k) => known(k)).map((k) => [k, actual[k]!])), dropped };
}
