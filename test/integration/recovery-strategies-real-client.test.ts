/**
 * The dump, kill-job and recover-in-place strategies of process-level recovery with the real TaskD client
 * (tools/taskd-client, MindCluster's generated Recover stubs) against the shipped controller as a
 * child process (`node main.ts`, default flags): the signals and their uuids, the answer codes, what
 * a 0.5 s poller of reset-config-<job> sees, the PodGroup's ProcessRecoverStatus and
 * process-recover-enable label, the stream. What ClusterD does on these paths is in
 * component/clusterd/pkg/application/recover/controller.go (handleNotifyElagantDump, sendDumpExit,
 * handleListenScheduleResult, handleFaultRetry, handleKillJob); the conformance scenarios
 * process-dump, process-kill-job and process-recover-in-place compare it with ClusterD itself.
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podGroup, podPeer, podUid, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { haveGo, pollResetConfig, realClientHarness, timeline } from './recovery-real-client.ts';

const UUID = /^[0-9A-F]+-[0-9a-f]{32}$/;

if (!haveGo()) process.stdout.write('recovery-strategies-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

describeGo('dump, kill-job and recover-in-place strategies with the real TaskD client (Go, MindCluster stubs)', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'strategies-client');

  /** 4 rank pods (2 NPUs each: pod r holds ranks 2r, 2r+1) on 4 nodes, 2 spares, Volcano's job controller stand-in. */
  async function setUp(strategies: string): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `rs-${rand()}`, 6);
    const job = await createJob(client, { ns: await newNamespace(client, 'rs'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    const p = podPeer(client, job, nodes.slice(4));
    cleanup(() => p.stop());
    return { job, nodes };
  }
  const pg = async (job: TestJob) => (await podGroup(client, job)).metadata!;
  /** The device plugin reports every chip of the node healthy again. */
  async function chipsHealthy(node: string): Promise<void> {
    const cm = (await client.get<ConfigMap>(paths.configMap('kube-system', deviceInfoCmName(node))));
    const available = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
    await client.replace(paths.configMap('kube-system', deviceInfoCmName(node)), { ...cm, data: encodeDeviceInfoData({ available, updateTimeS: Math.floor(Date.now() / 1000) }) });
  }

  it('dump first (recover-strategy dump,exit): saveAndExit, dump-success, exit dump_exit, RetryTime+1, label pause then on', async () => {
    const c = await startController('dump');
    const { job, nodes } = await setUp('dump,exit');
    const a = agent(c.target, job, ['-strategies=dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);

    const save = await a.waitForSignal((s) => s.signalType === 'saveAndExit', 30_000, 'saveAndExit');
    expect(save.actions).toEqual(['save_and_exit']);
    expect(save.nodeRankIds).toEqual(['1']);
    expect(save.faultRanks).toEqual([]); // ClusterD names the fault pods only
    expect(save.uuid).toMatch(UUID);
    await eventually(async () => (await pg(job)).annotations?.ProcessRecoverStatus === 'dump-success', 30_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit', 10_000, 'dump_exit');
    expect(exit).toMatchObject({ uuid: save.uuid, actions: ['change_strategy'], extraParams: 'dump_exit', nodeRankIds: ['1'], faultRanks: [] });
    // preExitProcess first, as on every chip fault (MindIO answers it); no stopTrain / globalFault.
    expect(a.events.filter((e) => e.event === 'report').map((e) => `${e.rpc}:${e.code}`)).toEqual(['ReportProcessFault:0', 'ReportRecoverStatus:0']);
    expect(a.summary.slice(0, 3)).toEqual(['preExitProcess[pre exit process]', 'saveAndExit[save_and_exit]', 'changeStrategy:exit[change_strategy]']);
    // The fault pod's ranks went to reset-config with the saveAndExit; once the job runs again
    // (20 s listen-schedule) RetryTime+1 tells every agent to restart its processes.
    await eventually(() => poll.seen.some((v) => (v.info.RankList ?? []).some((r) => r.RankId === 3)), 5_000);
    await eventually(() => (poll.seen.at(-1)?.info.RetryTime ?? 0) >= 1, 40_000);
    // After the 1 min restart wait: clear, fault retry (label pause, dump_exit again), the job runs: label on.
    await eventually(async () => (await pg(job)).labels?.['process-recover-enable'] === 'pause', 80_000);
    await eventually(async () => (await pg(job)).labels?.['process-recover-enable'] === 'on', 30_000);
    expect(a.signals.filter((s) => s.extraParams === 'dump_exit')).toHaveLength(2);
    expect(a.signals.map((s) => s.signalType)).not.toContain('killMaster');
    process.stdout.write(`[real-client] dump timeline (ms from fault): ${timeline(a, t0)}; label on after ${Date.now() - t0} ms\n`);
  }, 240_000);

  it('dump fails (MindIO answers 1): dump-failed, still exit dump_exit', async () => {
    const c = await startController('dump-failed');
    const { job, nodes } = await setUp('dump,exit');
    const a = agent(c.target, job, ['-strategies=dump,exit', '-dump-code=1']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    await reportChipFault(client, nodes[2]!, 'Ascend910-0', '80E18402', 'SeparateNPU', true);
    await eventually(async () => (await pg(job)).annotations?.ProcessRecoverStatus === 'dump-failed', 40_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit', 10_000, 'dump_exit');
    expect(exit).toMatchObject({ extraParams: 'dump_exit', nodeRankIds: ['2'] });
  }, 120_000);

  it('kill job: MindIO answers stopTrain with 404 (processes not ready): killMaster with the recovery uuid, stream closed, TaskD subscribes again', async () => {
    const c = await startController('kill-job');
    const { job, nodes } = await setUp('recover,exit');
    const a = agent(c.target, job, ['-strategies=recover,exit', '-stop-code=404']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const kill = await a.waitForSignal((s) => s.signalType === 'killMaster', 40_000, 'killMaster');
    const stop = a.signals.find((s) => s.signalType === 'stopTrain')!;
    expect(kill).toMatchObject({ uuid: stop.uuid, actions: null, faultRanks: [], changeStrategy: '' });
    expect(a.summary.slice(0, 3)).toEqual(['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'killMaster[]']);
    // ClusterD resets the job's controller after killMaster (handleFinish): the stream ends, TaskD subscribes again.
    const i = a.events.indexOf(a.events.find((e) => e.event === 'signal' && e.signalType === 'killMaster')!);
    await a.waitFor((e) => e.event === 'stream-end', 10_000, 'stream end', i);
    await a.waitFor((e) => e.event === 'subscribe', 10_000, 'subscription again', i);
    expect((await pg(job)).annotations?.ProcessRecoverStatus).toBeUndefined();
    expect((await pg(job)).labels?.['process-recover-enable']).toBe('on');
    process.stdout.write(`[real-client] kill-job timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);

  it('recover-in-place: an L2 fault cleared inside the 15 s check: changeStrategy recover / recover-in-place to the fault pod, not replaced, recover-success after the 5 s wait', async () => {
    const c = await startController('in-place');
    const { job, nodes } = await setUp('recover-in-place,recover,exit');
    const a = agent(c.target, job, ['-strategies=recover,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const uids = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80C98008', 'RestartRequest');
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportStopComplete', 40_000, 'ReportStopComplete');
    // 1 s flush and 10 s force release, then the in-place check: the fault clears 3 s into it.
    await new Promise((r) => setTimeout(r, 14_000));
    await chipsHealthy(nodes[1]!);
    const change = await a.waitForSignal((s) => s.signalType === 'changeStrategy', 30_000, 'changeStrategy');
    expect(change).toMatchObject({ changeStrategy: 'recover', extraParams: 'recover-in-place', actions: ['change_strategy', 'fault_nodes_restart'], nodeRankIds: ['1'] });
    const status = await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus', 10_000, 'ReportRecoverStatus');
    await eventually(async () => (await pg(job)).annotations?.ProcessRecoverStatus === 'recover-success', 30_000);
    const success = Date.now();
    expect(success - status.t).toBeGreaterThanOrEqual(4_000); // read after the 5 s wait and the clear
    expect(poll.seen.some((v) => v.info.RestartFaultProcess && (v.info.RankList ?? []).some((r) => r.RankId === 3))).toBe(true);
    expect(await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)))).toEqual(uids); // restarted in place
    process.stdout.write(`[real-client] recover-in-place timeline (ms from fault): ${timeline(a, t0)}; recover-success after ${success - t0} ms\n`);
  }, 150_000);
});
