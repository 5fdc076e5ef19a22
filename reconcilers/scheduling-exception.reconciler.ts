/**
 * Keeps `<cluster-system>/scheduling-exception-report` as ClusterD's collector does: every 10 s
 * (first one interval after start; the Manager queues it so) the jobs' scheduling conditions are
 * checked (policy/jobs/scheduling-exception.ts, over the job summary and the Volcano Job / AscendJob
 * caches) and the report's data replaced with the jobs reported (empty when none: the apiserver
 * stores no `data` field). Labels and annotations of an existing report are left as they are, as
 * ClusterD's update of the object it read does. A deleted report comes back at the next check.
 * With `limits` (--output-limits) each message is cut to MAX_EXCEPTION_MESSAGE_CHARS and the data
 * kept within a ConfigMap's 1 MiB (largest entries left out, reported), so one job's message cannot
 * stop the report for every job.
 */
import {
  SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME, encodeJobException, fitExceptionReport, limitMessage, type JobException,
} from '../schemas/scheduling-exception/scheduling-exception.ts';
import { MAX_CONFIGMAP_DATA_BYTES } from '../schemas/job-statistic/job-statistic.ts';
import { checkExceptions, type ExceptionInputs } from '../policy/jobs/scheduling-exception.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const SCHEDULING_EXCEPTION_RECONCILE_KEY = 'scheduling-exception-report';

export interface SchedulingExceptionDeps {
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
  /** What the check reads (the job summary, PodGroups, pods, job objects), read at each check. */
  readonly inputs: () => ExceptionInputs;
  /** Cut messages and keep the data within MAX_CONFIGMAP_DATA_BYTES (false: ClusterD, copied whole). */
  readonly limits: boolean;
  /** Messages cut and entries left out of this write (metric bound_hits_total, rate-limited log). */
  readonly onLimited: (cut: readonly string[], omitted: readonly string[]) => void;
}

export function schedulingExceptionReconciler(deps: SchedulingExceptionDeps): Reconciler {
  // The collector's memory of each job's last condition (ClusterD keeps it in memory too).
  let memory: ReadonlyMap<string, JobException> = new Map();
  return {
    name: 'scheduling_exception',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const again = { requeueAfterMs: SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS };
      const checked = checkExceptions(memory, deps.inputs());
      memory = checked.memory;
      let data = Object.fromEntries([...checked.report].map(([k, e]) => [k, encodeJobException(e)]));
      if (deps.limits) {
        const cut: string[] = [];
        const limited = Object.fromEntries([...checked.report].map(([k, e]) => {
          const m = limitMessage(e.condition.message);
          if (m.cut) cut.push(k);
          return [k, encodeJobException(m.cut ? { ...e, condition: { ...e.condition, message: m.message } } : e)];
        }));
        const fit = fitExceptionReport(limited, MAX_CONFIGMAP_DATA_BYTES);
        data = fit.data;
        if (cut.length > 0 || fit.omitted.length > 0) deps.onLimited(cut, fit.omitted);
      }
      const res = await deps.writer.ensure('scheduling_exception', { namespace: deps.namespace, name: SCHEDULING_EXCEPTION_CM_NAME, data }, deps.actual());
      if (res.written) ctx.log.info('scheduling-exception-report written', { namespace: deps.namespace, jobs: Object.keys(data) });
      return again;
    },
  };
}
