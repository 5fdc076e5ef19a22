/**
 * The AI platform mode of process-level recovery (docs/rules.md#recover.platform-mode) with the real TaskD client
 * (tools/taskd-client, MindCluster's generated Recover stubs) against the shipped controller as a child
 * process (`node main.ts`). The test plays the AI platform: it answers the controller's
 * ProcessConfirmFault by patching the PodGroup's ProcessResultFault, ProcessRecoverStrategy and
 * RankTableReady. What ClusterD does here is in
 * component/clusterd/pkg/application/recover/fault_recover_platform_plugin.go and controller.go
 * (handleNotifyWaitFaultFlushing, writeConfirmFaultAndWaitPlatResultFault, handleDecidedStrategyAfterChoose).
 */
import { paths } from '../../runtime/kube-client.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podGroup, podPeer, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { haveGo, pollResetConfig, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-platform-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

describeGo('AI platform mode with the real TaskD client (Go, MindCluster stubs)', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'platform-client');

  /**
   * One case's start: the controller with `timings`, 4 rank pods (2 NPUs each: pod r holds ranks 2r, 2r+1)
   * on 4 nodes and 2 spares, the PodGroup in platform mode with `platformStrategy`, the real client
   * subscribed, reset-config polled; then a SeparateNPU chip fault on rank pod 1.
   */
  async function faultedJob(name: string, timings: string, platformStrategy: string) {
    const c = await startController(name, [`--recovery-timings=${timings}`]);
    const nodes = await fakeNodes(client, `rp-${rand()}`, 6);
    const job = await createJob(client, {
      ns: await newNamespace(client, 'rp'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on' },
      annotations: { 'recover-strategy': 'recover,exit', ProcessRecoverStrategy: platformStrategy },
    });
    cleanup(() => cleanUp(client, job, nodes));
    const p = podPeer(client, job, nodes.slice(4));
    cleanup(() => p.stop());
    const a = agent(c.target, job, ['-strategies=recover,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    return { job, a, poll, t0 };
  }
  const meta = async (job: TestJob) => (await podGroup(client, job)).metadata!;
  /** The platform's answer: a merge patch of the PodGroup's annotations. */
  const platform = (job: TestJob, annotations: Record<string, string | null>) =>
    client.patch(paths.podGroup(job.ns, job.pgName), { metadata: { annotations } }, 'merge');

  it('confirm -> result -> strategy recover -> RankTableReady -> recover-success', async () => {
    const { job, a, poll, t0 } = await faultedJob('platform-recover', 'forceRelease=0', 'recover');

    // The controller writes the fault ranks it saw, then waits: no globalFault before the platform answers.
    await eventually(async () => ((await meta(job)).annotations?.ProcessConfirmFault ?? '') !== '', 40_000);
    const confirm = (await meta(job)).annotations!.ProcessConfirmFault!;
    expect(confirm.split(',')).toContain('3:1');
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.summary.slice(0, 2)).toEqual(['preExitProcess[pre exit process]', 'stopTrain[stop_train]']);
    expect(a.signals.map((s) => s.signalType)).not.toContain('globalFault');

    // The platform adds rank 5 (pod 2) to the faults and keeps recover.
    await platform(job, { ProcessResultFault: '5:1' });
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 20_000, 'globalFault');
    expect(global.actions).toEqual(['on_global_rank', 'fault_nodes_exit']);
    expect(global.faultRanks!.map((f) => f.rankId).sort()).toEqual(['2', '3', '4', '5']);
    expect([...global.nodeRankIds!].sort()).toEqual(['1', '2']);
    await eventually(() => poll.seen.some((v) => (v.info.RankList ?? []).some((r) => r.RankId === 5)), 10_000);

    // recover chosen: it waits for RankTableReady.
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStrategy', 20_000, 'ReportRecoverStrategy');
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.signals.map((s) => s.signalType)).not.toContain('changeStrategy');
    await platform(job, { RankTableReady: 'true' });
    const change = await a.waitForSignal((s) => s.signalType === 'changeStrategy', 20_000, 'changeStrategy');
    expect(change.changeStrategy).toBe('recover');
    await eventually(async () => (await meta(job)).annotations?.ProcessRecoverStatus === 'recover-success', 90_000);
    expect(a.signals.map((s) => s.signalType)).not.toContain('killMaster');
    process.stdout.write(`[real-client] platform recover timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 240_000);

  it('no platform strategy within ProcessControlTimeout (--recovery-timings processControl=3000): fault retry, no stopTrain', async () => {
    const { job, a, t0 } = await faultedJob('platform-timeout', 'processControl=3000', '');
    await eventually(async () => (await meta(job)).labels?.['process-recover-enable'] === 'pause', 40_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy', 10_000, 'dump_exit');
    expect(exit).toMatchObject({ changeStrategy: 'exit', extraParams: 'dump_exit', nodeRankIds: ['1'] });
    expect(a.signals.map((s) => s.signalType)).not.toContain('stopTrain');
    expect((await meta(job)).annotations?.ProcessConfirmFault).toBeUndefined();
    process.stdout.write(`[real-client] platform timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);

  it('the platform answers exit: changeStrategy exit, no ProcessRecoverStatus, RetryTime+1 without the schedule waits', async () => {
    const { job, a, poll, t0 } = await faultedJob('platform-exit', 'forceRelease=0', 'recover');
    await eventually(async () => ((await meta(job)).annotations?.ProcessConfirmFault ?? '') !== '', 40_000);
    await platform(job, { ProcessResultFault: '', ProcessRecoverStrategy: 'exit' });
    const change = await a.waitForSignal((s) => s.signalType === 'changeStrategy', 30_000, 'changeStrategy');
    expect(change.changeStrategy).toBe('exit');
    await eventually(() => (poll.seen.at(-1)?.info.RetryTime ?? 0) >= 1, 20_000);
    await eventually(async () => (await meta(job)).labels?.['process-recover-enable'] === 'pause', 20_000);
    // handleDecideExitStrategy reads no status report: no exit-completed.
    expect((await meta(job)).annotations?.ProcessRecoverStatus).toBeUndefined();
    process.stdout.write(`[real-client] platform exit timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 180_000);
});
