/**
 * The reference for docs/rules.md#resched.block-escalation on A5 and multilevel jobs: the real ascend
 * plugin in Volcano (topology A, clusterd-ts in ClusterD's role), one control plane, three jobs at once,
 * each on its own four kwok nodes. In each, a chip fault on rank 3's node leaves its replacement no node
 * (7 healthy chips there, the others full) and the plugin widens step by step;
 * `test/integration/jobs-blocks.test.ts` asserts the same steps and records of ours on the same inputs.
 *
 * - A5: a `huawei.com/schedule_policy: chip8-node8-ra64-sp` job (8 `huawei.com/npu` a pod), `ra-block:
 *   16` (2 pods a rack block), `sp-block: 32` (the whole job), on A5 servers of rack 0 in super-pod 0
 *   written as the device plugin writes them there: `huawei.com/npu` capacity, `accelerator: huawei-npu`,
 *   chips `npu-<i>` in device-info (SuperPodID, ServerIndex, RackID) and in the Node's
 *   `baseDeviceInfos`, `superPodID`/`serverIndex`/`serverType=npu`/`rackID` annotations. Rank 3 alone,
 *   after 3 pending sessions rank 2 (its rack block; ranks 0 and 1 stay), after 6 the super-pod block,
 *   which holds rank 0, so the whole job (component/ascend-for-volcano/internal/rescheduling/reschedule_v2.go
 *   singlePodReschedulingUpgradeFor910A5, job_v2.go podReschedulingSkipTask, judgeJobIsMasterFault).
 * - A5 with `ra-block: 16` and no `sp-block`: no rack step (podReschedulingSkipTask keeps every pod but
 *   the fault pods when the job has no `sp-block`), the whole job after 12 sessions.
 * - multilevel (`huawei.com/affinity-config`): MULTILEVEL_SETUP below.
 *
 * Own control plane: the plugin's super-pod arguments (`super-pod-size` 4, `reserve-nodes` 0) fit these
 * nodes only, and its `resource-level-config` is the multilevel case's.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { baseDeviceInfos, createFakeNodes } from '../../tools/simulator/nodes.ts';
import { a5Node } from '../../tools/simulator/pingmesh.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import type { Manager } from '../../controllers/manager.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { blockJob, recordRounds, report, rescheduleReasonOf, startManager } from '../support/jobs-support.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { realClock } from '../../runtime/clock.ts';

const A5 = 'huawei.com/npu';
const A3 = 'huawei.com/Ascend910';
const REAL = 'huawei.com/AscendReal';
const RANK = 'hccl/rankIndex';
type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string }; metadata?: KubeObject['metadata'] & { deletionTimestamp?: string } };

/**
 * MULTILEVEL_SETUP: the plugin's `resource-level-config` (its `init-params` argument,
 * component/ascend-for-volcano/plugin/factory.go getConfigLevels): topology tree `default` (nodes
 * without a `huawei.com/topotree` label) with two levels, each naming the node label whose value groups
 * nodes. The four nodes: level1 groups {0, 1} and {2, 3}, one level2 group. The job:
 * `schedule_policy: multilevel`, `huawei.com/affinity-config: level2=4,level1=2` (2 pods a level-1
 * block), 8 `huawei.com/Ascend910` a pod. Rank 3 alone, after 6 pending sessions the rest of its level-1
 * block (rank 2), after 12 the whole job (internal/rescheduling/job.go getMultiLevelJobDeletePodInfo:
 * `PendingSessionNum / 6` levels up the task tree; reschedule.go singlePodReschedulingUpgrade).
 */
const LEVEL_LABELS = { level1: 'topo.clusterd-ts.io/level1', level2: 'topo.clusterd-ts.io/level2' } as const;
const RESOURCE_LEVEL_CONFIG = JSON.stringify({ default: { level1: { label: LEVEL_LABELS.level1 }, level2: { label: LEVEL_LABELS.level2 } } });

type Settled = { ok: true } | { ok: false; error: unknown };
const settle = (p: Promise<void>): Promise<Settled> => p.then(() => ({ ok: true as const }), (error: unknown) => ({ ok: false as const, error }));
const outcome = (s: Settled): void => { if (!s.ok) throw s.error; };

describe('topology A: the ascend plugin widens a pending pod-level restart of A5 rack and multilevel jobs', () => {
  let cp: ControlPlane | undefined;
  let client: HttpKubeClient;
  let manager: Manager | undefined;
  let inj: FaultInjector | undefined;
  const allocators: NpuAllocator[] = [];
  let scenarios: Record<'a5' | 'a5NoSp' | 'multilevel', Promise<Settled>>;
  beforeAll(async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    cp = await ControlPlane.start({
      binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-topology-a5-blocks-${process.pid}`), kwok: true,
      volcano: { dir, pluginArguments: { 'grace-over-time': '6', 'super-pod-size': '4', 'reserve-nodes': '0', 'resource-level-config': RESOURCE_LEVEL_CONFIG } },
    });
    client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    inj = new FaultInjector(client);
    ({ manager } = await startManager(client, []));
    // The three jobs run at once, each on its own nodes, so the file costs about its slowest case.
    scenarios = { a5: settle(a5()), a5NoSp: settle(a5NoSp()), multilevel: settle(multilevel()) };
  }, 300_000);
  afterAll(async () => {
    await manager?.stop();
    for (const a of allocators) a.stop();
    await inj?.close();
    await cp?.stop();
  });

  /** Four nodes of one group, healthy in cluster-info; `node(i)` gives each its labels and annotations. */
  async function nodes(group: string, resource: string, node: (i: number) => { labels: Record<string, string>; annotations: Record<string, string>; superPodId?: number; rackId?: number }): Promise<void> {
    const names = [0, 1, 2, 3].map((i) => `${group}-${i}`);
    await createFakeNodes(client, names.map((name, i) => ({ name, resource, labels: { ...node(i).labels, 'vc-test': group } })));
    for (const [i, name] of names.entries()) {
      const n = node(i);
      await client.patch(paths.node(name), { metadata: { annotations: n.annotations }, spec: { taints: null } });
      await inj!.addNodes([{ name, prefix: resource === A5 ? A5 : A3, ...(n.superPodId === undefined ? {} : { superPodId: n.superPodId, serverIndex: i }), ...(n.rackId === undefined ? {} : { rackId: n.rackId }) }]);
    }
    for (const name of names) await eventually(async () => (await deviceEntry(client, name))?.DeviceList[resource]?.split(',').length === 8, 60_000);
  }

  /** A 4-pod Volcano Job of 8 NPUs a pod, pod-level rescheduling, on the group's nodes; its pods by rank once running. */
  async function runJob(ns: string, name: string, resource: string, group: string, annotations: Record<string, string>): Promise<{ uid: string; byRank: Map<number, Pod>; podsOf: () => Promise<Pod[]> }> {
    await ensureNamespace(client, ns);
    const allocator = new NpuAllocator(client, { namespace: ns, resource: resource === A5 ? A5 : A3 });
    allocators.push(allocator);
    await allocator.start();
    const job = await client.create<KubeObject>(paths.vcJobs(ns), blockJob(ns, name, resource, group, annotations));
    const podsOf = async (): Promise<Pod[]> => (await client.list<Pod>(paths.pods(ns), { labelSelector: `volcano.sh/job-name=${name}` })).items;
    const byRank = await eventually(async () => {
      const ps = await podsOf();
      if (ps.length !== 4 || !ps.every((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[REAL] !== undefined && p.metadata?.annotations?.[RANK] !== undefined)) return undefined;
      return new Map(ps.map((p) => [Number(p.metadata!.annotations![RANK]), p]));
    }, 120_000, 250);
    return { uid: job.metadata!.uid!, byRank, podsOf };
  }

  /**
   * Faults rank `fault`'s first chip, then watches the job's original pods go: `order` lists the
   * deletion rounds, each round's pods going within 2 s of each other (one session deletes them one by
   * one) and at least 2 s after the previous round's (the plugin's steps are 3 or more 1 s sessions
   * apart). Returns ms from the fault pod's
   * deletion to each later round, and the job's reason record as rounds.
   */
  async function steps(ns: string, name: string, run: Awaited<ReturnType<typeof runJob>>, fault: number, order: ReadonlyArray<readonly number[]>): Promise<{ ms: number[]; rounds: string[] }> {
    const { byRank } = run;
    const pod = byRank.get(fault)!;
    const goneAt = new Map<number, number>();
    const all = order.flat();
    const rankOf = new Map(all.map((r) => [byRank.get(r)!.metadata!.uid!, r]));
    // When each original pod went, from the watch (polls would add their own latency on a loaded machine).
    const watch = new Reflector<Pod>(client, { clock: realClock, name: `${name}_pods`, path: paths.pods(ns) });
    watch.events$.subscribe({
      next: (ev) => {
        const r = rankOf.get(ev.obj.metadata?.uid ?? '');
        if (r !== undefined && !goneAt.has(r) && (ev.type === 'delete' || ev.obj.metadata?.deletionTimestamp !== undefined)) goneAt.set(r, Date.now());
      },
    });
    watch.start();
    await watch.waitForSync();
    try {
      await inj!.inject({ kind: 'npu', node: pod.spec!.nodeName!, npu: pod.metadata!.annotations![REAL]!.split(',')[0]!, code: '80E18402', level: 'SeparateNPU' });
      await eventually(async () => goneAt.size === all.length, 60_000, 100);
    } finally {
      watch.stop();
    }
    const at = (ranks: readonly number[], f: (...xs: number[]) => number): number => f(...ranks.map((r) => goneAt.get(r)!));
    for (const [k, ranks] of order.entries()) {
      expect({ round: ranks, spreadMs: at(ranks, Math.max) - at(ranks, Math.min) < 2000 }).toEqual({ round: ranks, spreadMs: true });
      if (k > 0) expect({ round: ranks, afterPreviousMs: at(ranks, Math.min) - at(order[k - 1]!, Math.max) >= 2000 }).toEqual({ round: ranks, afterPreviousMs: true });
    }
    const t0 = at(order[0]!, Math.max);
    const ms = order.slice(1).map((ranks) => at(ranks, Math.max) - t0);
    // Each deletion round is a reschedule record naming the fault pod alone, not the pods a step widened
    // to. The plugin may write more: a round also re-deletes the fault pod's pending replacement once its
    // cache has the replacement's uid (then even a round that widens to nothing, as an A5 job's rack step
    // without sp-block, is one), and after job level it goes on counting sessions and deleting the job.
    const reason = await eventually(async () => { const r = await rescheduleReasonOf(client, `${ns}/${name}-${run.uid}`); return (r?.TotalRescheduleTimes ?? 0) >= order.length ? r : undefined; }, 30_000, 250);
    for (const rec of reason.RescheduleRecords ?? []) expect(rec.ReasonOfTask?.map((t) => [t.PodName, t.NodeName])).toEqual([[pod.metadata!.name!, pod.spec!.nodeName!]]);
    return { ms, rounds: recordRounds(reason) };
  }

  async function a5(): Promise<void> {
    await nodes('ta5', A5, (i) => ({ ...a5Node({ superPodId: 0, serverIndex: i, rackId: 0, acceleratorType: '950-SuperPod-Atlas-8' }), superPodId: 0, rackId: 0 }));
    const run = await runJob('topo-a5', 'ra', A5, 'ta5', { 'huawei.com/schedule_policy': 'chip8-node8-ra64-sp', 'ra-block': '16', 'sp-block': '32' });
    const { ms, rounds } = await steps('topo-a5', 'ra', run, 3, [[3], [2], [0, 1]]);
    expect(new Set(rounds)).toEqual(new Set(['3:CardUnhealthy']));
    report(`topology A, A5 ra-block=16 sp-block=32: rank 3 deleted -> rank 2 (rack step) ${ms[0]} ms, -> whole job (super-pod step, rank 0) ${ms[1]} ms, ${rounds.length} records (ours by default: 3.75 s and 7.5 s of pending time)`);
  }

  async function a5NoSp(): Promise<void> {
    await nodes('ta5b', A5, (i) => ({ ...a5Node({ superPodId: 1, serverIndex: i, rackId: 0, acceleratorType: '950-SuperPod-Atlas-8' }), superPodId: 1, rackId: 0 }));
    const run = await runJob('topo-a5b', 'rb', A5, 'ta5b', { 'huawei.com/schedule_policy': 'chip8-node8-ra64-sp', 'ra-block': '16' });
    const { ms, rounds } = await steps('topo-a5b', 'rb', run, 3, [[3], [0, 1, 2]]);
    expect(new Set(rounds)).toEqual(new Set(['3:CardUnhealthy']));
    report(`topology A, A5 ra-block=16 without sp-block: rank 3 deleted -> whole job ${ms[0]} ms (no rack step), ${rounds.length} records`);
  }

  async function multilevel(): Promise<void> {
    await nodes('tml', A3, (i) => ({ labels: { [LEVEL_LABELS.level1]: i < 2 ? 'l1-a' : 'l1-b', [LEVEL_LABELS.level2]: 'l2-a' }, annotations: { baseDeviceInfos: baseDeviceInfos() } }));
    const run = await runJob('topo-ml', 'ml', A3, 'tml', { 'huawei.com/schedule_policy': 'multilevel', 'huawei.com/affinity-config': 'level2=4,level1=2' });
    const { ms, rounds } = await steps('topo-ml', 'ml', run, 3, [[3], [2], [0, 1]]);
    expect(new Set(rounds)).toEqual(new Set(['3:CardUnhealthy']));
    report(`topology A, multilevel level1=2: rank 3 deleted -> rank 2 (level1 step) ${ms[0]} ms, -> whole job ${ms[1]} ms, ${rounds.length} records (ours by default: 7.5 s and 15 s of pending time)`);
  }

  it('A5 chip8-node8-ra64-sp: rank 3 alone, then rank 2 of its rack block (ranks 0-1 kept), then the super-pod block with rank 0: the whole job', async () => outcome(await scenarios.a5), 300_000);

  it('A5 ra-block without sp-block: rank 3 alone, no rack step, the whole job after 12 sessions', async () => outcome(await scenarios.a5NoSp), 300_000);

  it('multilevel level2=4,level1=2: rank 3 alone, then rank 2 of its level-1 block (ranks 0-1 kept), then the whole job', async () => outcome(await scenarios.multilevel), 300_000);
});
