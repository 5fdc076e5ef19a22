/**
 * What each informer keeps of an object, applied on receipt (list and watch) before it reaches the
 * cache (issue 16: informer caches that keep only the fields the flows read). Pod and Node are typed
 * closed in runtime/kube-objects.ts, so a reader of a field dropped here does not compile; the
 * others keep the whole object but managedFields.
 *
 * - Pods: identity, labels, annotations, owner, deletion time; the node; phase, reason, message,
 *   condition type/status, container exit codes and IDs (job view, summaries, usage index,
 *   recovery); container names, env values and NPU limits/requests (job summary, ranks per pod);
 *   podIP / podIPs (the gRPC caller check, controllers/grpc-caller.ts).
 *   Dropped: volumes, images, commands, affinity, tolerations, probes, hostIP, timestamps of status.
 *   The hot-switch backup, the one writer that copies a spec, GETs the pod (actions/hot-switch-backup).
 * - Nodes: identity, labels, annotations (serial number); taints (isolation patches the whole
 *   list); condition type/status/lastTransitionTime (readiness); addresses (IP -> node). Dropped:
 *   capacity, allocatable, images, nodeInfo, daemonEndpoints, heartbeats, messages.
 * - cluster-info shards (cluster-info-*, ours): `data` replaced by its digest. The reconciler keeps
 *   what it last wrote and the writer compares digests (runtime/configmap-writer.ts), so the cache's
 *   copy (530 KB at 1,000 nodes x 8 NPUs, tens of MB at 16,000 x 16) was a duplicate.
 */
import type { KubeObject } from '../../runtime/kube-client.ts';
import type { CachedMeta, ConfigMap, Node, Pod } from '../../runtime/kube-objects.ts';
import { dataDigest } from '../../runtime/data-digest.ts';

type AnyObj = Record<string, unknown>;
const obj = (v: unknown): AnyObj | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as AnyObj) : undefined);
const arr = (v: unknown): AnyObj[] | undefined => (Array.isArray(v) ? v.flatMap((x) => (obj(x) === undefined ? [] : [x as AnyObj])) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strMap = (v: unknown): Record<string, string> | undefined => obj(v) as Record<string, string> | undefined;

/** Sets `k` only when the value is there: absent fields stay absent (readers test `=== undefined`). */
function put<T extends object, K extends keyof T>(o: T, k: K, v: T[K] | undefined): void {
  if (v !== undefined) o[k] = v;
}

export function trimMeta(m: KubeObject['metadata']): CachedMeta {
  const out: CachedMeta = {};
  if (m === undefined) return out;
  put(out, 'name', m.name);
  put(out, 'namespace', m.namespace);
  put(out, 'uid', m.uid);
  put(out, 'resourceVersion', m.resourceVersion);
  put(out, 'labels', m.labels);
  put(out, 'annotations', m.annotations);
  put(out, 'ownerReferences', m.ownerReferences);
  put(out, 'deletionTimestamp', m.deletionTimestamp);
  put(out, 'creationTimestamp', m.creationTimestamp);
  return out;
}

const exit = (v: unknown): { terminated?: { exitCode?: number } } | undefined => {
  const t = obj(obj(v)?.terminated);
  if (t === undefined) return obj(v) === undefined ? undefined : {};
  return { terminated: typeof t.exitCode === 'number' ? { exitCode: t.exitCode } : {} };
};

export function trimPod(o: KubeObject): Pod {
  const spec = obj(o.spec);
  const status = obj(o.status);
  const out: Pod = { metadata: trimMeta(o.metadata) };
  if (spec !== undefined) {
    const s: NonNullable<Pod['spec']> = {};
    put(s, 'nodeName', str(spec.nodeName));
    put(s, 'containers', arr(spec.containers)?.map((c) => {
      const r = obj(c.resources);
      const kept: NonNullable<NonNullable<Pod['spec']>['containers']>[number] = { name: str(c.name) ?? '' };
      put(kept, 'env', arr(c.env)?.map((e) => (str(e.value) === undefined ? { name: str(e.name) ?? '' } : { name: str(e.name) ?? '', value: str(e.value)! })));
      if (r !== undefined) {
        const res: { limits?: Record<string, string>; requests?: Record<string, string> } = {};
        put(res, 'limits', strMap(r.limits));
        put(res, 'requests', strMap(r.requests));
        kept.resources = res;
      }
      return kept;
    }));
    out.spec = s;
  }
  if (status !== undefined) {
    const s: NonNullable<Pod['status']> = {};
    put(s, 'phase', str(status.phase));
    put(s, 'reason', str(status.reason));
    put(s, 'message', str(status.message));
    put(s, 'podIP', str(status.podIP));
    put(s, 'podIPs', arr(status.podIPs)?.flatMap((p) => (str(p.ip) === undefined ? [] : [{ ip: str(p.ip)! }])));
    put(s, 'conditions', arr(status.conditions)?.map((c) => ({ type: str(c.type) ?? '', status: str(c.status) ?? '' })));
    put(s, 'containerStatuses', arr(status.containerStatuses)?.map((c) => {
      const kept: NonNullable<NonNullable<Pod['status']>['containerStatuses']>[number] = { name: str(c.name) ?? '' };
      put(kept, 'containerID', str(c.containerID));
      put(kept, 'state', exit(c.state));
      put(kept, 'lastState', exit(c.lastState));
      return kept;
    }));
    out.status = s;
  }
  return out;
}

export function trimNode(o: KubeObject): Node {
  const spec = obj(o.spec);
  const status = obj(o.status);
  const out: Node = { metadata: trimMeta(o.metadata) };
  if (spec !== undefined) {
    const s: NonNullable<Node['spec']> = {};
    if (typeof spec.unschedulable === 'boolean') s.unschedulable = spec.unschedulable;
    put(s, 'taints', spec.taints as NonNullable<Node['spec']>['taints']);
    out.spec = s;
  }
  if (status !== undefined) {
    const s: NonNullable<Node['status']> = {};
    put(s, 'conditions', arr(status.conditions)?.map((c) => {
      const t = str(c.lastTransitionTime);
      return t === undefined ? { type: str(c.type) ?? '', status: str(c.status) ?? '' } : { type: str(c.type) ?? '', status: str(c.status) ?? '', lastTransitionTime: t };
    }));
    put(s, 'addresses', arr(status.addresses)?.map((a) => ({ type: str(a.type) ?? '', address: str(a.address) ?? '' })));
    out.status = s;
  }
  return out;
}

/** A ConfigMap as received, managedFields dropped. */
export function trimConfigMap(o: KubeObject): ConfigMap {
  if (o.metadata?.managedFields !== undefined) delete o.metadata.managedFields;
  return o as ConfigMap;
}

/** cluster-info shards are ours and held by the reconciler: the cache keeps their digest, not their data. */
export const isClusterInfoShard = (name: string): boolean => name.startsWith('cluster-info-');

/** For the mindx-dl ConfigMaps: cluster-info shards digested, the rest (state we read back) whole. */
export function digestClusterInfo(o: KubeObject): ConfigMap {
  const cm = trimConfigMap(o);
  if (!isClusterInfoShard(cm.metadata?.name ?? '')) return cm;
  const { data, ...rest } = cm;
  return { ...rest, dataDigest: dataDigest(data) };
}
