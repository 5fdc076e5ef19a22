/**
 * Writes `mindx-dl/clusterd-ts-device-info-last-good` (state/device-info-last-good.ts): the raw
 * device-info of the nodes whose current one is rejected. Leader only; written when the set of held
 * nodes changes, nothing when the cached ConfigMap already says the same; no ConfigMap is created
 * while nothing is held.
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import { LAST_GOOD_CM_NAME } from '../state/device-info-last-good.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const LAST_GOOD_RECONCILE_KEY = 'device-info-last-good';

export interface LastGoodDeps {
  readonly desired: () => Record<string, string>;
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

export function lastGoodReconciler(deps: LastGoodDeps): Reconciler {
  return {
    name: 'device_info_last_good',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const data = deps.desired();
      const actual = deps.writer.fresher(deps.namespace, LAST_GOOD_CM_NAME, deps.actual());
      if (actual === undefined && Object.keys(data).length === 0) return {};
      const res = await deps.writer.ensure('device_info_last_good', {
        namespace: deps.namespace, name: LAST_GOOD_CM_NAME, labels: { 'app.kubernetes.io/managed-by': 'clusterd-ts' }, data,
      }, actual);
      if (res.written) ctx.log.info('last good device-info state persisted', { nodes: Object.keys(data) });
      return {};
    },
  };
}
