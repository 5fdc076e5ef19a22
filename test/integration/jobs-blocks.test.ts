/**
 * docs/rules.md#resched.block-escalation on the real control plane: a pod-level restart whose
 * replacement stays Pending widens block by block before job level. kube-apiserver, kube-scheduler,
 * kwok nodes of one A3 super-pod (device-info SuperPodID 0, ServerIndex 0..3) with 8 NPUs each, the
 * device plugin simulator, the NPU allocator and the job peer recreating deleted pods as Volcano's job
 * controller does. The replacement of the fault pod cannot be placed: its node has 7 healthy NPUs
 * left and the other nodes are full. The A3 case has the inputs of test/real-stack/topology-a-blocks.test.ts,
 * where the real plugin takes the same steps.
 */
import { paths } from '../../runtime/kube-client.ts';
import { eventually } from '../support/cluster.ts';
import { A5_NPU_RESOURCE, jobPods, vcJob } from '../../tools/job-peer/world.ts';
import { jobsHarness, runningPods, uidOf, npusOf, jobState, podGroupEvents, recordRounds, report, rescheduleReasonAfter } from '../support/jobs-support.ts';

const stepCount = async (metrics: { podLevelWidenings: { get(): Promise<{ values: Array<{ labels: Record<string, unknown>; value: number }> }> } }, step: string): Promise<number> =>
  (await metrics.podLevelWidenings.get()).values.find((v) => v.labels.step === step)?.value ?? 0;

describe('jobs: pending pod-level restarts widen by block (super-pod, multilevel level1, A5 rack)', () => {
  const h = jobsHarness();
  const { client } = h;

  it('A3 chip2-node8-sp, sp-block=16 (2 pods per logical super-pod): rank 2 pending -> rank 3 deleted at the super-pod step, ranks 0-1 kept; job level later', async () => {
    const world = await h.startWorld({ nodes: 4, prefix: 'jbs', superPodId: 0 });
    const { metrics } = await h.startManager(['--pending-escalation-seconds=6', '--super-pod-escalation-ms=2000']);
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, {
      nodeSelector: world.nodeSelector, name: 'sp', replicas: 4, npus: 8,
      labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' }, annotations: { 'huawei.com/schedule_policy': 'chip2-node8-sp', 'sp-block': '16' },
    }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'sp', 4);
    const rank2 = before[2]!;
    await world.dp.injectChipFault({ node: rank2.spec!.nodeName!, npu: npusOf(rank2)[3]!, code: '80E18402', level: 'SeparateNPU' });

    // Pod level first: only rank 2 goes and its replacement stays Pending.
    await eventually(async () => {
      const r2 = (await jobPods(client, ns, 'sp')).find((p) => p.metadata?.name === rank2.metadata!.name);
      return r2 !== undefined && uidOf(r2) !== uidOf(rank2) && r2.spec?.nodeName === undefined;
    }, 20_000);
    const t0 = Date.now();
    // Super-pod step: rank 3 (same logical super-pod) goes; ranks 0 and 1 stay; the restart is still pod level.
    await eventually(async () => !(await jobPods(client, ns, 'sp')).some((p) => uidOf(p) === uidOf(before[3]!)), 20_000);
    report(`A3 super-pod step: rank 3 deleted ${Date.now() - t0} ms after rank 2's replacement was seen pending (step at 2 s)`);
    const mid = await jobState(client, uid);
    expect(mid?.state.active).toMatchObject({ scope: 'pod', widened: ['super-pod'] });
    const now = await jobPods(client, ns, 'sp');
    for (const i of [0, 1]) expect(now.some((p) => uidOf(p) === uidOf(before[i]!))).toBe(true);
    expect(await stepCount(metrics, 'super-pod')).toBe(1);
    await eventually(async () => (await podGroupEvents(client, ns, `sp-${uid}`)).some((e) => e.message?.includes('resched.block-escalation')), 10_000);

    // Job level once rank 2 has been pending 6 s in all (the count paused while rank 3 went).
    await eventually(async () => {
      const ps = await jobPods(client, ns, 'sp');
      return [0, 1].every((i) => !ps.some((p) => uidOf(p) === uidOf(before[i]!)));
    }, 30_000);
    report(`A3 super-pod then job level: ranks 0-1 deleted ${Date.now() - t0} ms after rank 2's replacement was seen pending (job level at 6 s pending)`);
    const end = await eventually(async () => {
      const s = await jobState(client, uid);
      return s?.state.active?.scope === 'job' ? s : undefined;
    }, 10_000);
    expect(end.state.active?.kind).toBe('job');
    expect(await stepCount(metrics, 'job')).toBe(1);
    // A reschedule record per deletion round, as the plugin writes them (test/real-stack/topology-a-blocks.test.ts).
    expect((await rescheduleReasonAfter(client, `${ns}/sp-${uid}`, 3)).TotalRescheduleTimes).toBe(3);
  }, 120_000);

  it('multilevel, level1=2 (2 pods per level-1 group): rank 3 pending -> rank 2 deleted at the level1 step, ranks 0-1 (the other group) kept; job level later', async () => {
    const world = await h.startWorld({ nodes: 4, prefix: 'jbm' });
    const { metrics } = await h.startManager(['--pending-escalation-seconds=6', '--super-pod-escalation-ms=2000']);
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, {
      nodeSelector: world.nodeSelector, name: 'ml', replicas: 4, npus: 8,
      labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' },
      annotations: { 'huawei.com/schedule_policy': 'multilevel', 'huawei.com/affinity-config': 'level2=4,level1=2' },
    }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'ml', 4);
    const rank3 = before[3]!;
    await world.dp.injectChipFault({ node: rank3.spec!.nodeName!, npu: npusOf(rank3)[1]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => {
      const r3 = (await jobPods(client, ns, 'ml')).find((p) => p.metadata?.name === rank3.metadata!.name);
      return r3 !== undefined && uidOf(r3) !== uidOf(rank3) && r3.spec?.nodeName === undefined;
    }, 20_000);
    const t0 = Date.now();
    // level1 step (2 s): rank 2 shares rank 3's level-1 group; ranks 0-1 (the other group) stay.
    await eventually(async () => !(await jobPods(client, ns, 'ml')).some((p) => uidOf(p) === uidOf(before[2]!)), 20_000);
    report(`multilevel level1 step: rank 2 deleted ${Date.now() - t0} ms after rank 3's replacement was seen pending (step at 2 s)`);
    const mid = await jobState(client, uid);
    expect(mid?.state.active).toMatchObject({ scope: 'pod', widened: ['level1'] });
    const now = await jobPods(client, ns, 'ml');
    for (const i of [0, 1]) expect(now.some((p) => uidOf(p) === uidOf(before[i]!))).toBe(true);
    expect(await stepCount(metrics, 'level1')).toBe(1);
    await eventually(async () => (await podGroupEvents(client, ns, `ml-${uid}`)).some((e) => e.message?.includes('resched.block-escalation')), 10_000);

    // Job level once rank 3 has been pending 6 s in all.
    await eventually(async () => {
      const ps = await jobPods(client, ns, 'ml');
      return [0, 1].every((i) => !ps.some((p) => uidOf(p) === uidOf(before[i]!)));
    }, 30_000);
    expect(await stepCount(metrics, 'job')).toBe(1);
    // The plugin's records (test/real-stack/topology-a5-blocks.test.ts): one per deletion round, each
    // naming the fault pod alone.
    const reason = await rescheduleReasonAfter(client, `${ns}/ml-${uid}`, 3);
    expect(reason.TotalRescheduleTimes).toBe(3);
    expect(recordRounds(reason)).toEqual(['3:CardUnhealthy', '3:CardUnhealthy', '3:CardUnhealthy']);
    for (const rec of reason.RescheduleRecords ?? []) expect(rec.ReasonOfTask?.map((t) => [t.PodName, t.NodeName])).toEqual([[rank3.metadata!.name!, rank3.spec!.nodeName!]]);
  }, 120_000);

  it('A5 chip8-node8-ra64-sp (huawei.com/npu, rack 0), ra-block=16, sp-block=32: rank 3 pending -> rank 2 at the rack step; the super-pod block holds rank 0 -> job level', async () => {
    const world = await h.startWorld({ nodes: 4, prefix: 'jba', superPodId: 0, rackId: 0 });
    const { metrics } = await h.startManager(['--pending-escalation-seconds=60', '--rack-escalation-ms=1000', '--super-pod-escalation-ms=3000']);
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, {
      nodeSelector: world.nodeSelector, name: 'ra', replicas: 4, npus: 8, resource: A5_NPU_RESOURCE,
      labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' },
      annotations: { 'huawei.com/schedule_policy': 'chip8-node8-ra64-sp', 'ra-block': '16', 'sp-block': '32' },
    }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'ra', 4);
    const rank3 = before[3]!;
    await world.dp.injectChipFault({ node: rank3.spec!.nodeName!, npu: npusOf(rank3)[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => {
      const r3 = (await jobPods(client, ns, 'ra')).find((p) => p.metadata?.name === rank3.metadata!.name);
      return r3 !== undefined && uidOf(r3) !== uidOf(rank3) && r3.spec?.nodeName === undefined;
    }, 20_000);
    const t0 = Date.now();

    // Rack step (1 s): rank 2 shares rank 3's rack block; ranks 0-1 stay.
    await eventually(async () => !(await jobPods(client, ns, 'ra')).some((p) => uidOf(p) === uidOf(before[2]!)), 20_000);
    report(`A5 rack step: rank 2 deleted ${Date.now() - t0} ms after rank 3's replacement was seen pending (step at 1 s)`);
    const mid = await jobState(client, uid);
    expect(mid?.state.active).toMatchObject({ scope: 'pod', widened: ['rack'] });
    const now = await jobPods(client, ns, 'ra');
    for (const i of [0, 1]) expect(now.some((p) => uidOf(p) === uidOf(before[i]!))).toBe(true);

    // Super-pod step (3 s): the 4-pod block holds rank 0 -> job level, long before the 60 s job step.
    await eventually(async () => {
      const ps = await jobPods(client, ns, 'ra');
      return [0, 1].every((i) => !ps.some((p) => uidOf(p) === uidOf(before[i]!)));
    }, 20_000);
    const took = Date.now() - t0;
    report(`A5 rack then super-pod block with rank 0 -> job level: ranks 0-1 deleted ${took} ms after rank 3's replacement was seen pending (step at 3 s)`);
    expect(took).toBeLessThan(30_000);
    const end = await eventually(async () => {
      const s = await jobState(client, uid);
      return s?.state.active?.scope === 'job' ? s : undefined;
    }, 10_000);
    expect(end.state.active?.widened).toEqual(['rack', 'super-pod']);
    expect(await stepCount(metrics, 'rack')).toBe(1);
    expect(await stepCount(metrics, 'job')).toBe(1);
    await eventually(async () => (await podGroupEvents(client, ns, `ra-${uid}`)).some((e) => e.message?.includes('resched.master-rank')), 10_000);
    // The plugin's records (test/real-stack/topology-a5-blocks.test.ts): one per deletion round, each
    // naming the fault pod alone.
    const reason = await rescheduleReasonAfter(client, `${ns}/ra-${uid}`, 3);
    expect(reason.TotalRescheduleTimes).toBe(3);
    expect(recordRounds(reason)).toEqual(['3:CardUnhealthy', '3:CardUnhealthy', '3:CardUnhealthy']);
    for (const rec of reason.RescheduleRecords ?? []) expect(rec.ReasonOfTask?.map((t) => [t.PodName, t.NodeName])).toEqual([[rank3.metadata!.name!, rank3.spec!.nodeName!]]);
  }, 120_000);
  it('A5 chip8-node8-ra64-sp, ra-block=16 without sp-block: no rack step (ranks 0-2 kept) -> job level at the pending escalation', async () => {
    const world = await h.startWorld({ nodes: 4, prefix: 'jbr', superPodId: 0, rackId: 0 });
    const { metrics } = await h.startManager(['--pending-escalation-seconds=5', '--rack-escalation-ms=1000', '--super-pod-escalation-ms=2000']);
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, {
      nodeSelector: world.nodeSelector, name: 'rb', replicas: 4, npus: 8, resource: A5_NPU_RESOURCE,
      labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' },
      annotations: { 'huawei.com/schedule_policy': 'chip8-node8-ra64-sp', 'ra-block': '16' },
    }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'rb', 4);
    const rank3 = before[3]!;
    await world.dp.injectChipFault({ node: rank3.spec!.nodeName!, npu: npusOf(rank3)[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => {
      const r3 = (await jobPods(client, ns, 'rb')).find((p) => p.metadata?.name === rank3.metadata!.name);
      return r3 !== undefined && uidOf(r3) !== uidOf(rank3) && r3.spec?.nodeName === undefined;
    }, 20_000);
    const t0 = Date.now();
    // As the plugin (test/real-stack/topology-a5-blocks.test.ts): the whole job goes at once, rank 2 with ranks 0 and 1.
    const goneAt = new Map<number, number>();
    await eventually(async () => {
      const ps = await jobPods(client, ns, 'rb');
      for (const i of [0, 1, 2]) if (!goneAt.has(i) && !ps.some((p) => uidOf(p) === uidOf(before[i]!))) goneAt.set(i, Date.now() - t0);
      return goneAt.size === 3;
    }, 30_000, 100);
    report(`A5 without sp-block: ranks 0-2 deleted ${JSON.stringify(Object.fromEntries(goneAt))} ms after rank 3's replacement was seen pending (job level at 5 s)`);
    expect(goneAt.get(2)!).toBeGreaterThanOrEqual(4000);
    expect(await stepCount(metrics, 'rack')).toBe(0);
    expect(await stepCount(metrics, 'job')).toBe(1);
    const reason = await rescheduleReasonAfter(client, `${ns}/rb-${uid}`, 2);
    expect(recordRounds(reason)).toEqual(['3:CardUnhealthy', '3:CardUnhealthy']);
  }, 120_000);
});
