/**
 * Node isolation for node-wide faults (policy/faults/job-isolation.ts): put or lift our one taint
 * `huawei.com/clusterd-fault=<level>:NoSchedule|PreferNoSchedule`. Taints with any other key are
 * never touched. The merge patch replaces `spec.taints` as a whole, so it carries the cached
 * `metadata.resourceVersion`: if anyone changed the Node meanwhile the apiserver answers 409 and the
 * work queue retries against a fresh cache (optimistic concurrency).
 */
import { ApiError, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { Node } from '../runtime/kube-objects.ts';
import type { NodeTaint, NodeTaintPlan } from '../policy/faults/job-isolation.ts';

type Taint = { key: string; value?: string; effect: string; timeAdded?: string };

const same = (a: Taint, b: NodeTaint): boolean => a.key === b.key && (a.value ?? '') === b.value && a.effect === b.effect;

/** The node's taints after the plan (pure). */
export function taintsAfter(current: readonly Taint[], plan: Pick<NodeTaintPlan, 'remove' | 'add'>): Taint[] {
  const kept = current.filter((t) => !plan.remove.some((r) => same(t, r)));
  if (plan.add !== undefined && !kept.some((t) => same(t, plan.add!))) kept.push({ key: plan.add.key, value: plan.add.value, effect: plan.add.effect });
  return kept;
}

/** Applies the plan to the cached Node; answers false when there was nothing to change. */
export async function applyNodeTaintPlan(client: KubeClient, node: Node, plan: NodeTaintPlan, metrics?: Metrics): Promise<boolean> {
  if (plan.remove.length === 0 && plan.add === undefined) return false;
  const name = node.metadata?.name ?? '';
  const taints = taintsAfter(node.spec?.taints ?? [], plan);
  try {
    await client.patch(paths.node(name), { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints } }, 'merge');
    metrics?.apiWrites.inc({ kind: 'node_taint', result: 'success' });
    return true;
  } catch (e) {
    metrics?.apiWrites.inc({ kind: 'node_taint', result: e instanceof ApiError ? String(e.statusCode) : 'error' });
    throw e;
  }
}
