/**
 * What a controller wrote, as a flat map: object key -> field -> value (strings, byte for byte).
 * Every ConfigMap in every namespace (data, labels, annotations), every Namespace, Node (labels,
 * annotations, taints, unschedulable, conditions, capacity/allocatable), Pod (labels, annotations,
 * phase, being deleted), PodGroup (labels, annotations, phase: ClusterD's process-recovery writes
 * there) and Event. Input objects are collected too: a controller that changes or
 * deletes one shows up as a difference. Left out: what the apiserver itself writes on one side or
 * the other at its own pace (the `kubernetes.io/metadata.name` label, Events of its repair
 * controllers such as `ipallocator-repair-controller` on Service default/kubernetes, and
 * `kubernetes-service-cidr-controller` on the default ServiceCIDR).
 */
import type { KubeClient, KubeObject } from '../../runtime/kube-client.ts';

export type Fields = Record<string, string>;
export type Snapshot = Map<string, Fields>;

interface Meta { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string } }

/** Set by the apiserver on both sides alike; not a controller's write. */
const APISERVER_LABELS = new Set(['kubernetes.io/metadata.name']);
/** Event sources inside kube-apiserver (no controller of ours or ClusterD's). */
const APISERVER_EVENT_SOURCE = /^(kube-apiserver|[a-z]+allocator-repair-controller|kubernetes-service-cidr-controller)$/;

function metaFields(o: Meta, out: Fields): void {
  for (const [k, v] of Object.entries(o.metadata?.labels ?? {})) if (!APISERVER_LABELS.has(k)) out[`label ${k}`] = v;
  for (const [k, v] of Object.entries(o.metadata?.annotations ?? {})) out[`annotation ${k}`] = v;
  if (o.metadata?.deletionTimestamp !== undefined) out.deleting = 'true';
}

type Cm = KubeObject & Meta & { data?: Record<string, string>; binaryData?: Record<string, string> };
type NodeObj = KubeObject & Meta & {
  spec?: { taints?: Array<{ key: string; value?: string; effect: string }>; unschedulable?: boolean };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string }>; capacity?: Record<string, string>; allocatable?: Record<string, string> };
};
type PodObj = KubeObject & Meta & { status?: { phase?: string } };
type EventObj = KubeObject & { involvedObject?: { kind?: string; namespace?: string; name?: string }; reason?: string; type?: string; message?: string; source?: { component?: string }; reportingComponent?: string };

export async function collect(client: KubeClient): Promise<Snapshot> {
  const [cms, nss, nodes, pods, events, pgs] = await Promise.all([
    client.list<Cm>('/api/v1/configmaps'),
    client.list<KubeObject & Meta>('/api/v1/namespaces'),
    client.list<NodeObj>('/api/v1/nodes'),
    client.list<PodObj>('/api/v1/pods'),
    client.list<EventObj>('/api/v1/events'),
    client.list<PodObj>('/apis/scheduling.volcano.sh/v1beta1/podgroups'),
  ]);
  const snap: Snapshot = new Map();
  for (const cm of cms.items) {
    const f: Fields = {};
    metaFields(cm, f);
    for (const [k, v] of Object.entries(cm.data ?? {})) f[`data ${k}`] = v;
    for (const [k, v] of Object.entries(cm.binaryData ?? {})) f[`binaryData ${k}`] = v;
    f.exists = 'true';
    snap.set(`ConfigMap ${cm.metadata!.namespace}/${cm.metadata!.name}`, f);
  }
  for (const ns of nss.items) {
    const f: Fields = { exists: 'true' };
    metaFields(ns, f);
    snap.set(`Namespace ${ns.metadata!.name}`, f);
  }
  for (const n of nodes.items) {
    const f: Fields = { exists: 'true' };
    metaFields(n, f);
    for (const t of n.spec?.taints ?? []) f[`taint ${t.key}:${t.effect}`] = t.value ?? '';
    if (n.spec?.unschedulable === true) f.unschedulable = 'true';
    for (const c of n.status?.conditions ?? []) f[`condition ${c.type}`] = `${c.status}/${c.reason ?? ''}`;
    for (const [k, v] of Object.entries(n.status?.capacity ?? {})) f[`capacity ${k}`] = v;
    for (const [k, v] of Object.entries(n.status?.allocatable ?? {})) f[`allocatable ${k}`] = v;
    snap.set(`Node ${n.metadata!.name}`, f);
  }
  for (const p of pods.items) {
    const f: Fields = { exists: 'true', phase: p.status?.phase ?? '' };
    metaFields(p, f);
    snap.set(`Pod ${p.metadata!.namespace}/${p.metadata!.name}`, f);
  }
  for (const pg of pgs.items) {
    const f: Fields = { exists: 'true', phase: pg.status?.phase ?? '' };
    metaFields(pg, f);
    snap.set(`PodGroup ${pg.metadata!.namespace}/${pg.metadata!.name}`, f);
  }
  // Events: one key per (object, reason); the count of such Events and the last message.
  for (const e of events.items) {
    const io = e.involvedObject ?? {};
    if (APISERVER_EVENT_SOURCE.test(e.source?.component ?? e.reportingComponent ?? '')) continue;
    const key = `Event ${io.kind ?? ''} ${io.namespace ?? ''}/${io.name ?? ''} ${e.reason ?? ''}`;
    const f = snap.get(key) ?? { events: '0' };
    f.events = String(Number(f.events) + 1);
    f.type = e.type ?? '';
    f.message = e.message ?? '';
    f.component = e.source?.component ?? e.reportingComponent ?? '';
    snap.set(key, f);
  }
  return snap;
}

/** A stable text of a snapshot (to tell whether a side is still writing). */
export const snapshotText = (s: Snapshot): string =>
  JSON.stringify([...s.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, f]) => [k, Object.entries(f).sort()]));

/**
 * UIDs the apiserver gave the objects the scenario created (Volcano Jobs, AscendJobs, PodGroups,
 * pods): they differ between the two clusters, so normalise.ts names them by object. A kind whose
 * CRD is not installed lists as nothing.
 */
export async function collectUids(client: KubeClient): Promise<Map<string, string>> {
  const kinds: Array<[string, string]> = [
    ['Job', '/apis/batch.volcano.sh/v1alpha1/jobs'], ['AscendJob', '/apis/mindxdl.gitee.com/v1/ascendjobs'],
    ['PodGroup', '/apis/scheduling.volcano.sh/v1beta1/podgroups'], ['Pod', '/api/v1/pods'],
  ];
  const out = new Map<string, string>();
  for (const [kind, path] of kinds) {
    const list = await client.list<KubeObject>(path).catch(() => ({ items: [] as KubeObject[] }));
    for (const o of list.items) if (o.metadata?.uid) out.set(o.metadata.uid, `${kind} ${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`);
  }
  return out;
}
