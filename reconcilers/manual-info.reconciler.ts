/**
 * Makes `<cluster-system>/clusterd-manual-info-cm` (docs/formats.md#manual-info) match ClusterD's manual
 * separation state: data key = node name, value `{"Total":[chip...],"Detail":{chip:[{FaultCode,
 * FaultLevel,LastSeparateTime}]}}`, Go-encoded. Written only on difference. When nothing is
 * separated any more the ConfigMap is deleted, as ClusterD does (application/manualfault/cm.go; the
 * chart grants delete on this one name). An operator deleting an NPU from `Total` is read back by the
 * policy (fault-policy.controller.ts), which releases it; the next pass writes or deletes the result.
 */
import { MANUAL_INFO_CM_NAME, encodeManualInfoData, type ManualInfo } from '../schemas/manual-info/manual-info.ts';
import type { ManualInfoNode } from '../policy/faults/manual-separation.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const MANUAL_INFO_RECONCILE_KEY = 'manual-info';

export interface ManualInfoDeps {
  /** Desired content (policy/manual-separation manualInfoView); undefined = not restored yet. */
  readonly desired: () => Readonly<Record<string, ManualInfoNode>> | undefined;
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

const toWire = (v: ManualInfoNode): ManualInfo => ({
  Total: [...v.Total],
  Detail: Object.fromEntries(Object.entries(v.Detail).map(([chip, ds]) => [chip, ds.map((d) => ({ FaultCode: d.FaultCode, FaultLevel: d.FaultLevel, LastSeparateTime: d.LastSeparateTime }))])),
});

export function manualInfoReconciler(deps: ManualInfoDeps): Reconciler {
  return {
    name: 'manual_info',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const view = deps.desired();
      if (view === undefined) return {};
      const data = encodeManualInfoData(Object.fromEntries(Object.entries(view).map(([node, v]) => [node, toWire(v)])));
      const actual = deps.actual();
      if (Object.keys(data).length === 0) {
        const res = await deps.writer.remove('manual_info', deps.namespace, MANUAL_INFO_CM_NAME, actual);
        if (res.written) ctx.log.info('clusterd-manual-info-cm deleted: no NPU is manually separated');
        return {};
      }
      const res = await deps.writer.ensure('manual_info', { namespace: deps.namespace, name: MANUAL_INFO_CM_NAME, data }, actual);
      if (res.written) ctx.log.info('clusterd-manual-info-cm written', { nodes: Object.keys(data), separated: Object.values(view).reduce((n, v) => n + v.Total.length, 0) });
      return {};
    },
  };
}
