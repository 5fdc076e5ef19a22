/**
 * External rescheduling (behavior.md A.6 #51, B6 row 4): annotate a fault pod
 * `huawei.com/pod-status=Unhealthy-<faultType>` for an outside platform, up to 3 attempts 200 ms
 * apart (Volcano's figures, C.2). The merge patch carries the pod's UID as a precondition through
 * `metadata.uid`, so a replaced pod of the same name is never annotated.
 */
import { isConflict, isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { POD_STATUS_ANNOTATION, type PodRef } from '../policy/jobs/job-view.ts';

export const POD_STATUS_ATTEMPTS = 3;
export const POD_STATUS_RETRY_MS = 200;

export type AnnotateResult = 'annotated' | 'gone';

export async function annotatePodStatus(
  client: KubeClient, namespace: string, pod: PodRef, value: string,
  o: { metrics?: Metrics; sleep?: (ms: number) => Promise<void> } = {},
): Promise<AnnotateResult> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const patch = { metadata: { uid: pod.uid, annotations: { [POD_STATUS_ANNOTATION]: value } } };
  let last: unknown;
  for (let attempt = 1; attempt <= POD_STATUS_ATTEMPTS; attempt++) {
    try {
      await client.patch(paths.pod(namespace, pod.name), patch, 'merge');
      o.metrics?.apiWrites.inc({ kind: 'pod_annotation', result: 'success' });
      return 'annotated';
    } catch (e) {
      // 404: pod gone; 409: the UID no longer matches (pod replaced). Both: nothing to annotate.
      if (isNotFound(e) || isConflict(e)) { o.metrics?.apiWrites.inc({ kind: 'pod_annotation', result: 'gone' }); return 'gone'; }
      last = e;
      o.metrics?.apiWrites.inc({ kind: 'pod_annotation', result: 'error' });
      if (attempt < POD_STATUS_ATTEMPTS) await sleep(POD_STATUS_RETRY_MS);
    }
  }
  throw last;
}
