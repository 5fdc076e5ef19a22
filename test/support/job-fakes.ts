/**
 * In-memory stand-ins for the jobs unit tests (no apiserver, no jest.mock): a ConfigMap "apiserver"
 * that keeps resourceVersions and answers 409 on a stale write, and reflector-like stores.
 */
import { ApiError, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';

export interface FakeWrite {
  readonly verb: 'create' | 'replace' | 'delete';
  readonly path: string;
  readonly obj?: KubeObject;
}

/** ConfigMaps by `ns/name`, written through create/replace/delete paths. */
export class FakeConfigMaps {
  readonly objects = new Map<string, ConfigMap>();
  readonly writes: FakeWrite[] = [];
  /** When set, every create/replace throws it (an apiserver that is down). */
  failWrites: Error | undefined;
  /** When it answers true for a create/replace's data, that write fails 422 Invalid (a content the apiserver refuses). */
  rejectData: ((data: Readonly<Record<string, string>>) => boolean) | undefined;
  private rv = 100;

  private invalid(method: string, path: string, obj: KubeObject): void {
    const data = (obj as ConfigMap).data ?? {};
    if (this.rejectData?.(data) === true) throw new ApiError(method, path, 422, { reason: 'Invalid', message: 'ConfigMap is invalid' });
  }

  private static key(path: string, obj?: KubeObject): string {
    const m = /\/namespaces\/([^/]+)\/configmaps(?:\/([^/]+))?$/.exec(path);
    if (m === null) throw new Error(`fake: unexpected path ${path}`);
    return `${m[1]}/${m[2] ?? obj?.metadata?.name ?? ''}`;
  }

  get(ns: string, name: string): ConfigMap | undefined {
    return this.objects.get(`${ns}/${name}`);
  }

  /** A KubeClient answering only the ConfigMap calls the writer makes. */
  client(): KubeClient {
    const fake = {
      create: async <T extends KubeObject>(path: string, obj: T): Promise<T> => {
        if (this.failWrites !== undefined) throw this.failWrites;
        this.invalid('POST', path, obj);
        const key = FakeConfigMaps.key(path, obj);
        if (this.objects.has(key)) throw new ApiError('POST', path, 409, { reason: 'AlreadyExists' });
        const saved = { ...obj, metadata: { ...obj.metadata, uid: `uid-${key}`, resourceVersion: String(++this.rv) } } as T;
        this.objects.set(key, saved as ConfigMap);
        this.writes.push({ verb: 'create', path, obj: saved });
        return saved;
      },
      replace: async <T extends KubeObject>(path: string, obj: T): Promise<T> => {
        if (this.failWrites !== undefined) throw this.failWrites;
        this.invalid('PUT', path, obj);
        const key = FakeConfigMaps.key(path);
        const cur = this.objects.get(key);
        if (cur === undefined) throw new ApiError('PUT', path, 404, { reason: 'NotFound' });
        if (obj.metadata?.resourceVersion !== cur.metadata?.resourceVersion) throw new ApiError('PUT', path, 409, { reason: 'Conflict' });
        const saved = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } } as T;
        this.objects.set(key, saved as ConfigMap);
        this.writes.push({ verb: 'replace', path, obj: saved });
        return saved;
      },
      delete: async (path: string): Promise<unknown> => {
        const key = FakeConfigMaps.key(path);
        if (!this.objects.delete(key)) throw new ApiError('DELETE', path, 404, { reason: 'NotFound' });
        this.writes.push({ verb: 'delete', path });
        return {};
      },
    };
    return fake as unknown as KubeClient;
  }
}

/** The part of a Reflector the job index reads. */
export class FakeStore<T extends KubeObject> {
  readonly store = new Map<string, T>();
  get(key: string): T | undefined { return this.store.get(key); }
  put(obj: T): void { this.store.set(`${obj.metadata?.namespace}/${obj.metadata?.name}`, obj); }
  remove(obj: T): void { this.store.delete(`${obj.metadata?.namespace}/${obj.metadata?.name}`); }
}

/**
 * The Volcano Jobs and AscendJobs behind the PodGroups of `groups`, as a cluster where Volcano or the
 * operator made them has them: each PodGroup's controller owner exists in its namespace with that
 * name and UID (state/job-index.ts checks the claim against these caches). Tests of a forged claim
 * pass `except` (PodGroup keys whose owner is missing).
 */
export function ownerJobsOf(groups: { readonly store: ReadonlyMap<string, KubeObject> }, except: ReadonlySet<string> = new Set()) {
  const cache = (group: string) => {
    const all = (): Map<string, KubeObject> => {
      const out = new Map<string, KubeObject>();
      for (const [key, pg] of groups.store) {
        if (except.has(key)) continue;
        const ns = pg.metadata?.namespace ?? '';
        for (const r of pg.metadata?.ownerReferences ?? []) {
          if (r.controller === true && r.apiVersion.split('/')[0] === group) out.set(`${ns}/${r.name}`, { apiVersion: r.apiVersion, kind: r.kind, metadata: { namespace: ns, name: r.name, uid: r.uid } });
        }
      }
      return out;
    };
    return { get: (key: string) => all().get(key), get store(): ReadonlyMap<string, KubeObject> { return all(); } };
  };
  return { vcJobs: cache('batch.volcano.sh'), ascendJobs: cache('mindxdl.gitee.com') };
}

export const vcjobOwner = (name: string, uid: string) => ({ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true });

export function podGroupOf(ns: string, job: string, uid: string, labels: Record<string, string> = {}, minMember = 0): KubeObject {
  return {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: `${job}-${uid}`, namespace: ns, uid: `pg-${uid}`, resourceVersion: '1', labels, ownerReferences: [vcjobOwner(job, uid)] },
    spec: minMember > 0 ? { minMember } : {},
  };
}

export function podOf(ns: string, job: string, uid: string, rank: number, node: string | undefined, npus: string[], extra: { phase?: string; podUid?: string } = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${job}-worker-${rank}`, namespace: ns, uid: extra.podUid ?? `${job}-${rank}-uid`, ownerReferences: [vcjobOwner(job, uid)],
      annotations: { 'hccl/rankIndex': String(rank), 'huawei.com/AscendReal': npus.join(',') },
    },
    spec: node === undefined ? {} : { nodeName: node },
    status: { phase: extra.phase ?? (node === undefined ? 'Pending' : 'Running'), conditions: [{ type: 'Ready', status: node === undefined ? 'False' : 'True' }] },
  };
}
