/**
 * Topology A, differential: the same real Volcano with Huawei's ascend plugin, on the same inputs,
 * once beside the real ClusterD and once beside clusterd-ts with the chart's rendered default
 * arguments (it finds the plugin in volcano-system's scheduler ConfigMap and keeps ClusterD's role:
 * controllers/rescheduling-role.ts). Each side is a control plane of its own with kwok and Volcano
 * (the conformance suite's sides, test/conformance/sides.ts), both run at once. Inputs: kwok nodes
 * with device-info (FaultInjector) and `baseDeviceInfos`, a fault-scheduling=force job and a
 * pod-rescheduling=on job, a SeparateNPU chip fault on a running pod's chip, the same fault time on
 * both sides. Compared after each fault, normalised as the conformance suite does (normalise.ts):
 * who deleted which pod (the apiserver's audit log), the plugin's vcjob-fault-npu-cm and
 * job-reschedule-reason (component/ascend-for-volcano/internal/rescheduling/type.go), each pod's node
 * and chips, and the cluster-info ConfigMaps the plugin reads. Differences must be on
 * DIFFERENTIAL_ALLOW_LIST. With `--reschedule-beside-ascend-plugin=true` on our side both cases fail
 * (clusterd-ts deletes the pod before the plugin, which then writes no reschedule record).
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { baseDeviceInfos, createFakeNodes } from '../../tools/simulator/nodes.ts';
import { NpuAllocator, ASCEND_REAL_ANNOTATION } from '../../tools/simulator/allocator.ts';
import { sumOf } from '../../tools/bench/controller-process.ts';
import { collect, collectUids, snapshotText, type Fields, type Snapshot } from '../conformance/collect.ts';
import { allowedBy, compare, formatDifference, type Allowed, type Difference } from '../conformance/diff.ts';
import { normalise, type TimeWindow } from '../conformance/normalise.ts';
import { startSides, type ClusterdSide, type OurSide } from '../conformance/sides.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { chartDefaultArgs } from '../support/helm.ts';

const P = 'huawei.com/Ascend910';

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };

/**
 * A Volcano Job as a user writes it with the webhook off (queue, scheduler, minAvailable, maxRetry
 * spelled out), on the nodes labelled vc-test=<group>.
 */
function vcjob(ns: string, name: string, o: { replicas: number; npus: number; group: string; labels?: Record<string, string>; policies?: ReadonlyArray<{ event: string; action: string }>; plugins?: Record<string, string[]> }): KubeObject {
  const { replicas, npus } = o;
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', ...o.labels } },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: replicas, maxRetry: 3,
      // Default: Huawei's documented policy for fault-scheduling jobs, an evicted pod restarts the job.
      policies: o.policies ?? [{ event: 'PodEvicted', action: 'RestartJob' }],
      ...(o.plugins === undefined ? {} : { plugins: o.plugins }),
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

/** Only pod deletions, with who asked (user, user agent): the rest of the traffic is not logged. */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [delete, deletecollection]
  resources: [{ group: "", resources: [pods] }]
- level: None
`;

/**
 * Reviewed differences of this scenario (conformance/allow-list.ts's form). None so far: beside the
 * plugin, clusterd-ts with the chart's defaults writes nothing the plugin reads that ClusterD does
 * not write alike. The conformance ALLOW_LIST does not apply: its `rescheduling-outputs` entry lets
 * clusterd-ts write vcjob-fault-npu-cm and job-reschedule-reason, which here only the plugin may.
 */
const DIFFERENTIAL_ALLOW_LIST: readonly Allowed[] = [];

const NS = 'vc-team';
/** Job-level rescheduling (fault-scheduling=force): node A alone, so every placement is forced. */
const NODE_A = 'diff-node-a';
/** Pod-level rescheduling (pod-rescheduling=on): two pods fill node B; C joins the job's nodes after. */
const NODE_B = 'diff-node-b';
const NODE_C = 'diff-node-c';
const FAULT_CODE = '80E18402';
/** The rank the plugin gives each pod (plugin/const.go PodRankIndexKey). */
const RANK_INDEX = 'hccl/rankIndex';

interface Lane {
  readonly name: 'clusterd' | 'ours';
  readonly side: ClusterdSide | OurSide;
  readonly admin: KubeClient;
  readonly inj: FaultInjector;
  readonly allocator: NpuAllocator;
}

const podsOf = async (admin: KubeClient, job?: string): Promise<Pod[]> =>
  (await admin.list<Pod>(paths.pods(NS), { labelSelector: job === undefined ? 'volcano.sh/job-name' : `volcano.sh/job-name=${job}` })).items;

const chipsOf = (p: Pod | undefined): string[] => p?.metadata?.annotations?.[P]?.split(',') ?? [];

/** Pod deletions the apiserver completed: `<program of the user agent> <user> <ns/name>`, in order. */
function podDeletions(auditLog: string): string[] {
  let text = '';
  try { text = readFileSync(auditLog, 'utf8'); } catch { return []; }
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { stage?: string; verb?: string; objectRef?: { namespace?: string; name?: string }; userAgent?: string; user?: { username?: string }; responseStatus?: { code?: number } })
    .filter((e) => e.stage === 'ResponseComplete' && e.verb === 'delete' && (e.responseStatus?.code ?? 0) < 300)
    .map((e) => `${(e.userAgent ?? '').split('/')[0]} ${e.user?.username ?? ''} ${e.objectRef?.namespace ?? ''}/${e.objectRef?.name ?? ''}`);
}

/** What is compared: the plugin's inputs and outputs, the jobs' pods, and who deleted pods. */
async function observe(l: Lane, w: TimeWindow): Promise<Snapshot> {
  const all = await collect(l.admin);
  const snap: Snapshot = new Map();
  for (const [k, f] of all) {
    // Every cluster-info ConfigMap the plugin reads (device, switch, node), and the plugin's two outputs.
    if (/^ConfigMap (mindx-dl\/cluster-info-(device-\d+|switch-\d+|node-cm)|volcano-system\/vcjob-fault-npu-cm|[^/]+\/job-reschedule-reason)$/.test(k)) snap.set(k, f);
  }
  for (const p of await podsOf(l.admin)) {
    const f: Fields = { node: p.spec?.nodeName ?? '', phase: p.status?.phase ?? '', chips: chipsOf(p).join(','), deleting: String(p.metadata?.deletionTimestamp !== undefined) };
    snap.set(`Pod ${NS}/${p.metadata!.name!}`, f);
  }
  const deletions = podDeletions(l.side.cp.auditLogPath());
  snap.set('Pod deletions', { count: String(deletions.length), requests: deletions.join('\n') });
  return normalise(snap, w, await collectUids(l.admin));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('topology A differential: Volcano + the ascend plugin beside the real ClusterD and beside clusterd-ts (chart defaults)', () => {
  let lanes: Lane[] = [];
  let sides: { clusterd: ClusterdSide; ours: OurSide } | undefined;
  const t0 = Date.now();
  const inputs = new Set<string>();
  const window = (): TimeWindow => ({ fromMs: t0, toMs: Date.now(), inputs });

  /** Both sides at once: `f` per lane. */
  const each = <T>(f: (l: Lane, i: number) => Promise<T>): Promise<T[]> => Promise.all(lanes.map((l, i) => f(l, i)));

  /** The job's pods once all `replicas` run with their chips, on both sides; the placements must agree. */
  async function running(job: string, replicas: number): Promise<Pod[][]> {
    const pods = await each((l) => eventually(async () => {
      const ps = (await podsOf(l.admin, job)).sort((a, b) => (a.metadata!.name! < b.metadata!.name! ? -1 : 1));
      return ps.length === replicas && ps.every((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] !== undefined) ? ps : undefined;
    }, 180_000, 500));
    const where = (ps: Pod[]) => ps.map((p) => `${p.metadata!.name!} ${p.spec?.nodeName ?? ''} ${chipsOf(p).join(',')} rank ${p.metadata?.annotations?.[RANK_INDEX] ?? ''}`);
    expect(where(pods[1]!)).toEqual(where(pods[0]!));
    return pods;
  }

  /**
   * The same chip fault (same fault time) on both sides at once; resolves with each side's
   * replacement of `pod` once Running, and the times from the fault to the controller's
   * cluster-info showing the chip Unhealthy and to the replacement Running.
   */
  async function fault(node: string, chip: string, pod: Pod[]): Promise<Array<{ pod: Pod; clusterInfoMs: number; runningMs: number }>> {
    const faultMs = Date.now();
    inputs.add(String(faultMs));
    const acks = await each((l) => l.inj.inject({ kind: 'npu', node, npu: chip, code: FAULT_CODE, level: 'SeparateNPU', timeMs: faultMs }));
    return each(async (l, i) => {
      const [clusterInfoMs, replacement] = await Promise.all([
        eventually(async () => (await deviceEntry(l.admin, node))?.DeviceList[`${P}-Unhealthy`]?.split(',').includes(chip) === true && Date.now() - acks[i]!.atMs, 60_000, 100),
        eventually(async () => {
          const r = (await podsOf(l.admin)).find((p) => p.metadata?.name === pod[i]!.metadata!.name);
          return r !== undefined && r.metadata?.uid !== pod[i]!.metadata?.uid && r.status?.phase === 'Running' && r.metadata?.deletionTimestamp === undefined ? { r, ms: Date.now() - acks[i]!.atMs } : undefined;
        }, 180_000, 200),
      ]);
      return { pod: replacement.r, clusterInfoMs, runningMs: replacement.ms };
    });
  }

  /** Waits until neither side changes what is compared for 3 s; returns the differences not allow-listed. */
  async function settledDifferences(label: string): Promise<string[]> {
    let snaps: Snapshot[] = [];
    let last = '';
    let lastChange = Date.now();
    const start = Date.now();
    for (;;) {
      snaps = await each((l) => observe(l, window()));
      const text = snaps.map(snapshotText).join('\n');
      if (text !== last) { last = text; lastChange = Date.now(); }
      if ((Date.now() - lastChange >= 3000 && Date.now() - start >= 5000) || Date.now() - start > 60_000) break;
      await sleep(500);
    }
    const differences: Difference[] = compare(snaps[0]!, snaps[1]!);
    const quiet = Date.now() - lastChange >= 3000;
    process.stdout.write(`differential-plugin ${label}: ${differences.length} difference(s), ${quiet ? `settled after ${lastChange - start} ms` : 'still changing after 60 s'}; ClusterD's side:\n${[...snaps[0]!.entries()].map(([k, f]) => `  ${k}: ${JSON.stringify(f)}`).join('\n')}\n`);
    return differences.filter((d) => allowedBy(d, DIFFERENTIAL_ALLOW_LIST) === undefined).map(formatDifference);
  }

  /** Pod deletions since `from` (an index into the audit log's list), kwok's (kubelet's part) left out. */
  const deletionsSince = (l: Lane, from: number): string[] => podDeletions(l.side.cp.auditLogPath()).slice(from).filter((d) => !d.startsWith('kwok '));

  async function assertOursActedOnNothing(): Promise<void> {
    const m = await sides!.ours.metrics();
    expect(sumOf(m, 'clusterd_api_requests_total', (lb) => lb.method === 'DELETE')).toBe(0);
    expect(sumOf(m, 'clusterd_decisions_total', (lb) => lb.outcome === 'acted')).toBe(0);
  }

  beforeAll(async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    // clusterd-ts with the arguments the chart's defaults give it (leader election on, rescheduling
    // asked for and yielded to the plugin it finds).
    const ourFlags = await chartDefaultArgs(ensureBinaries());
    sides = await startSides({ workRoot: tmpdir(), ourFlags, controlPlane: { kwok: true, volcano: { dir }, auditPolicy: AUDIT_POLICY } });
    process.stdout.write(`differential-plugin: clusterd-ts runs with ${ourFlags.join(' ')}\n`);
    const nodes = [{ name: NODE_A, labels: { 'vc-test': 'job' } }, { name: NODE_B, labels: { 'vc-test': 'pod' } }, { name: NODE_C, labels: { 'vc-test': 'spare' } }];
    lanes = await Promise.all([sides.clusterd, sides.ours].map(async (side): Promise<Lane> => {
      const admin = side.admin;
      await ensureNamespace(admin, NS);
      await createFakeNodes(admin, nodes);
      const inj = new FaultInjector(admin);
      for (const n of nodes) {
        // No node lifecycle controller runs: lift the not-ready taint; the device plugin's node annotation.
        await admin.patch(paths.node(n.name), { metadata: { annotations: { baseDeviceInfos: baseDeviceInfos() } }, spec: { taints: null } });
        await inj.addNodes([{ name: n.name }]);
      }
      // The device plugin's Allocate (no kubelet on kwok): AscendReal = the chips the plugin chose.
      const allocator = new NpuAllocator(admin, { namespace: NS });
      await allocator.start();
      return { name: side.name, side, admin, inj, allocator };
    }));
    await each((l) => l.side.startController());
    for (const l of lanes) for (const n of nodes) await eventually(async () => (await deviceEntry(l.admin, n.name))?.DeviceList[P]?.split(',').length === 8, 60_000, 500);
  }, 1_800_000);

  afterAll(async () => {
    for (const l of lanes) { l.allocator.stop(); await l.inj.close(); }
    if (sides !== undefined) await Promise.all([sides.clusterd.stop(), sides.ours.stop()]);
  }, 120_000);

  it('fault-scheduling=force: a chip fault on the pod; the plugin deletes and re-places it alike on both sides, off the faulty chip; clusterd-ts deletes nothing', async () => {
    // No RestartJob policy (Huawei's documented one): Volcano v1.12's RestartJob deletes the PodGroup
    // and its next sync reads its own informer, which may still hold it, so nothing re-creates the
    // PodGroup and the new pod stays Pending for good (pkg/controllers/job/job_controller_actions.go
    // killJob, createOrUpdatePodGroup); seen on one side in one run of nine. Without the policy
    // vc-controller-manager re-creates only the deleted pod; the plugin's job-level path is the same.
    await each((l) => l.admin.create(paths.vcJobs(NS), vcjob(NS, 'llama', { replicas: 1, npus: 4, group: 'job', labels: { 'fault-scheduling': 'force' }, policies: [] })));
    const firsts = await running('llama', 1);
    const faulty = chipsOf(firsts[0]![0])[1]!;
    const marks = lanes.map((l) => podDeletions(l.side.cp.auditLogPath()).length);

    const out = await fault(NODE_A, faulty, firsts.map((ps) => ps[0]!));
    process.stdout.write(`differential-plugin job-level: fault to cluster-info Unhealthy: clusterd ${out[0]!.clusterInfoMs} ms, clusterd-ts ${out[1]!.clusterInfoMs} ms; fault to replacement Running: clusterd ${out[0]!.runningMs} ms, clusterd-ts ${out[1]!.runningMs} ms\n`);
    expect(await settledDifferences('job-level')).toEqual([]);

    for (const [i, l] of lanes.entries()) {
      // The plugin (in vc-scheduler) asked for the one deletion on each side.
      expect(deletionsSince(l, marks[i]!)).toEqual([`vc-scheduler admin ${NS}/llama-worker-0`]);
      // Node A is the only node of the job: the other HCCS ring, without the faulty chip.
      expect(out[i]!.pod.spec?.nodeName).toBe(NODE_A);
      expect(chipsOf(out[i]!.pod)).toHaveLength(4);
      expect(chipsOf(out[i]!.pod)).not.toContain(faulty);
    }
    await assertOursActedOnNothing();
  }, 600_000);

  it('pod-rescheduling=on: a chip fault on one of two pods; the plugin deletes that pod alone and re-places it alike on both sides; clusterd-ts deletes nothing', async () => {
    // No RestartJob policy: the vcjob controller re-creates only the deleted pod. Volcano's env
    // plugin gives each pod VC_TASK_INDEX, which the ascend plugin takes for its rank
    // (plugin/job.go initNormalJobIndex); without it ranks are handed out in Go map order.
    await each((l) => l.admin.create(paths.vcJobs(NS), vcjob(NS, 'gpt', { replicas: 2, npus: 4, group: 'pod', labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' }, policies: [], plugins: { env: [] } })));
    const firsts = await running('gpt', 2);
    // Room for the replacement: node C joins the job's nodes (node B's healthy ring is taken).
    await each((l) => l.admin.patch(paths.node(NODE_C), { metadata: { labels: { 'vc-test': 'pod' } } }));
    // Not rank 0: a fault of the master's pod makes the plugin delete every pod of the job
    // (internal/rescheduling/job.go isMasterFault), pod-level or not.
    const [survivor, victimName] = ['gpt-worker-0', 'gpt-worker-1'];
    const victims = firsts.map((ps) => ps.find((p) => p.metadata?.name === victimName)!);
    expect(victims.map((p) => p.metadata?.annotations?.[RANK_INDEX])).toEqual(['1', '1']);
    const faulty = chipsOf(victims[0])[2]!;
    const marks = lanes.map((l) => podDeletions(l.side.cp.auditLogPath()).length);

    const out = await fault(victims[0]!.spec!.nodeName!, faulty, victims);
    process.stdout.write(`differential-plugin pod-level: fault to cluster-info Unhealthy: clusterd ${out[0]!.clusterInfoMs} ms, clusterd-ts ${out[1]!.clusterInfoMs} ms; fault to replacement Running: clusterd ${out[0]!.runningMs} ms, clusterd-ts ${out[1]!.runningMs} ms\n`);
    expect(await settledDifferences('pod-level')).toEqual([]);

    for (const [i, l] of lanes.entries()) {
      expect(deletionsSince(l, marks[i]!)).toEqual([`vc-scheduler admin ${NS}/${victimName}`]);
      // The healthy pod kept running where it was.
      const other = (await podsOf(l.admin, 'gpt')).find((p) => p.metadata?.name === survivor);
      expect(other?.metadata?.uid).toBe(firsts[i]!.find((p) => p.metadata?.name === survivor)!.metadata?.uid);
      expect(out[i]!.pod.spec?.nodeName).toBe(NODE_C);
      expect(chipsOf(out[i]!.pod)).toHaveLength(4);
    }
    await assertOursActedOnNothing();
  }, 600_000);
});
