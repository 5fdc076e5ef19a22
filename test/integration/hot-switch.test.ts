/**
 * Hot switching on the real apiserver (docs/rules.md#hotswitch.fsm, #hotswitch.entry, #hotswitch.failure) with a
 * TaskD-like client: this controller stands in for the Ascend Operator (--hot-switch-backup-pods) and
 * holds the rescheduling role. Happy path; a backup pod that never runs (downgrade to ignore,
 * persisted, still there after a Manager restart); a sub-health fault on rank 0 is refused.
 */
import type { Manager } from '../../controllers/manager.ts';
import type { Pod } from '../../runtime/kube-objects.ts';
import { RECOVERY_STATE_KEY, RECOVERY_STATE_NAMESPACE, parseRecoveryRecord, recoveryStateCmName } from '../../reconcilers/recovery-state.reconciler.ts';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { TaskdClient } from '../support/taskd-client.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podUid, rand, reportChipFault, startAgent, startManager, type TestJob } from './recovery-fixtures.ts';

const SUB_HEALTH_CODE = '81A3880C';
const FLAGS = ['--hot-switch-backup-pods', '--hot-switch-new-pod-timeout-seconds=5'];

async function jobPods(client: KubeClient, job: TestJob): Promise<Pod[]> {
  return (await client.list<Pod>(paths.pods(job.ns))).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
}

describe('hot switch with a TaskD-like client', () => {
  const client = adminClient();
  let manager: Manager;
  let target: string;
  const cleanups: Array<() => void | Promise<void>> = [];

  beforeAll(async () => {
    ({ manager, target } = await startManager(client, FLAGS));
  }, 60_000);
  afterEach(async () => { for (const c of cleanups.splice(0)) await c(); });
  afterAll(async () => { await manager.stop(); });

  async function setUp(pinned = false): Promise<{ job: TestJob; nodes: string[]; agent: TaskdClient }> {
    const nodes = await fakeNodes(client, `hs-${rand()}`, 4);
    const job = await createJob(client, {
      ns: await newNamespace(client, 'hs'), nodes, pinned,
      labels: { subHealthyStrategy: 'hotSwitch', framework: 'pytorch', 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'recover' },
    });
    await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 4);
    const agent = startAgent(target, job.uid, {});
    cleanups.push(() => agent.stop(), () => cleanUp(client, job, nodes));
    await agent.waitFor(() => (agent.subscribed && manager.recovery.phase(job.uid, 'hotSwitch') === 'INIT' ? true : undefined), 15_000, 'subscription');
    return { job, nodes, agent };
  }

  it('happy path: backup pod first, pause, old pod deleted, migration, markers cleared', async () => {
    const { job, nodes, agent } = await setUp();
    const oldUid = (await podUid(client, job, 1))!;
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-0', SUB_HEALTH_CODE, 'SubHealthFault');

    const hs = await agent.waitForSignal((s) => s.signalType === 'hot-switch' && s.actions.includes('hot switch'), 20_000);
    // As ClusterD's (conformance scenario hot-switch): no node ranks, every rank of the fault pod, an empty uuid.
    expect(hs.nodeRankIds).toEqual([]);
    expect(hs.faultRanks.map((r) => r.rankId)).toEqual(['2', '3']);
    expect(hs.uuid).toBe('');
    const running = await agent.waitForSignal((s) => s.signalType === 'hot-switch' && s.actions.includes('new pod running'), 20_000);
    expect(running.uuid).toBe(hs.uuid);
    const migration = await agent.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'migration', 20_000);
    expect(migration.uuid).toBe(hs.uuid);
    await eventually(() => manager.recovery.phase(job.uid, 'hotSwitch') === 'INIT', 20_000);
    const elapsed = Date.now() - t0;

    const pods = await jobPods(client, job);
    expect(pods.some((p) => p.metadata?.uid === oldUid)).toBe(false); // only the old pod went
    const backup = await eventually(async () => (await jobPods(client, job)).find((p) => p.metadata?.name?.startsWith(`${job.name}-worker-1-hot-`)), 10_000);
    expect(backup.status?.phase).toBe('Running');
    expect(backup.metadata?.annotations?.['hccl/rankIndex']).toBe('1');
    await eventually(async () => {
      const a = (await client.get<Pod>(paths.pod(job.ns, backup.metadata!.name!))).metadata?.annotations ?? {};
      return a.inHotSwitchFlow === undefined && a.podType === undefined;
    }, 10_000);
    for (const r of [0, 2, 3]) expect(await podUid(client, job, r)).toBeDefined();
    // One switch for one fault: the new pod holds rank 1 away from the faulty chip, and the fault it
    // left behind (still under the old placement) must not start another switch.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(agent.received.filter((s) => s.signalType === 'hot-switch' && s.actions.includes('hot switch'))).toHaveLength(1);
    expect(manager.recovery.hotSwitchDowngraded(job.uid)).toBe(false);
    process.stdout.write(`hot switch: ${elapsed} ms from sub-health fault to migration done\n`);
  }, 90_000);

  it('rank 0 is never hot-switched', async () => {
    const { job, nodes, agent } = await setUp();
    await reportChipFault(client, nodes[0]!, 'Ascend910-0', SUB_HEALTH_CODE, 'SubHealthFault');
    await eventually(() => manager.recovery.jobView(nodes[0]!).some((r) => r.code === SUB_HEALTH_CODE));
    await expect(agent.waitForSignal((s) => s.signalType === 'hot-switch', 4_000)).rejects.toThrow(/timed out/);
    const pod0 = await client.get<Pod>(paths.pod(job.ns, `${job.name}-worker-0`));
    expect(pod0.metadata?.annotations?.inHotSwitchFlow).toBeUndefined();
    expect(pod0.metadata?.annotations?.needOperatorOpe).toBeUndefined();
    expect(manager.recovery.phase(job.uid, 'hotSwitch')).toBe('INIT');
    expect(manager.recovery.hotSwitchDowngraded(job.uid)).toBe(false);
    expect((await jobPods(client, job)).length).toBe(4);
  }, 60_000);

  it('backup pod never Running: stop switch, rollback, downgrade persisted across a Manager restart', async () => {
    const { job, nodes, agent } = await setUp(true); // pinned pods: the backup's copy of the spec fits no node
    await reportChipFault(client, nodes[2]!, 'Ascend910-1', SUB_HEALTH_CODE, 'SubHealthFault');
    await agent.waitForSignal((s) => s.signalType === 'hot-switch' && s.actions.includes('hot switch'), 20_000);
    await eventually(async () => (await jobPods(client, job)).some((p) => p.metadata?.annotations?.podType === 'backup'), 10_000);
    const stop = await agent.waitForSignal((s) => s.signalType === 'hot-switch' && s.actions.includes('stop switch'), 20_000);
    expect([stop.nodeRankIds, stop.faultRanks]).toEqual([[], []]);
    await eventually(() => manager.recovery.hotSwitchDowngraded(job.uid), 10_000);
    // Rollback: the backup pod goes (needOperatorOpe=delete), the fault pod loses the handshake markers.
    await eventually(async () => !(await jobPods(client, job)).some((p) => p.metadata?.annotations?.podType === 'backup'), 10_000);
    await eventually(async () => {
      const a = (await client.get<Pod>(paths.pod(job.ns, `${job.name}-worker-2`))).metadata?.annotations ?? {};
      return a.inHotSwitchFlow === undefined && a.needOperatorOpe === undefined && a.backupNewPodName === undefined;
    }, 10_000);
    // Persisted in the controller's own ConfigMap.
    const cm = await eventually(async () => {
      const obj = await client.getOrUndefined<{ data?: Record<string, string> }>(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(job.uid)));
      const rec = parseRecoveryRecord(obj?.data?.[RECOVERY_STATE_KEY]);
      return rec.ok && rec.value.hotSwitch.downgraded ? rec.value : undefined;
    }, 10_000);
    expect(cm.hotSwitch.phase).toBe('INIT');

    // A new Manager (restart) keeps the downgrade: the same fault again starts no hot switch.
    agent.stop();
    await manager.stop();
    ({ manager, target } = await startManager(client, FLAGS));
    expect(manager.recovery.hotSwitchDowngraded(job.uid)).toBe(true);
    const again = startAgent(target, job.uid, {});
    cleanups.push(() => again.stop());
    await again.waitFor(() => (again.subscribed && manager.recovery.isRegistered(job.uid) ? true : undefined), 15_000, 're-subscription');
    await reportChipFault(client, nodes[2]!, 'Ascend910-1', SUB_HEALTH_CODE, 'SubHealthFault');
    await expect(again.waitForSignal((s) => s.signalType === 'hot-switch', 5_000)).rejects.toThrow(/timed out/);
    expect(manager.recovery.job(job.uid)?.hotSwitch.downgraded).toBe(true);
    expect((await jobPods(client, job)).length).toBe(4);
  }, 120_000);
});
