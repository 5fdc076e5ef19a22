/**
 * Which chips a pod's `huawei.com/AscendReal` claim counts for fault handling. In a real cluster the
 * device plugin writes AscendReal on the pods kubelet allocated NPUs to, and Volcano's ascend plugin
 * on a pod taking a whole node (component/ascend-for-volcano internal/npu/base/task.go
 * setRealUsedNpuToPod, beside `huawei.com/Ascend910`, the chips it picked). But an annotation is a
 * field anyone who may patch the pod writes, and a managedFields manager name is chosen by the
 * client. What the apiserver, scheduler and kubelet do enforce: the pod's NPU request (scheduled and
 * admitted against the node's allocatable, immutable once created) and its node (spec.nodeName,
 * immutable once set). So a claim counts only when the pod requests at least as many NPUs as it
 * names, and only on its own node (the readers match pod node and fault node). A chip the node's
 * device-info does not list needs no check: no fault record names it. On a node, a chip that counted
 * claims of two jobs name is contested: no job's filter hides its faults
 * (policy/filters/fault-filters.ts chipHolders, ownedBy; policy/filters/step-retry-view.ts).
 *
 * ClusterD trusts AscendReal as written (component/clusterd pkg/domain/job/job_util.go
 * GetCustomFilterFaultJobAndUsedDeviceInfoMap, pkg/domain/pod/pod_util.go GetUsedDevicesByNodeName);
 * mode `annotation` does the same (flag --trust-pod-npu-annotations).
 */
import { ASCEND_REAL_ANNOTATION, parseAscendReal } from './job-view.ts';

type StringMap = Readonly<Record<string, string>>;

/** The pod fields a claim is judged on (a structural subset of a Pod). */
export interface ClaimPod {
  readonly metadata?: { readonly annotations?: StringMap };
  readonly spec?: { readonly containers?: ReadonlyArray<{ readonly resources?: { readonly limits?: StringMap; readonly requests?: StringMap } }> };
}

/** `verified`: claims need a matching NPU request. `annotation`: ClusterD, the annotation as written. */
export type NpuClaimMode = 'verified' | 'annotation';

export type ClaimRefusal = 'no-npu-request' | 'more-than-requested';

export interface NpuClaim {
  /** The chips the pod holds as far as fault handling is concerned. */
  readonly npus: readonly string[];
  /** Set when AscendReal named chips that do not count. */
  readonly refused?: { readonly reason: ClaimRefusal; readonly claimed: readonly string[]; readonly requested: number };
}

/** NPU resources: `huawei.com/Ascend910`, `huawei.com/Ascend310P`, vNPU `huawei.com/Ascend910-4c`, `huawei.com/npu`. */
export const isNpuResource = (name: string): boolean => name.startsWith('huawei.com/Ascend') || name === 'huawei.com/npu';

/**
 * NPUs the pod requests: per container, the limit (for extended resources the request must equal it)
 * or else the request, summed over NPU resources. A vNPU is part of one chip, so each counts one.
 * Values that are not plain integers count 0 (the apiserver accepts only integers for them).
 */
export function requestedNpus(p: ClaimPod): number {
  let n = 0;
  for (const c of p.spec?.containers ?? []) {
    const names = new Set([...Object.keys(c.resources?.limits ?? {}), ...Object.keys(c.resources?.requests ?? {})]);
    for (const r of names) {
      if (!isNpuResource(r)) continue;
      const v = (c.resources?.limits?.[r] ?? c.resources?.requests?.[r] ?? '').trim();
      if (/^\d{1,6}$/.test(v)) n += Number(v);
    }
  }
  return n;
}

/** The pod's counted claim: its AscendReal when it requests at least that many NPUs, else none. */
export function npuClaimOf(p: ClaimPod, mode: NpuClaimMode = 'verified'): NpuClaim {
  const claimed = parseAscendReal(p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]);
  if (mode === 'annotation' || claimed.length === 0) return { npus: claimed };
  const requested = requestedNpus(p);
  if (requested >= new Set(claimed).size) return { npus: claimed };
  return { npus: [], refused: { reason: requested === 0 ? 'no-npu-request' : 'more-than-requested', claimed, requested } };
}
