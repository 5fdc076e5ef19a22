/**
 * Node loss and controller restarts on the real control plane: a NotReady node reschedules its
 * job (heartbeatTimeOut); a controller killed between persisting a decision and deleting the pods
 * finishes that decision after its restart and never restarts the job a second time.
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ExecAction } from '../../schemas/job-state/job-state.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, loseNode, runningWithNpus, vcJob } from '../../tools/job-peer/world.ts';
import { NodeDSimulator } from '../../tools/simulator/noded.ts';
import type { Node } from '../../runtime/kube-objects.ts';
import { jobsHarness, runningPods, uidOf, npusOf, jobState, podGroupEvents, report, rescheduleReasonOf, rescheduleReasonAfter, sleep, vcjobFaultNpu } from '../support/jobs-support.ts';

describe('jobs: node loss and controller restarts', () => {
  const h = jobsHarness();
  const { client } = h;

  it('a NotReady node reschedules its job with reason heartbeatTimeOut', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jn1' });
    await h.startManager();
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'mix', replicas: 2, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'mix', 2);
    const lost = before[1]!.spec!.nodeName!;
    const ack = await loseNode(client, lost);

    const old = new Set(before.map(uidOf));
    await eventually(async () => (await jobPods(client, ns, 'mix')).every((p) => !old.has(uidOf(p))), 20_000);
    const gone = before.map((p) => world.peer.goneAtMs(uidOf(p))! - ack.atMs);
    report(`force job-level, node ${lost} NotReady: Node status write ack -> pod deletion ${Math.min(...gone)}..${Math.max(...gone)} ms (2 pods)`);
    const after = await runningPods(client, ns, 'mix', 2);
    expect(after.map((p) => p.spec?.nodeName)).not.toContain(lost);

    const reason = await rescheduleReasonAfter(client, `${ns}/mix-${uid}`, 1);
    expect(reason?.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'NodeUnhealthy', PodName: before[1]!.metadata!.name!, NodeName: lost, NodeRankIndex: '1' }]);
    const entry = (await vcjobFaultNpu(client)).faultNodes.find((n) => n.NodeName === lost);
    expect(entry?.NodeHealthState).toBe('NodeUnhealthy');
    expect(entry?.FaultDeviceList?.[0]?.fault_code).toBe('heartbeatTimeOut');
    const events = await podGroupEvents(client, ns, `mix-${uid}`);
    expect(events.find((e) => e.reason === 'FaultRescheduling')?.message).toContain(`heartbeatTimeOut@${lost}`);
  }, 120_000);

  it('with --node-taints a NodeD SeparateFault taints its node NoSchedule and the restarted job lands elsewhere', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jn3' });
    await h.startManager(['--node-taints']); // ClusterD taints nothing: an extension
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'iso', replicas: 2, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'iso', 2);
    const bad = before[0]!.spec!.nodeName!;
    const ack = await new NodeDSimulator(client).inject({ node: bad, code: '2C000031', level: 'SeparateFault' });
    const taint = await eventually(async () => (await client.get<Node>(paths.node(bad))).spec?.taints?.find((t) => t.key === 'huawei.com/clusterd-fault'), 10_000);
    expect(taint).toEqual({ key: 'huawei.com/clusterd-fault', value: 'SeparateNPU', effect: 'NoSchedule' });
    const old = new Set(before.map(uidOf));
    const after = await eventually(async () => { const ps = await jobPods(client, ns, 'iso'); return ps.length === 2 && ps.every((p) => !old.has(uidOf(p)) && runningWithNpus(p)) ? ps : undefined; }, 30_000);
    const gone = before.map((p) => world.peer.goneAtMs(uidOf(p))! - ack.atMs);
    report(`force job-level, NodeD SeparateFault on ${bad}: node-info write ack -> pod deletion ${Math.min(...gone)}..${Math.max(...gone)} ms (2 pods)`);
    expect(after.map((p) => p.spec?.nodeName)).not.toContain(bad);
    const reason = await rescheduleReasonAfter(client, `${ns}/iso-${uid}`, 1);
    expect(reason?.RescheduleRecords?.[0]?.ReasonOfTask?.map((t) => t.RescheduleReason)).toEqual(['NodeUnhealthy']);
  }, 120_000);

  it('a controller killed between decision and deletion finishes it after restart and restarts the job once', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jn2' });
    const { ns } = world;
    let held = 0;
    const hang = (action: ExecAction, ctx: { signal: AbortSignal }): Promise<void> => {
      if (action.type !== 'forceDeletePods') return Promise.resolve();
      held++;
      // "Killed" mid-action: never completes; the reconcile ends when the manager stops.
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('killed')), { once: true }));
    };
    const a = await h.startManager([], { hooks: { beforeAction: hang } });
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'ckpt', replicas: 4, npus: 4, labels: { 'fault-scheduling': 'force' } }));
    const uid = job.metadata!.uid!;
    const jobKey = `${ns}/ckpt-${uid}`;
    const before = await runningPods(client, ns, 'ckpt', 4);
    const ack = await world.dp.injectChipFault({ node: before[2]!.spec!.nodeName!, npu: npusOf(before[2]!)[0]!, code: '80E18402', level: 'SeparateNPU' });

    const persisted = await eventually(async () => (await jobState(client, uid))?.pending, 15_000);
    expect(persisted.actions.map((x) => x.type)).toEqual(['forceDeletePods', 'recordRescheduleReason']);
    await eventually(() => held > 0);
    await h.stopManager(a.manager);
    expect((await jobPods(client, ns, 'ckpt')).map(uidOf)).toEqual(before.map(uidOf));
    expect(await rescheduleReasonOf(client, jobKey)).toBeUndefined();

    const restartAt = Date.now();
    const b = await h.startManager();
    const old = new Set(before.map(uidOf));
    await eventually(async () => (await jobPods(client, ns, 'ckpt')).every((p) => !old.has(uidOf(p))), 20_000);
    const gone = before.map((p) => world.peer.goneAtMs(uidOf(p))!);
    report(`killed controller: restarted manager -> pod deletion ${Math.min(...gone) - restartAt}..${Math.max(...gone) - restartAt} ms; fault write ack -> deletion ${Math.min(...gone) - ack.atMs} ms including the outage`);
    await runningPods(client, ns, 'ckpt', 4);
    await eventually(async () => { const s = await jobState(client, uid); return s?.pending === undefined && s?.state.active === undefined; }, 15_000);
    await sleep(2_000);
    expect(world.peer.statsOf('ckpt').deletedUids.size).toBe(4);
    expect(world.peer.statsOf('ckpt').restarts).toBe(4);
    const reason = await rescheduleReasonAfter(client, jobKey, 1);
    expect(reason?.TotalRescheduleTimes).toBe(1);
    // B carried out the persisted decision (a replay) and made no new one.
    const replayed = (await b.metrics.decisions.get()).values.find((v) => v.labels.outcome === 'replayed');
    expect(replayed?.value).toBe(1);
    const acted = (await b.metrics.decisions.get()).values.filter((v) => v.labels.outcome === 'acted').reduce((n, v) => n + v.value, 0);
    expect(acted).toBe(0);
    expect((await podGroupEvents(client, ns, `ckpt-${uid}`)).filter((e) => e.reason === 'FaultRescheduling')).toHaveLength(1);
  }, 120_000);
});
