/**
 * The input side of a conformance scenario: what the device plugin, NodeD, kubelet and a public-fault
 * sender would write, as literal apiserver requests. A step turns the simulated world into requests
 * once; the runner sends the same requests (the same bytes) to both clusters at the same moment.
 * Device-info bytes come from the device plugin simulator's pure state (tools/simulator/npu-state.ts).
 */
import type { KubeObject, PatchType } from '../../runtime/kube-client.ts';
import { paths } from '../../runtime/kube-client.ts';
import { DEVICE_INFO_LABELS, DEVICE_INFO_NAMESPACE, deviceInfoCmName, type DeviceResourcePrefix } from '../../schemas/device-info/device-info.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { NODE_INFO_LABELS, NODE_INFO_NAMESPACE, encodeNodeInfoData, nodeInfoCmName, type FaultDev } from '../../schemas/node-info/node-info.ts';
import { msToRfc3339 } from '../../schemas/node-info/node-info.ts';
import { deviceInfoInput, newNodeState, type NpuNodeState } from '../../tools/simulator/npu-state.ts';
import type { SwitchMode } from '../../tools/simulator/switch-state.ts';

/**
 * One request, sent verbatim to both sides. `put`: replace without resourceVersion, create on 404.
 * `ownerFrom` (a put of a dependent: PodGroup, pod): the path of its owner (a Volcano Job the scenario
 * put before); the ownerReference naming that owner gets the UID this side's apiserver gave it, as
 * Volcano's would (each side's apiserver assigns its own; normalise.ts rule 5 names it by object).
 */
export type Write =
  | { readonly op: 'put'; readonly collection: string; readonly body: KubeObject; readonly ownerFrom?: string }
  | { readonly op: 'patch'; readonly path: string; readonly body: unknown; readonly type: PatchType }
  | { readonly op: 'delete'; readonly path: string };

export interface NodeSpec {
  readonly name: string;
  readonly npus?: number;
  readonly prefix?: DeviceResourcePrefix;
  /** Default `absent` (910 A2, no SwitchInfoCfg key). */
  readonly switchMode?: SwitchMode;
  readonly superPodId?: number;
  readonly serverIndex?: number;
}

/** The simulated agents' state; steps change it and ask for the resulting writes. */
export class World {
  readonly npu = new Map<string, NpuNodeState>();
  readonly specs = new Map<string, NodeSpec>();

  constructor(nodes: readonly NodeSpec[]) {
    for (const n of nodes) {
      this.specs.set(n.name, n);
      this.npu.set(n.name, newNodeState({ name: n.name, npus: n.npus, prefix: n.prefix, switchMode: n.switchMode ?? 'absent', superPodId: n.superPodId, serverIndex: n.serverIndex }));
    }
  }

  node(name: string): NpuNodeState {
    const s = this.npu.get(name);
    if (s === undefined) throw new Error(`no node ${name} in this scenario`);
    return s;
  }

  /** The Node as kubelet registers it (Ready, NPU capacity under its resource prefix). */
  nodeObject(name: string, nowMs: number): KubeObject {
    const s = this.node(name);
    const res = { cpu: '192', memory: '1536Gi', pods: '110', [s.prefix]: String(s.npus) };
    return {
      apiVersion: 'v1', kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'node-role.kubernetes.io/worker': 'worker', accelerator: 'huawei-Ascend910' } },
      spec: {},
      status: { capacity: res, allocatable: res, phase: 'Running', conditions: [readyCondition('True', 'KubeletReady', 'kubelet is posting ready status', nowMs)] },
    };
  }

  /** Node + its Ready status (status on create is kept for Nodes, patched again to be explicit). */
  createNode(name: string, nowMs: number): Write[] {
    const obj = this.nodeObject(name, nowMs);
    return [{ op: 'put', collection: paths.nodes(), body: obj }, readyPatch(name, 'True', nowMs)];
  }

  /** `kube-system/mindx-dl-deviceinfo-<node>` as the device plugin writes it now. */
  deviceInfo(name: string, nowMs: number): Write {
    const data = encodeDeviceInfoData(deviceInfoInput(this.node(name), Math.floor(nowMs / 1000)));
    return {
      op: 'put', collection: `/api/v1/namespaces/${DEVICE_INFO_NAMESPACE}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: deviceInfoCmName(name), namespace: DEVICE_INFO_NAMESPACE, labels: { ...DEVICE_INFO_LABELS } }, data },
    };
  }

  /** `mindx-dl/mindx-dl-nodeinfo-<node>` as NodeD writes it (deleted when no fault is left). */
  nodeInfo(name: string, devs: readonly FaultDev[] | null, nowMs: number): Write {
    if (devs === null) return { op: 'delete', path: paths.configMap(NODE_INFO_NAMESPACE, nodeInfoCmName(name)) };
    return {
      op: 'put', collection: `/api/v1/namespaces/${NODE_INFO_NAMESPACE}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: nodeInfoCmName(name), namespace: NODE_INFO_NAMESPACE, labels: { ...NODE_INFO_LABELS } }, data: encodeNodeInfoData({ faultDevList: devs, updateTimeMs: nowMs }) },
    };
  }
}

export function readyCondition(status: string, reason: string, message: string, ms: number): Record<string, string> {
  const t = msToRfc3339(ms);
  return { type: 'Ready', status, reason, message, lastHeartbeatTime: t, lastTransitionTime: t };
}

/** kubelet's status patch for the Ready condition. */
export function readyPatch(node: string, status: 'True' | 'False' | 'Unknown', nowMs: number): Write {
  const cond = status === 'True'
    ? readyCondition('True', 'KubeletReady', 'kubelet is posting ready status', nowMs)
    : readyCondition(status, status === 'False' ? 'KubeletNotReady' : 'NodeStatusUnknown', status === 'False' ? 'container runtime is down' : 'Kubelet stopped posting node status.', nowMs);
  return { op: 'patch', path: paths.nodeStatus(node), body: { status: { conditions: [cond] } }, type: 'strategic' };
}

/** Any ConfigMap, verbatim. */
export function configMap(namespace: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}): Write {
  return { op: 'put', collection: `/api/v1/namespaces/${namespace}/configmaps`, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data } };
}

/** Every integer in the requests that looks like a Unix time (s or ms): inputs, not outputs, for normalise.ts. */
export function inputTimes(writes: readonly Write[], into: Set<string>): void {
  const text = JSON.stringify(writes);
  for (const m of text.matchAll(/\d{10,13}/g)) into.add(m[0]);
  for (const m of text.matchAll(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g)) into.add(m[0]);
}
