/**
 * Topology B: the real Volcano without Huawei's ascend plugin (vc-scheduler-stock with Volcano's own
 * configuration, tools/volcano/build.sh; NPUs allocated by the device plugin, played by the
 * allocator since kwok has no kubelet). No plugin is configured, so clusterd-ts holds the
 * rescheduling role with its defaults: it deletes a faulty job's pod and vc-controller-manager
 * re-creates it. Its own control plane, because vc-controller-manager acts on every vcjob.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { rescheduleReasonOf, startManager } from '../support/jobs-support.ts';

const P = 'huawei.com/Ascend910';

type Pod = KubeObject & { spec?: { nodeName?: string; schedulerName?: string }; status?: { phase?: string } };

describe('topology B: the real Volcano without the ascend plugin, clusterd-ts rescheduling', () => {
  let cp: ControlPlane | undefined;
  let client: HttpKubeClient;
  let inj: FaultInjector;
  let manager: Manager | undefined;
  let metrics: Metrics;
  let allocator: NpuAllocator | undefined;
  const nodes = ['vcb-node-0', 'vcb-node-1'];
  const ns = 'vcb-team';
  const podsOf = async (job: string): Promise<Pod[]> =>
    (await client.list<Pod>(paths.pods(ns), { labelSelector: `volcano.sh/job-name=${job}` })).items;

  beforeAll(async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    cp = await ControlPlane.start({ binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-volcano-stock-${process.pid}`), kwok: true, volcano: { dir, scheduler: 'stock' } });
    client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    await ensureNamespace(client, ns);
    await createFakeNodes(client, nodes.map((name) => ({ name, labels: { 'vc-test': 'stock' } })));
    inj = new FaultInjector(client);
    for (const n of nodes) {
      await client.patch(paths.node(n), { spec: { taints: null } });
      await inj.addNodes([{ name: n }]);
    }
    allocator = new NpuAllocator(client, { namespace: ns });
    await allocator.start();
    ({ manager, metrics } = await startManager(client, []));
    for (const n of nodes) await eventually(async () => (await deviceEntry(client, n))?.DeviceList[P]?.split(',').length === 8, 30_000);
  }, 1_800_000);

  afterAll(async () => {
    await manager?.stop();
    allocator?.stop();
    await inj?.close();
    await cp?.stop();
  }, 60_000);

  it('the chart\'s defaults: clusterd-ts holds the role, deletes the fault pod once, vc-controller-manager re-creates it, the reason is recorded', async () => {
    expect((await metrics.reschedulingYielded.get()).values[0]?.value).toBe(0);
    const job = await client.create<KubeObject>(paths.vcJobs(ns), {
      apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
      metadata: { name: 'llama', namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'force' } },
      spec: {
        schedulerName: 'volcano', queue: 'default', minAvailable: 1, maxRetry: 3,
        policies: [{ event: 'PodEvicted', action: 'RestartJob' }],
        tasks: [{
          name: 'worker', replicas: 1, minAvailable: 1, maxRetry: 3,
          template: {
            metadata: { labels: { app: 'mindspore', 'ring-controller.atlas': 'ascend-910' } },
            spec: { restartPolicy: 'Never', nodeSelector: { 'vc-test': 'stock' }, containers: [{ name: 'train', image: 'train:latest', resources: { requests: { [P]: '8' }, limits: { [P]: '8' } } }] },
          },
        }],
      },
    });
    const first = await eventually(async () => {
      const [p] = await podsOf('llama');
      return p?.spec?.nodeName !== undefined && p.status?.phase === 'Running' && p.metadata?.annotations?.['huawei.com/AscendReal'] !== undefined ? p : undefined;
    }, 120_000, 500);
    // Bound by the stock vc-scheduler; the chips are the device plugin's (the allocator's), not the ascend plugin's.
    expect(first.spec?.schedulerName).toBe('volcano');
    expect(first.metadata?.annotations?.[P]).toBeUndefined();

    const t0 = Date.now();
    await inj.inject({ kind: 'npu', node: first.spec!.nodeName!, npu: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU' });
    const second = await eventually(async () => {
      const pods = await podsOf('llama');
      return pods.find((p) => p.metadata?.uid !== first.metadata?.uid && p.status?.phase === 'Running' && p.metadata?.deletionTimestamp === undefined);
    }, 120_000, 500);
    process.stdout.write(`[volcano-stock] fault -> replacement Running: ${Date.now() - t0} ms (node ${first.spec!.nodeName} -> ${second.spec!.nodeName})\n`);
    const acted = (await metrics.decisions.get()).values.filter((v) => v.labels.kind === 'job' && v.labels.outcome === 'acted');
    expect(acted.reduce((n, v) => n + v.value, 0)).toBe(1);
    expect(second.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Job', name: 'llama' });
    const reason = await eventually(() => rescheduleReasonOf(client, `${ns}/llama-${job.metadata!.uid!}`), 30_000, 500);
    expect(reason.TotalRescheduleTimes).toBe(1);
  }, 300_000);
});
