/**
 * Metadata patches of the recovery and hot-switch FSMs (docs/rules.md#recover.fsm, #hotswitch.fsm; docs/formats.md#pod-contract): the PodGroup label
 * `process-recover-enable` and annotation `ProcessRecoverStatus`, pod labels (`fault-type`) and the
 * hot-switch pod annotations. JSON merge patches; pod patches carry the pod's UID as a precondition
 * (`metadata.uid`), so a replaced pod of the same name is never touched (answered `gone`).
 */
import { isConflict, isNotFound, isUidMismatch, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export type PatchResult = 'patched' | 'gone';

export interface PatchDeps {
  readonly client: KubeClient;
  readonly metrics?: Metrics;
}

/** Sets labels / annotations on a PodGroup (a `null` value removes the key). */
export async function patchPodGroupMeta(
  d: PatchDeps, namespace: string, name: string,
  meta: { readonly labels?: Readonly<Record<string, string | null>>; readonly annotations?: Readonly<Record<string, string | null>> },
): Promise<PatchResult> {
  try {
    await d.client.patch(paths.podGroup(namespace, name), { metadata: { ...meta } }, 'merge');
    d.metrics?.apiWrites.inc({ kind: 'podgroup_meta', result: 'success' });
    return 'patched';
  } catch (e) {
    d.metrics?.apiWrites.inc({ kind: 'podgroup_meta', result: isNotFound(e) ? '404' : 'error' });
    if (isNotFound(e)) return 'gone';
    throw e;
  }
}

/** Sets labels / annotations on one pod, only if it still has `uid` (when given). */
export async function patchPodMeta(
  d: PatchDeps, namespace: string, pod: { readonly name: string; readonly uid?: string },
  meta: { readonly labels?: Readonly<Record<string, string | null>>; readonly annotations?: Readonly<Record<string, string | null>> },
): Promise<PatchResult> {
  const body = { metadata: { ...(pod.uid ? { uid: pod.uid } : {}), ...meta } };
  try {
    await d.client.patch(paths.pod(namespace, pod.name), body, 'merge');
    d.metrics?.apiWrites.inc({ kind: 'pod_meta', result: 'success' });
    return 'patched';
  } catch (e) {
    // 404: pod gone; 409 or a refused uid (422): the pod was replaced under the same name.
    if (isNotFound(e) || isConflict(e) || isUidMismatch(e)) {
      d.metrics?.apiWrites.inc({ kind: 'pod_meta', result: 'gone' });
      return 'gone';
    }
    d.metrics?.apiWrites.inc({ kind: 'pod_meta', result: 'error' });
    throw e;
  }
}

/** Sets annotations on a node (the stress test's `NodeHealthyStatus`, docs/rules.md#recover.stress-test); a node gone is `gone`. */
export async function patchNodeAnnotations(d: PatchDeps, name: string, annotations: Readonly<Record<string, string>>): Promise<PatchResult> {
  try {
    await d.client.patch(paths.node(name), { metadata: { annotations: { ...annotations } } }, 'merge');
    d.metrics?.apiWrites.inc({ kind: 'node_meta', result: 'success' });
    return 'patched';
  } catch (e) {
    d.metrics?.apiWrites.inc({ kind: 'node_meta', result: isNotFound(e) ? '404' : 'error' });
    if (isNotFound(e)) return 'gone';
    throw e;
  }
}

/** `set` plus `remove` as one merge patch map (removals are `null`). */
export function annotationPatch(set: Readonly<Record<string, string>>, remove: readonly string[]): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const k of remove) out[k] = null;
  for (const [k, v] of Object.entries(set)) out[k] = v;
  return out;
}
