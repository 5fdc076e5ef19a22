/**
 * Isolation: a rescheduled pod must not land on the hardware that failed.
 *
 * - Node-wide faults (NodeD UnHealthy/PreSeparate, UB switch, node-wide public faults): one taint with
 *   our own key, `huawei.com/clusterd-fault=<level>:NoSchedule` (PreferNoSchedule for sub-health),
 *   lifted once the node has had no qualifying fault for --node-taint-hold-seconds (60 s) (policy/faults/job-isolation.ts has the rules and why we
 *   taint instead of cordoning: `spec.unschedulable` belongs to humans and drain tooling).
 * - NotReady nodes: the node lifecycle controller's own not-ready/unreachable taints do it.
 * - Chip faults: never a taint (the node's other NPUs stay usable); the device plugin takes the chip
 *   out of its allocatable count and out of `huawei.com/Ascend910` in device-info, and cluster-info
 *   carries it to the scheduler.
 *
 * One key per node. The "healthy since" time of a node waiting to be untainted is kept in memory:
 * after a restart the 60 s hold starts again, which only delays lifting the taint.
 */
import { desiredNodeTaints, planNodeTaint, type NodeTaint, type NodeTaintState } from '../policy/faults/job-isolation.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { applyNodeTaintPlan } from '../actions/node-taint.action.ts';
import type { Node } from '../runtime/kube-objects.ts';
import type { BreakerGate } from '../policy/jobs/breaker-gate.ts';
import { sourcesOf } from '../policy/jobs/breaker-accounting.ts';

export interface IsolationDeps {
  readonly node: (name: string) => Node | undefined;
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  readonly client: KubeClient;
  readonly metrics: Metrics;
  readonly dryRun: boolean;
  /** --node-taints: false = never taint, lift any taint of ours at once. */
  readonly enabled: boolean;
  /** --node-taint-hold-seconds in ms: continuous health before the taint is lifted. */
  readonly holdMs: number;
  /** The blast-radius breaker: asked before a node gets a NoSchedule taint it did not have. */
  readonly breaker: BreakerGate;
}

export function nodeIsolationReconciler(d: IsolationDeps): Reconciler {
  const holds = new Map<string, NodeTaintState>();
  return {
    name: 'node_isolation',
    async reconcile(name: string, ctx: ReconcileContext): Promise<Outcome> {
      const node = d.node(name);
      if (node === undefined) { holds.delete(name); return {}; }
      const current = (node.spec?.taints ?? []).map((t): NodeTaint => ({ key: t.key, value: t.value ?? '', effect: t.effect as NodeTaint['effect'] }));
      const wish = d.enabled ? desiredNodeTaints(d.faultsOf(name)).get(name) : undefined;
      const plan = planNodeTaint(current, wish, holds.get(name) ?? {}, ctx.now(), d.enabled ? d.holdMs : 0);
      holds.set(name, plan.state);
      // A new isolation (no NoSchedule taint of ours yet) asks the breaker; a held one is not applied
      // (a reset re-queues every node and it is decided again from its faults of that moment).
      const isolates = plan.add?.effect === 'NoSchedule' && !current.some((t) => t.key === plan.add!.key && t.effect === 'NoSchedule');
      if (isolates && !d.dryRun) {
        const v = d.breaker.admit('nodes', name, [name], sourcesOf(d.faultsOf(name).filter((r) => r.device === undefined)));
        if (!v.allowed) {
          ctx.log.warn('node isolation held', { node: name, taint: plan.add, reason: plan.reason, held: v.reason });
          return {};
        }
      }
      if (plan.remove.length > 0 || plan.add !== undefined) {
        if (d.dryRun) ctx.log.info('dry run: would change node taint', { node: name, add: plan.add, remove: plan.remove, reason: plan.reason });
        else if (await applyNodeTaintPlan(d.client, node, plan, d.metrics)) {
          ctx.log.info('node taint changed', { node: name, add: plan.add, remove: plan.remove, reason: plan.reason });
        }
      }
      return plan.requeueAfterMs === undefined ? {} : { requeueAfterMs: plan.requeueAfterMs };
    },
  };
}
