/**
 * A job's last complete placement: where each rank ran (pod, node, chips) the last time every rank
 * of the job had its pod. ClusterD attributes faults to jobs through it, not through the current
 * pods: UpdateCmAndCache sets `PreServerList` from the rank table only when `completedPodNum ==
 * Replicas`, and GetJobServerInfoMap / buildJobServerInfoMap, read by the job fault rank, relation
 * fault, retry and recover-in-place processors, list `PreServerList`
 * (component/clusterd/pkg/domain/job/job_util.go; pod/pod_util.go ConstructRankTableByPod). So a
 * pod the scheduler deleted still maps its node, chips and rank to the job until the job is complete
 * again, and a fault that lands as its pod goes is still the job's fault.
 *
 * Complete here: each rank 0..replicas-1 (replicas: the PodGroup's minMember, else the pods that
 * hold ranks, at least as many as the kept placement) has exactly one pod, not being deleted, on a node, with its chips allocated when it
 * asks for NPUs (ClusterD counts a pod whose devices are allocated or that needs none).
 */
import type { JobPodView, JobView } from './job-view.ts';

export interface PlacedPod {
  readonly name: string;
  readonly uid: string;
  readonly node: string;
  readonly rank: number;
  readonly npus: readonly string[];
}

/** The job's pods by rank, as they were when the job was last complete. */
export interface JobPlacement {
  readonly pods: readonly PlacedPod[];
}

/**
 * The job's placement when its current pods are complete, else undefined (keep the previous one).
 * `asksNpus`: whether the pod requests NPUs (then it counts only once its chips are allocated).
 * `previousPods`: the size of the kept placement; without a minMember the job needs at least as
 * many pods again (else the pods left after a deletion would pass for a smaller complete job).
 */
export function completePlacement(view: Pick<JobView, 'pods' | 'minAvailable'>, asksNpus: (p: JobPodView) => boolean, previousPods = 0): JobPlacement | undefined {
  const holders = view.pods.filter((p) => p.backup !== true && p.terminating !== true);
  const replicas = view.minAvailable ?? Math.max(holders.length, previousPods);
  if (replicas <= 0) return undefined;
  const byRank = new Map<number, JobPodView>();
  for (const p of holders) {
    if (p.rank === undefined || p.rank < 0 || p.rank >= replicas) continue;
    if (byRank.has(p.rank)) return undefined; // two pods claim one rank: no rank table
    byRank.set(p.rank, p);
  }
  if (byRank.size !== replicas) return undefined;
  const pods: PlacedPod[] = [];
  for (let rank = 0; rank < replicas; rank++) {
    const p = byRank.get(rank)!;
    if (p.node === undefined || (p.npus.length === 0 && asksNpus(p))) return undefined;
    pods.push({ name: p.name, uid: p.uid, node: p.node, rank, npus: [...p.npus] });
  }
  return { pods };
}

/** The nodes of a placement. */
export const placementNodes = (pl: JobPlacement): string[] => [...new Set(pl.pods.map((p) => p.node))];
