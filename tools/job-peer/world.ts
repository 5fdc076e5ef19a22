/**
 * A small "training cluster" for the jobs integration tests and the demo: kwok nodes with
 * `huawei.com/Ascend910: 8`, the device plugin simulator writing their device-info (and the Node
 * allocatable, as kubelet would), the NPU allocator writing `huawei.com/AscendReal` on bound pods,
 * and the job peer recreating deleted pods of Volcano Jobs. Unique names per world, so tests can share
 * one control plane.
 */
import { randomBytes } from 'node:crypto';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { createFakeNodes } from '../simulator/nodes.ts';
import { DevicePluginSimulator } from '../simulator/device-plugin.ts';
import { NpuAllocator } from '../simulator/allocator.ts';
import { chipLists } from '../simulator/npu-state.ts';
import { a5Node } from '../simulator/pingmesh.ts';
import { A5_SUPER_POD_TYPES } from '../../schemas/pingmesh/super-pod-device.ts';
import { setNodeNotReady, type ReadyAck } from '../simulator/node-ready.ts';
import { JobPeer, JOB_NAME_LABEL } from './job-peer.ts';

export const NPU_RESOURCE = 'huawei.com/Ascend910';
export const A5_NPU_RESOURCE = 'huawei.com/npu';

export interface World {
  readonly ns: string;
  readonly nodes: readonly string[];
  readonly dp: DevicePluginSimulator;
  readonly peer: JobPeer;
  /** Pods must select this label so they land on this world's nodes only (the control plane is shared). */
  readonly nodeSelector: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  if ((await client.getOrUndefined(`/api/v1/namespaces/${name}`)) === undefined) {
    try { await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }); } catch { /* raced */ }
  }
}

/**
 * `superPodId`: an A3 super-pod, its nodes at ServerIndex 0.. (device-info SuperPodID, SwitchInfoCfg).
 * `rackId` (with `superPodId`): A5 servers of that rack instead, as the device plugin writes them there
 * (`huawei.com/npu` chips `npu-<i>`, device-info RackID, the Node annotations of `a5Node`).
 */
export async function startWorld(client: KubeClient, opts: { nodes: number; prefix?: string; superPodId?: number; rackId?: number }): Promise<World> {
  for (const ns of ['mindx-dl', 'kube-system', 'volcano-system', 'cluster-system']) await ensureNamespace(client, ns);
  const id = randomBytes(3).toString('hex');
  const ns = `${opts.prefix ?? 'jobs'}-${id}`;
  await ensureNamespace(client, ns);
  const nodes = Array.from({ length: opts.nodes }, (_, i) => `${opts.prefix ?? 'jobs'}-${id}-n${i}`);
  const nodeSelector = { 'clusterd-ts.io/test-world': id };
  const a5 = opts.rackId === undefined ? undefined : { superPodId: opts.superPodId ?? 0, rackId: opts.rackId };
  const server = (i: number): ReturnType<typeof a5Node> | undefined => (a5 === undefined ? undefined : a5Node({ ...a5, serverIndex: i, acceleratorType: A5_SUPER_POD_TYPES.pod950 }));
  await createFakeNodes(client, nodes.map((name, i) => ({ name, labels: { ...server(i)?.labels, ...nodeSelector }, ...(a5 === undefined ? {} : { resource: A5_NPU_RESOURCE }) })));
  // The apiserver taints new Nodes node.kubernetes.io/not-ready; the node lifecycle controller (not
  // run here) lifts it once the node is Ready. Do its job, so pods need no blanket toleration and
  // our own isolation taints keep their meaning.
  for (const [i, n] of nodes.entries()) await client.patch(paths.node(n), { spec: { taints: null }, ...(a5 === undefined ? {} : { metadata: { annotations: server(i)!.annotations } }) }, 'merge');
  const dp = new DevicePluginSimulator(client, {
    nodes: nodes.map((name, i) => ({
      name, ...(opts.superPodId === undefined ? {} : { superPodId: opts.superPodId, serverIndex: i }), ...(a5 === undefined ? {} : { prefix: A5_NPU_RESOURCE, rackId: a5.rackId }),
    })),
    minWriteIntervalMs: 100,
  });
  await dp.init();
  const allocator = new NpuAllocator(client, {
    namespace: ns, ...(a5 === undefined ? {} : { resource: A5_NPU_RESOURCE }),
    unhealthy: (node) => { try { return chipLists(dp.state(node)).unhealthy; } catch { return []; } },
  });
  await allocator.start();
  const peer = new JobPeer(client, { namespace: ns });
  await peer.start();
  return {
    ns, nodes, dp, peer, nodeSelector,
    async stop() {
      await peer.stop();
      allocator.stop();
      dp.close();
      // No garbage collector runs here: remove the jobs, PodGroups and pods so that a later test's
      // controller does not act on this world's leftovers.
      const del = async (path: string, items: KubeObject[], force = false): Promise<void> => {
        await Promise.all(items.map((o) => client.delete(`${path}/${o.metadata?.name}`, force ? { gracePeriodSeconds: 0 } : undefined).catch(() => undefined)));
      };
      await del(paths.vcJobs(ns), (await client.list<KubeObject>(paths.vcJobs(ns))).items);
      await del(paths.podGroups(ns), (await client.list<KubeObject>(paths.podGroups(ns))).items);
      await del(paths.pods(ns), (await client.list<KubeObject>(paths.pods(ns))).items, true);
    },
  };
}

export interface VcJobSpec {
  readonly name: string;
  readonly replicas: number;
  readonly npus: number;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** Default `huawei.com/Ascend910`. */
  readonly resource?: typeof NPU_RESOURCE | typeof A5_NPU_RESOURCE;
}

/** A Volcano Job of one task `worker` (spec as a user writes it; the peer turns it into pods). */
export function vcJob(ns: string, s: VcJobSpec): KubeObject {
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name: s.name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', ...s.labels }, annotations: { ...s.annotations } },
    spec: {
      minAvailable: s.replicas, schedulerName: 'volcano', maxRetry: 3,
      policies: [{ event: 'PodFailed', action: 'Ignore' }],
      tasks: [{
        name: 'worker', replicas: s.replicas,
        template: {
          metadata: { labels: { app: s.name } },
          spec: {
            restartPolicy: 'Never', terminationGracePeriodSeconds: 1, ...(s.nodeSelector ? { nodeSelector: { ...s.nodeSelector } } : {}),
            containers: [{ name: 'ascend', image: 'training:latest', resources: { requests: { [s.resource ?? NPU_RESOURCE]: String(s.npus) }, limits: { [s.resource ?? NPU_RESOURCE]: String(s.npus) } } }],
          },
        },
      }],
    },
  };
}

export type PodObj = KubeObject & {
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
};

/** The job's pods, by rank. */
export async function jobPods(client: KubeClient, ns: string, job: string): Promise<PodObj[]> {
  const list = await client.list<PodObj>(paths.pods(ns), { labelSelector: `${JOB_NAME_LABEL}=${job}` });
  const rank = (p: PodObj): number => Number(p.metadata?.annotations?.['hccl/rankIndex'] ?? 1e9);
  return list.items.sort((a, b) => rank(a) - rank(b));
}

/** Running, not terminating, and holding NPUs. */
export const runningWithNpus = (p: PodObj): boolean =>
  p.status?.phase === 'Running' && p.metadata?.deletionTimestamp === undefined && (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '') !== '';

/**
 * A node that stopped reporting: Ready=Unknown (kwok released) plus the taint the node lifecycle
 * controller puts on such a node (`node.kubernetes.io/unreachable:NoSchedule`).
 */
export async function loseNode(client: KubeClient, node: string): Promise<ReadyAck> {
  const ack = await setNodeNotReady(client, node, { status: 'Unknown' });
  await client.patch(paths.node(node), { spec: { taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }] } }, 'merge');
  return ack;
}

/** Marks a pod Failed the way kubelet reports a container that exited non-zero. */
export async function failPod(client: KubeClient, ns: string, name: string): Promise<void> {
  const now = new Date().toISOString();
  await client.patch(paths.podStatus(ns, name), {
    status: {
      phase: 'Failed',
      conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: now }],
      containerStatuses: [{ name: 'ascend', image: 'training:latest', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 1, reason: 'Error', startedAt: now, finishedAt: now } } }],
    },
  }, 'merge');
}

/** Creates a PodGroup with no owner (a job "in the session" that is none of ours). */
export async function createBarePodGroup(client: KubeClient, ns: string, name: string): Promise<void> {
  await client.create(paths.podGroups(ns), { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name, namespace: ns }, spec: { minMember: 1 } });
}
