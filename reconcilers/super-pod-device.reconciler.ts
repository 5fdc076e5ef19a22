/**
 * Writes pingmesh's `<cluster-system>/super-pod-<id>` ConfigMaps (schemas/pingmesh/super-pod-device.ts,
 * docs/rules.md#pingmesh.super-pod-devices) as ClusterD's publisher does
 * (component/clusterd/pkg/application/pingmesh/publisher.go): label `app=pingmesh` and nothing else
 * (its update sends a fresh object), key `superPodDevice`; deleted when the super pod lost its last
 * node. A super pod's ConfigMap is written again only when its content differs from what this
 * process last published for it (ClusterD's check code, publisher.go handleCmUpdate): a label or edit
 * someone made stays until the devices change, or until the next start, which publishes every super
 * pod once (initSuperPodsCM) and writes only where the cache differs, so a restart on an unchanged
 * cluster writes nothing.
 */
import { desiredSuperPodConfigMaps } from '../policy/pingmesh/super-pod-configmaps.ts';
import { SUPER_POD_DEVICE_KEY, SUPER_POD_LABELS, superPodCmName } from '../schemas/pingmesh/super-pod-device.ts';
import type { SuperPodDevices } from '../state/super-pod-devices.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const SUPER_POD_RECONCILE_KEY = 'super-pod-devices';
const KIND = 'super_pod_device';

export interface SuperPodDeviceDeps {
  readonly state: SuperPodDevices;
  readonly actual: (name: string) => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

export function superPodDeviceReconciler(deps: SuperPodDeviceDeps): Reconciler {
  /** ConfigMap name -> the superPodDevice this process last published. */
  const published = new Map<string, string>();
  return {
    name: 'super_pod_device',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const { state, writer, namespace } = deps;
      const desired = desiredSuperPodConfigMaps(state.detect, state.superPods(), state.gone());
      for (const cm of desired.write) {
        const content = cm.data[SUPER_POD_DEVICE_KEY];
        if (content !== undefined && published.get(cm.name) === content) continue;
        const res = await writer.ensure(KIND, { namespace, name: cm.name, labels: { ...SUPER_POD_LABELS }, data: { ...cm.data }, exactMetadata: true }, deps.actual(cm.name));
        if (res.written) ctx.log.info('super-pod ConfigMap written', { rule: 'pingmesh.super-pod-devices', name: cm.name });
        if (content !== undefined) published.set(cm.name, content);
      }
      for (const id of desired.remove) {
        const name = superPodCmName(id);
        const res = await writer.remove(KIND, namespace, name, deps.actual(name));
        if (res.written) ctx.log.info('super-pod ConfigMap deleted: the super pod has no node left', { rule: 'pingmesh.super-pod-devices', name });
        published.delete(name);
        state.forgetGone(id);
      }
      return {};
    },
  };
}
