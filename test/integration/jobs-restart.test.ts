/**
 * Job- and pod-level rescheduling on the real control plane: kube-apiserver,
 * kube-scheduler, kwok nodes with huawei.com/Ascend910: 8, the device plugin simulator, the NPU
 * allocator and the job peer recreating deleted pods as Volcano's job controller does.
 */
import { paths } from '../../runtime/kube-client.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, vcJob } from '../../tools/job-peer/world.ts';
import { jobsHarness, runningPods, uidOf, npusOf, jobState, podGroupEvents, report, rescheduleReasonAfter, sleep, vcjobFaultNpu } from '../support/jobs-support.ts';

describe('jobs: job- and pod-level rescheduling', () => {
  const h = jobsHarness();
  const { client } = h;

  it('SeparateNPU on rank 2 with fault-scheduling=force restarts all 4 pods once, away from the bad NPU', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jr1' });
    await h.startManager();
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'llama', replicas: 4, npus: 4, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '2' } }));
    const jobKey = `${ns}/llama-${job.metadata!.uid!}`;
    const before = await runningPods(client, ns, 'llama', 4);
    await eventually(async () => (await vcjobFaultNpu(client)).remainRetryTimes.get(jobKey)?.Times === 2);

    const rank2 = before[2]!;
    const node = rank2.spec!.nodeName!;
    const npu = npusOf(rank2)[0]!;
    const ack = await world.dp.injectChipFault({ node, npu, code: '80E18402', level: 'SeparateNPU' });

    const oldUids = new Set(before.map(uidOf));
    await eventually(async () => (await jobPods(client, ns, 'llama')).every((p) => !oldUids.has(uidOf(p))), 20_000);
    const gone = before.map((p) => world.peer.goneAtMs(uidOf(p))! - ack.atMs);
    report(`force job-level, SeparateNPU ${node}/${npu}: fault write ack -> pod deletion ${Math.min(...gone)}..${Math.max(...gone)} ms (4 pods)`);

    const after = await runningPods(client, ns, 'llama', 4);
    for (const p of after.filter((x) => x.spec?.nodeName === node)) expect(npusOf(p)).not.toContain(npu);
    await eventually(async () => (await jobState(client, job.metadata!.uid!))?.state.active === undefined, 15_000);
    await sleep(1_500);
    expect(world.peer.statsOf('llama').restarts).toBe(4);
    expect(world.peer.statsOf('llama').deletedUids.size).toBe(4);

    const faultNodes = (await vcjobFaultNpu(client)).faultNodes;
    const entry = faultNodes.find((n) => n.NodeName === node);
    expect(entry?.NodeHealthState).toBe('CardUnhealthy');
    expect(entry?.UnhealthyNPU).toEqual([npu]);
    expect((await vcjobFaultNpu(client)).remainRetryTimes.get(jobKey)).toEqual({ UUID: job.metadata!.uid!, Times: 2 });

    const reason = await rescheduleReasonAfter(client, jobKey, 1);
    expect(reason?.TotalRescheduleTimes).toBe(1);
    expect(reason?.RescheduleRecords).toHaveLength(1);
    expect(reason?.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'CardUnhealthy', PodName: rank2.metadata!.name!, NodeName: node, NodeRankIndex: '2' }]);
    const events = await podGroupEvents(client, ns, `llama-${job.metadata!.uid!}`);
    const ev = events.find((e) => e.reason === 'FaultRescheduling');
    expect(ev?.message).toContain('80E18402');
    expect(ev?.message).toContain('decision.job-level');
  }, 120_000);

  it('with pod-rescheduling=on deletes only rank 2, then escalates to job level when its replacement stays pending', async () => {
    const world = await h.startWorld({ nodes: 4, prefix: 'jr2' });
    await h.startManager(['--pending-escalation-seconds=5']);
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'gpt', replicas: 4, npus: 8, labels: { 'fault-scheduling': 'grace', 'pod-rescheduling': 'on' } }));
    const jobKey = `${ns}/gpt-${job.metadata!.uid!}`;
    const before = await runningPods(client, ns, 'gpt', 4);
    const rank2 = before[2]!;
    const node = rank2.spec!.nodeName!;
    const ack = await world.dp.injectChipFault({ node, npu: npusOf(rank2)[3]!, code: '80E18402', level: 'SeparateNPU' });

    // Pod level: only rank 2 goes; its replacement cannot fit (7 NPUs left on its node, others full).
    const pending = await eventually(async () => {
      const ps = await jobPods(client, ns, 'gpt');
      const r2 = ps.find((p) => p.metadata?.name === rank2.metadata!.name);
      return r2 !== undefined && uidOf(r2) !== uidOf(rank2) && r2.spec?.nodeName === undefined ? ps : undefined;
    }, 20_000);
    report(`grace pod-level, SeparateNPU on ${node}: fault write ack -> rank-2 pod terminating ${world.peer.goneAtMs(uidOf(rank2))! - ack.atMs} ms`);
    for (const i of [0, 1, 3]) expect(uidOf(pending[i]!)).toBe(uidOf(before[i]!));
    const first = await rescheduleReasonAfter(client, jobKey, 1);
    expect(first?.RescheduleRecords?.[0]?.ReasonOfTask?.map((t) => t.NodeRankIndex)).toEqual(['2']);

    // Escalation: after 5 s pending, every pod is deleted (job level).
    const t0 = Date.now();
    const others = [0, 1, 3].map((i) => uidOf(before[i]!));
    await eventually(async () => (await jobPods(client, ns, 'gpt')).every((p) => !others.includes(uidOf(p))), 30_000);
    report(`pod-level -> job-level escalation after the replacement was pending: ${Date.now() - t0} ms after it was seen pending (threshold 5 s)`);
    // The reason record is the decision's last action, after the deletions: wait for it.
    const reason = await rescheduleReasonAfter(client, jobKey, 2);
    expect(reason.TotalRescheduleTimes).toBe(2);
    // The controller clears `pending` after its deletions return, which can be a moment after the
    // pods are gone: wait for it rather than racing it.
    const state = await eventually(async () => {
      const s = await jobState(client, job.metadata!.uid!);
      return s !== undefined && s.pending === undefined ? s : undefined;
    }, 10_000);
    expect(state.state.active?.scope).toBe('job');
    await eventually(async () => (await podGroupEvents(client, ns, `gpt-${job.metadata!.uid!}`)).some((e) => e.message?.includes('escalate to job level')), 10_000);
  }, 120_000);
});
