/**
 * The object store behind the in-memory apiserver: what etcd and the apiserver's registry do for the
 * verbs the controller uses (Kubernetes API conventions, "Concurrency Control and Consistency",
 * "Idempotency"; docs "Resource Versions" and "Finalizers").
 *
 * - One resourceVersion counter across every kind (etcd's revision): each write takes the next one.
 * - create: server fields set (uid, creationTimestamp, generation of custom resources, generateName);
 *   409 AlreadyExists. replace/patch: 409 Conflict on a stale resourceVersion, and a replace carrying
 *   another uid; a patch setting another uid is 422 Invalid (the uid is immutable). An update without
 *   resourceVersion is unconditional (422 for custom resources, which require one); an update that
 *   changes nothing writes nothing (same resourceVersion, no event).
 * - delete: preconditions (uid, resourceVersion) answer 409; an object with finalizers, or a bound pod
 *   deleted with a grace period, gets a deletionTimestamp and stays until the finalizers are gone or
 *   the pod's termination completes (`completeTermination`, the kubelet's part).
 * - status subresource: writes to the object keep its status, writes to `/status` change only status.
 * - Every change is kept in a bounded history (the watch cache / etcd before compaction): watches
 *   and list continuations start from it, and answer 410 Gone once their version has been compacted.
 */
import { ApiError, type KubeObject } from '../../../runtime/kube-client.ts';
import { copyJson } from './copy.ts';
import { deepEqual, jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patches.ts';
import { storageKey, type ResourceType, type Target } from './resources.ts';

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One committed change. `obj` carries the change's resourceVersion; `prev` is the object before it. */
export interface Change {
  readonly rv: number;
  readonly type: ChangeType;
  readonly resource: ResourceType;
  readonly namespace: string | undefined;
  readonly key: string;
  readonly obj: KubeObject;
  readonly prev: KubeObject | undefined;
}

interface Entry { readonly resource: ResourceType; readonly namespace: string | undefined; readonly obj: KubeObject }

export interface StoreOptions {
  readonly now: () => number;
  readonly random: () => number;
  readonly historyLimit: number;
  readonly requireNamespace: boolean;
  readonly gracefulPodDeletion: boolean;
  readonly onCommit: (c: Change) => void;
}

type Meta = NonNullable<KubeObject['metadata']>;
/**
 * Stored objects are never changed in place (a write stores a new object), so versions share their
 * unchanged parts; what a caller hands in or gets back is a copy of its own.
 */
const clone = copyJson;
/** RFC 3339 with second precision, as metav1.Time is written. */
export const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
/** The apiserver's generateName alphabet (no vowels, no look-alikes). */
const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/** `configmaps` for the core group, `podgroups.scheduling.volcano.sh` for the others (as Status messages name them). */
export const resourceName = (t: ResourceType): string => (t.apiVersion.includes('/') ? `${t.plural}.${t.apiVersion.split('/')[0]}` : t.plural);

export function statusError(method: string, path: string, code: number, reason: string, message: string, t?: ResourceType, name?: string): ApiError {
  const details = t === undefined ? undefined : {
    ...(name === undefined ? {} : { name }),
    ...(t.apiVersion.includes('/') ? { group: t.apiVersion.split('/')[0] } : {}),
    kind: t.plural,
  };
  const body = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
  // Without a stack: its frames would be this server's, not the caller's, and capturing them (up to
  // 100 under jest) is most of what an error costs; a simulation answers thousands of 404s and 409s.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try { return new ApiError(method, path, code, body); } finally { Error.stackTraceLimit = limit; }
}

export class MemoryStore {
  private readonly objects = new Map<string, Entry>();
  private readonly history: Change[] = [];
  private revision = 0;
  /** Changes at or below this version are forgotten. */
  private compacted = 0;
  private uids = 0;
  private readonly o: StoreOptions;

  constructor(o: StoreOptions) { this.o = o; }

  get resourceVersion(): number { return this.revision; }
  get compactedResourceVersion(): number { return this.compacted; }

  /** Forgets the history up to `rv` (default: all of it), as etcd's compaction does. */
  compact(rv = this.revision): void {
    this.compacted = Math.max(this.compacted, Math.min(rv, this.revision));
    while (this.history.length > 0 && this.history[0]!.rv <= this.compacted) this.history.shift();
  }

  /** Changes after `rv`, oldest first; undefined when some of them were compacted. */
  changesSince(rv: number): readonly Change[] | undefined {
    if (rv < this.compacted) return undefined;
    return this.history.filter((c) => c.rv > rv);
  }

  /** The stored object (not a copy: callers must not change it). */
  peek(t: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects.get(storageKey(t, t.namespaced ? namespace : undefined, name))?.obj;
  }

  /** The objects of `t` in scope (namespace undefined: all) at `rv` (default now), ordered by key; undefined once compacted. */
  snapshot(t: ResourceType, namespace: string | undefined, rv = this.revision): Array<{ readonly key: string; readonly obj: KubeObject }> | undefined {
    const inScope = (e: { resource: ResourceType; namespace: string | undefined }): boolean =>
      e.resource === t && (namespace === undefined || e.namespace === namespace);
    const state = new Map<string, KubeObject>();
    for (const [k, e] of this.objects) if (inScope(e)) state.set(k, e.obj);
    if (rv < this.revision) {
      if (rv < this.compacted) return undefined;
      for (let i = this.history.length - 1; i >= 0 && this.history[i]!.rv > rv; i--) {
        const c = this.history[i]!;
        if (!inScope(c)) continue;
        if (c.type === 'ADDED') state.delete(c.key);
        else state.set(c.key, c.prev!);
      }
    }
    return [...state.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([key, obj]) => ({ key, obj }));
  }

  /** `obj` is the store's own (built by the write, shared with no caller); undefined: `prev` is deleted as it is. */
  private commit(type: ChangeType, t: ResourceType, namespace: string | undefined, obj: KubeObject | undefined, prev: KubeObject | undefined): KubeObject {
    const rv = ++this.revision;
    const stored: KubeObject = { ...(obj ?? prev!) };
    stored.metadata = { ...stored.metadata, resourceVersion: String(rv) };
    const ns = t.namespaced ? namespace : undefined;
    const key = storageKey(t, ns, stored.metadata.name ?? '');
    if (type === 'DELETED') this.objects.delete(key); else this.objects.set(key, { resource: t, namespace: ns, obj: stored });
    const change: Change = { rv, type, resource: t, namespace: ns, key, obj: stored, prev };
    this.history.push(change);
    while (this.history.length > this.o.historyLimit) this.compacted = this.history.shift()!.rv;
    this.o.onCommit(change);
    return clone(stored);
  }

  get(method: string, path: string, tg: Target): KubeObject {
    return clone(this.current(method, path, tg));
  }

  private current(method: string, path: string, tg: Target): KubeObject {
    const obj = this.peek(tg.type, tg.namespace, tg.name!);
    if (obj === undefined) throw statusError(method, path, 404, 'NotFound', `${resourceName(tg.type)} "${tg.name}" not found`, tg.type, tg.name);
    return obj;
  }

  create(path: string, tg: Target, body: KubeObject): KubeObject {
    const t = tg.type;
    const copy = clone(body);
    const m: Meta = { ...copy.metadata };
    if (t.namespaced && m.namespace !== undefined && m.namespace !== tg.namespace) {
      throw statusError('POST', path, 400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    if (m.name === undefined || m.name === '') {
      const gen = m.generateName as string | undefined;
      if (gen === undefined || gen === '') throw statusError('POST', path, 422, 'Invalid', `${t.kind} "" is invalid: metadata.name: Required value: name or generateName is required`, t);
      m.name = gen + Array.from({ length: 5 }, () => NAME_CHARS[Math.floor(this.o.random() * NAME_CHARS.length)]).join('');
    }
    const name = m.name;
    if (t.namespaced && this.o.requireNamespace && !this.objects.has(storageKey(NAMESPACE, undefined, tg.namespace!))) {
      throw statusError('POST', path, 404, 'NotFound', `namespaces "${tg.namespace}" not found`, NAMESPACE, tg.namespace);
    }
    const key = storageKey(t, tg.namespace, name);
    if (this.objects.has(key)) throw statusError('POST', path, 409, 'AlreadyExists', `${resourceName(t)} "${name}" already exists`, t, name);
    delete m.resourceVersion; delete m.deletionTimestamp; delete m.deletionGracePeriodSeconds; delete m.managedFields;
    const uid = ++this.uids;
    const meta: Meta = {
      ...m, name, ...(t.namespaced ? { namespace: tg.namespace } : {}),
      uid: `00000000-0000-4000-8000-${uid.toString(16).padStart(12, '0')}`,
      ...(t.custom ? { generation: 1 } : {}),
      creationTimestamp: rfc3339(this.o.now()),
    };
    if (!t.namespaced) delete meta.namespace;
    const obj: KubeObject = { ...copy, apiVersion: t.apiVersion, kind: t.kind, metadata: meta };
    if (t.kind === 'Pod') obj.status = { phase: 'Pending', qosClass: qosClass(obj) };
    else if (t.kind === 'Namespace') obj.status = { phase: 'Active' };
    else if (t.statusSubresource && t.custom) delete obj.status;
    return this.commit('ADDED', t, tg.namespace, obj, undefined);
  }

  replace(method: string, path: string, tg: Target, body: KubeObject, fromPatch = false): KubeObject {
    const t = tg.type;
    if (tg.subresource !== undefined && tg.subresource !== 'status') throw statusError(method, path, 404, 'NotFound', 'the server could not find the requested resource');
    const cur = this.current(method, path, tg);
    const cm = cur.metadata!;
    const bm = body.metadata ?? {};
    if (bm.name !== undefined && bm.name !== tg.name) {
      throw statusError(method, path, 400, 'BadRequest', `the name of the object (${bm.name}) does not match the name on the URL (${tg.name})`);
    }
    if (t.namespaced && bm.namespace !== undefined && bm.namespace !== tg.namespace) {
      throw statusError(method, path, 400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    const conflict = (msg: string): ApiError => statusError(method, path, 409, 'Conflict', `Operation cannot be fulfilled on ${resourceName(t)} "${tg.name}": ${msg}`, t, tg.name);
    if (bm.resourceVersion === undefined || bm.resourceVersion === '') {
      if (t.custom && !fromPatch) throw statusError(method, path, 422, 'Invalid', `${t.kind}.${t.apiVersion.split('/')[0]} "${tg.name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`, t, tg.name);
    } else if (bm.resourceVersion !== cm.resourceVersion) {
      throw conflict('the object has been modified; please apply your changes to the latest version and try again');
    }
    if (bm.uid !== undefined && bm.uid !== '' && bm.uid !== cm.uid) throw conflict(`Precondition failed: UID in precondition: ${bm.uid}, UID in object meta: ${cm.uid}`);
    let next: KubeObject;
    if (tg.subresource === 'status') {
      next = { ...cur };
      if (body.status === undefined) delete next.status; else next.status = clone(body.status);
    } else {
      next = { ...clone(body), apiVersion: t.apiVersion, kind: t.kind };
      const keep = ['name', 'namespace', 'uid', 'creationTimestamp', 'generation', 'deletionTimestamp', 'deletionGracePeriodSeconds'];
      const meta: Meta = { ...next.metadata };
      for (const k of keep) { if (cm[k] === undefined) delete meta[k]; else meta[k] = cm[k]; }
      delete meta.managedFields;
      next.metadata = meta;
      if (t.statusSubresource) { if (cur.status === undefined) delete next.status; else next.status = cur.status; }
    }
    next.metadata = { ...next.metadata, resourceVersion: cm.resourceVersion };
    if (t.custom && !deepEqual(withoutMetaStatus(next), withoutMetaStatus(cur))) next.metadata.generation = ((cm.generation as number | undefined) ?? 0) + 1;
    if (deepEqual(next, cur)) return clone(cur); // nothing changed: etcd is not written
    const finalizers = next.metadata.finalizers as string[] | undefined;
    if (cm.deletionTimestamp !== undefined && (finalizers ?? []).length === 0 && !this.awaitsKubelet(t, next)) return this.commit('DELETED', t, tg.namespace, next, cur);
    return this.commit('MODIFIED', t, tg.namespace, next, cur);
  }

  patch(path: string, tg: Target, patch: unknown, type: 'merge' | 'strategic' | 'json'): KubeObject {
    const t = tg.type;
    if (type === 'strategic' && t.custom) {
      throw statusError('PATCH', path, 415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
    }
    const cur = this.current('PATCH', path, tg);
    let patched: unknown;
    try {
      patched = type === 'json' ? jsonPatch(cur, patch) : type === 'strategic' ? strategicMergePatch(cur, patch) : mergePatch(cur, patch);
    } catch (e) {
      if (e instanceof PatchError) throw statusError('PATCH', path, e.status, e.status === 400 ? 'BadRequest' : 'Invalid', e.message, t, tg.name);
      throw e;
    }
    if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) throw statusError('PATCH', path, 400, 'BadRequest', 'the patch did not produce an object');
    // A patch that changes the uid is an invalid update (metadata.uid is immutable), not a failed precondition as in a PUT.
    const uid = (patched as KubeObject).metadata?.uid;
    if (uid !== undefined && uid !== cur.metadata?.uid) {
      throw statusError('PATCH', path, 422, 'Invalid', `${t.kind} "${tg.name}" is invalid: metadata.uid: Invalid value: "${uid}": field is immutable`, t, tg.name);
    }
    return this.replace('PATCH', path, tg, patched as KubeObject, true);
  }

  delete(path: string, tg: Target, opts: Record<string, unknown> | undefined): KubeObject {
    const t = tg.type;
    const cur = this.current('DELETE', path, tg);
    const cm = cur.metadata!;
    const pre = (opts?.preconditions ?? {}) as { uid?: string; resourceVersion?: string };
    const conflict = (what: string, want: string, have: unknown): ApiError =>
      statusError('DELETE', path, 409, 'Conflict', `Operation cannot be fulfilled on ${resourceName(t)} "${tg.name}": Precondition failed: ${what} in precondition: ${want}, ${what} in object meta: ${String(have)}`, t, tg.name);
    if (pre.uid !== undefined && pre.uid !== cm.uid) throw conflict('UID', pre.uid, cm.uid);
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== cm.resourceVersion) throw conflict('ResourceVersion', pre.resourceVersion, cm.resourceVersion);
    const finalizers = (cm.finalizers as string[] | undefined) ?? [];
    const grace = this.graceSeconds(t, cur, opts?.gracePeriodSeconds);
    if (finalizers.length === 0 && grace === 0) return this.commit('DELETED', t, tg.namespace, undefined, cur);
    if (cm.deletionTimestamp !== undefined) return clone(cur); // already terminating
    const next = { ...cur };
    next.metadata = { ...next.metadata, deletionTimestamp: rfc3339(this.o.now() + grace * 1000), deletionGracePeriodSeconds: grace };
    if (t.custom) next.metadata.generation = ((cm.generation as number | undefined) ?? 0) + 1;
    return this.commit('MODIFIED', t, tg.namespace, next, cur);
  }

  /** How long a delete waits (pods only: a bound, running pod waits for its kubelet). */
  private graceSeconds(t: ResourceType, obj: KubeObject, asked: unknown): number {
    if (t.kind !== 'Pod' || !this.o.gracefulPodDeletion) return 0;
    const spec = (obj.spec ?? {}) as { nodeName?: string; terminationGracePeriodSeconds?: number };
    const phase = (obj.status as { phase?: string } | undefined)?.phase;
    if (spec.nodeName === undefined || spec.nodeName === '' || phase === 'Succeeded' || phase === 'Failed') return 0;
    return typeof asked === 'number' ? asked : spec.terminationGracePeriodSeconds ?? 30;
  }

  private awaitsKubelet(t: ResourceType, obj: KubeObject): boolean {
    return t.kind === 'Pod' && this.o.gracefulPodDeletion && ((obj.metadata?.deletionGracePeriodSeconds as number | undefined) ?? 0) > 0;
  }

  /** The kubelet's part of a graceful pod deletion: removes terminating pods (without finalizers) that `which` selects. */
  completeTermination(which: (pod: KubeObject) => boolean = () => true): number {
    let n = 0;
    for (const e of [...this.objects.values()]) {
      const m = e.obj.metadata!;
      if (e.resource.kind !== 'Pod' || m.deletionTimestamp === undefined || ((m.finalizers as string[] | undefined) ?? []).length > 0 || !which(e.obj)) continue;
      this.commit('DELETED', e.resource, e.namespace, undefined, e.obj);
      n++;
    }
    return n;
  }
}

const NAMESPACE: ResourceType = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, statusSubresource: true, custom: false, fields: [] };

function withoutMetaStatus(o: KubeObject): KubeObject {
  const { metadata: _m, status: _s, ...rest } = o;
  return rest;
}

/** The pod's QoS class (Kubernetes docs, "Pod Quality of Service Classes"), from cpu and memory requests and limits. */
function qosClass(pod: KubeObject): string {
  const cs = ((pod.spec as { containers?: Array<{ resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }> } | undefined)?.containers) ?? [];
  let any = false;
  let guaranteed = cs.length > 0;
  for (const c of cs) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    for (const r of ['cpu', 'memory']) {
      if (req[r] !== undefined || lim[r] !== undefined) any = true;
      if (lim[r] === undefined || (req[r] !== undefined && req[r] !== lim[r])) guaranteed = false;
    }
  }
  return !any ? 'BestEffort' : guaranteed ? 'Guaranteed' : 'Burstable';
}
