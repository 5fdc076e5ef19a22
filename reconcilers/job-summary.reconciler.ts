/**
 * Writes ClusterD's `<job ns>/job-summary-<job>[-<i>]` ConfigMaps (schemas/job-summary) for every
 * job with a PodGroup, as ClusterD's job processor does (policy/jobs/job-summary.ts has the state
 * machine): the pending form when the PodGroup appears, the add form with the rank table when the
 * job runs, again when it fails or completes, the delete form when its PodGroup and pods are gone,
 * and deletion of the ConfigMaps on ClusterD's first minute tick at least 60 s after that (unless a
 * job of the same name and namespace has taken the name over).
 *
 * What ClusterD remembers of a job (add time, replicas, status) lives in memory here too: a restart
 * starts from the PodGroups and pods as ClusterD's informers' initial list does. A state is kept
 * only once all its writes succeeded (ClusterD's SaveJobCache after the write), so a failed write is
 * retried from the same state.
 */
import { Subject } from 'rxjs';
import { deleteDueSec, summaryPods, summaryStep, type JobSummaryState, type SummaryContext, type SummaryPod, type SummaryPodGroup } from '../policy/jobs/job-summary.ts';
import { jobSummaryCmName, jobSummaryLabels } from '../schemas/job-summary/job-summary.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

/** A change of one job's summary: what ClusterD's job processor tells its job statistic (PGAdd, PGUpdate, PGDelete, JobInfoDelete). */
export interface JobSummaryChange {
  readonly key: string;
  readonly prev: JobSummaryState | undefined;
  /** undefined: the job's summary was dropped. */
  readonly next: JobSummaryState | undefined;
}

/** ClusterD's job cache (jobSummaryMap), by job key. */
export class JobSummaryStore {
  private readonly jobs = new Map<string, JobSummaryState>();
  /** Every set and delete, in order (synchronously, inside the reconcile that made it). */
  readonly changes$ = new Subject<JobSummaryChange>();
  get(key: string): JobSummaryState | undefined { return this.jobs.get(key); }
  set(key: string, s: JobSummaryState): void {
    const prev = this.jobs.get(key);
    this.jobs.set(key, s);
    this.changes$.next({ key, prev, next: s });
  }
  delete(key: string): void {
    const prev = this.jobs.get(key);
    if (!this.jobs.delete(key)) return;
    this.changes$.next({ key, prev, next: undefined });
  }
  all(): ReadonlyMap<string, JobSummaryState> { return this.jobs; }
}

export interface JobSummaryDeps extends Omit<SummaryContext, 'nowSec'> {
  readonly store: JobSummaryStore;
  readonly podGroup: (jobKey: string) => SummaryPodGroup | undefined;
  readonly pods: (jobKey: string) => SummaryPod[];
  readonly actual: (namespace: string, name: string) => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  /** When the controller started (ClusterD's minute ticker counts from its start). */
  readonly startMs: number;
  /** A hot-switch backup pod whose source pod was deleted since the job was last looked at (policy/jobs/job-summary.ts summaryPods). */
  readonly releasedBackup?: (namespace: string, name: string) => boolean;
  readonly forgetReleasedBackup?: (namespace: string, name: string) => void;
}

const KIND = 'job_summary';

export function jobSummaryReconciler(deps: JobSummaryDeps): Reconciler {
  const write = async (s: JobSummaryState, writes: ReadonlyArray<{ index: number; data: Record<string, string> }>): Promise<void> => {
    for (const w of writes) {
      const name = jobSummaryCmName(s.name, w.index);
      await deps.writer.ensure(KIND, { namespace: s.namespace, name, labels: jobSummaryLabels(s.resourceType), data: w.data }, deps.actual(s.namespace, name));
    }
  };

  /** DeleteCmAndCache: the ConfigMaps go unless a live job of the same name and namespace uses them. */
  const finish = async (key: string, s: JobSummaryState, ctx: ReconcileContext): Promise<void> => {
    const taken = [...deps.store.all()].some(([k, o]) => k !== key && o.name === s.name && o.namespace === s.namespace && !o.isPreDelete);
    if (!taken) {
      for (let i = 0; i < s.totalCmNum; i++) {
        const name = jobSummaryCmName(s.name, i);
        await deps.writer.remove(KIND, s.namespace, name, deps.actual(s.namespace, name));
      }
    }
    deps.store.delete(key);
    ctx.log.info('job summary removed', { job: `${s.namespace}/${s.name}`, key, configMapsKept: taken });
  };

  return {
    name: 'job_summary',
    async reconcile(key: string, ctx: ReconcileContext): Promise<Outcome> {
      const nowMs = ctx.now();
      const nowSec = Math.floor(nowMs / 1000);
      const prev = deps.store.get(key);
      const pods = deps.pods(key);
      const looked = summaryPods(pods, (p) => deps.releasedBackup?.(p.namespace, p.name) ?? false);
      for (const p of looked.released) deps.forgetReleasedBackup?.(p.namespace, p.name);
      const step = summaryStep(prev, deps.podGroup(key), pods, { ...deps, nowSec }, looked);
      if (step !== undefined) {
        await write(step.next, step.writes);
        deps.store.set(key, step.next);
        ctx.log.info('job summary written', { job: `${step.next.namespace}/${step.next.name}`, key, status: step.next.status, preDelete: step.next.isPreDelete, configMaps: step.writes.length });
      }
      const s = deps.store.get(key);
      if (s === undefined || !s.isPreDelete) return {};
      const dueSec = deleteDueSec(s, Math.floor(deps.startMs / 1000));
      if (nowSec < dueSec) return { requeueAfterMs: dueSec * 1000 - nowMs + 50 };
      await finish(key, s, ctx);
      return {};
    },
  };
}
