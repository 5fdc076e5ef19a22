/**
 * The reference for docs/rules.md#resched.block-escalation: the real ascend plugin in Volcano
 * (topology A, clusterd-ts in ClusterD's role) with an A3 super-pod job, `huawei.com/schedule_policy:
 * chip2-node8-sp` (8 NPUs a node) and `sp-block: 16` (2 pods per logical super-pod), on four kwok
 * nodes of super-pod 0 (device-info SuperPodID 0, ServerIndex 0..3). A chip fault on rank 2's node
 * leaves its replacement no node (7 healthy chips there, the others full): the plugin deletes rank 2
 * alone, after 6 pending sessions rank 3 (the same logical super-pod; ranks 0 and 1 stay), after 12
 * the whole job (component/ascend-for-volcano/internal/rescheduling/reschedule.go
 * singlePodReschedulingUpgrade, job.go isNormalTaskCanBeDelete). `test/integration/jobs-blocks.test.ts`
 * asserts the same steps of ours. Own control plane: the plugin's super-pod arguments
 * (`super-pod-size` 4, `reserve-nodes` 0) fit these four nodes only.
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
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { blockJob, report, rescheduleReasonOf, startManager } from '../support/jobs-support.ts';

const P = 'huawei.com/Ascend910';
const REAL = 'huawei.com/AscendReal';
const RANK = 'hccl/rankIndex';
type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string }; metadata?: KubeObject['metadata'] & { deletionTimestamp?: string } };

describe('topology A: the ascend plugin widens a pending pod-level restart of an sp-block job', () => {
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

  it('rank 2 alone, then rank 3 of its logical super-pod (ranks 0-1 kept), then the whole job', async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    cp = await ControlPlane.start({
      binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-topology-a-blocks-${process.pid}`), kwok: true,
      volcano: { dir, pluginArguments: { 'grace-over-time': '6', 'super-pod-size': '4', 'reserve-nodes': '0' } },
    });
    const client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    const ns = 'topo-a-sp';
    await ensureNamespace(client, ns);
    const names = ['tasp-0', 'tasp-1', 'tasp-2', 'tasp-3'];
    await createFakeNodes(client, names.map((name) => ({ name, labels: { 'vc-test': 'sp' } })));
    inj = new FaultInjector(client);
    for (const [i, name] of names.entries()) {
      await client.patch(paths.node(name), { metadata: { annotations: { baseDeviceInfos: baseDeviceInfos() } }, spec: { taints: null } });
      await inj.addNodes([{ name, superPodId: 0, serverIndex: i }]);
    }
    allocator = new NpuAllocator(client, { namespace: ns });
    await allocator.start();
    ({ manager } = await startManager(client, []));
    for (const name of names) await eventually(async () => (await deviceEntry(client, name))?.DeviceList[P]?.split(',').length === 8, 60_000);

    const job = await client.create<KubeObject>(paths.vcJobs(ns), blockJob(ns, 'sp', P, 'sp', { 'huawei.com/schedule_policy': 'chip2-node8-sp', 'sp-block': '16' }));
    const podsOf = async (): Promise<Pod[]> => (await client.list<Pod>(paths.pods(ns), { labelSelector: 'volcano.sh/job-name=sp' })).items;
    const byRank = await eventually(async () => {
      const ps = await podsOf();
      if (ps.length !== 4 || !ps.every((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[REAL] !== undefined && p.metadata?.annotations?.[RANK] !== undefined)) return undefined;
      return new Map(ps.map((p) => [Number(p.metadata!.annotations![RANK]), p]));
    }, 120_000, 250);
    const uid = (rank: number): string => byRank.get(rank)!.metadata!.uid!;
    const alive = async (): Promise<Set<string>> => new Set((await podsOf()).filter((p) => p.metadata?.deletionTimestamp === undefined).map((p) => p.metadata!.uid!));

    const r2 = byRank.get(2)!;
    await inj.inject({ kind: 'npu', node: r2.spec!.nodeName!, npu: r2.metadata!.annotations![REAL]!.split(',')[3]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => !(await alive()).has(uid(2)), 60_000, 100);
    const t0 = Date.now();
    const first = await alive();
    for (const r of [0, 1, 3]) expect(first.has(uid(r))).toBe(true);

    // Super-pod step: rank 3 goes, ranks 0 and 1 stay.
    await eventually(async () => !(await alive()).has(uid(3)), 60_000, 100);
    const tStep = Date.now() - t0;
    const mid = await alive();
    for (const r of [0, 1]) expect(mid.has(uid(r))).toBe(true);

    // Job level: ranks 0 and 1 go too.
    await eventually(async () => { const s = await alive(); return !s.has(uid(0)) && !s.has(uid(1)); }, 60_000, 100);
    const tJob = Date.now() - t0;
    // Each deletion round is a reschedule record: pod level, the super-pod step, job level.
    const reason = await eventually(async () => { const r = await rescheduleReasonOf(client, `${ns}/sp-${job.metadata!.uid!}`); return (r?.TotalRescheduleTimes ?? 0) >= 3 ? r : undefined; }, 30_000, 250);
    expect(reason.TotalRescheduleTimes).toBe(3);
    report(`topology A, sp-block=16: rank 2 deleted -> rank 3 (super-pod step) ${tStep} ms, -> whole job ${tJob} ms (ours by default: 7.5 s and 15 s of pending time)`);
  }, 600_000);
});
