/**
 * Fake Ascend nodes for kwok: Node objects with `huawei.com/Ascend910` capacity (`huawei.com/npu` on
 * A5), the kwok annotation that hands them to the kwok controller, and the label the device plugin
 * DaemonSet would select on.
 */
import { paths, isConflict, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';

export const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';
export const NPU_RESOURCE = 'huawei.com/Ascend910';

export interface FakeNodeSpec {
  readonly name: string;
  readonly npus?: number;
  readonly labels?: Record<string, string>;
  /** The NPU resource the device plugin advertises: default `huawei.com/Ascend910`; A5 `huawei.com/npu`. */
  readonly resource?: string;
}

export function fakeNode(spec: FakeNodeSpec): KubeObject {
  const npus = String(spec.npus ?? 8);
  const resource = spec.resource ?? NPU_RESOURCE;
  const resources = { cpu: '192', memory: '1536Gi', pods: '110', [resource]: npus };
  // The device plugin's `accelerator` label: huawei-<chip kind>, `huawei-npu` on A5 (ascend-common's
  // AcceleratorNPULabel); the ascend plugin names a node's device-info keys after it.
  const accelerator = `huawei-${resource.slice('huawei.com/'.length)}`;
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: {
      name: spec.name,
      annotations: { [KWOK_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': spec.name, 'kubernetes.io/os': 'linux', type: 'kwok', 'accelerator': accelerator, 'node-role.kubernetes.io/worker': 'worker', ...spec.labels },
    },
    spec: {},
    status: { capacity: resources, allocatable: resources, phase: 'Running' },
  };
}

/** Creates the nodes that do not exist yet, `parallel` requests at a time. */
export async function createFakeNodes(client: KubeClient, specs: readonly FakeNodeSpec[], parallel = 16): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < specs.length) {
      const spec = specs[next++]!;
      try {
        await client.create(paths.nodes(), fakeNode(spec));
      } catch (e) {
        if (!isConflict(e)) throw e; // 409 AlreadyExists: keep the existing node
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, specs.length) }, worker));
}

export const nodeNames = (count: number, prefix = 'node'): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);

/**
 * The device plugin's node annotation `baseDeviceInfos` (chip -> IP, SuperDeviceID): with
 * self-maintain-available-card=true the ascend plugin counts a node's free chips from its keys.
 * Chips are `Ascend910-<i>`, or `npu-<i>` on A5 (`chipPrefix` 'npu').
 */
export function baseDeviceInfos(npus = 8, chipPrefix = 'Ascend910'): string {
  const m: Record<string, { IP: string; SuperDeviceID: number }> = {};
  for (let i = 0; i < npus; i++) m[`${chipPrefix}-${i}`] = { IP: `192.168.100.${100 + i}`, SuperDeviceID: 0 };
  return JSON.stringify(m);
}
