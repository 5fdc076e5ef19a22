/**
 * The real Volcano on its own real control plane: vc-controller-manager creates a Volcano Job's pods
 * and vc-scheduler with Huawei's ascend plugin (tools/volcano/build.sh) places them, reading the
 * cluster-info ConfigMaps clusterd-ts writes from the device plugin simulator's device-info. No
 * allocator, job-peer or kube-scheduler runs here: every chip annotation and every pod is Volcano's.
 *
 * `make test` builds Volcano first (`make volcano`; cold: see tools/volcano/README.md).
 * Its own control plane, because vc-controller-manager would act on every other test's vcjobs.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { baseDeviceInfos, createFakeNodes } from '../../tools/simulator/nodes.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { rescheduleReasonOf, startManager } from '../support/jobs-support.ts';

const P = 'huawei.com/Ascend910';

type Pod = KubeObject & { spec?: { nodeName?: string; schedulerName?: string }; status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> } };

/**
 * A Volcano Job as a user writes it with the webhook off (queue, scheduler, minAvailable, maxRetry
 * spelled out), on the nodes labelled vc-test=<group>.
 */
function vcjob(ns: string, name: string, o: { replicas: number; npus: number; group: string; labels?: Record<string, string> }): KubeObject {
  const { replicas, npus } = o;
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', ...o.labels } },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: replicas, maxRetry: 3,
      // Huawei's documented policy for fault-scheduling jobs: an evicted pod restarts the job.
      policies: [{ event: 'PodEvicted', action: 'RestartJob' }],
      tasks: [{
        name: 'worker', replicas, minAvailable: replicas, maxRetry: 3,
        template: {
          metadata: { labels: { app: 'mindspore', 'ring-controller.atlas': 'ascend-910' } },
          spec: {
            restartPolicy: 'Never', nodeSelector: { 'vc-test': o.group },
            containers: [{ name: 'train', image: 'train:latest', resources: { requests: { [P]: String(npus) }, limits: { [P]: String(npus) } } }],
          },
        },
      }],
    },
  };
}

describe('the real Volcano (vc-controller-manager + vc-scheduler with the ascend plugin)', () => {
  let cp: ControlPlane | undefined;
  let client: HttpKubeClient;
  let inj: FaultInjector;
  let manager: Manager | undefined;
  let metrics: Metrics;
  let allocator: NpuAllocator | undefined;
  const node = 'vc-node-0';
  const reschedNodes = ['vc-node-1', 'vc-node-2'];
  const pluginNodes = ['vc-node-3', 'vc-node-4'];
  const ns = 'vc-team';

  const podsOf = async (job: string): Promise<Pod[]> =>
    (await client.list<Pod>(paths.pods(ns), { labelSelector: `volcano.sh/job-name=${job}` })).items;

  beforeAll(async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    cp = await ControlPlane.start({ binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-volcano-${process.pid}`), kwok: true, volcano: { dir } });
    client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    await ensureNamespace(client, ns);
    await createFakeNodes(client, [{ name: node, labels: { 'vc-test': 'placement' } }, ...reschedNodes.map((name) => ({ name, labels: { 'vc-test': 'resched' } })),
      ...pluginNodes.map((name) => ({ name, labels: { 'vc-test': 'plugin' } }))]);
    inj = new FaultInjector(client);
    for (const n of [node, ...reschedNodes, ...pluginNodes]) {
      // No node lifecycle controller runs: lift the not-ready taint (as tools/cluster.ts does) and add
      // the device plugin's node annotation.
      await client.patch(paths.node(n), { metadata: { annotations: { baseDeviceInfos: baseDeviceInfos() } }, spec: { taints: null } });
      await inj.addNodes([{ name: n }]);
    }
    // The device plugin's Allocate (no kubelet on kwok): AscendReal = the chips the plugin chose.
    allocator = new NpuAllocator(client, { namespace: ns });
    await allocator.start();
    // The chart's defaults: rescheduling asked for, the plugin detected in volcano-system's scheduler ConfigMap.
    ({ manager, metrics } = await startManager(client, []));
    for (const n of [node, ...reschedNodes, ...pluginNodes]) await eventually(async () => (await deviceEntry(client, n))?.DeviceList[P]?.split(',').length === 8, 30_000);
  }, 1_800_000);

  afterAll(async () => {
    await manager?.stop();
    allocator?.stop();
    await inj?.close();
    await cp?.stop();
  }, 60_000);

  it('places a Volcano Job pod on healthy chips only: the plugin skips the chip clusterd-ts marks Unhealthy in cluster-info', async () => {
    // A SeparateNPU chip fault in the device-info becomes -Unhealthy in cluster-info-device-N.
    await inj.inject({ kind: 'npu', node, npu: 'Ascend910-1', code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => (await deviceEntry(client, node))?.DeviceList[`${P}-Unhealthy`]?.split(',').includes('Ascend910-1'), 30_000);

    await client.create(paths.vcJobs(ns), vcjob(ns, 'train-a', { replicas: 1, npus: 4, group: 'placement' }));
    const pod = await eventually(async () => {
      const [p] = await podsOf('train-a');
      return p?.spec?.nodeName !== undefined && p.metadata?.annotations?.[P] !== undefined ? p : undefined;
    }, 120_000, 500);

    // Created by vc-controller-manager for the Job, bound by vc-scheduler.
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Job', apiVersion: 'batch.volcano.sh/v1alpha1', name: 'train-a' });
    expect(pod.spec?.schedulerName).toBe('volcano');
    expect(pod.spec?.nodeName).toBe(node);
    // module910x8 hands out a whole HCCS ring for 4 chips; ring 0-3 holds the Unhealthy chip 1.
    expect(pod.metadata?.annotations?.[P]).toBe('Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7');
    // The device plugin stand-in only copies the plugin's choice.
    await eventually(async () => (await client.get<Pod>(paths.pod(ns, pod.metadata!.name!))).metadata?.annotations?.['huawei.com/AscendReal'] === 'Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7', 10_000);

    // A second 4-chip pod would need ring 0-3, which has only 3 healthy chips: it stays Pending.
    await client.create(paths.vcJobs(ns), vcjob(ns, 'train-b', { replicas: 1, npus: 4, group: 'placement' }));
    await eventually(async () => (await podsOf('train-b')).length === 1, 60_000, 500);
    await new Promise((r) => setTimeout(r, 5_000)); // several 1 s scheduling sessions
    const [b] = await podsOf('train-b');
    expect(b?.spec?.nodeName).toBeUndefined();
    expect(b?.metadata?.annotations?.[P]).toBeUndefined();
  }, 300_000);

  it('the chart\'s defaults beside the real plugin: never two deleters; the plugin deletes the fault pod, vc-controller-manager re-creates it, the plugin places it away from the fault, clusterd-ts acts on nothing', async () => {
    // Detected from the ConfigMap vc-scheduler mounts (tools/control-plane/control-plane.ts creates it as a deployment has it).
    expect((await metrics.reschedulingYielded.get()).values[0]?.value).toBe(1);
    await client.create(paths.vcJobs(ns), vcjob(ns, 'llama', { replicas: 1, npus: 8, group: 'resched', labels: { 'fault-scheduling': 'force' } }));
    const first = await eventually(async () => {
      const [p] = await podsOf('llama');
      return p?.spec?.nodeName !== undefined && p.status?.phase === 'Running' && p.metadata?.annotations?.['huawei.com/AscendReal'] !== undefined ? p : undefined;
    }, 120_000, 500);
    const faultNode = first.spec!.nodeName!;
    const otherNode = reschedNodes.find((n) => n !== faultNode)!;
    expect(first.metadata?.annotations?.[P]?.split(',')).toHaveLength(8);

    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-5', code: '80E18402', level: 'SeparateNPU' });
    const second = await eventually(async () => {
      const pods = await podsOf('llama');
      return pods.find((p) => p.metadata?.uid !== first.metadata?.uid && p.spec?.nodeName !== undefined && p.metadata?.deletionTimestamp === undefined);
    }, 120_000, 500);
    // The plugin alone deleted it: clusterd-ts decided nothing and deleted nothing.
    expect((await metrics.decisions.get()).values.filter((v) => v.labels.outcome === 'acted').reduce((n, v) => n + v.value, 0)).toBe(0);
    expect((await metrics.apiRequests.get()).values.filter((v) => v.labels.method === 'DELETE').reduce((n, v) => n + v.value, 0)).toBe(0);
    // An 8-chip pod no longer fits the node with the Unhealthy chip.
    expect(second.spec?.nodeName).toBe(otherNode);
    expect(second.metadata?.annotations?.[P]?.split(',')).toHaveLength(8);
    expect(second.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Job', name: 'llama' });
  }, 300_000);

  it('--rescheduling=false: the real plugin deletes the fault pod and records the reschedule, clusterd-ts only publishes cluster-info', async () => {
    await manager?.stop();
    ({ manager, metrics } = await startManager(client, ['--rescheduling=false']));
    const job = await client.create<KubeObject>(paths.vcJobs(ns), vcjob(ns, 'gpt', { replicas: 1, npus: 8, group: 'plugin', labels: { 'fault-scheduling': 'force' } }));
    const first = await eventually(async () => {
      const [p] = await podsOf('gpt');
      return p?.spec?.nodeName !== undefined && p.status?.phase === 'Running' && p.metadata?.annotations?.['huawei.com/AscendReal'] !== undefined ? p : undefined;
    }, 120_000, 500);
    const faultNode = first.spec!.nodeName!;

    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-2', code: '80E18402', level: 'SeparateNPU' });
    const second = await eventually(async () => {
      const pods = await podsOf('gpt');
      return pods.find((p) => p.metadata?.uid !== first.metadata?.uid && p.spec?.nodeName !== undefined && p.metadata?.deletionTimestamp === undefined);
    }, 120_000, 500);
    expect(second.spec?.nodeName).toBe(pluginNodes.find((n) => n !== faultNode));
    // The plugin's reason record for this job (ours is off in this mode), read with our own schema.
    const reason = await eventually(() => rescheduleReasonOf(client, `${ns}/gpt-${job.metadata!.uid!}`), 30_000, 500);
    expect(reason.TotalRescheduleTimes).toBe(1);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'CardUnhealthy', PodName: 'gpt-worker-0', NodeName: faultNode, NodeRankIndex: '0' }]);
    expect((await metrics.decisions.get()).values.filter((v) => v.labels.outcome === 'acted').reduce((n, v) => n + v.value, 0)).toBe(0);
  }, 300_000);
});
