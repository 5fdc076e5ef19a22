/**
 * Writes ConfigMaps the controller owns: create when missing, update with the cached
 * resourceVersion (optimistic concurrency) when the data differs, nothing when it is equal.
 * A 409 is thrown back to the work queue, which requeues and re-reads the cache (docs/CONVENTIONS.md#errors).
 */
import { ApiError, isConflict, isNotFound, paths, type KubeClient } from './kube-client.ts';
import type { ConfigMap } from './kube-objects.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { Logger } from '../telemetry/logger.ts';
import { dataDigest } from './data-digest.ts';

export interface WriteResult {
  readonly written: boolean;
  readonly obj?: ConfigMap;
}

export interface ConfigMapTarget {
  readonly namespace: string;
  readonly name: string;
  readonly labels?: Record<string, string>;
  /** Annotations we set (others on the object are kept). */
  readonly annotations?: Record<string, string>;
  /** Annotations of ours that must not be there (e.g. left by an older version); removed if present. */
  readonly removeAnnotations?: readonly string[];
  /** The full desired data map (callers merge keys they do not own from `actual` first). */
  readonly data: Record<string, string>;
  /**
   * The labels and annotations are the object's whole metadata: others are removed (ClusterD's
   * UpdateOrCreateConfigMap sends a fresh object, so a label someone added does not survive it).
   */
  readonly exactMetadata?: boolean;
}

const sameData = (a: Record<string, string> | undefined, b: Record<string, string>): boolean => {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a![k] === b[k]);
};

const sameMap = (a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean =>
  sameData(a ?? {}, b ?? {});

const labelsMissing = (actual: ConfigMap, t: ConfigMapTarget): boolean =>
  t.exactMetadata === true ? !sameMap(actual.metadata?.labels, t.labels) || !sameMap(actual.metadata?.annotations, t.annotations) :
  Object.entries(t.labels ?? {}).some(([k, v]) => actual.metadata?.labels?.[k] !== v) ||
  Object.entries(t.annotations ?? {}).some(([k, v]) => actual.metadata?.annotations?.[k] !== v) ||
  (t.removeAnnotations ?? []).some((k) => actual.metadata?.annotations?.[k] !== undefined);

/** The object's annotations with ours set and the unwanted ones removed (undefined when none remain). */
function mergedAnnotations(actual: ConfigMap, t: ConfigMapTarget): Record<string, string> | undefined {
  const out: Record<string, string> = { ...actual.metadata?.annotations, ...t.annotations };
  for (const k of t.removeAnnotations ?? []) delete out[k];
  return Object.keys(out).length === 0 ? undefined : out;
}

export class ConfigMapWriter {
  private readonly client: KubeClient;
  private readonly metrics: Metrics | undefined;
  private readonly dryRun: boolean;
  private readonly log: Logger | undefined;
  /** Counts writes by `kind` label (tests and the benchmark read this). */
  readonly writes = new Map<string, number>();
  /** Our last write of each object, until the informer catches up (saves a 409 per write). */
  private readonly lastWritten = new Map<string, ConfigMap>();
  /** The last desired data compared with a digest-only cache copy, and its digest (hashed once per change). */
  private readonly digests = new Map<string, { readonly data: Record<string, string>; readonly digest: string }>();

  /**
   * Whether the object already holds `target`'s data. A cache that keeps only the digest of the data
   * (cluster-info shards, controllers/sources/cache-shapes.ts) is compared by digest.
   */
  private holds(actual: ConfigMap, target: ConfigMapTarget): boolean {
    if (actual.dataDigest === undefined || actual.data !== undefined) return sameData(actual.data, target.data);
    const key = `${target.namespace}/${target.name}`;
    const memo = this.digests.get(key);
    let digest = memo !== undefined && sameData(memo.data, target.data) ? memo.digest : undefined;
    if (digest === undefined) {
      digest = dataDigest(target.data);
      this.digests.set(key, { data: target.data, digest });
    }
    return digest === actual.dataDigest;
  }

  /**
   * The newer of the informer's copy and our own last write. resourceVersions are compared as
   * integers: etcd's are, and a wrong guess only costs a 409 and a requeue.
   */
  fresher(namespace: string, name: string, cached: ConfigMap | undefined): ConfigMap | undefined {
    const mine = this.lastWritten.get(`${namespace}/${name}`);
    if (mine === undefined) return cached;
    if (cached === mine) return mine; // a caller handing back our own copy is not the informer catching up
    const rv = (o: ConfigMap | undefined): number => Number(o?.metadata?.resourceVersion ?? -1);
    if (cached !== undefined && rv(cached) >= rv(mine)) { this.lastWritten.delete(`${namespace}/${name}`); return cached; }
    return mine;
  }

  constructor(client: KubeClient, opts: { metrics?: Metrics; dryRun?: boolean; log?: Logger } = {}) {
    this.client = client;
    this.metrics = opts.metrics;
    this.dryRun = opts.dryRun ?? false;
    this.log = opts.log;
  }

  /** `kind` labels metrics (e.g. `cluster_info`); `actual` is the cached object or undefined. */
  async ensure(kind: string, target: ConfigMapTarget, cached: ConfigMap | undefined): Promise<WriteResult> {
    const actual = this.fresher(target.namespace, target.name, cached);
    if (actual !== undefined && this.holds(actual, target) && !labelsMissing(actual, target)) return { written: false, obj: actual };
    if (this.dryRun) {
      this.log?.info('dry run: would write ConfigMap', { kind, namespace: target.namespace, name: target.name, keys: Object.keys(target.data) });
      return { written: false };
    }
    try {
      let obj: ConfigMap;
      if (actual === undefined) {
        obj = await this.client.create<ConfigMap>(paths.configMaps(target.namespace), {
          apiVersion: 'v1', kind: 'ConfigMap',
          metadata: { name: target.name, namespace: target.namespace, labels: target.labels, annotations: target.annotations },
          data: target.data,
        });
      } else {
        const { dataDigest: _cacheOnly, ...sent } = actual;
        obj = await this.client.replace<ConfigMap>(paths.configMap(target.namespace, target.name), {
          ...sent,
          metadata: target.exactMetadata === true
            ? { ...actual.metadata, labels: target.labels, annotations: target.annotations }
            : { ...actual.metadata, labels: { ...actual.metadata?.labels, ...target.labels }, annotations: mergedAnnotations(actual, target) },
          data: target.data,
        });
      }
      // Kept as the informer keeps objects (runtime/reflector.ts): a next write from this copy is
      // then as small, and as protobuf, as one from the cache.
      if (obj.metadata?.managedFields !== undefined) delete obj.metadata.managedFields;
      this.writes.set(kind, (this.writes.get(kind) ?? 0) + 1);
      this.lastWritten.set(`${target.namespace}/${target.name}`, obj);
      this.metrics?.apiWrites.inc({ kind, result: 'success' });
      return { written: true, obj };
    } catch (e) {
      if (isConflict(e)) this.metrics?.apiConflicts.inc({ kind });
      this.metrics?.apiWrites.inc({ kind, result: e instanceof ApiError ? String(e.statusCode) : 'error' });
      throw e;
    }
  }

  /**
   * Deletes the ConfigMap, on the condition that it is still the version we last saw (a concurrent
   * edit is a 409, requeued and decided again on the fresh copy). Absent already = nothing to do.
   */
  async remove(kind: string, namespace: string, name: string, cached: ConfigMap | undefined): Promise<WriteResult> {
    const actual = this.fresher(namespace, name, cached);
    if (actual === undefined) return { written: false };
    if (this.dryRun) {
      this.log?.info('dry run: would delete ConfigMap', { kind, namespace, name });
      return { written: false };
    }
    try {
      await this.client.delete(paths.configMap(namespace, name), { preconditions: { uid: actual.metadata?.uid, resourceVersion: actual.metadata?.resourceVersion } });
    } catch (e) {
      if (isNotFound(e)) return { written: false };
      if (isConflict(e)) this.metrics?.apiConflicts.inc({ kind });
      this.metrics?.apiWrites.inc({ kind, result: e instanceof ApiError ? String(e.statusCode) : 'error' });
      throw e;
    }
    this.lastWritten.delete(`${namespace}/${name}`);
    this.digests.delete(`${namespace}/${name}`);
    this.writes.set(kind, (this.writes.get(kind) ?? 0) + 1);
    this.metrics?.apiWrites.inc({ kind, result: 'success' });
    return { written: true };
  }
}
