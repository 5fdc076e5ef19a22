/**
 * The A5 reference for docs/rules.md#resched.block-escalation: the real ascend plugin in Volcano
 * (topology A, clusterd-ts in ClusterD's role) with a `huawei.com/schedule_policy: chip8-node8-ra64-sp`
 * job (8 `huawei.com/npu` a pod), `ra-block: 16` (2 pods a rack block) and `sp-block: 32` (the whole
 * job), on four kwok A5 servers of rack 0 in super-pod 0, written as the device plugin writes them there:
 * `huawei.com/npu` capacity, chips `npu-<i>` in device-info (SuperPodID, ServerIndex, RackID) and in the
 * Node's `baseDeviceInfos`, `superPodID`/`serverIndex`/`serverType=npu`/`rackID` annotations.
 * A chip fault on rank 3's node leaves its replacement no node (7 healthy chips there, the others
 * full): the plugin deletes rank 3 alone, after 3 pending sessions rank 2 (its rack block; ranks 0 and
 * 1 stay), after 6 the super-pod block, which holds rank 0, so the whole job
 * (component/ascend-for-volcano/internal/rescheduling/reschedule_v2.go singlePodReschedulingUpgradeFor910A5,
 * job_v2.go podReschedulingSkipTask, judgeJobIsMasterFault). `test/integration/jobs-blocks.test.ts`
 * asserts the same steps and records of ours on the same inputs. Own control plane: the plugin's
 * super-pod arguments (`super-pod-size` 4, `reserve-nodes` 0) fit these four nodes only.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { a5Node } from '../../tools/simulator/pingmesh.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import type { Manager } from '../../controllers/manager.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { recordRounds, report, rescheduleReasonOf, startManager } from '../support/jobs-support.ts';

const P = 'huawei.com/npu';
const REAL = 'huawei.com/AscendReal';
const RANK = 'hccl/rankIndex';
type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string }; metadata?: KubeObject['metadata'] & { deletionTimestamp?: string } };

describe('topology A, A5: the ascend plugin widens a pending pod-level restart of a ra-block job', () => {
  let cp: ControlPlane | undefined;
  let manager: Manager | undefined;
  let allocator: NpuAllocator | undefined;
  let inj: FaultInjector | undefined;
  afterAll(async () => {
    await manager?.stop();
    allocator?.stop();
    await inj?.close();
    await cp?.stop();
  });

  it('rank 3 alone, then rank 2 of its rack block (ranks 0-1 kept), then the super-pod block with rank 0: the whole job', async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    cp = await ControlPlane.start({
      binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-topology-a5-blocks-${process.pid}`), kwok: true,
      volcano: { dir, pluginArguments: { 'grace-over-time': '6', 'super-pod-size': '4', 'reserve-nodes': '0' } },
    });
    const client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    const ns = 'topo-a5';
    await ensureNamespace(client, ns);
    const names = ['ta5-0', 'ta5-1', 'ta5-2', 'ta5-3'];
    const servers = names.map((name, i) => ({ name, ...a5Node({ superPodId: 0, serverIndex: i, rackId: 0, acceleratorType: '950-SuperPod-Atlas-8' }) }));
    await createFakeNodes(client, servers.map((s) => ({ name: s.name, resource: P, labels: { ...s.labels, 'vc-test': 'a5' } })));
    inj = new FaultInjector(client);
    for (const [i, s] of servers.entries()) {
      await client.patch(paths.node(s.name), { metadata: { annotations: s.annotations }, spec: { taints: null } });
      await inj.addNodes([{ name: s.name, prefix: P, superPodId: 0, serverIndex: i, rackId: 0 }]);
    }
    allocator = new NpuAllocator(client, { namespace: ns, resource: P });
    await allocator.start();
    ({ manager } = await startManager(client, []));
    for (const name of names) await eventually(async () => (await deviceEntry(client, name))?.DeviceList[P]?.split(',').length === 8, 60_000);

    const job = await client.create<KubeObject>(paths.vcJobs(ns), {
      apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
      metadata: {
        name: 'ra', namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'force', 'pod-rescheduling': 'on' },
        annotations: { 'huawei.com/schedule_policy': 'chip8-node8-ra64-sp', 'ra-block': '16', 'sp-block': '32' },
      },
      spec: {
        schedulerName: 'volcano', queue: 'default', minAvailable: 4, maxRetry: 3,
        tasks: [{
          name: 'worker', replicas: 4, minAvailable: 4, maxRetry: 3,
          template: {
            metadata: { labels: { app: 'mindspore', 'ring-controller.atlas': 'ascend-910' } },
            spec: { restartPolicy: 'Never', nodeSelector: { 'vc-test': 'a5' }, containers: [{ name: 'train', image: 'train:latest', resources: { requests: { [P]: '8' }, limits: { [P]: '8' } } }] },
          },
        }],
      },
    });
    const podsOf = async (): Promise<Pod[]> => (await client.list<Pod>(paths.pods(ns), { labelSelector: 'volcano.sh/job-name=ra' })).items;
    const byRank = await eventually(async () => {
      const ps = await podsOf();
      if (ps.length !== 4 || !ps.every((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[REAL] !== undefined && p.metadata?.annotations?.[RANK] !== undefined)) return undefined;
      return new Map(ps.map((p) => [Number(p.metadata!.annotations![RANK]), p]));
    }, 120_000, 250);
    const uid = (rank: number): string => byRank.get(rank)!.metadata!.uid!;
    const alive = async (): Promise<Set<string>> => new Set((await podsOf()).filter((p) => p.metadata?.deletionTimestamp === undefined).map((p) => p.metadata!.uid!));

    const r3 = byRank.get(3)!;
    await inj.inject({ kind: 'npu', node: r3.spec!.nodeName!, npu: r3.metadata!.annotations![REAL]!.split(',')[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => !(await alive()).has(uid(3)), 60_000, 100);
    const t0 = Date.now();
    const first = await alive();
    for (const r of [0, 1, 2]) expect(first.has(uid(r))).toBe(true);

    // Rack step: rank 2 goes, ranks 0 and 1 stay.
    await eventually(async () => !(await alive()).has(uid(2)), 60_000, 100);
    const tRack = Date.now() - t0;
    const mid = await alive();
    for (const r of [0, 1]) expect(mid.has(uid(r))).toBe(true);

    // Super-pod step: the block is the whole job and holds rank 0, so ranks 0 and 1 go too.
    await eventually(async () => { const s = await alive(); return !s.has(uid(0)) && !s.has(uid(1)); }, 60_000, 100);
    const tJob = Date.now() - t0;
    // Each deletion round is a reschedule record: pod level, the rack step, the super-pod step (job level).
    const reason = await eventually(async () => { const r = await rescheduleReasonOf(client, `${ns}/ra-${job.metadata!.uid!}`); return (r?.TotalRescheduleTimes ?? 0) >= 3 ? r : undefined; }, 30_000, 250);
    expect(reason.TotalRescheduleTimes).toBe(3);
    // Every round names the fault pod alone (rank 3, its node), not the pods a step widened to.
    expect(recordRounds(reason)).toEqual(['3:CardUnhealthy', '3:CardUnhealthy', '3:CardUnhealthy']);
    for (const rec of reason.RescheduleRecords ?? []) expect(rec.ReasonOfTask?.map((t) => [t.PodName, t.NodeName])).toEqual([[r3.metadata!.name!, r3.spec!.nodeName!]]);
    report(`topology A, A5 ra-block=16 sp-block=32: rank 3 deleted -> rank 2 (rack step) ${tRack} ms, -> whole job (super-pod step, rank 0) ${tJob} ms (ours by default: 3.75 s and 7.5 s of pending time)`);
  }, 600_000);
});
