/**
 * The O&M operations (docs/rules.md#recover.stress-test, #recover.switch-nic; docs/grpc.md#om) against the shipped
 * controller (`node main.ts`) on the real apiserver, with the real TaskD client (tools/taskd-client,
 * MindCluster's generated stubs) playing TaskD and the O&M platform: the signal sequence, the notify
 * messages, the result stream, reset-config's FaultFlushing, the stress-test codes hidden from
 * cluster-info while the agents test, a controller killed while the agents test (the FSM state is
 * restored and TaskD's re-subscription resumes it, docs/rules.md#recover.resume), and the NIC switch with its
 * SuperPodID check.
 */
import { readFileSync } from 'node:fs';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { codesIn, deviceEntry } from '../support/cluster-info-read.ts';
import { cleanUp, createJob, fakeNodes, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { type ClientEvent, GoTaskdClient, haveGo, pollResetConfig, realClientHarness } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-om: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

const sig = (s: ClientEvent): string => `${s.signalType}${s.changeStrategy ? `:${s.changeStrategy}` : ''}[${(s.actions ?? []).join('|')}]`;

/** The device plugin's device-info of a healthy node with 8 chips, with a SuperPodID (A3). */
async function superPod(client: KubeClient, node: string, superPodId: number): Promise<void> {
  const data = encodeDeviceInfoData({ available: Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`), updateTimeS: Math.floor(Date.now() / 1000), superPodId, serverIndex: 0 });
  const name = deviceInfoCmName(node);
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
  if (existing === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
  else await client.replace(paths.configMap('kube-system', name), { ...existing, data });
}

describeGo('O&M operations with the real TaskD client: online stress test, NIC switch', () => {
  const client = adminClient();
  const { cleanup, startController, launch, logOf, agent } = realClientHarness(client, 'om');

  async function setUp(): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `om-${rand()}`, 2);
    const job = await createJob(client, { ns: await newNamespace(client, 'om'), nodes, labels: { 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'retry,recover' } });
    cleanup(() => cleanUp(client, job, nodes));
    return { job, nodes };
  }

  /** Subscribed, and the notify streams opened after the subscription's reset (TaskD subscribes them again 1 s later). */
  async function ready(a: GoTaskdClient, after = 0): Promise<void> {
    await a.waitFor((e) => e.event === 'subscribe', 60_000, 'subscription', after);
    await new Promise((r) => setTimeout(r, 2500));
  }

  const om = (a: GoTaskdClient, rpc: string, after: number) => a.waitFor((e) => e.event === 'om' && e.rpc === rpc, 15_000, rpc, after);

  it('stress test: pause (900 s), the ranks\' ops, FaultFlushing and the stress codes hidden while testing, continue, reset', async () => {
    const c = await startController('stress');
    const { job, nodes } = await setUp();
    const a = agent(c.target, job, ['-om-reply-delay=8s']);
    await ready(a);
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());

    // Refused as ClusterD refuses: an op it does not support, a node outside the job.
    let mark = a.events.length;
    a.stressTest(`${nodes[1]}:0,2`);
    expect(await om(a, 'StressTest', mark)).toMatchObject({ code: 413, info: 'op:2 not exist in support operation:[0 1]' });
    mark = a.events.length;
    a.stressTest('elsewhere:0');
    expect(await om(a, 'StressTest', mark)).toMatchObject({ code: 413, info: `node:elsewhere not exist in job:${job.uid}` });

    mark = a.events.length;
    a.stressTest(`${nodes[1]}:0,1`);
    expect(await om(a, 'StressTest', mark)).toMatchObject({ code: 0, info: 'stress test operation was successfully distributed' });
    const notify = await a.waitFor((e) => e.event === 'stress-notify', 20_000, 'stress test notify', mark);
    expect(notify.params).toEqual({ 2: [0, 1], 3: [0, 1] });
    await a.waitForSignal((s) => s.signalType === 'pauseStartAgent', 10_000, 'pauseStartAgent');
    await eventually(() => poll.seen.at(-1)?.info.FaultFlushing === true, 10_000);
    // The agents' stress ops raise 80818C05 on the tested node: not for the scheduler while they test.
    await reportChipFault(client, nodes[1]!, 'Ascend910-0', '80818C05', 'SeparateNPU');
    await new Promise((r) => setTimeout(r, 3000));
    expect(codesIn(await deviceEntry(client, nodes[1]!), 'Ascend910-0')).not.toContain('80818C05');

    const result = await a.waitFor((e) => e.event === 'om-result' && e.msg !== undefined, 30_000, 'stress test result message', mark);
    expect(result.msg).toBe(`stress test finish, result:{"${nodes[1]}":{"0":{"rankResult":{"0":{"code":"0","result":"done"},"1":{"code":"0","result":"done"}}},"1":{"rankResult":{"0":{"code":"0","result":"done"},"1":{"code":"0","result":"done"}}}}}`);
    // The operation is over (reset): the result stream is refused from then on.
    const end = await a.waitFor((e) => e.event === 'om-result' && e.end !== undefined && e.end !== 'EOF', 15_000, 'result stream refused', mark);
    expect(end.end).toContain(`jobId=${job.uid} is not stress test`);
    const signals = a.signals.filter((s) => s.t >= notify.t - 5_000);
    const upToContinue = signals.slice(0, signals.findIndex((s) => s.changeStrategy === 'continue') + 1);
    expect(upToContinue.map(sig)).toEqual(['stopTrain[pause_train]', 'pauseStartAgent[pause_start_agent]', 'continueStartAgent[continue_start_agent]', 'changeStrategy:continue[change_strategy]']);
    expect(upToContinue[0]!.timeout).toBe(900);
    expect(new Set(upToContinue.slice(0, 3).map((s) => s.uuid)).size).toBe(3);
    expect(upToContinue[3]!.uuid).toBe(upToContinue[2]!.uuid);
    expect(a.events.some((e) => e.event === 'report' && e.rpc === 'ReplyStressTestResult' && e.code === 0)).toBe(true);
    // reset-config cleared with the result (the stress code still on the chip then starts a recovery of its own, which sets it again).
    await eventually(() => poll.seen.some((v) => v.atMs >= notify.t && !v.info.FaultFlushing && (v.info.RankList ?? []).length === 0 && poll.seen.indexOf(v) > poll.seen.findIndex((x) => x.info.FaultFlushing)), 10_000);
    // The test is over: the stress code reaches the scheduler.
    await eventually(async () => codesIn(await deviceEntry(client, nodes[1]!), 'Ascend910-0').includes('80818C05'), 20_000);
  }, 180_000);

  it('controller killed while the agents test (docs/rules.md#recover.resume): the FSM state is restored, TaskD\'s re-subscription resumes it, the late result continues the job', async () => {
    const c = await startController('stress-restart-1');
    const { job, nodes } = await setUp();
    const a = agent(c.target, job, ['-om-reply-delay=30s']);
    await ready(a);
    const poll = pollResetConfig(client, job, 500);
    cleanup(() => poll.stop());
    a.stressTest(`${nodes[0]}:1`);
    const notify = await a.waitFor((e) => e.event === 'stress-notify', 20_000, 'stress test notify');
    await a.waitForSignal((s) => s.signalType === 'pauseStartAgent', 10_000, 'pauseStartAgent');
    await eventually(() => poll.seen.at(-1)?.info.FaultFlushing === true, 10_000);

    const before = a.events.length;
    const killedAt = Date.now();
    await c.kill();
    const c2 = launch('stress-restart-2', c.grpcPort);
    const log2 = logOf('stress-restart-2');
    await c2.ready();
    await ready(a, before);
    // The half-done operation came back from the state store (not lost with the process) ...
    const restored = readFileSync(log2, 'utf8').split('\n').find((l) => l.includes('recovery states restored')) ?? '';
    expect(restored).toContain('"recovery":"WaitStressTestFinishedState"');
    // The agents' result (sent 30 s after the notify) reaches the new controller: continue, reset-config cleared.
    const reply = await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReplyStressTestResult', 60_000, 'ReplyStressTestResult', before);
    expect(reply.code).toBe(0);
    // ... and the re-subscription resumed it: still flushing, no reset, from the kill until the result
    // (on a loaded machine the restart can take most of the 30 s, so the result may already be in).
    // (The poller keeps each new version it sees: none between the kill and the result, or only flushing ones.)
    expect(poll.seen.filter((v) => v.atMs < reply.t).at(-1)?.info.FaultFlushing).toBe(true);
    expect(poll.seen.filter((v) => v.atMs >= killedAt && v.atMs < reply.t && v.info.FaultFlushing !== true)).toEqual([]);
    expect(reply.t - notify.t).toBeGreaterThanOrEqual(29_000);
    await a.waitForSignal((s) => s.changeStrategy === 'continue', 15_000, 'continue');
    await eventually(() => poll.seen.at(-1)?.info.FaultFlushing === false, 15_000);
    expect(a.summary).toEqual(['stopTrain[pause_train]', 'pauseStartAgent[pause_start_agent]', 'continueStartAgent[continue_start_agent]', 'changeStrategy:continue[change_strategy]']);
  }, 240_000);

  it('NIC switch: refused without device-info and without a SuperPodID, then pause, the ranks and ops to TaskD, continue, "switch nic finish"', async () => {
    const c = await startController('nic');
    const { job, nodes } = await setUp();
    const a = agent(c.target, job, []);
    await ready(a);
    // No device-info for the node yet (ClusterD's device info cache has none), then one without a SuperPodID (-1).
    let mark = a.events.length;
    a.switchNic(`${nodes[0]}:0=true,1=true`);
    expect(await om(a, 'SwitchNicTrack', mark)).toMatchObject({ code: 413, info: `node:${nodes[0]} not exist in job:${job.uid}` });
    for (const n of nodes) await superPod(client, n, -1);
    await new Promise((r) => setTimeout(r, 2000));
    mark = a.events.length;
    a.switchNic(`${nodes[0]}:0=true,1=true`);
    expect(await om(a, 'SwitchNicTrack', mark)).toMatchObject({ code: 413, info: `node:${nodes[0]} should operate in superPodID` });
    for (const n of nodes) await superPod(client, n, 0);
    await new Promise((r) => setTimeout(r, 2000));
    mark = a.events.length;
    a.switchNic(`${nodes[0]}:1=true`);
    expect(await om(a, 'SwitchNicTrack', mark)).toMatchObject({ code: 0, info: 'switching operation was successfully distributed' });
    const notify = await a.waitFor((e) => e.event === 'switch-notify', 20_000, 'switch notify', mark);
    expect({ ranks: notify.ranks, ops: notify.ops }).toEqual({ ranks: ['1'], ops: [true] });
    const result = await a.waitFor((e) => e.event === 'om-result' && e.msg !== undefined, 30_000, 'switch result message', mark);
    expect(result.msg).toBe('switch nic finish');
    const signals = a.signals.filter((s) => s.t >= notify.t - 5_000).map(sig);
    expect(signals.slice(0, 2)).toEqual(['stopTrain[pause_train]', 'changeStrategy:continue[change_strategy]']);
  }, 180_000);
});
