/**
 * Makes `<cluster-system>/statistic-fault-info` (schemas/statistic-fault) match the public faults
 * in force, as ClusterD does once a public fault message arrives (application/statistics/fault.go):
 * created when there is a first public fault, then kept current (an empty `{}` list and
 * `{"publicFaultNum":0}` once they have all recovered: ClusterD never deletes it). Written only on
 * difference; above MAX_FAULT_NUM only `FaultNum` and `Description` change.
 */
import { STATISTIC_FAULT_CM_NAME, STATISTIC_FAULT_LABELS, countFaults, statisticFaultData, type StatisticNodeFault } from '../schemas/statistic-fault/statistic-fault.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const STATISTIC_FAULT_RECONCILE_KEY = 'statistic-fault-info';

export interface StatisticFaultDeps {
  /** Public faults in force per node (FaultStore.publicFaultStatistics). */
  readonly faults: () => ReadonlyMap<string, readonly StatisticNodeFault[]>;
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

export function statisticFaultReconciler(deps: StatisticFaultDeps): Reconciler {
  return {
    name: 'statistic_fault',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const faults = deps.faults();
      const actual = deps.actual();
      if (actual === undefined && countFaults(faults) === 0) return {}; // no public fault yet: ClusterD has not created it
      const data = statisticFaultData(faults, actual?.data);
      if (data === undefined) {
        ctx.log.warn('statistic-fault-info: too many public faults to create it; ClusterD patches only an existing one', { faults: countFaults(faults) });
        return {};
      }
      const res = await deps.writer.ensure('statistic_fault', { namespace: deps.namespace, name: STATISTIC_FAULT_CM_NAME, labels: { ...STATISTIC_FAULT_LABELS }, data }, actual);
      if (res.written) ctx.log.info('statistic-fault-info written', { nodes: faults.size, faults: countFaults(faults) });
      return {};
    },
  };
}
