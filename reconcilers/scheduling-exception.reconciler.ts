/**
 * Creates `<cluster-system>/scheduling-exception-report` as ClusterD does, at its collector's first
 * check one interval (10 s) after start (schemas/scheduling-exception; the Manager queues it so). We do not diagnose scheduling exceptions (ClusterD's
 * per-job PodGroup / vcjob / AscendJob condition analysis), so the report is created empty and an
 * existing one is left as it is: never a claim that a job ClusterD reported is fine. Checked again
 * every 10 s (ClusterD's interval), so a deleted report comes back.
 */
import { SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME } from '../schemas/scheduling-exception/scheduling-exception.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const SCHEDULING_EXCEPTION_RECONCILE_KEY = 'scheduling-exception-report';

export interface SchedulingExceptionDeps {
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

export function schedulingExceptionReconciler(deps: SchedulingExceptionDeps): Reconciler {
  return {
    name: 'scheduling_exception',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const again = { requeueAfterMs: SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS };
      if (deps.actual() !== undefined) return again;
      const res = await deps.writer.ensure('scheduling_exception', { namespace: deps.namespace, name: SCHEDULING_EXCEPTION_CM_NAME, data: {} }, undefined);
      if (res.written) ctx.log.info('scheduling-exception-report created (empty)', { namespace: deps.namespace });
      return again;
    },
  };
}
