/**
 * Writes ClusterD's `mindx-dl/current-job-statistic` (schemas/job-statistic) as its JobOutput loop
 * does: on a 3 s tick (the Manager queues the first one a tick after start; each pass requeues the
 * next), the whole ConfigMap when the statistic moved since the last write (ClusterD's version), as
 * a fresh object (no labels, no annotations). Nothing is written while nothing moved, so a
 * ConfigMap deleted by someone comes back with the next change, as ClusterD's does.
 *
 * The statistic itself (policy/jobs/job-statistic.ts) lives in memory, as ClusterD's: the first pass
 * loads the ConfigMap the last process left (entries of jobs that still have a PodGroup), then the
 * job and job-summary events collected since (the controller's inbox, each with its time) are
 * applied in order. A failed write is retried (ClusterD waits for the next change).
 *
 * With `limits` (--output-limits) the written data is kept within a ConfigMap's 1 MiB by
 * leaving entries out (schemas/job-statistic fitJobStatistics): they stay in memory and come back
 * once there is room. Without, every entry is written as ClusterD does, and past 1 MiB every write
 * fails.
 */
import { applyStatEvents, loadStatistics, type JobStatEntry, type TimedStatEvent } from '../policy/jobs/job-statistic.ts';
import { JOB_STATISTIC_CM_NAME, JOB_STATISTIC_WRITE_INTERVAL_MS, MAX_CONFIGMAP_DATA_BYTES, fitJobStatistics, jobStatisticData, parseJobStatistics } from '../schemas/job-statistic/job-statistic.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const JOB_STATISTIC_RECONCILE_KEY = JOB_STATISTIC_CM_NAME;

export interface JobStatisticDeps {
  readonly namespace: string;
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  /** Takes the events collected since the last pass, oldest first. */
  readonly drain: () => TimedStatEvent[];
  /** Job keys (controller-owner UIDs) of the PodGroups in the cache. */
  readonly podGroupJobs: () => ReadonlySet<string>;
  /** A ConfigMap left by the last process that could not be read (metric invalid_input_total). */
  readonly onInvalid: (reason: string) => void;
  /** Jobs refused at MAX_JOB_STATISTICS entries (metric bound_hits_total). */
  readonly onRefused: (keys: readonly string[]) => void;
  /** Keep the written data within MAX_CONFIGMAP_DATA_BYTES (false: ClusterD, everything). */
  readonly limits: boolean;
  /** Entries left out of this write to fit (metric bound_hits_total, rate-limited log). */
  readonly onOmitted: (ids: readonly string[], maxBytes: number) => void;
}

export function jobStatisticReconciler(deps: JobStatisticDeps): Reconciler {
  let entries: ReadonlyMap<string, JobStatEntry> = new Map();
  let loaded = false;
  let version = 0;
  let written = 0;

  const load = (ctx: ReconcileContext): void => {
    loaded = true;
    const cm = deps.actual();
    if (cm === undefined) return;
    const parsed = parseJobStatistics(cm.data);
    if (!parsed.ok) {
      // ClusterD: an error log, nothing loaded; the old content stays until the next change.
      ctx.log.warn('current-job-statistic left by the last process is unreadable: not loaded, replaced on the next change', { reason: parsed.reason, detail: parsed.detail });
      deps.onInvalid(parsed.reason);
      return;
    }
    const [m, dropped] = loadStatistics(parsed.entries, deps.podGroupJobs());
    entries = m;
    version++;
    ctx.log.info('current-job-statistic loaded', { jobs: m.size, droppedWithoutPodGroup: dropped });
  };

  return {
    name: 'job_statistic',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      if (!loaded) load(ctx);
      const step = applyStatEvents(entries, deps.drain());
      entries = step.entries;
      version += step.bumps;
      if (step.refused.length > 0) {
        ctx.log.warn('job statistic full: jobs not added', { jobs: step.refused, max: entries.size });
        deps.onRefused(step.refused);
      }
      if (version !== written) {
        let data = jobStatisticData([...entries.values()]);
        if (deps.limits) {
          const fit = fitJobStatistics([...entries.values()], MAX_CONFIGMAP_DATA_BYTES);
          data = fit.data;
          if (fit.omitted.length > 0) deps.onOmitted(fit.omitted, MAX_CONFIGMAP_DATA_BYTES);
        }
        await deps.writer.ensure('job_statistic', { namespace: deps.namespace, name: JOB_STATISTIC_CM_NAME, data, exactMetadata: true }, deps.actual());
        written = version;
        ctx.log.info('current-job-statistic written', { jobs: entries.size });
      }
      return { requeueAfterMs: JOB_STATISTIC_WRITE_INTERVAL_MS };
    },
  };
}
