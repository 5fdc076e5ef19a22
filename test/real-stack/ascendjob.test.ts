/**
 * AscendJobs under the real Ascend Operator (tools/ascend-operator/build.sh) on the real Volcano in
 * topology B: the stock vc-scheduler (no ascend plugin, so clusterd-ts holds the rescheduling role with
 * the chart's defaults), NPUs handed out by the device plugin (the allocator, kwok has no kubelet).
 * The operator creates each job's PodGroup, Service and pods (`<job>-<type>-<index>`, rank annotation
 * `hccl/rankIndex`); clusterd-ts only deletes pods and writes vcjob-fault-npu-cm, the operator
 * re-creates what it deleted. Its own control plane: the operator and vc-controller-manager act on
 * every object of their kinds. Scenarios run in parallel on their own nodes.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureAscendOperator, ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import { failPod } from '../../tools/job-peer/world.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { rescheduleReasonOf, startManager, vcjobFaultNpu } from '../support/jobs-support.ts';

const P = 'huawei.com/Ascend910';
const RANK = 'hccl/rankIndex';

type Pod = KubeObject & { spec?: { nodeName?: string; schedulerName?: string; containers?: Array<{ env?: Array<{ name: string; value?: string }> }> }; status?: { phase?: string } };
type Condition = { type: string; status: string; reason?: string; message?: string };
type AscendJobObj = KubeObject & { status?: { conditions?: Condition[] } };

/**
 * A PyTorch AscendJob as a user writes one for the operator (its CRD and validation,
 * component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go): label `framework`, one Master
 * and `workers` Workers, container `ascend` with port `ascendjob-port`, Volcano and its queue named.
 */
function ascendJob(ns: string, name: string, o: { workers: number; group: string; labels?: Record<string, string> }): KubeObject {
  const replica = (replicas: number) => ({
    replicas, restartPolicy: 'Never',
    template: {
      metadata: { labels: { app: 'pytorch', 'ring-controller.atlas': 'ascend-910' } },
      spec: {
        nodeSelector: { 'vc-test': o.group },
        containers: [{
          name: 'ascend', image: 'pytorch-train:latest', ports: [{ containerPort: 2222, name: 'ascendjob-port' }],
          resources: { requests: { [P]: '8' }, limits: { [P]: '8' } },
        }],
      },
    },
  });
  return {
    apiVersion: 'mindxdl.gitee.com/v1', kind: 'AscendJob',
    metadata: { name, namespace: ns, labels: { framework: 'pytorch', 'ring-controller.atlas': 'ascend-910', ...o.labels } },
    spec: {
      schedulerName: 'volcano',
      runPolicy: { schedulingPolicy: { minAvailable: 1 + o.workers, queue: 'default' } },
      successPolicy: 'AllWorkers',
      replicaSpecs: { Master: replica(1), ...(o.workers > 0 ? { Worker: replica(o.workers) } : {}) },
    },
  };
}

describe('AscendJobs: the real Ascend Operator on the real Volcano (topology B), clusterd-ts rescheduling', () => {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let inj: FaultInjector;
  let manager: Manager | undefined;
  let metrics: Metrics;
  let allocator: NpuAllocator | undefined;
  const t0 = Date.now();
  const ns = 'acj-team';
  const groups = { job: 3, pod: 3, retry: 2 } as const;
  const nodesOf = (g: keyof typeof groups): string[] => Array.from({ length: groups[g] }, (_, i) => `acj-${g}-${i}`);
  const allNodes = (Object.keys(groups) as Array<keyof typeof groups>).flatMap(nodesOf);

  const podsOf = async (job: string): Promise<Pod[]> =>
    (await client.list<Pod>(paths.pods(ns), { labelSelector: `training.kubeflow.org/job-name=${job}` })).items;
  const live = (ps: readonly Pod[]): Pod[] => ps.filter((p) => p.metadata?.deletionTimestamp === undefined);
  const running = (p: Pod): boolean => p.spec?.nodeName !== undefined && p.status?.phase === 'Running' && p.metadata?.annotations?.['huawei.com/AscendReal'] !== undefined;
  const byName = (ps: readonly Pod[]): Map<string, Pod> => new Map(ps.map((p) => [p.metadata!.name!, p]));
  /** All `count` pods of the job Running with chips, none of `oldUids`. */
  const allRunning = (job: string, count: number, oldUids: ReadonlySet<string> = new Set()): Promise<Pod[]> => eventually(async () => {
    const ps = live(await podsOf(job));
    return ps.length === count && ps.every((p) => running(p) && !oldUids.has(p.metadata!.uid!)) ? ps : undefined;
  }, 180_000, 500);
  const conditionsOf = async (job: string): Promise<Condition[]> => (await client.get<AscendJobObj>(paths.ascendJob(ns, job))).status?.conditions ?? [];
  const acted = async (): Promise<number> => (await metrics.decisions.get()).values.filter((v) => v.labels.outcome === 'acted').reduce((n, v) => n + v.value, 0);

  beforeAll(async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    const operator = ensureAscendOperator();
    if (operator === undefined) throw new Error('no MindCluster source on this machine (tools/ascend-operator/build.sh exit 3)');
    cp = await ControlPlane.start({
      binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-ascendjob-${process.pid}`), kwok: true,
      volcano: { dir, scheduler: 'stock', ascendOperator: operator },
    });
    client = KubeClient.fromFile(cp.kubeconfigPath);
    await ensureNamespace(client, ns);
    await createFakeNodes(client, (Object.keys(groups) as Array<keyof typeof groups>).flatMap((g) => nodesOf(g).map((name) => ({ name, labels: { 'vc-test': g } }))));
    inj = new FaultInjector(client);
    await Promise.all(allNodes.map(async (n) => {
      await client.patch(paths.node(n), { spec: { taints: null } });
      await inj.addNodes([{ name: n }]);
    }));
    allocator = new NpuAllocator(client, { namespace: ns });
    await allocator.start();
    ({ manager, metrics } = await startManager(client, []));
    await Promise.all(allNodes.map((n) => eventually(async () => (await deviceEntry(client, n))?.DeviceList[P]?.split(',').length === 8, 60_000)));
    process.stdout.write(`[ascendjob] stack up in ${Date.now() - t0} ms\n`);
  }, 1_800_000);

  afterAll(async () => {
    await manager?.stop();
    allocator?.stop();
    await inj?.close();
    await cp?.stop();
    process.stdout.write(`[ascendjob] file wall time ${Date.now() - t0} ms\n`);
  }, 60_000);

  it('job level (fault-scheduling: force): clusterd-ts deletes both pods, the operator re-creates them with the same ranks, Volcano places them off the faulty chip', async () => {
    const job = await client.create<KubeObject>(paths.ascendJobs(ns), ascendJob(ns, 'gpt', { workers: 1, group: 'job', labels: { 'fault-scheduling': 'force' } }));
    const first = await allRunning('gpt', 2);
    // The operator's pods: owned by the AscendJob, in its PodGroup, ranks from the replica index (Master 0).
    const firstByName = byName(first);
    expect([...firstByName.keys()].sort()).toEqual(['gpt-master-0', 'gpt-worker-0']);
    expect(firstByName.get('gpt-master-0')!.metadata?.annotations?.[RANK]).toBe('0');
    expect(firstByName.get('gpt-worker-0')!.metadata?.annotations?.[RANK]).toBe('1');
    for (const p of first) {
      expect(p.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'AscendJob', name: 'gpt', uid: job.metadata!.uid, controller: true });
      expect(p.metadata?.annotations?.['scheduling.k8s.io/group-name']).toBe(`gpt-${job.metadata!.uid}`);
      expect(p.spec?.schedulerName).toBe('volcano');
      expect(p.metadata?.labels?.version).toBe('0');
    }
    const worker = firstByName.get('gpt-worker-0')!;
    const faultNode = worker.spec!.nodeName!;

    const tf = Date.now();
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU' });
    const second = await allRunning('gpt', 2, new Set(first.map((p) => p.metadata!.uid!)));
    const ms = Date.now() - tf;
    const secondByName = byName(second);
    process.stdout.write(`[ascendjob] job level: fault -> both replacements Running: ${ms} ms (worker ${faultNode} -> ${secondByName.get('gpt-worker-0')?.spec?.nodeName})\n`);
    // Rank reuse: the operator re-creates each replica under its name with the rank of its index.
    expect([...secondByName.keys()].sort()).toEqual(['gpt-master-0', 'gpt-worker-0']);
    expect(secondByName.get('gpt-master-0')!.metadata?.annotations?.[RANK]).toBe('0');
    expect(secondByName.get('gpt-worker-0')!.metadata?.annotations?.[RANK]).toBe('1');
    // The operator counted one restart (its pod version label), and no pod sits on the faulty node.
    for (const p of second) expect(p.metadata?.labels?.version).toBe('1');
    expect(second.map((p) => p.spec?.nodeName)).not.toContain(faultNode);
    const reason = await eventually(() => rescheduleReasonOf(client, `${ns}/gpt-${job.metadata!.uid!}`), 30_000, 500);
    expect(reason.TotalRescheduleTimes).toBe(1);
  }, 400_000);
});
