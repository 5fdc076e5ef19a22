/**
 * Process-level recovery end to end on the real apiserver (docs/rules.md#recover.fsm, #recover.step-retry): the
 * Manager in process, a TaskD-like client (role taskd) on its gRPC port, device-plugin fault reports,
 * a Volcano-like peer that re-creates deleted pods.
 */
import type { Manager } from '../../controllers/manager.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { TaskdClient } from '../support/taskd-client.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import {
  cleanUp, createJob, fakeNodes, podGroup, podPeer, podUid, rand, replacedPod, reportChipFault, signalSummary, startAgent, startManager, watchResetConfig,
  type TestJob,
} from './recovery-fixtures.ts';

const annotation = async (client: KubeClient, job: TestJob, key: string): Promise<string | undefined> =>
  (await podGroup(client, job)).metadata?.annotations?.[key];

describe('process-level recovery with a TaskD-like client', () => {
  const client = adminClient();
  let manager: Manager;
  let target: string;
  let metrics: Metrics;
  const cleanups: Array<() => void | Promise<void>> = [];

  beforeAll(async () => {
    ({ manager, target, metrics } = await startManager(client));
  }, 60_000);

  afterEach(async () => { for (const c of cleanups.splice(0)) await c(); });
  afterAll(async () => { await manager.stop(); });

  /** A 4-pod job (2 NPUs per pod: pod r holds ranks 2r, 2r+1), 2 spare nodes, the agent subscribed. */
  async function setUp(strategies: string, script: Parameters<typeof startAgent>[2]): Promise<{ job: TestJob; nodes: string[]; agent: TaskdClient; peer: ReturnType<typeof podPeer> }> {
    const nodes = await fakeNodes(client, `rec-${rand()}`, 6);
    const ns = await newNamespace(client, 'rec');
    const job = await createJob(client, {
      ns, nodes: nodes.slice(0, 4), labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': strategies },
    });
    const peer = podPeer(client, job, nodes.slice(4));
    await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 4);
    const agent = startAgent(target, job.uid, script);
    cleanups.push(() => agent.stop(), () => peer.stop(), () => cleanUp(client, job, nodes));
    await agent.waitFor(() => (agent.subscribed && manager.recovery.phase(job.uid) === 'INIT' ? true : undefined), 15_000, 'subscription');
    return { job, nodes, agent, peer };
  }

  it('a chip fault that lands after the scheduler deleted its pod is still the job\'s: its rank joins the recovery MindIO\'s report starts (ClusterD PreServerList)', async () => {
    const { job, nodes, agent, peer } = await setUp('retry,recover', {});
    // No replacement: the job stays incomplete, so its last complete placement is what maps the fault.
    peer.stop();
    await client.delete(paths.pod(job.ns, job.podNames[1]!), { gracePeriodSeconds: 0 });
    await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 3);
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    // The FSM caches the fault of rank 3 (pod 1, its 2nd chip), though no pod of the job is on that node now.
    await eventually(() => manager.recovery.job(job.uid)?.recovery.faults.some((f) => f.rankId === 3 && f.faultType === '1') === true, 20_000);
    // MindIO reports the ranks whose processes died with the pod; the recovery carries the chip's rank too.
    await agent.reportProcessFault([{ rankId: '2', faultType: '1' }]);
    const global = await agent.waitForSignal((s) => s.signalType === 'globalFault', 20_000);
    expect(global.faultRanks).toEqual(expect.arrayContaining([{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }]));
    expect(agent.received.some((s) => s.signalType === 'preExitProcess')).toBe(false); // the pod is not the original one
  }, 90_000);

  it('recover: hardware fault on rank 3 -> stopTrain -> globalFault -> recover -> pod replaced -> recover-success', async () => {
    let oldUid = '';
    const { job, nodes, agent } = await setUp('retry,recover', {
      status: async (strategy) => (strategy === 'recover' ? (await replacedPod(client, job, 1, oldUid), 0) : 0),
    });
    oldUid = (await podUid(client, job, 1))!;
    const resets = watchResetConfig(client, job);
    cleanups.push(() => resets.stop());
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    // MindIO notices dead ranks itself when the fault pod is deleted before the preExit signal reaches it.
    void replacedPod(client, job, 1, oldUid).then(async () => {
      if (!agent.received.some((s) => s.signalType === 'stopTrain')) await agent.reportProcessFault([{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }]);
    }, () => undefined);

    const stop = await agent.waitForSignal((s) => s.signalType === 'stopTrain', 20_000);
    expect(stop.actions).toEqual(['stop_train']);
    expect(stop.uuid).toMatch(/^[0-9A-F]+-[0-9a-f]{32}$/);
    const global = await agent.waitForSignal((s) => s.signalType === 'globalFault', 20_000);
    expect(global.uuid).toBe(stop.uuid);
    expect(global.actions).toEqual(['on_global_rank', 'fault_nodes_exit']);
    expect(global.faultRanks).toContainEqual({ rankId: '3', faultType: '1' });
    const change = await agent.waitForSignal((s) => s.signalType === 'changeStrategy', 20_000);
    expect(change.changeStrategy).toBe('recover');
    expect(change.actions).toEqual(['change_strategy']);
    await agent.waitForReport('ReportRecoverStatus', 30_000);
    expect(await podUid(client, job, 1)).not.toBe(oldUid);

    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'recover-success', 20_000);
    await eventually(() => manager.recovery.phase(job.uid) === 'INIT', 10_000);
    // The reset ends the stream with OK; the client re-subscribes (Init and Register are no-ops).
    await agent.waitFor(() => (agent.counters.subscribe >= 2 && agent.subscribed ? true : undefined), 10_000, 're-subscribe');
    const order = agent.received.map(signalSummary).filter((s) => !s.startsWith('preExitProcess'));
    expect(order.slice(0, 3)).toEqual(['stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]']);

    await eventually(() => {
      const last = resets.versions.at(-1);
      return last !== undefined && (last.RankList ?? []).length === 0 && !last.FaultFlushing;
    }, 10_000);
    expect(resets.badCheckCode).toBe(0);
    expect(resets.versions.some((v) => v.FaultFlushing)).toBe(true);
    expect(resets.versions.some((v) => (v.RankList ?? []).some((r) => r.RankId === 3 && r.Status === 'fault'))).toBe(true);
    // Goodput: the episode ends at the agent's recover-success report (stage resumed), after the replacement.
    const stage = async (name: string, s: string): Promise<number | undefined> => (await metrics.jobRecoveryStages.get()).values
      .find((v) => v.metricName === `clusterd_job_recovery_seconds_${name}` && v.labels.job_name === job.name && v.labels.stage === s)?.value;
    expect(await stage('count', 'resumed')).toBe(1);
    expect(await stage('sum', 'resumed')).toBeLessThanOrEqual((Date.now() - t0) / 1000 + 1);
    expect(await stage('sum', 'resumed')).toBeGreaterThanOrEqual((await stage('sum', 'decided'))!);
    const lost = (await metrics.jobLostSeconds.get()).values.find((v) => v.labels.job_name === job.name)?.value;
    expect(lost).toBeCloseTo((await stage('sum', 'resumed'))!, 6);
    expect(metrics.goodput.openEpisodes()).toBe(0);
    process.stdout.write(`recover scenario: ${Date.now() - t0} ms from fault to recover-success; goodput: resumed ${String(await stage('sum', 'resumed'))} s after the fault\n`);
  }, 90_000);

  it('UCE step retry (80E01801, retry configured): hidden from rescheduling, retry succeeds', async () => {
    const { job, nodes, agent } = await setUp('retry,recover', {});
    const uids = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
    const t0 = Date.now();
    // MindIO reports the UCE in the business plane first: only then is it a step-retry fault (ClusterD's CanDoStepRetry).
    await agent.reportProcessFault([{ rankId: '3', faultType: '0' }]);
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');

    const global = await agent.waitForSignal((s) => s.signalType === 'globalFault', 20_000);
    expect(global.actions).toEqual(['on_global_rank']);
    expect(global.faultRanks).toEqual([{ rankId: '3', faultType: '0' }]);
    const change = await agent.waitForSignal((s) => s.signalType === 'changeStrategy', 20_000);
    expect(change.changeStrategy).toBe('retry');
    expect(change.faultRanks).toEqual([{ rankId: '3', faultType: '0' }]);
    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'retry-success', 20_000);
    expect(agent.received.some((s) => s.signalType === 'preExitProcess')).toBe(false);
    // The hold's completion is recorded by the FSM's command, which can land just after the annotation write.
    expect(await eventually(() => manager.recovery.memory.hold(job.uid)?.completeTimeMs, 5_000)).toBeDefined();
    const elapsed = Date.now() - t0;

    // Hidden from the rescheduler (cluster-info, jobs pipeline), still in the job view; no pod touched.
    expect(manager.deviceFaults.effective(nodes[1]!).map((r) => r.code)).not.toContain('80E01801');
    expect(manager.recovery.jobView(nodes[1]!).map((r) => r.code)).toContain('80E01801');
    await new Promise((r) => setTimeout(r, 11_000)); // past the 10 s fault window
    expect(manager.deviceFaults.effective(nodes[1]!).map((r) => r.code)).not.toContain('80E01801');
    expect(await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)))).toEqual(uids);
    process.stdout.write(`UCE step retry: ${elapsed} ms from fault to retry-success\n`);
  }, 90_000);

  it('a device-info UCE that lands before MindIO\'s report is hidden from the FSM for 10 s (ClusterD\'s job fault list reads the filtered device-info): the report then starts a step retry, no preExit', async () => {
    const { job, nodes, agent } = await setUp('retry,recover', {});
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
    await eventually(() => manager.recovery.jobView(nodes[1]!).some((r) => r.code === '80E01801'));
    await new Promise((r) => setTimeout(r, 1_500)); // the FSM has been fed the job's picture with the UCE in it
    expect(manager.recovery.job(job.uid)?.recovery.faults).toEqual([]);
    await agent.reportProcessFault([{ rankId: '3', faultType: '0' }]);
    const change = await agent.waitForSignal((s) => s.signalType === 'changeStrategy', 20_000);
    expect(change.changeStrategy).toBe('retry');
    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'retry-success', 20_000);
    expect(agent.received.some((s) => s.signalType === 'preExitProcess')).toBe(false);
  }, 90_000);

  it('UCE step retry answered 406: the fault pods go and recovery falls through to recover', async () => {
    let oldUid = '';
    const { job, nodes, agent } = await setUp('retry,recover', {
      status: async (strategy) => (strategy === 'retry' ? 406 : (await replacedPod(client, job, 1, oldUid), 0)),
    });
    oldUid = (await podUid(client, job, 1))!;
    const resets = watchResetConfig(client, job);
    cleanups.push(() => resets.stop());
    // MindIO reports the UCE in the business plane first: only then is it a step-retry fault (ClusterD's CanDoStepRetry).
    await agent.reportProcessFault([{ rankId: '3', faultType: '0' }]);
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');

    await agent.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'retry', 20_000);
    const recover = await agent.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'recover', 30_000);
    expect(recover.faultRanks).toContainEqual({ rankId: '3', faultType: '1' });
    await replacedPod(client, job, 1, oldUid);
    await eventually(async () => (await annotation(client, job, 'ProcessRecoverStatus')) === 'recover-success', 30_000);
    // The 406 wrote the fault list (fault pods exit) before the second choice.
    expect(resets.versions.some((v) => (v.RankList ?? []).map((r) => r.RankId).join(',') === '2,3')).toBe(true);
    await eventually(() => manager.recovery.phase(job.uid) === 'INIT', 10_000);
  }, 90_000);
});
