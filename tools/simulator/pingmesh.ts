/**
 * Pingmesh's inputs as the cluster has them: the Node annotations the device plugin writes on an A3
 * super-pod server (superPodID, serverIndex, serverType, baseDeviceInfos: docs/formats.md#super-pod-id)
 * and the user's pingmesh-config (docs/formats.md#pingmesh-config).
 */
import { ACCELERATOR_TYPE_LABEL, NODE_DEVICE_ANNOTATIONS, SERVER_TYPES } from '../../schemas/pingmesh/super-pod-device.ts';
import { PINGMESH_CONFIG_CM_NAME, PINGMESH_CONFIG_LABEL } from '../../schemas/pingmesh/pingmesh-config.ts';

export interface A3Server {
  readonly superPodId: number | string;
  readonly serverIndex: number;
  readonly npus?: number;
}

/** The device plugin's annotations of an A3 super-pod server: chips Ascend910-<i>, super device ids numbered across the super pod. */
export function a3NodeAnnotations(s: A3Server): Record<string, string> {
  const npus = s.npus ?? 16;
  const chips: Record<string, { IP: string; SuperDeviceID: number }> = {};
  for (let i = 0; i < npus; i++) chips[`Ascend910-${i}`] = { IP: `10.${s.serverIndex % 250}.0.${i + 1}`, SuperDeviceID: s.serverIndex * npus + i };
  return {
    [NODE_DEVICE_ANNOTATIONS.superPodId]: String(s.superPodId),
    [NODE_DEVICE_ANNOTATIONS.serverIndex]: String(s.serverIndex),
    [NODE_DEVICE_ANNOTATIONS.serverType]: SERVER_TYPES.a3,
    [NODE_DEVICE_ANNOTATIONS.baseDeviceInfos]: JSON.stringify(chips),
  };
}

/** An A5 super-pod server: annotations (chips npu-<i>, its rack) and the accelerator-type label pingmesh reads. */
export function a5Node(s: A3Server & { readonly rackId: number; readonly acceleratorType: string }): { annotations: Record<string, string>; labels: Record<string, string> } {
  const npus = s.npus ?? 8;
  const chips: Record<string, { IP: string; SuperDeviceID: number }> = {};
  for (let i = 0; i < npus; i++) chips[`npu-${i}`] = { IP: `10.${s.serverIndex % 250}.1.${i + 1}`, SuperDeviceID: s.serverIndex * npus + i };
  return {
    annotations: {
      [NODE_DEVICE_ANNOTATIONS.superPodId]: String(s.superPodId),
      [NODE_DEVICE_ANNOTATIONS.serverIndex]: String(s.serverIndex),
      [NODE_DEVICE_ANNOTATIONS.serverType]: SERVER_TYPES.a5,
      [NODE_DEVICE_ANNOTATIONS.baseDeviceInfos]: JSON.stringify(chips),
      rackID: String(s.rackId),
    },
    labels: { [ACCELERATOR_TYPE_LABEL]: s.acceleratorType },
  };
}

/** pingmesh-config's data: one item per key (`global`, a super pod id). */
export const pingmeshConfigData = (items: Readonly<Record<string, { readonly activate: 'on' | 'off'; readonly taskInterval?: number }>>): Record<string, string> =>
  Object.fromEntries(Object.entries(items).map(([k, v]) => [k, JSON.stringify({ activate: v.activate, task_interval: v.taskInterval ?? 5 })]));

export const PINGMESH_CONFIG = { name: PINGMESH_CONFIG_CM_NAME, labels: { [PINGMESH_CONFIG_LABEL.key]: PINGMESH_CONFIG_LABEL.value } } as const;
