/**
 * docs/rules.md#pingmesh.super-pod-devices: the `super-pod-<id>` ConfigMaps pingmesh wants, from the
 * super pods' nodes and the detection switch. While detection is off nothing is written or deleted
 * (ClusterD's ticker skips its queued changes, component/clusterd/pkg/application/pingmesh/publisher.go
 * TickerCheckSuperPodDevice); on, every super pod has its ConfigMap and a super pod that lost its
 * last node has it deleted.
 */
import { A5_SUPER_POD_TYPES, encodeSuperPodDevice, SUPER_POD_DEVICE_KEY, superPodCmName, type NodeDevice } from '../../schemas/pingmesh/super-pod-device.ts';

export interface SuperPodInput {
  readonly id: string;
  readonly version: string;
  readonly acceleratorType: string;
  readonly nodes: ReadonlyMap<string, NodeDevice>;
}

export interface SuperPodConfigMap {
  readonly superPodId: string;
  readonly name: string;
  readonly data: Readonly<Record<string, string>>;
}

export interface DesiredSuperPods {
  readonly write: readonly SuperPodConfigMap[];
  /** Super pod ids whose ConfigMap is to be deleted. */
  readonly remove: readonly string[];
}

/** ClusterD publishes an 850 super pod under its accelerator type as Version (superpod_storage.go deepCopySuperPodDevice). */
const versionOf = (p: SuperPodInput): string => (p.acceleratorType === A5_SUPER_POD_TYPES.pod850 ? p.acceleratorType : p.version);

export function desiredSuperPodConfigMaps(detect: boolean, pods: readonly SuperPodInput[], gone: readonly string[]): DesiredSuperPods {
  if (!detect) return { write: [], remove: [] };
  const write = pods.filter((p) => p.nodes.size > 0).map((p) => ({
    superPodId: p.id,
    name: superPodCmName(p.id),
    data: { [SUPER_POD_DEVICE_KEY]: encodeSuperPodDevice({ Version: versionOf(p), SuperPodID: p.id, NodeDeviceMap: p.nodes, AcceleratorType: p.acceleratorType }) },
  }));
  return { write, remove: [...gone] };
}
