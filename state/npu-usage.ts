/**
 * Which NPUs are in use, and by which job, from the pod cache: what ClusterD's manual separation
 * needs (a fault counts only on an NPU a job uses, docs/rules.md#manual.increment-faults) and what pre-separate needs
 * (a chip in use keeps its job, docs/rules.md#ingest.pre-separate). An NPU is in use when a pod bound to its node, not yet
 * Succeeded or Failed, lists it in `huawei.com/AscendReal` and requests at least that many NPUs
 * (policy/jobs/npu-claims.ts; `annotation` mode, ClusterD's, takes the annotation as written). The job key is `<ns>/<PodGroup name>`
 * (Volcano's `scheduling.k8s.io/group-name` annotation), else `<ns>/<owner name>-<owner uid>` of the
 * pod's controller, the same key the job view uses. Kept incrementally from pod events.
 */
import { objectKey, type WatchEvent } from '../runtime/reflector.ts';
import { npuClaimOf, type NpuClaimMode } from '../policy/jobs/npu-claims.ts';
import type { Pod } from '../runtime/kube-objects.ts';
import type { NpuUsage } from '../policy/faults/fault-policy-view.ts';

const GROUP_NAME_ANNOTATION = 'scheduling.k8s.io/group-name';

interface PodUse {
  readonly node: string;
  readonly devices: readonly string[];
  readonly jobKey: string | undefined;
}

export type { NpuUsage };

/** The pod's NPU use; its claim counts only with a matching NPU request unless `claims` is `annotation` (ClusterD). */
export function podUse(p: Pod, claims: NpuClaimMode = 'verified'): PodUse | undefined {
  const node = p.spec?.nodeName;
  const phase = p.status?.phase;
  if (node === undefined || node === '' || phase === 'Succeeded' || phase === 'Failed') return undefined;
  const devices = npuClaimOf(p, claims).npus;
  if (devices.length === 0) return undefined;
  const ns = p.metadata?.namespace ?? '';
  const group = p.metadata?.annotations?.[GROUP_NAME_ANNOTATION];
  const owner = p.metadata?.ownerReferences?.find((r) => r.controller === true);
  const jobKey = group !== undefined && group !== '' ? `${ns}/${group}` : owner !== undefined ? `${ns}/${owner.name}-${owner.uid}` : undefined;
  return { node, devices, jobKey };
}

const sameUse = (a: PodUse | undefined, b: PodUse | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.node === b.node && a.jobKey === b.jobKey && a.devices.join(',') === b.devices.join(','));

export class NpuUsageIndex implements NpuUsage {
  private readonly claims: NpuClaimMode;
  private readonly byPod = new Map<string, PodUse>();
  /** node -> pod key -> use */
  private readonly byNode = new Map<string, Map<string, PodUse>>();

  constructor(claims: NpuClaimMode = 'verified') {
    this.claims = claims;
  }

  /** Applies a pod event; returns the nodes whose NPU usage changed. */
  apply(ev: WatchEvent<Pod>): string[] {
    const key = objectKey(ev.obj);
    const before = this.byPod.get(key);
    const after = ev.type === 'delete' ? undefined : podUse(ev.obj, this.claims);
    if (sameUse(before, after)) return [];
    if (before !== undefined) {
      this.byPod.delete(key);
      const m = this.byNode.get(before.node);
      m?.delete(key);
      if (m?.size === 0) this.byNode.delete(before.node);
    }
    if (after !== undefined) {
      this.byPod.set(key, after);
      let m = this.byNode.get(after.node);
      if (m === undefined) { m = new Map(); this.byNode.set(after.node, m); }
      m.set(key, after);
    }
    return [...new Set([before?.node, after?.node].filter((n): n is string => n !== undefined))];
  }

  /** Rebuilds from a cache (start, relist). */
  reset(pods: Iterable<Pod>): void {
    this.byPod.clear();
    this.byNode.clear();
    for (const p of pods) this.apply({ type: 'add', obj: p });
  }

  jobOf(node: string, device: string): string | undefined {
    for (const u of this.byNode.get(node)?.values() ?? []) if (u.devices.includes(device)) return u.jobKey;
    return undefined;
  }

  inUse(node: string, device: string): boolean {
    for (const u of this.byNode.get(node)?.values() ?? []) if (u.devices.includes(device)) return true;
    return false;
  }

  nodeHasNpuPods(node: string): boolean {
    return (this.byNode.get(node)?.size ?? 0) > 0;
  }
}
