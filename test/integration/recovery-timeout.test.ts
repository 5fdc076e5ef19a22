/**
 * The agent never answers (docs/rules.md#recover.fsm transitions 11, 39; docs/rules.md#recover.fault-retry, #decision.process-gives-up): after the report timeout
 * (shortened with --recovery-report-timeout-seconds) the FSM clears reset-config, sets the PodGroup
 * label `process-recover-enable=pause`, and the jobs pipeline reschedules the job at job level
 * (fault-scheduling=force, no pod-rescheduling); once the job runs again the label goes back to `on`.
 */
import type { Manager } from '../../controllers/manager.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podPeer, podUid, rand, reportChipFault, startAgent, startManager, watchPodGroupLabel, watchResetConfig } from './recovery-fixtures.ts';

describe('process-level recovery when the agent never answers', () => {
  const client = adminClient();
  let manager: Manager;
  let target: string;

  beforeAll(async () => {
    ({ manager, target } = await startManager(client, ['--recovery-report-timeout-seconds=2']));
  }, 60_000);
  afterAll(async () => { await manager.stop(); });

  it('report timeout -> label pause -> job-level rescheduling -> label on', async () => {
    const nodes = await fakeNodes(client, `rto-${rand()}`, 8);
    const ns = await newNamespace(client, 'rto');
    const job = await createJob(client, {
      ns, nodes: nodes.slice(0, 4), labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': 'retry,recover' },
    });
    const peer = podPeer(client, job, nodes.slice(4));
    const resets = watchResetConfig(client, job);
    // The label's transitions, watched: `pause` lasts only until the job-level rescheduling has
    // replaced the pods (a few hundred ms here), too short to be sure to see it by polling.
    const labels = watchPodGroupLabel(client, job, 'process-recover-enable');
    await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 4);
    const agent = startAgent(target, job.uid, { stopCode: null });
    try {
      await agent.waitFor(() => (agent.subscribed && manager.recovery.phase(job.uid) === 'INIT' ? true : undefined), 15_000, 'subscription');
      const uids = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
      const t0 = Date.now();
      await agent.reportProcessFault([{ rankId: '3', faultType: '0' }]); // MindIO's business-plane report: a step-retry UCE
      await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
      await agent.waitForSignal((s) => s.signalType === 'stopTrain', 20_000);
      await eventually(() => labels.values.includes('pause'), 20_000);
      const paused = Date.now() - t0;
      // The fault ranks' pods are told to exit (exit + dump_exit) ...
      const exit = await agent.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit', 10_000);
      expect(exit.extraParams).toBe('dump_exit');
      // ... reset-config was cleared before the label went to pause ...
      expect(resets.versions.some((v) => v.FaultFlushing)).toBe(true);
      expect(resets.versions.at(-1)?.FaultFlushing).toBe(false);
      // ... and job-level rescheduling replaces every pod, not only the fault pod.
      // (It follows the pause at once: the fault is no longer hidden by the step retry. A timeout
      // names the ranks still waiting, and whether the peer re-created them.)
      await eventually(async () => {
        const now = await Promise.all([0, 1, 2, 3].map((r) => podUid(client, job, r)));
        const waiting = now.flatMap((u, r) => (u !== undefined && u !== uids[r] ? [] : [`rank ${r}: ${u === undefined ? 'no pod' : 'old pod'}`]));
        if (waiting.length > 0) throw new Error(`${waiting.join(', ')}; peer re-created ${JSON.stringify(peer.recreated)}`);
        return true;
      }, 40_000);
      const rescheduled = Date.now() - t0;
      await eventually(() => labels.values.lastIndexOf('on') > labels.values.indexOf('pause'), 30_000);
      expect(labels.values.slice(labels.values.indexOf('pause'))).toEqual(['pause', 'on']);
      await eventually(() => manager.recovery.phase(job.uid) === 'INIT', 10_000);
      process.stdout.write(`agent silent: pause after ${paused} ms, all pods replaced after ${rescheduled} ms, label on after ${Date.now() - t0} ms\n`);
    } finally {
      agent.stop();
      peer.stop();
      resets.stop();
      labels.stop();
      await cleanUp(client, job, nodes);
    }
  }, 120_000);
});
