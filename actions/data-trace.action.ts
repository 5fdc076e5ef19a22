/**
 * `data-trace-<job>` in the job's namespace: the profiling switch TrainingDataTrace's Modify writes
 * when every pod of the job mounts it (component/clusterd/pkg/domain/profile/profiling_utils.go
 * CreateDataTraceCm / UpdateDataTraceCm). Created with label `reset=true`, the PodGroup's
 * controller ownerReference and `profilingSwitch` (the five switches, Go's json.Marshal of
 * SwitchStruct); an update sets the ownerReferences to that one owner and replaces
 * `profilingSwitch`, keeping the other keys and the labels (a merge patch: ClusterD re-reads and
 * updates, which has the same effect, and we do not read the apiserver outside the informers).
 *
 * Our own last write is kept until the informer catches up, so a Get right after a Modify reads it
 * (ClusterD reads the apiserver each time).
 */
import { ApiError, isConflict, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { CachedMeta, ConfigMap } from '../runtime/kube-objects.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { goJson } from '../schemas/go-json.ts';
import type { ProfilingSwitch } from '../grpc/messages.ts';

export const DATA_TRACE_PREFIX = 'data-trace-';
export const DATA_TRACE_KEY = 'profilingSwitch';
const KIND = 'data_trace';

export type OwnerReference = NonNullable<CachedMeta['ownerReferences']>[number];
/** Go's zero metav1.OwnerReference (what ClusterD sends when the PodGroup has no controller). */
export const NO_OWNER = { apiVersion: '', kind: '', name: '', uid: '' } as const;

/** json.Marshal(SwitchStruct): the fields in their Go declaration order. */
export const encodeSwitch = (s: ProfilingSwitch): string =>
  goJson({ CommunicationOperator: s.CommunicationOperator, Step: s.Step, SaveCheckpoint: s.SaveCheckpoint, FP: s.FP, DataLoader: s.DataLoader });

/** client-go's error text: the apiserver Status message. */
const apiText = (e: unknown): string => {
  if (e instanceof ApiError) {
    const m = (e.body as { message?: unknown } | undefined)?.message;
    if (typeof m === 'string' && m !== '') return m;
  }
  return e instanceof Error ? e.message : String(e);
};

export interface DataTraceWriterDeps {
  readonly client: KubeClient;
  /** The informer's copy (label reset=true, controllers/sources/sources.ts dataTraceConfigMaps). */
  readonly cached: (namespace: string, name: string) => ConfigMap | undefined;
  readonly metrics?: Metrics;
  /** The controller's clock: our last write is trusted over the informer for LAST_WRITE_TTL_MS at most. */
  readonly now: () => number;
}

/** The informer sees our write well within this; after it a deleted ConfigMap is not resurrected by our copy. */
const LAST_WRITE_TTL_MS = 10_000;

export class DataTraceConfigMaps {
  private readonly d: DataTraceWriterDeps;
  private readonly lastWritten = new Map<string, { readonly obj: ConfigMap; readonly atMs: number }>();

  constructor(d: DataTraceWriterDeps) { this.d = d; }

  /** The newer of the informer's copy and our last write of `data-trace-<jobName>`. */
  read(namespace: string, jobName: string): ConfigMap | undefined {
    const name = DATA_TRACE_PREFIX + jobName;
    const key = `${namespace}/${name}`;
    const cached = this.d.cached(namespace, name);
    const last = this.lastWritten.get(key);
    if (last === undefined) return cached;
    if (this.d.now() - last.atMs > LAST_WRITE_TTL_MS) { this.lastWritten.delete(key); return cached; }
    const mine = last.obj;
    const rv = (o: ConfigMap | undefined): number => Number(o?.metadata?.resourceVersion ?? -1);
    if (cached !== undefined && rv(cached) >= rv(mine)) { this.lastWritten.delete(key); return cached; }
    return mine;
  }

  /** CreateDataTraceCm; the error text (`failed to create configmap [ns/job], err: ...`) on failure. */
  async create(namespace: string, jobName: string, sw: ProfilingSwitch, owner: OwnerReference | typeof NO_OWNER): Promise<string | undefined> {
    const body: ConfigMap = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: DATA_TRACE_PREFIX + jobName, namespace, labels: { reset: 'true' }, ownerReferences: [owner as OwnerReference] },
      data: { [DATA_TRACE_KEY]: encodeSwitch(sw) },
    };
    return this.write(namespace, jobName, 'create', () => this.d.client.create<ConfigMap>(paths.configMaps(namespace), body));
  }

  /** UpdateDataTraceCm; the error text (`failed to update configmap [ns/job], err: ...`) on failure. */
  async update(namespace: string, jobName: string, sw: ProfilingSwitch, owner: OwnerReference | typeof NO_OWNER): Promise<string | undefined> {
    const patch = { metadata: { ownerReferences: [owner] }, data: { [DATA_TRACE_KEY]: encodeSwitch(sw) } };
    return this.write(namespace, jobName, 'update', () => this.d.client.patch<ConfigMap>(paths.configMap(namespace, DATA_TRACE_PREFIX + jobName), patch, 'merge'));
  }

  private async write(namespace: string, jobName: string, verb: 'create' | 'update', run: () => Promise<ConfigMap>): Promise<string | undefined> {
    try {
      const obj = await run();
      if (obj.metadata?.managedFields !== undefined) delete obj.metadata.managedFields;
      this.lastWritten.set(`${namespace}/${DATA_TRACE_PREFIX}${jobName}`, { obj, atMs: this.d.now() });
      this.d.metrics?.apiWrites.inc({ kind: KIND, result: 'success' });
      return undefined;
    } catch (e) {
      if (isConflict(e)) this.d.metrics?.apiConflicts.inc({ kind: KIND });
      this.d.metrics?.apiWrites.inc({ kind: KIND, result: e instanceof ApiError ? String(e.statusCode) : 'error' });
      return `failed to ${verb} configmap [${namespace}/${jobName}], err: ${apiText(e)}`;
    }
  }
}
