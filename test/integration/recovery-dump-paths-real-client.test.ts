/**
 * Two ways into the dump strategy, with the real TaskD client (tools/taskd-client) against the shipped
 * controller (`node main.ts`, default flags) on the real apiserver; the conformance scenarios
 * dump-after-recover and subhealthy-dump compare the same paths with ClusterD itself:
 * - a failed recover (MindIO answers every changeStrategy with 1): recover-failed, then changeStrategy
 *   dump (dump-failed too), then exit dump_exit (component/clusterd/pkg/application/recover/controller.go
 *   handleCheckRecoverResult);
 * - a SubHealthFault on a `subHealthyStrategy=graceExit` job whose strategies are `dump,exit`:
 *   saveAndExit, dump-success, exit dump_exit; only the sub-healthy pod is replaced, as the ascend
 *   plugin deletes only the fault task of a process-recovery job (docs/rules.md#resched.sub-health).
 */
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podGroup, podPeer, podUid, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { haveGo, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-dump-paths-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

describeGo('dump after a failed recover, and the sub-healthy graceExit dump, with the real TaskD client', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'dump-paths');

  async function setUp(strategies: string, labels: Record<string, string> = {}): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `dp-${rand()}`, 6);
    const job = await createJob(client, { ns: await newNamespace(client, 'dp'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on', ...labels }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    const p = podPeer(client, job, nodes.slice(4));
    cleanup(() => p.stop());
    return { job, nodes };
  }
  const status = async (job: TestJob): Promise<string | undefined> => (await podGroup(client, job)).metadata?.annotations?.ProcessRecoverStatus;

  it('recover fails: recover-failed, changeStrategy dump, dump-failed, exit dump_exit', async () => {
    const c = await startController('dump-after-recover');
    const { job, nodes } = await setUp('recover,dump,exit');
    const a = agent(c.target, job, ['-strategies=recover,dump,exit', '-status-code=1']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'recover', 60_000, 'changeStrategy recover');
    const dump = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'dump', 20_000, 'changeStrategy dump');
    // recover-failed is overwritten by the dump's result a moment later: the last one is read.
    await eventually(async () => ((await status(job)) === 'dump-failed' ? true : undefined), 20_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit', 20_000, 'exit');
    expect(exit).toMatchObject({ extraParams: 'dump_exit', uuid: dump.uuid });
    expect(a.signals.filter((s) => s.signalType === 'changeStrategy').map((s) => s.changeStrategy).slice(0, 3)).toEqual(['recover', 'dump', 'exit']);
    process.stdout.write(`[dump-paths] dump after a failed recover (ms from fault): ${timeline(a, t0)}\n`);
  }, 150_000);

  it('SubHealthFault with subHealthyStrategy=graceExit and dump,exit: saveAndExit, dump-success, exit dump_exit, only the sub-healthy pod replaced', async () => {
    const c = await startController('subhealthy-dump');
    const { job, nodes } = await setUp('dump,exit', { subHealthyStrategy: 'graceExit', 'fault-scheduling': 'grace' });
    const a = agent(c.target, job, ['-strategies=dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const uids = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '81A3880C', 'SubHealthFault');
    const save = await a.waitForSignal((s) => s.signalType === 'saveAndExit', 30_000, 'saveAndExit');
    expect(save.nodeRankIds).toEqual(['1']);
    await eventually(async () => ((await status(job)) === 'dump-success' ? true : undefined), 20_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit', 20_000, 'exit');
    expect(exit.extraParams).toBe('dump_exit');
    expect(a.signals.map((s) => s.signalType)).not.toContain('stopTrain');
    const after = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
    expect([after[0], after[2], after[3]]).toEqual([uids[0], uids[2], uids[3]]);
  }, 120_000);
});
