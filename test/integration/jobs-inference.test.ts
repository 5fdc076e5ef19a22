/**
 * Inference jobs never go past pod level (docs/rules.md#resched.pod-level-cap), on the real control
 * plane with the controller as main.ts builds it: a MindIE controller job whose rank-0 chip the device
 * plugin escalates by frequency (ManuallySeparateNPU, FaultFrequency) loses only that pod, where any
 * other job would restart whole; an OME inference service losing a node loses only that node's pod,
 * and its replacement stays pending well past the pod -> job escalation time without widening.
 */
import { paths } from '../../runtime/kube-client.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, loseNode, vcJob } from '../../tools/job-peer/world.ts';
import { jobsHarness, runningPods, uidOf, npusOf, jobState, podGroupEvents, rescheduleReasonAfter, sleep } from '../support/jobs-support.ts';

describe('jobs: inference jobs stay at pod level', () => {
  const h = jobsHarness();
  const { client } = h;

  it('MindIE controller, fault-scheduling=grace: a frequency-escalated chip fault on rank 0 replaces only rank 0', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'inf1' });
    await h.startManager(['--pending-escalation-seconds=5']);
    const { ns } = world;
    const labels = { 'fault-scheduling': 'grace', app: 'mindie-ms-controller', jobID: 'mindie-a' };
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'ctl', replicas: 4, npus: 4, labels }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'ctl', 4);
    const rank0 = before[0]!;
    // The device plugin's FaultFrequency rule raised this chip to ManuallySeparateNPU.
    await world.dp.separateManually(rank0.spec!.nodeName!, npusOf(rank0)[0]!, '80E18005');

    await eventually(async () => (await jobPods(client, ns, 'ctl')).some((p) => p.metadata?.name === rank0.metadata!.name && uidOf(p) !== uidOf(rank0)), 30_000);
    await runningPods(client, ns, 'ctl', 4);
    await eventually(async () => (await jobState(client, uid))?.state.active === undefined, 15_000);
    await sleep(3_000);
    const after = await jobPods(client, ns, 'ctl');
    for (const i of [1, 2, 3]) expect(uidOf(after[i]!)).toBe(uidOf(before[i]!));
    expect([...world.peer.statsOf('ctl').deletedUids]).toEqual([uidOf(rank0)]);
    const reason = await rescheduleReasonAfter(client, `${ns}/ctl-${uid}`, 1);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.map((t) => t.NodeRankIndex)).toEqual(['0']);
    const ev = (await podGroupEvents(client, ns, `ctl-${uid}`)).find((e) => e.reason === 'FaultRescheduling');
    expect(ev?.message).toContain('resched.pod-level-cap');
  }, 120_000);

  it('OME inference service, fault-scheduling=force: a lost node replaces only its pod, and a pending replacement never widens', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'inf2' });
    await h.startManager(['--pending-escalation-seconds=5']);
    const { ns } = world;
    const labels = { 'fault-scheduling': 'force', 'ome.io/inferenceservice': 'llm' };
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'ome', replicas: 2, npus: 8, labels }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'ome', 2);
    await loseNode(client, before[1]!.spec!.nodeName!);

    // Rank 1 goes; its replacement cannot fit anywhere (rank 0 fills the other node).
    await eventually(async () => {
      const r1 = (await jobPods(client, ns, 'ome')).find((p) => p.metadata?.name === before[1]!.metadata!.name);
      return r1 !== undefined && uidOf(r1) !== uidOf(before[1]!) && r1.spec?.nodeName === undefined;
    }, 30_000);
    // Three times the escalation time: any other job would have been restarted whole by now.
    await sleep(15_000);
    expect(uidOf((await jobPods(client, ns, 'ome'))[0]!)).toBe(uidOf(before[0]!));
    expect([...world.peer.statsOf('ome').deletedUids]).toEqual([uidOf(before[1]!)]);
    const state = await jobState(client, uid);
    expect(state?.state.active).toMatchObject({ scope: 'pod', escalationBlock: 'inference-job' });
    const reason = await rescheduleReasonAfter(client, `${ns}/ome-${uid}`, 1);
    expect(reason.TotalRescheduleTimes).toBe(1);
  }, 120_000);
});
