/**
 * Elastic training (docs/rules.md#recover.elastic-training) with the real TaskD client
 * (tools/taskd-client, MindCluster's generated Recover stubs) against the shipped controller as a
 * child process (`node main.ts`): a fault pod that is not replaced within the scale-in wait makes
 * the job go on with fewer ranks (changeStrategy `downgrade`, MindIO's 201 + isolate ranks,
 * faultNodesExit, the final downgrade status), and once a replacement pod runs the job grows back
 * (changeStrategy `upgrade`); a failed scale-in falls to the next strategy (dump). What ClusterD
 * does on these paths is in component/clusterd/pkg/application/recover/controller.go
 * (canChooseScaleInStrategy, whetherHasEnoughResource, handleCheckScaleStrategyRecoverResult,
 * waitScaleOut, chooseForRecoverFail); the conformance scenario elastic compares it with ClusterD
 * itself.
 */
import { paths } from '../../runtime/kube-client.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { chips, cleanUp, createJob, fakeNodes, podGroup, podObject, podUid, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { haveGo, pollResetConfig, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-elastic-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

/** Short waits; scaleInWait is ClusterD's 20 s look for the fault pods' replacement (whetherHasEnoughResource). */
const FLAGS = ['--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,scaleInWait=3000', '--recovery-feed-window-ms=50'];
const SCALE_IN_JSON = '{"scale-in-strategy": "DP"}';
const SCALE_OUT_JSON = '{"scale-out-strategy": "DP"}';

describeGo('elastic training (scale-in / scale-out) with the real TaskD client (Go, MindCluster stubs)', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'elastic-client');

  /** 4 rank pods (2 NPUs each: pod r holds ranks 2r, 2r+1) on 4 nodes; nobody re-creates a deleted pod (no capacity). */
  async function setUp(strategies: string): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `el-${rand()}`, 5);
    const job = await createJob(client, { ns: await newNamespace(client, 'el'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    return { job, nodes };
  }
  const pg = async (job: TestJob) => (await podGroup(client, job)).metadata!;

  it('scale-in: the fault pod is not replaced within the wait: downgrade, 201 + isolate ranks, faultNodesExit, downgrade 0; a replacement runs: upgrade, reset', async () => {
    const c = await startController('scale', FLAGS);
    const { job, nodes } = await setUp('elastic-training,dump,exit');
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit', '-isolate-ranks=2,3']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const uid1 = await podUid(client, job, 1);
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);

    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 40_000, 'globalFault');
    const down = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'downgrade', 30_000, 'downgrade');
    // The 3 s scale-in wait (fault-scheduling=force: rescheduling may bring the pod back) came first.
    const strategyReport = a.events.find((e) => e.event === 'report' && e.rpc === 'ReportRecoverStrategy')!;
    expect(down.t - strategyReport.t).toBeGreaterThanOrEqual(2_500);
    // The fault pod is gone (deleted at the fault for a replacement: pod-level rescheduling), but the
    // downgrade still names it: ClusterD filters replaced pods out for `recover` only.
    expect(down).toMatchObject({ uuid: global.uuid, actions: ['change_strategy'], extraParams: SCALE_IN_JSON, nodeRankIds: ['1'], faultRanks: [{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }] });
    // MindIO isolates ranks 2 and 3 (code 201): their pod is already a fault pod, so ClusterD's
    // faultNodesExit names no pod (RemoveDuplicateNodeRanks) and carries no fault rank.
    const exit = await a.waitForSignal((s) => s.signalType === 'faultNodesExit', 10_000, 'faultNodesExit');
    expect(exit).toMatchObject({ uuid: global.uuid, actions: ['fault_nodes_exit'], faultRanks: [], changeStrategy: '' });
    expect(exit.nodeRankIds ?? []).toEqual([]); // empty on the wire (null in the client's JSON)
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus' && e.t >= exit.t, 10_000, 'final downgrade status');
    // The fault pod was deleted for a replacement that does not come; the pod group is not marked.
    await eventually(async () => (await podUid(client, job, 1)) === undefined, 10_000);
    expect(poll.seen.some((v) => (v.info.RankList ?? []).map((r) => r.RankId).sort().join(',') === '2,3')).toBe(true);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.signals.some((s) => s.changeStrategy === 'upgrade')).toBe(false);
    const meta = await pg(job);
    expect(meta.annotations?.ProcessRecoverStatus).toBeUndefined();
    expect(meta.labels?.['process-recover-enable']).toBe('on');

    // The replacement: a new pod at rank 1 with its chips allocated, the PodGroup still Running.
    await client.create(paths.pods(job.ns), podObject(job, 1, nodes[4]!, chips(2)));
    const up = await a.waitForSignal((s) => s.changeStrategy === 'upgrade', 20_000, 'upgrade');
    expect(up).toMatchObject({ uuid: global.uuid, signalType: 'changeStrategy', actions: ['change_strategy'], extraParams: SCALE_OUT_JSON, nodeRankIds: ['1'], faultRanks: down.faultRanks });
    expect(await podUid(client, job, 1)).not.toBe(uid1);
    // Scale-out succeeded: the job's controller resets, the stream ends, TaskD subscribes again.
    const i = a.events.indexOf(up);
    await a.waitFor((e) => e.event === 'stream-end', 10_000, 'stream end', i);
    await a.waitFor((e) => e.event === 'subscribe', 10_000, 'subscription again', i);
    expect(a.summary).toEqual([
      'preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]',
      'changeStrategy:downgrade[change_strategy]', 'faultNodesExit[fault_nodes_exit]', 'changeStrategy:upgrade[change_strategy]',
    ]);
    expect(a.events.filter((e) => e.event === 'report').map((e) => `${e.rpc}:${e.code}`)).toEqual([
      'ReportProcessFault:0', 'ReportStopComplete:0', 'ReportRecoverStrategy:0', 'ReportRecoverStatus:0', 'ReportRecoverStatus:0', 'ReportRecoverStatus:0',
    ]);
    process.stdout.write(`[real-client] elastic timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 150_000);

  it('scale-in fails (MindIO answers downgrade with 1): the next strategy after a failed scale-in, dump', async () => {
    const c = await startController('scale-in-failed', FLAGS);
    const { job, nodes } = await setUp('elastic-training,dump,exit');
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit', '-scale-in-code=1']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    await reportChipFault(client, nodes[2]!, 'Ascend910-0', '80E18402', 'SeparateNPU', true);
    const down = await a.waitForSignal((s) => s.changeStrategy === 'downgrade', 40_000, 'downgrade');
    const dump = await a.waitForSignal((s) => s.changeStrategy === 'dump', 10_000, 'dump after the failed scale-in');
    expect(dump).toMatchObject({ uuid: down.uuid, actions: ['change_strategy'], faultRanks: [{ rankId: '4', faultType: '1' }, { rankId: '5', faultType: '1' }] });
    await eventually(async () => (await pg(job)).annotations?.ProcessRecoverStatus === 'dump-success', 20_000);
    expect(a.signals.some((s) => s.signalType === 'faultNodesExit')).toBe(false);
  }, 120_000);

  it('MindIO answers the downgrade with 0 at once (no ranks to isolate): the job waits for the next reset as in ClusterD, no scale-out', async () => {
    const c = await startController('scale-in-0', FLAGS);
    const { job, nodes } = await setUp('elastic-training,dump,exit');
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const down = await a.waitForSignal((s) => s.changeStrategy === 'downgrade', 40_000, 'downgrade');
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus' && e.t >= down.t, 10_000, 'downgrade status');
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    await client.create(paths.pods(job.ns), podObject(job, 1, nodes[4]!, chips(2)));
    await new Promise((r) => setTimeout(r, 6_000));
    // Parked: no faultNodesExit, no upgrade, the stream stays, reset-config keeps the fault ranks.
    expect(a.summary.slice(3)).toEqual(['changeStrategy:downgrade[change_strategy]']);
    expect(a.events.some((e) => e.event === 'stream-end')).toBe(false);
    expect(poll.seen.map((v) => (v.info.RankList ?? []).map((r) => r.RankId).sort().join(','))).toEqual(['2,3']);
    expect((await pg(job)).annotations?.ProcessRecoverStatus).toBeUndefined();
  }, 120_000);

  it('recover, the fault pod not rescheduled within wait-reschedule-timeout (30 s): downgrade, even with the rank-0 pod faulty', async () => {
    // No rescheduling: the fault pods stay (and a rank-0 fault is not a job-level restart first).
    const c = await startController('schedule-timeout', [...FLAGS, '--rescheduling=false']);
    const nodes = await fakeNodes(client, `el-${rand()}`, 4);
    const job = await createJob(client, {
      ns: await newNamespace(client, 'el'), nodes, labels: { framework: 'pytorch', 'process-recover-enable': 'on' },
      annotations: { 'recover-strategy': 'recover,elastic-training,dump,exit', 'wait-reschedule-timeout': '30' },
    });
    cleanup(() => cleanUp(client, job, nodes));
    // MindIO never reports the recover done: the replaced pods' processes never join.
    const a = agent(c.target, job, ['-strategies=recover,downgrade,dump,exit', '-recover-report=false', '-isolate-ranks=0,1']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    await reportChipFault(client, nodes[0]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const recover = await a.waitForSignal((s) => s.changeStrategy === 'recover', 40_000, 'changeStrategy recover');
    const global = a.signals.find((s) => s.signalType === 'globalFault')!;
    const down = await a.waitForSignal((s) => s.changeStrategy === 'downgrade', 45_000, 'downgrade after the schedule timeout');
    expect(down.t - global.t).toBeGreaterThanOrEqual(29_000); // the wait starts with the strategy wait (row 14)
    expect(down).toMatchObject({ uuid: recover.uuid, extraParams: SCALE_IN_JSON, nodeRankIds: ['0'], faultRanks: [{ rankId: '0', faultType: '1' }, { rankId: '1', faultType: '1' }] });
    await a.waitForSignal((s) => s.signalType === 'faultNodesExit', 10_000, 'faultNodesExit');
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus' && e.t >= down.t, 10_000, 'downgrade status');
    expect((await pg(job)).annotations?.ProcessRecoverStatus).toBeUndefined();
    expect(a.summary.slice(3)).toEqual(['changeStrategy:recover[change_strategy]', 'changeStrategy:downgrade[change_strategy]', 'faultNodesExit[fault_nodes_exit]']);
  }, 150_000);

  it('rank 0 faulty: never scale in, the next strategy (dump) at once', async () => {
    // No rescheduling: a rank-0 fault is otherwise a job-level restart (docs/rules.md#resched.master-rank) before process recovery.
    const c = await startController('rank0', [...FLAGS, '--rescheduling=false']);
    const { job, nodes } = await setUp('elastic-training,dump,exit');
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    await reportChipFault(client, nodes[0]!, 'Ascend910-0', '80E18402', 'SeparateNPU', true);
    const change = await a.waitForSignal((s) => s.signalType === 'changeStrategy', 40_000, 'changeStrategy');
    expect(change.changeStrategy).toBe('dump');
    expect(a.signals.some((s) => s.changeStrategy === 'downgrade')).toBe(false);
    expect((await pg(job)).labels?.['process-recover-enable']).toBe('on');
  }, 120_000);
});
