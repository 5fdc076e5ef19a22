/**
 * What each informer keeps of an object, applied on receipt (list and watch) before it reaches the
 * cache (informer caches that keep only the fields the flows read, to bound the heap). Pod and Node are typed
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
 * - Job summaries (`<ns>/job-summary-<job>[-<i>]`, ours, in tenant namespaces; the informer's filter
 *   drops other names): identity, our two labels, `data` replaced by its digest. The label selector
 *   `outside-job-info=true` is one any tenant can set on any ConfigMap, so without this the cache
 *   held whatever a tenant labelled (54 MB of tenant ConfigMaps cost 122 MB of RSS). Our write is
 *   a fresh object as ClusterD's (kube.UpdateOrCreateConfigMap): labels and annotations of others
 *   are not kept, so the cache need not hold them either.
 * - Volcano Jobs and AscendJobs (tenant objects, whole pod templates): identity, the
 *   `custom-job-id` annotation (cut to one character past the statistic's bound, so an over-long
 *   id is still seen as over-long), `status.state.phase` and the conditions (job statistic,
 *   scheduling exceptions). Spec, labels and other annotations are not read.
 * - PodGroups (tenant objects; their status has no subresource, so the tenant writes it too):
 *   metadata as for pods (the job knobs read labels and annotations), `spec.minMember`, `queue`,
 *   `minResources`, `status.phase` and the conditions, whose messages are cut to one character
 *   past the scheduling-exception report's bound (the one reader that copies them out).
 * - Public-fault ConfigMaps (any namespace, a label anyone can set): identity and the one data key
 *   the intake parses (`PublicFault`, itself at most 1 MiB); other keys, labels and annotations
 *   dropped. Each event is a message, applied once; nothing reads the cache's copy later.
 */
import type { KubeObject } from '../../runtime/kube-client.ts';
import type { CachedMeta, ConfigMap, JobObject, Node, Pod, PodGroup } from '../../runtime/kube-objects.ts';
import { dataDigest } from '../../runtime/data-digest.ts';
import { ATLAS_TASK_LABEL, JOB_SUMMARY_LABEL, JOB_SUMMARY_PREFIX } from '../../schemas/job-summary/job-summary.ts';
import { PUBLIC_FAULT_DATA_KEY } from '../../schemas/public-fault/public-fault.ts';

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

/** Where a job's pods mount `data-trace-<job>` (component/clusterd/pkg/domain/profile/constants.go DataTraceConfigPath). */
export const DATA_TRACE_MOUNT_PATH = '/user/cluster-info/datatrace-config';

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
      // Only the mount TrainingDataTrace asks about (every pod of a job mounting it: the switch goes to a ConfigMap).
      const mounts = arr(c.volumeMounts)?.filter((m) => str(m.mountPath) === DATA_TRACE_MOUNT_PATH);
      if (mounts !== undefined && mounts.length > 0) kept.volumeMounts = [{ mountPath: DATA_TRACE_MOUNT_PATH }];
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
    // config.Config's global rank table names each MindIE coordinator / controller pod by its node's address.
    put(s, 'hostIP', str(status.hostIP));
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

/** Identity only: name, namespace, uid, resourceVersion. */
function identity(m: KubeObject['metadata']): CachedMeta {
  const meta: CachedMeta = {};
  put(meta, 'name', m?.name);
  put(meta, 'namespace', m?.namespace);
  put(meta, 'uid', m?.uid);
  put(meta, 'resourceVersion', m?.resourceVersion);
  return meta;
}

/** A public-fault ConfigMap as the intake reads it: identity and the `PublicFault` key. */
export function trimPublicFault(o: KubeObject): ConfigMap {
  const text = (o as ConfigMap).data?.[PUBLIC_FAULT_DATA_KEY];
  return typeof text === 'string' ? { metadata: identity(o.metadata), data: { [PUBLIC_FAULT_DATA_KEY]: text } } : { metadata: identity(o.metadata) };
}

/** Names the job-summary reconciler writes (schemas/job-summary jobSummaryCmName). */
export const isJobSummaryName = (o: KubeObject): boolean => (o.metadata?.name ?? '').startsWith(`${JOB_SUMMARY_PREFIX}-`);

const JOB_SUMMARY_LABELS: readonly string[] = [JOB_SUMMARY_LABEL, ATLAS_TASK_LABEL];

/** A job summary as the writer compares it: identity, our labels, the digest of `data`. */
export function digestJobSummary(o: KubeObject): ConfigMap {
  const m = o.metadata ?? {};
  const meta = identity(m);
  const labels = Object.fromEntries(JOB_SUMMARY_LABELS.flatMap((k) => (typeof m.labels?.[k] === 'string' ? [[k, m.labels[k]]] : [])));
  if (Object.keys(labels).length > 0) meta.labels = labels;
  const out: ConfigMap = { metadata: meta, dataDigest: dataDigest((o as ConfigMap).data) };
  // The writer's PUT starts from this copy: it says what it is.
  if (typeof o.apiVersion === 'string') out.apiVersion = o.apiVersion;
  if (typeof o.kind === 'string') out.kind = o.kind;
  return out;
}

/** The job object's annotation ClusterD copies into current-job-statistic's `customID`. */
export const CUSTOM_JOB_ID_ANNOTATION = 'custom-job-id';

type Condition = { type?: string; status?: string; reason?: string; message?: string };

/** Conditions as the scheduling-exception check reads them; messages cut one past `maxChars` (undefined: whole). */
function conditions(v: unknown, maxChars: number | undefined): Condition[] | undefined {
  return arr(v)?.map((c) => {
    const kept: Condition = {};
    put(kept, 'type', str(c.type));
    put(kept, 'status', str(c.status));
    put(kept, 'reason', str(c.reason));
    const m = str(c.message);
    put(kept, 'message', m === undefined || maxChars === undefined ? m : m.slice(0, maxChars + 1));
    return kept;
  });
}

/** A PodGroup as the flows read it (see the header); `messageMaxChars` as for `conditions`. */
export function trimPodGroup(messageMaxChars: number | undefined): (o: KubeObject) => PodGroup {
  return (o) => {
    const out: PodGroup = { metadata: trimMeta(o.metadata) };
    const spec = obj((o as { spec?: unknown }).spec);
    if (spec !== undefined) {
      const s: Record<string, unknown> = {};
      if (typeof spec.minMember === 'number') s.minMember = spec.minMember;
      put(s, 'queue', str(spec.queue));
      // Only its keys are read (the resource type); null is kept (ClusterD tells it from absent).
      if (spec.minResources === null) s.minResources = null;
      else if (obj(spec.minResources) !== undefined) s.minResources = Object.fromEntries(Object.keys(obj(spec.minResources)!).map((k) => [k, '']));
      out.spec = s;
    }
    const status = obj((o as { status?: unknown }).status);
    if (status !== undefined) {
      const s: NonNullable<PodGroup['status']> = {};
      put(s, 'phase', str(status.phase));
      const cs = conditions(status.conditions, messageMaxChars);
      if (cs !== undefined) s.conditions = cs;
      out.status = s;
    }
    return out;
  };
}

/**
 * A Volcano Job or AscendJob as the job statistic and the scheduling-exception report read it.
 * `customIdMaxChars`: the annotation is cut to one character past it (undefined: kept whole).
 */
export function trimJobObject(customIdMaxChars: number | undefined, messageMaxChars?: number): (o: KubeObject) => JobObject {
  return (o) => {
    const m = o.metadata ?? {};
    const meta = identity(m);
    put(meta, 'deletionTimestamp', m.deletionTimestamp);
    const id = str(m.annotations?.[CUSTOM_JOB_ID_ANNOTATION]);
    if (id !== undefined) meta.annotations = { [CUSTOM_JOB_ID_ANNOTATION]: customIdMaxChars === undefined ? id : id.slice(0, customIdMaxChars + 1) };
    const out: JobObject = { metadata: meta };
    const status = obj((o as { status?: unknown }).status);
    if (status !== undefined) {
      const s: NonNullable<JobObject['status']> = {};
      const phase = str(obj(status.state)?.phase);
      if (phase !== undefined) s.state = { phase };
      put(s, 'conditions', conditions(status.conditions, messageMaxChars));
      out.status = s;
    }
    return out;
  };
}
