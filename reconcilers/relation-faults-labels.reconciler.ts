/**
 * The pod labels of relation-fault strategies (docs/rules.md#job.relation-faults: "patched on the pod of that node,
 * once per change"). A strategy change of (job, node) becomes one pending label naming the pods that
 * were on the node at that moment (with their UIDs); this reconcile (leader only) patches them and
 * forgets the entry. A pod recreated after the restart is a new UID and is never labelled, so a
 * sticky Separate cannot restart the job twice. Keyed `<jobKey>|<node>`; a newer strategy for the same
 * key replaces the entry, and the queue runs the key again.
 */
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { RelationStrategy } from '../schemas/escalation-state/escalation-state.ts';
import { labelPodFaultType, type LabelTarget } from '../actions/pod-fault-type-label.action.ts';

export interface PendingLabel {
  readonly jobKey: string;
  readonly namespace: string;
  readonly node: string;
  readonly strategy: RelationStrategy;
  readonly pods: readonly LabelTarget[];
  /** The decision's reason chain, for the log line. */
  readonly reasons: string;
}

export const pendingLabelKey = (jobKey: string, node: string): string => `${jobKey}|${node}`;

export interface RelationLabelDeps {
  readonly pending: Map<string, PendingLabel>;
  readonly client: KubeClient;
  readonly metrics?: Metrics;
  readonly dryRun: boolean;
}

export function relationLabelReconciler(d: RelationLabelDeps): Reconciler {
  return {
    name: 'relation_fault_labels',
    async reconcile(key: string, ctx: ReconcileContext): Promise<Outcome> {
      const p = d.pending.get(key);
      if (p === undefined) return {};
      for (const pod of p.pods) {
        const fields = { job: p.jobKey, node: p.node, pod: pod.name, podUid: pod.uid, faultType: p.strategy, reasons: p.reasons };
        if (d.dryRun) {
          ctx.log.info('dry run: pod not labelled fault-type', fields);
          continue;
        }
        const res = await labelPodFaultType({ client: d.client, ...(d.metrics ? { metrics: d.metrics } : {}) }, p.namespace, pod, p.strategy);
        ctx.log.info(res === 'patched' ? 'pod labelled fault-type (relation fault)' : 'pod gone before its fault-type label', fields);
      }
      if (d.pending.get(key) === p) d.pending.delete(key);
      return {};
    },
  };
}
