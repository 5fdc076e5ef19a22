/**
 * Process-level recovery and hot switch driven by a real TaskD client (not our own stand-in): a Go client built
 * from MindCluster's generated Recover stubs, following TaskD's Init / Register / Subscribe loop and
 * report calls (tools/taskd-client), against the shipped controller as a child process (`node
 * main.ts`, default flags unless a case needs one). Asserts the signal order, the uuids (fresh,
 * non-empty, TaskD-acceptable), what a 0.5 s poller of reset-config-<job> sees, and the PodGroup's
 * final ProcessRecoverStatus; prints the fault -> signal timeline.
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Pod } from '../../runtime/kube-objects.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podGroup, podPeer, podUid, rand, replacedPod, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { GoTaskdClient, haveGo, pollResetConfig, realClientHarness, timeline } from './recovery-real-client.ts';

const UUID = /^[0-9A-F]+-[0-9a-f]{32}$/;
const annotation = async (client: ReturnType<typeof adminClient>, job: TestJob, key: string): Promise<string | undefined> =>
  (await podGroup(client, job)).metadata?.annotations?.[key];

if (!haveGo()) process.stdout.write('recovery-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

describeGo('process-level recovery with the real TaskD client (Go, MindCluster stubs)', () => {
  const client = adminClient();
  const { cleanup, startController, launch, agent } = realClientHarness(client, 'real-client');

  /** 4 rank pods (2 NPUs each: pod r holds ranks 2r, 2r+1) on 4 nodes, 2 spares, Volcano's job controller stand-in. */
  async function setUp(labels: Record<string, string>, strategies: string, peer = true): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `rc-${rand()}`, 6);
    const job = await createJob(client, { ns: await newNamespace(client, 'rc'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', ...labels }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    if (peer) {
      const p = podPeer(client, job, nodes.slice(4));
      cleanup(() => p.stop());
    }
    return { job, nodes };
  }

  const subscribed = (a: GoTaskdClient, after = 0) => a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription', after);

  it('chip fault, strategy recover (default flags): preExitProcess with a fresh uuid, then stopTrain ... recover-success', async () => {
    const c = await startController('recover');
    const { job, nodes } = await setUp({ 'process-recover-enable': 'on' }, 'retry,recover,dump,exit');
    const a = agent(c.target, job);
    await subscribed(a);
    const oldUid = (await podUid(client, job, 1))!;
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);

    const pre = await a.waitForSignal((s) => s.signalType === 'preExitProcess', 30_000, 'preExitProcess');
    expect(pre.actions).toEqual(['pre exit process']);
    expect(pre.nodeRankIds).toEqual(['1']);
    expect(pre.faultRanks).toContainEqual({ rankId: '3', faultType: '1' });
    expect(pre.uuid).toMatch(UUID);
    // The fault pod is still the original one when the signal goes (deleted after it).
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportProcessFault', 10_000, 'ReportProcessFault');
    await replacedPod(client, job, 1, oldUid, 30_000);
    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'recover-success', 60_000);
    const [p, stop, global, change] = a.signals;
    expect(a.summary.slice(0, 4)).toEqual(['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]']);
    expect(stop!.uuid).toMatch(UUID);
    expect(stop!.uuid).not.toBe(p!.uuid);
    expect([global!.uuid, change!.uuid]).toEqual([stop!.uuid, stop!.uuid]);
    expect(a.events.filter((e) => e.event === 'report').map((e) => `${e.rpc}:${e.code}`).slice(0, 4))
      .toEqual(['ReportProcessFault:0', 'ReportStopComplete:0', 'ReportRecoverStrategy:0', 'ReportRecoverStatus:0']);
    // What an Elastic Agent polling every 0.5 s sees: the flush mark, then the cleared file.
    await eventually(() => { const l = poll.seen.at(-1)?.info; return l !== undefined && (l.RankList ?? []).length === 0 && !l.FaultFlushing; }, 10_000);
    expect(poll.seen.some((v) => v.info.FaultFlushing)).toBe(true);
    const withRanks = poll.seen.filter((v) => (v.info.RankList ?? []).length > 0);
    process.stdout.write(`[real-client] recover timeline (ms from fault): ${timeline(a, t0)}; ` +
      `recover-success after ${Date.now() - t0} ms; 0.5 s poller saw ${poll.seen.length} versions, ${withRanks.length} with a RankList\n`);
  }, 180_000);

  it('memory UCE, strategy retry: globalFault / changeStrategy retry with the UCE rank only, no preExit, retry-success', async () => {
    const c = await startController('retry');
    const { job, nodes } = await setUp({ 'process-recover-enable': 'on' }, 'retry,recover');
    const a = agent(c.target, job);
    await subscribed(a);
    const uids = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
    const t0 = Date.now();
    a.reportProcessFault([{ rankId: '3', faultType: '0' }]); // MindIO's business-plane report first: a step-retry UCE (ClusterD CanDoStepRetry)
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'retry-success', 60_000);
    expect(a.summary.slice(0, 3)).toEqual(['stopTrain[stop_train]', 'globalFault[on_global_rank]', 'changeStrategy:retry[change_strategy]']);
    const [stop, global, change] = a.signals;
    expect(stop!.uuid).toMatch(UUID);
    expect([global!.uuid, change!.uuid]).toEqual([stop!.uuid, stop!.uuid]);
    expect(global!.faultRanks).toEqual([{ rankId: '3', faultType: '0' }]);
    expect(await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)))).toEqual(uids);
    process.stdout.write(`[real-client] UCE retry timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);

  it('fault on a job whose agent never registered: pod-level rescheduling only, no recovery status', async () => {
    await startController('unregistered');
    const { job, nodes } = await setUp({ 'process-recover-enable': 'on', 'pod-rescheduling': 'on' }, 'retry,recover');
    await eventually(async () => (await client.list<Pod>(paths.pods(job.ns))).items.length === 4);
    const oldUid = (await podUid(client, job, 1))!;
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    await replacedPod(client, job, 1, oldUid, 30_000);
    const ms = Date.now() - t0;
    for (const r of [0, 2, 3]) expect(await podUid(client, job, r)).toBeDefined();
    expect(await annotation(client, job, 'ProcessRecoverStatus')).toBeUndefined();
    process.stdout.write(`[real-client] unregistered job: fault pod replaced after ${ms} ms\n`);
  }, 90_000);

  it('controller killed mid-recovery (docs/rules.md#recover.resume): the agent re-subscribes and the restored recovery goes on, same uuid, recover-success', async () => {
    const c = await startController('restart-1');
    const { job, nodes } = await setUp({ 'process-recover-enable': 'on' }, 'retry,recover');
    const a = agent(c.target, job);
    await subscribed(a);
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const stop = await a.waitForSignal((s) => s.signalType === 'stopTrain', 40_000, 'stopTrain');
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportStopComplete', 10_000, 'ReportStopComplete');
    // Killed inside the 10 s force-release wait, before globalFault.
    const before = a.events.length;
    await c.kill();
    const c2 = launch('restart-2', c.grpcPort);
    await a.waitFor((e) => e.event === 'stream-end', 10_000, 'stream end', before);
    await c2.ready(); // node's start alone can take 25 s on the shared machine; TaskD retries Init every 1 s meanwhile
    await subscribed(a, before);
    // Restored from clusterd-ts-recovery-<uid>: the force-release timer fires (or already had) and the
    // recovery goes on with its uuid (ClusterD would have forgotten the job and reset it).
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 40_000, 'globalFault of the restored recovery');
    expect(global.uuid).toBe(stop.uuid);
    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'recover-success', 60_000);
    expect(a.summary).toEqual(['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]']);
    expect(a.signals.filter((s) => s.uuid === stop.uuid)).toHaveLength(3);
  }, 180_000);

  it('hot switch with the backup pod: hot switch, new pod running, migration, empty uuid; old pod replaced by the backup', async () => {
    const c = await startController('hot-switch', ['--hot-switch-backup-pods']);
    const { job, nodes } = await setUp({ 'process-recover-enable': 'on', subHealthyStrategy: 'hotSwitch' }, 'recover', false);
    const a = agent(c.target, job);
    await subscribed(a);
    const oldUid = (await podUid(client, job, 1))!;
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-0', '81A3880C', 'SubHealthFault');
    await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'migration', 60_000, 'migration');
    expect(a.summary.slice(0, 3)).toEqual(['hot-switch[hot switch]', 'hot-switch[new pod running]', 'changeStrategy:migration[change_strategy]']);
    const [hs, running, migration] = a.signals;
    // As ClusterD's (conformance scenario hot-switch): an empty uuid, no node ranks, the pod's ranks on the first signal only.
    expect([hs!.uuid, running!.uuid, migration!.uuid]).toEqual(['', '', '']);
    expect(hs!.nodeRankIds ?? []).toEqual([]);
    expect(hs!.faultRanks).toEqual([{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }]);
    const backup = await eventually(async () => (await client.list<Pod>(paths.pods(job.ns))).items
      .find((p) => p.metadata?.name?.startsWith(`${job.name}-worker-1-hot-`) && p.metadata?.annotations?.podType === undefined), 20_000);
    expect(backup.metadata?.annotations?.['hccl/rankIndex']).toBe('1');
    await eventually(async () => (await client.getOrUndefined<KubeObject>(paths.pod(job.ns, `${job.name}-worker-1`)))?.metadata?.uid !== oldUid, 20_000);
    // ClusterD writes ProcessRecoverStatus only from the recovery FSM's CheckRecoverResult (updateFixResult), never for a hot switch.
    expect(await annotation(client, job, 'ProcessRecoverStatus')).toBeUndefined();
    process.stdout.write(`[real-client] hot switch timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);
});
