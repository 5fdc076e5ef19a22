/**
 * Node taints on the real apiserver. ClusterD taints no Node, so by default neither do we, and a
 * taint of ours left by an earlier run is lifted. With --node-taints (extension) a NodeD
 * SeparateFault taints its node NoSchedule and the taint is lifted once the node's faults have
 * recovered (level-triggered, after --node-taint-hold-seconds); taints with other keys stay.
 */
import { randomBytes } from 'node:crypto';
import { paths } from '../../runtime/kube-client.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Node } from '../../runtime/kube-objects.ts';
import { CLUSTERD_FAULT_TAINT_KEY } from '../../policy/faults/job-isolation.ts';
import { NodeDSimulator } from '../../tools/simulator/noded.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { adminClient, ensureNamespace, eventually } from '../support/cluster.ts';
import { sleep, startManager } from '../support/jobs-support.ts';

type Taint = { key: string; value?: string; effect: string };

describe('node taints', () => {
  const client = adminClient();
  const uniq = randomBytes(3).toString('hex');
  const noded = new NodeDSimulator(client);
  let manager: Manager | undefined;

  /** The node's taints but the node lifecycle controller's own (node.kubernetes.io/*: kwok nodes come and go NotReady). */
  const taintsOf = async (node: string): Promise<Taint[]> => (((await client.get<Node>(paths.node(node))).spec?.taints ?? []) as Taint[]).filter((t) => !t.key.startsWith('node.kubernetes.io/'));
  const ours = async (node: string): Promise<Taint | undefined> => (await taintsOf(node)).find((t) => t.key === CLUSTERD_FAULT_TAINT_KEY);
  const setTaints = async (node: string, taints: Taint[]): Promise<void> => { await client.patch(paths.node(node), { spec: { taints } }, 'merge'); };

  beforeAll(async () => {
    await ensureNamespace(client, 'mindx-dl');
  });

  afterEach(async () => {
    await manager?.stop();
    manager = undefined;
  });

  afterAll(() => noded.close());

  it('by default (as ClusterD) a NodeD SeparateFault taints nothing, and a left-over taint of ours is lifted', async () => {
    const [faulty, leftover] = [`taint-d-${uniq}`, `taint-l-${uniq}`];
    await createFakeNodes(client, [{ name: faulty }, { name: leftover }]);
    await setTaints(leftover, [{ key: CLUSTERD_FAULT_TAINT_KEY, value: 'SeparateNPU', effect: 'NoSchedule' }, { key: 'other.io/keep', value: 'x', effect: 'NoSchedule' }]);
    manager = (await startManager(client)).manager;
    await eventually(async () => (await ours(leftover)) === undefined, 10_000);
    expect(await taintsOf(leftover)).toEqual([{ key: 'other.io/keep', value: 'x', effect: 'NoSchedule' }]);
    await noded.inject({ node: faulty, code: '2C000031', level: 'SeparateFault' });
    await eventually(() => manager!.deviceFaults.effective(faulty).some((r) => r.source === 'node'));
    await manager.jobs.loops?.isolation.idle();
    await sleep(1_000);
    expect(await taintsOf(faulty)).toEqual([]);
  }, 60_000);

  it('with --node-taints a NodeD SeparateFault taints NoSchedule, and the taint is lifted when the node recovers', async () => {
    const node = `taint-e-${uniq}`;
    await createFakeNodes(client, [{ name: node }]);
    await setTaints(node, [{ key: 'other.io/keep', value: 'x', effect: 'NoSchedule' }]);
    manager = (await startManager(client, ['--node-taints', '--node-taint-hold-seconds=2'])).manager;
    await noded.inject({ node, code: '2C000031', level: 'SeparateFault' });
    const taint = await eventually(() => ours(node), 10_000);
    expect(taint).toEqual({ key: CLUSTERD_FAULT_TAINT_KEY, value: 'SeparateNPU', effect: 'NoSchedule' });
    const recoveredAt = Date.now();
    await noded.recover(node);
    await eventually(async () => (await ours(node)) === undefined, 15_000);
    const lifted = Date.now() - recoveredAt;
    process.stdout.write(`node taint lifted ${lifted} ms after NodeD's recovery (hold 2 s)\n`);
    expect(lifted).toBeGreaterThanOrEqual(2_000);
    expect(await taintsOf(node)).toEqual([{ key: 'other.io/keep', value: 'x', effect: 'NoSchedule' }]);
  }, 60_000);
});
