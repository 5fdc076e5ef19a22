/**
 * A3 super-pods on the real control plane (docs/rules.md#job.relation-faults, #filter.step-retry, #ingest.pre-separate):
 * kube-apiserver, kube-scheduler, kwok nodes of one super-pod (device-info SuperPodID 0, ServerIndex,
 * the SwitchInfoCfg of UB switches), the device plugin simulator, the NPU allocator and the job peer;
 * the Manager in-process as main.ts builds it, its long waits shortened by flags only:
 * ClusterD's relation windows by `--relation-fault-config-dir` (a faultDuration.json of seconds) and the
 * 180 s link-down memory by `--link-down-memory-seconds`.
 * - a UB switch link-down, gone again, then an HCCL retry of a step-retry job inside the memory: the
 *   retry fault keeps its level in cluster-info and vcjob-fault-npu-cm, the link-down is forced into the
 *   scheduler view and the relation rule separates its node (fault-type=Separate, one restart with
 *   RelationFaultSeparate); past the memory the retry fault is RestartBusiness and nothing is forced in;
 * - a switch link-down held past its window: the pod there is labelled fault-type=SubHealth, the job keeps running;
 * - the A3 CQE late trigger: a CQE on an A3 job does not separate at once; the device link-down timing
 *   out with the CQE inside its window does;
 * - a PreSeparateNPU chip under a running job leaves the available list but not to -Unhealthy, the job
 *   keeps running; once no pod uses it the chip is unhealthy.
 */
import type { Subscription } from 'rxjs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deviceEntry, codesIn } from '../support/cluster-info-read.ts';
import { paths } from '../../runtime/kube-client.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { DeviceInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';
import { DEFAULT_RELATION_FAULT_CONFIG, SWITCH_LINK_DOWN } from '../../policy/faults/relation-fault-config.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, runningWithNpus, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { jobsHarness, npusOf, rescheduleReasonAfter, runningPods, sleep, uidOf, vcjobFaultNpu, report } from '../support/jobs-support.ts';

const P = 'huawei.com/Ascend910';
const HCCL = '8C1F860B';

/** ClusterD's /home/hwMindX relation files with every window `seconds` long. */
function relationDir(seconds: number): string {
  const d = mkdtempSync(join(tmpdir(), 'a3-relation-'));
  writeFileSync(join(d, 'relationFaultCustomization.json'), JSON.stringify(DEFAULT_RELATION_FAULT_CONFIG.rules));
  writeFileSync(join(d, 'faultDuration.json'), JSON.stringify(DEFAULT_RELATION_FAULT_CONFIG.durations.map((x) => ({ ...x, TimeOutInterval: seconds }))));
  return d;
}

/** Level of `code` on `chip` in the entry's `-Fault` list (undefined: not listed). */
function levelIn(e: DeviceInfoEntry | undefined, chip: string, code: string): string | undefined {
  const faults = JSON.parse(e?.DeviceList[`${P}-Fault`] ?? '[]') as Array<{ npu_name: string; fault_time_and_level_map: Record<string, { fault_level: string }> | null }>;
  return faults.find((x) => x.npu_name === chip)?.fault_time_and_level_map?.[code]?.fault_level;
}
const listed = (e: DeviceInfoEntry | undefined, key: string, chip: string): boolean => (e?.DeviceList[`${P}${key}`] ?? '').split(',').includes(chip);

describe('A3 super-pod: UB switch faults, the CQE late trigger, a PreSeparateNPU chip under a running job', () => {
  const h = jobsHarness();
  const { client } = h;
  let watch: Subscription | undefined;
  afterEach(() => watch?.unsubscribe());

  /** Starts the Manager and records every fault-type label it sees on the world's pods. */
  async function start(world: World, args: string[]): Promise<{ manager: Manager; labelled: Array<{ uid: string; value: string }> }> {
    const { manager } = await h.startManager(['--grpc-port=0', ...args]);
    const labelled: Array<{ uid: string; value: string }> = [];
    watch = manager.sources.pods.events$.subscribe((ev) => {
      const v = ev.obj.metadata?.labels?.['fault-type'];
      if (v !== undefined && ev.obj.metadata?.namespace === world.ns) labelled.push({ uid: ev.obj.metadata?.uid ?? '', value: v });
    });
    return { manager, labelled };
  }

  /** A 2-pod job of 8 NPUs a pod (one pod a node), running, known to the relation flow. */
  async function runningJob(world: World, manager: Manager, name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): Promise<{ uid: string; key: string; pods: PodObj[] }> {
    const job = await client.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name, replicas: 2, npus: 8, labels: { 'fault-scheduling': 'force', ...labels }, annotations }));
    const pods = await runningPods(client, world.ns, name, 2);
    const uid = job.metadata!.uid!;
    const key = `${world.ns}/${name}-${uid}`;
    await eventually(() => manager.relations.index.job(key, { claims: 'annotation' })?.view.pods.filter((p) => p.npus.length > 0).length === 2);
    return { uid, key, pods };
  }

  const retryJob = { labels: { 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'retry' } };

  /** A step-retry job on two super-pod nodes; a UB switch link-down on rank 1's node, seen, then gone. */
  const linkDownThenGone = async (prefix: string, jobName: string, memoryS: number) => {
    const world = await h.startWorld({ nodes: 2, prefix, superPodId: 0 });
    const { manager, labelled } = await start(world, [`--relation-fault-config-dir=${relationDir(60)}`, `--link-down-memory-seconds=${memoryS}`]);
    const { key, pods } = await runningJob(world, manager, jobName, retryJob.labels, retryJob.annotations);
    const r1 = pods[1]!;
    const node = r1.spec!.nodeName!;
    await world.dp.injectSwitchFault({ node, code: SWITCH_LINK_DOWN, level: 'NotHandle' });
    await eventually(() => manager.deviceFaults.effective(node).some((r) => r.source === 'switch' && r.code === SWITCH_LINK_DOWN));
    await world.dp.recoverSwitchFault(node);
    await eventually(() => !manager.recovery.jobView(node).some((r) => r.source === 'switch'));
    return { world, manager, labelled, key, r1, node, chip: npusOf(r1)[0]! };
  };

  it('switch link-down gone, HCCL retry inside --link-down-memory-seconds: the retry keeps its level, the link-down is forced in, its node separated', async () => {
    const { world, manager, labelled, key, r1, node, chip } = await linkDownThenGone('a3f', 'fin', 20);
    const tf = Date.now();
    await world.dp.injectChipFault({ node, npu: chip, code: HCCL, level: 'NotHandleFault', timeMs: tf });
    // hidden 10 s by the step retry, then reported at its own level with the link-down forced in
    const e = await eventually(async () => { const x = await deviceEntry(client, node); return levelIn(x, chip, HCCL) !== undefined ? x : undefined; }, 25_000);
    report(`HCCL retry reached cluster-info ${Date.now() - tf} ms after its fault_time (step retry window 10 s)`);
    expect(levelIn(e, chip, HCCL)).toBe('NotHandleFault');
    const forced = manager.deviceFaults.effective(node).find((r) => r.source === 'switch' && r.code === SWITCH_LINK_DOWN);
    expect(forced).toBeDefined();
    expect(manager.recovery.jobView(node).some((r) => r.source === 'switch')).toBe(false); // forced into the scheduler view only
    // the relation rule 8C1F860B + switch link-down -> Separate on the link-down node
    await eventually(() => labelled.some((l) => l.uid === uidOf(r1) && l.value === 'Separate'), 15_000);
    const reason = await rescheduleReasonAfter(client, key, 1, 20_000);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'RelationFaultSeparate', PodName: r1.metadata!.name!, NodeName: node, NodeRankIndex: '1' }]);
    // what the scheduler reads for the job's node: the HCCL retry is no RestartBusiness (NotHandleFault is not listed)
    const hccl = (await vcjobFaultNpu(client)).faultNodes.find((n) => n.NodeName === node)?.FaultDeviceList?.find((d) => d.fault_code.includes(HCCL));
    expect(hccl?.fault_level ?? 'not listed').not.toBe('RestartBusiness');
  }, 120_000);

  it('past --link-down-memory-seconds the HCCL retry is RestartBusiness and nothing is forced in', async () => {
    const { world, manager, labelled, node, chip } = await linkDownThenGone('a3m', 'fout', 3);
    await world.dp.injectChipFault({ node, npu: chip, code: HCCL, level: 'NotHandleFault', timeMs: Date.now() });
    // RestartBusiness while the job's pod holds the chip (the restart it causes frees the chip for a moment)
    await eventually(async () => levelIn(await deviceEntry(client, node), chip, HCCL) === 'RestartBusiness', 25_000);
    expect(manager.deviceFaults.effective(node).some((r) => r.source === 'switch')).toBe(false);
    const hccl = await eventually(async () => (await vcjobFaultNpu(client)).faultNodes.find((n) => n.NodeName === node)?.FaultDeviceList?.find((d) => d.fault_code.includes(HCCL) && d.fault_level === 'RestartBusiness'));
    expect(hccl.fault_handling).toBe('RestartBusiness');
    await sleep(2_000);
    expect(labelled.filter((l) => l.value === 'Separate')).toEqual([]);
  }, 120_000);

  it('a switch link-down held past its window: fault-type=SubHealth on the pod there, the job keeps running', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'a3s', superPodId: 0 });
    const { manager, labelled } = await start(world, [`--relation-fault-config-dir=${relationDir(10)}`]);
    const { key, pods } = await runningJob(world, manager, 'sub');
    const r1 = pods[1]!;
    const node = r1.spec!.nodeName!;
    const t0 = Date.now();
    await world.dp.injectSwitchFault({ node, code: SWITCH_LINK_DOWN, level: 'NotHandle' });
    await sleep(3_000);
    expect(labelled).toEqual([]); // inside the window: nothing
    // A loaded machine once missed a 6 s window (no label after 18 s); 10 s, as the CQE case below.
    await eventually(() => labelled.some((l) => l.uid === uidOf(r1) && l.value === 'SubHealth'), 30_000)
      .catch((e: unknown) => { throw new Error(`${String(e)}; relation state: ${JSON.stringify(manager.relations.state())}`); });
    report(`switch link-down -> fault-type=SubHealth ${Date.now() - t0} ms after the fault (window 10 s)`);
    expect(manager.relations.strategies(key)).toEqual({ [node]: 'SubHealth' });
    await sleep(3_000);
    const now = await jobPods(client, world.ns, 'sub');
    expect(now.map(uidOf)).toEqual(pods.map(uidOf));
    expect(now.every(runningWithNpus)).toBe(true);
    expect(labelled.filter((l) => l.value === 'Separate')).toEqual([]);
  }, 120_000);

  it('A3 CQE late trigger: 81078603 then 8C1F8608 on an A3 job separates only when the link-down times out', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'a3c', superPodId: 0 });
    const { manager, labelled } = await start(world, [`--relation-fault-config-dir=${relationDir(10)}`]);
    const { key, pods } = await runningJob(world, manager, 'cqe');
    const [r0, r1] = [pods[0]!, pods[1]!];
    const node = r1.spec!.nodeName!;
    const t0 = Date.now();
    await world.dp.injectChipFault({ node, npu: npusOf(r1)[0]!, code: '81078603', timeMs: t0 });
    await sleep(1_000);
    await world.dp.injectChipFault({ node: r0.spec!.nodeName!, npu: npusOf(r0)[1]!, code: '8C1F8608', timeMs: Date.now() });
    await sleep(4_000);
    expect(labelled).toEqual([]); // not at once (it would be on a non-A3 job)
    expect(world.peer.goneAtMs(uidOf(r1))).toBeUndefined();
    await eventually(() => labelled.some((l) => l.uid === uidOf(r1) && l.value === 'Separate'), 20_000);
    const after = Date.now() - t0;
    report(`A3 CQE late trigger: 81078603 -> fault-type=Separate ${after} ms after the link-down (window 10 s)`);
    expect(after).toBeGreaterThanOrEqual(10_000);
    const reason = await rescheduleReasonAfter(client, key, 1, 20_000);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.map((t) => t.RescheduleReason)).toEqual(['RelationFaultSeparate']);
  }, 120_000);

  it('a PreSeparateNPU chip under a running job: out of the available list, not unhealthy, the job keeps running; idle, it is unhealthy', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'a3p', superPodId: 0 });
    const { manager } = await start(world, []);
    const { pods } = await runningJob(world, manager, 'pre');
    const r1 = pods[1]!;
    const node = r1.spec!.nodeName!;
    const chip = npusOf(r1)[2]!;
    await world.dp.injectChipFault({ node, npu: chip, code: '8118043C', level: 'PreSeparateNPU' });
    const e = await eventually(async () => { const x = await deviceEntry(client, node); return levelIn(x, chip, '8118043C') === 'PreSeparateNPU' ? x : undefined; });
    expect(listed(e, '', chip)).toBe(false);
    expect(listed(e, '-Unhealthy', chip)).toBe(false);
    expect(codesIn(e, chip)).toEqual(['8118043C']);
    await sleep(3_000);
    const now = await jobPods(client, world.ns, 'pre');
    expect(now.map(uidOf)).toEqual(pods.map(uidOf));
    const npuCm = await vcjobFaultNpu(client);
    report(`PreSeparateNPU under a running job: vcjob-fault-npu-cm fault-nodes for ${node}: ${JSON.stringify(npuCm.faultNodes.find((n) => n.NodeName === node) ?? null)}`);
    // the job ends: nothing uses the chip any more, so it is isolated
    await client.delete(paths.vcJob(world.ns, 'pre'));
    for (const p of now) await client.delete(paths.pod(world.ns, p.metadata!.name!), { gracePeriodSeconds: 0 }).catch(() => undefined);
    await eventually(async () => listed(await deviceEntry(client, node), '-Unhealthy', chip), 15_000);
  }, 120_000);
});
