/**
 * External rescheduling (docs/rules.md#resched.external, #decision.external): annotate a fault pod
 * `huawei.com/pod-status=Unhealthy-<faultType>` for an outside platform. The merge patch carries the
 * pod's UID as a precondition through `metadata.uid`, so a replaced pod of the same name is never
 * annotated. One try: a failed write throws, and the job-decision reconciler's work queue replays
 * the persisted decision with backoff (Volcano tries 3 times, 200 ms apart, docs/rules.md#timing.volcano).
 */
import { isConflict, isNotFound, isUidMismatch, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { POD_STATUS_ANNOTATION, type PodRef } from '../policy/jobs/job-view.ts';

export type AnnotateResult = 'annotated' | 'gone';

export async function annotatePodStatus(
  client: KubeClient, namespace: string, pod: PodRef, value: string, o: { metrics?: Metrics } = {},
): Promise<AnnotateResult> {
  const patch = { metadata: { uid: pod.uid, annotations: { [POD_STATUS_ANNOTATION]: value } } };
  try {
    await client.patch(paths.pod(namespace, pod.name), patch, 'merge');
    o.metrics?.apiWrites.inc({ kind: 'pod_annotation', result: 'success' });
    return 'annotated';
  } catch (e) {
    // 404: pod gone; 409 or a refused uid (422): the pod was replaced. Either way nothing to annotate.
    if (isNotFound(e) || isConflict(e) || isUidMismatch(e)) { o.metrics?.apiWrites.inc({ kind: 'pod_annotation', result: 'gone' }); return 'gone'; }
    o.metrics?.apiWrites.inc({ kind: 'pod_annotation', result: 'error' });
    throw e;
  }
}
