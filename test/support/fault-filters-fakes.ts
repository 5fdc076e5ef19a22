/**
 * Stand-ins for the fault-filter and relation-fault unit tests (not a test file): informer-like
 * sources that emit events, and job builders.
 */
import { Subject } from 'rxjs';
import type { KubeObject } from '../../runtime/kube-client.ts';
import type { WatchEvent } from '../../runtime/reflector.ts';
import type { FaultRecord, FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { JobPodView } from '../../policy/jobs/job-view.ts';
import { NO_FILTER_RULES } from '../../policy/filters/custom-filter.ts';
import type { FilterJob } from '../../policy/filters/fault-filters.ts';
import { ownerJobsOf, podGroupOf, podOf } from './job-fakes.ts';
import type { Sources } from '../../controllers/sources/sources.ts';
import { JobIndexFeed, type JobIndexFeedSources } from '../../controllers/sources/job-index-feed.ts';

/** A reflector's store and event stream. */
export class FakeSource<T extends KubeObject> {
  readonly store = new Map<string, T>();
  readonly events$ = new Subject<WatchEvent<T>>();
  get(key: string): T | undefined { return this.store.get(key); }
  private static key(o: KubeObject): string { return `${o.metadata?.namespace}/${o.metadata?.name}`; }
  put(obj: T): void {
    const old = this.store.get(FakeSource.key(obj));
    this.store.set(FakeSource.key(obj), obj);
    this.events$.next(old === undefined ? { type: 'add', obj } : { type: 'update', obj, old });
  }
  remove(obj: T): void {
    this.store.delete(FakeSource.key(obj));
    this.events$.next({ type: 'delete', obj });
  }
}

type FakeSources = Pick<Sources, 'pods' | 'podGroups' | 'vcJobs' | 'ascendJobs' | 'jobIndex'>;

/** Pods, PodGroups, their owner jobs, and the one job index fed from them as the Sources' is (claims `verified` by default, as in production). */
export function fakeSources(claims: 'verified' | 'annotation' = 'verified'): { pods: FakeSource<KubeObject>; podGroups: FakeSource<KubeObject>; sources: FakeSources } {
  const pods = new FakeSource<KubeObject>();
  const podGroups = new FakeSource<KubeObject>();
  const caches = { pods, podGroups, ...ownerJobsOf(podGroups) } as unknown as JobIndexFeedSources;
  return { pods, podGroups, sources: { ...caches, jobIndex: new JobIndexFeed(caches, claims) } as unknown as FakeSources };
}

/** A Volcano job's PodGroup with labels and annotations. */
export function podGroup(ns: string, job: string, uid: string, meta: { labels?: Record<string, string>; annotations?: Record<string, string>; rv?: string } = {}): KubeObject {
  const pg = podGroupOf(ns, job, uid, meta.labels ?? {});
  return { ...pg, metadata: { ...pg.metadata, annotations: meta.annotations ?? {}, resourceVersion: meta.rv ?? '1' } };
}

/** A container requesting `n` NPUs, as a training pod's (its AscendReal counts only with it: policy/jobs/npu-claims.ts). */
export const npuContainer = (n: number) => ({ name: 'ascend', resources: { limits: { 'huawei.com/Ascend910': String(n) }, requests: { 'huawei.com/Ascend910': String(n) } } });

/** A running pod of the job holding `npus` on `node` (and requesting them), with extra labels. */
export function pod(ns: string, job: string, uid: string, rank: number, node: string, npus: string[], labels: Record<string, string> = {}): KubeObject {
  const p = podOf(ns, job, uid, rank, node, npus);
  return { ...p, metadata: { ...p.metadata, labels }, spec: { ...(p.spec as object), containers: [npuContainer(npus.length)] } };
}

export function rec(node: string, device: string | undefined, code: string, level: NpuFaultLevel, firstSeenMs: number, source: FaultSource = 'npu'): FaultRecord {
  return { node, ...(device === undefined ? {} : { device }), source, code, level, reportedLevel: level, firstSeenMs };
}

export function podView(name: string, node: string, npus: string[], rank: number): JobPodView {
  return { name, uid: `${name}-uid`, node, rank, npus, phase: 'Running', ready: true };
}

export function filterJob(key: string, pods: JobPodView[], over: Partial<FilterJob> = {}): FilterJob {
  return { key, uid: `${key}-uid`, pods, rules: NO_FILTER_RULES, recoverInPlace: { recoverInPlace: false }, ...over };
}
