/**
 * Keeps `<cluster-system>/scheduling-exception-report` as ClusterD's collector does: every 10 s
 * (first one interval after start; the Manager queues it so) the jobs' scheduling conditions are
 * checked (policy/jobs/scheduling-exception.ts, over the job summary and the Volcano Job / AscendJob
 * caches) and the report's data replaced with the jobs reported (empty when none: the apiserver
 * stores no `data` field). Labels and annotations of an existing report are left as they are, as
 * ClusterD's update of the object it read does. A deleted report comes back at the next check.
 */
import { SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME, encodeJobException, type JobException } from '../schemas/scheduling-exception/scheduling-exception.ts';
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
      const data = Object.fromEntries([...checked.report].map(([k, e]) => [k, encodeJobException(e)]));
      const res = await deps.writer.ensure('scheduling_exception', { namespace: deps.namespace, name: SCHEDULING_EXCEPTION_CM_NAME, data }, deps.actual());
      if (res.written) ctx.log.info('scheduling-exception-report written', { namespace: deps.namespace, jobs: Object.keys(data) });
      return again;
    },
  };
}
