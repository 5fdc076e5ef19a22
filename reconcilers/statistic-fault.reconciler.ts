/**
 * Writes `<cluster-system>/statistic-fault-info` (schemas/statistic-fault) as ClusterD does
 * (application/statistics/fault.go UpdateFault, domain/statistics/fault.go UpdateFaultToCM): only
 * when told, that is after every accepted public-fault message and every delayed public-fault delete
 * (never at start, never for other changes); then the full content, created if missing (even with
 * no fault: `{}` and `{"publicFaultNum":0}`), with exactly ClusterD's label and no annotation (its
 * update sends a fresh object, so a label or annotation someone added is gone). Above
 * MAX_FAULT_NUM only `FaultNum` and `Description` change. ClusterD writes at most once a second
 * (it sleeps 1 s after each write); so do we (notifications meanwhile coalesce into the next pass).
 */
import { MAX_FAULT_NUM, STATISTIC_FAULT_CM_NAME, STATISTIC_FAULT_LABELS, countFaults, statisticFaultData, type StatisticNodeFault } from '../schemas/statistic-fault/statistic-fault.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const STATISTIC_FAULT_RECONCILE_KEY = 'statistic-fault-info';
/** ClusterD's pause after each statistic write. */
export const STATISTIC_FAULT_MIN_INTERVAL_MS = 1000;

export interface StatisticFaultDeps {
  /** Public faults in force per node (FaultStore.publicFaultStatistics). */
  readonly faults: () => ReadonlyMap<string, readonly StatisticNodeFault[]>;
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

export function statisticFaultReconciler(deps: StatisticFaultDeps): Reconciler {
  let lastPassMs = -Infinity;
  return {
    name: 'statistic_fault',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const wait = lastPassMs + STATISTIC_FAULT_MIN_INTERVAL_MS - ctx.now();
      if (wait > 0) return { requeueAfterMs: wait };
      lastPassMs = ctx.now();
      const faults = deps.faults();
      const actual = deps.actual();
      const data = statisticFaultData(faults, actual?.data);
      if (data === undefined) {
        ctx.log.warn('statistic-fault-info: too many public faults to create it; ClusterD patches only an existing one', { faults: countFaults(faults) });
        return {};
      }
      const res = await deps.writer.ensure('statistic_fault', { namespace: deps.namespace, name: STATISTIC_FAULT_CM_NAME, labels: { ...STATISTIC_FAULT_LABELS }, data, exactMetadata: countFaults(faults) <= MAX_FAULT_NUM }, actual);
      if (res.written) ctx.log.info('statistic-fault-info written', { nodes: faults.size, faults: countFaults(faults) });
      return {};
    },
  };
}
