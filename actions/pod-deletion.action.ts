/**
 * Pod deletion for rescheduling (docs/rules.md#resched.job-grace, #resched.job-force): every DELETE carries the pod's UID as a
 * precondition, so a replay against a pod that was already replaced (same name, new UID) answers 409
 * and deletes nothing, and a pod already gone answers 404. Grace = the pod's own termination grace
 * period (Volcano's eviction); force = `gracePeriodSeconds: 0`. Up to 200 requests run in parallel
 * (Volcano's batch size, docs/rules.md#timing.volcano).
 */
import { ApiError, isConflict, isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { PodRef } from '../policy/jobs/job-view.ts';

export const POD_DELETE_BATCH = 200;

export type PodDeleteResult = 'deleted' | 'gone' | 'replaced';

export interface PodDeleteSummary {
  readonly deleted: readonly string[];
  readonly gone: readonly string[];
  readonly replaced: readonly string[];
}

export interface DeletePodsOptions {
  readonly force: boolean;
  readonly metrics?: Metrics;
  readonly signal?: AbortSignal;
}

async function deleteOne(client: KubeClient, namespace: string, pod: PodRef, o: DeletePodsOptions): Promise<PodDeleteResult> {
  const body: Record<string, unknown> = {
    apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: pod.uid },
    ...(o.force ? { gracePeriodSeconds: 0 } : {}),
  };
  const kind = o.force ? 'pod_force_delete' : 'pod_evict';
  try {
    await client.delete(paths.pod(namespace, pod.name), body, o.signal ? { signal: o.signal } : {});
    o.metrics?.apiWrites.inc({ kind, result: 'success' });
    return 'deleted';
  } catch (e) {
    if (isNotFound(e)) { o.metrics?.apiWrites.inc({ kind, result: '404' }); return 'gone'; }
    if (isConflict(e)) { o.metrics?.apiWrites.inc({ kind, result: '409' }); return 'replaced'; }
    o.metrics?.apiWrites.inc({ kind, result: e instanceof ApiError ? String(e.statusCode) : 'error' });
    throw e;
  }
}

/** Deletes the pods (UID preconditions), 200 at a time; throws the first unexpected error after the batch. */
export async function deletePods(client: KubeClient, namespace: string, pods: readonly PodRef[], o: DeletePodsOptions): Promise<PodDeleteSummary> {
  const out: Record<PodDeleteResult, string[]> = { deleted: [], gone: [], replaced: [] };
  for (let i = 0; i < pods.length; i += POD_DELETE_BATCH) {
    const batch = pods.slice(i, i + POD_DELETE_BATCH);
    const results = await Promise.allSettled(batch.map((p) => deleteOne(client, namespace, p, o)));
    let failure: unknown;
    results.forEach((r, j) => {
      if (r.status === 'fulfilled') out[r.value].push(batch[j]!.name);
      else failure ??= r.reason;
    });
    if (failure !== undefined) throw failure;
  }
  return out;
}
