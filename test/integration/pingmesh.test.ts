/**
 * Pingmesh on the real apiserver, the controller as main.ts builds it (docs/rules.md#pingmesh.super-pod-devices,
 * #pingmesh.config): A3 nodes carrying the device plugin's annotations, a labelled pingmesh-config,
 * and the super-pod-<id> ConfigMaps that follow them. Nodes are cluster-wide and the control plane is
 * shared, so the super pod ids are this file's own and only their ConfigMaps are looked at.
 */
import { randomBytes } from 'node:crypto';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { fakeNode } from '../../tools/simulator/nodes.ts';
import { a3NodeAnnotations, PINGMESH_CONFIG, pingmeshConfigData } from '../../tools/simulator/pingmesh.ts';
import { SUPER_POD_RECONCILE_KEY } from '../../reconcilers/super-pod-device.reconciler.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

const CHECK_MS = 300;

describe('pingmesh: super-pod-<id> ConfigMaps as ClusterD publishes them', () => {
  const client = adminClient();
  const tag = randomBytes(3).toString('hex');
  // Ids no other file uses: a natural number each.
  const spA = String(700_000 + parseInt(tag, 16) % 100_000);
  const spB = String(Number(spA) + 1);
  const name = (i: number): string => `pm-${tag}-${i}`;
  const created: string[] = [];
  let csNs = '';
  let metrics: Metrics;
  let manager: Manager;

  const start = async (): Promise<Manager> => {
    metrics = new Metrics({ processMetrics: false });
    const m = new Manager({
      clock: realClock, client, log: silentLogger, metrics,
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', `--cluster-system-namespace=${csNs}`, `--pingmesh-check-interval-ms=${CHECK_MS}`], {}),
    });
    await m.start();
    return m;
  };
  const addNode = async (i: number, superPodId: string, serverIndex: number): Promise<void> => {
    const n = fakeNode({ name: name(i), npus: 16 });
    const obj: KubeObject = { ...n, metadata: { ...n.metadata, annotations: { ...n.metadata?.annotations, ...a3NodeAnnotations({ superPodId, serverIndex, npus: 2 }) } } };
    await client.create(paths.nodes(), obj);
    created.push(name(i));
  };
  const cm = (id: string): Promise<ConfigMap | undefined> => client.getOrUndefined<ConfigMap>(paths.configMap(csNs, `super-pod-${id}`));
  const config = async (data: Record<string, string>): Promise<void> => {
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: PINGMESH_CONFIG.name, namespace: csNs, labels: { ...PINGMESH_CONFIG.labels } }, data };
    const cur = await client.getOrUndefined<ConfigMap>(paths.configMap(csNs, PINGMESH_CONFIG.name));
    if (cur === undefined) await client.create(paths.configMaps(csNs), body);
    else await client.replace(paths.configMap(csNs, PINGMESH_CONFIG.name), { ...body, metadata: { ...body.metadata, resourceVersion: cur.metadata?.resourceVersion } });
  };
  /** One pass of the loop after the check interval: what a change would have published by now. */
  const settled = async (): Promise<void> => {
    await new Promise((r) => setTimeout(r, CHECK_MS * 3));
    manager.pingmesh.loop.queue.add(SUPER_POD_RECONCILE_KEY);
    await manager.pingmesh.loop.idle();
  };
  const node = (i: number, serverIndex: number): string =>
    `"${name(i)}":{"NodeName":"${name(i)}","ServerID":"${serverIndex}","DeviceMap":{"0":"${serverIndex * 2}","1":"${serverIndex * 2 + 1}"}}`;
  const bytes = (id: string, ...nodes: string[]): string => `{"Version":"A3","SuperPodID":"${id}","NodeDeviceMap":{${nodes.join(',')}}}`;
  const rejected = async (format: string): Promise<number> =>
    (await metrics.invalidInput.get()).values.filter((v) => v.labels.format === format).reduce((n, v) => n + v.value, 0);
  const rejectedConfigs = (): Promise<number> => rejected('pingmesh-config');

  beforeAll(async () => {
    csNs = await newNamespace(client, 'pm');
    await addNode(0, spA, 0);
    await addNode(1, spA, 1);
    await addNode(2, spB, 2);
    manager = await start();
  }, 60_000);

  afterAll(async () => {
    await manager.stop();
    for (const n of created) await client.delete(paths.node(n)).catch(() => undefined);
  });

  it('without pingmesh-config nothing is published (detection is off until a config turns it on)', async () => {
    await settled();
    expect(await cm(spA)).toBeUndefined();
    expect(await cm(spB)).toBeUndefined();
  }, 30_000);

  it('pingmesh-config on: one ConfigMap per super pod, label app=pingmesh only, key superPodDevice in Go bytes', async () => {
    await config(pingmeshConfigData({ global: { activate: 'on' } }));
    const a = await eventually(() => cm(spA), 10_000);
    expect(a.metadata?.labels).toEqual({ app: 'pingmesh' });
    expect(a.metadata?.annotations).toBeUndefined();
    expect(a.data).toEqual({ superPodDevice: bytes(spA, node(0, 0), node(1, 1)) });
    expect((await eventually(() => cm(spB), 10_000)).data).toEqual({ superPodDevice: bytes(spB, node(2, 2)) });
  }, 30_000);

  it('a node added joins its super pod\'s ConfigMap; the last node of a super pod removed deletes its ConfigMap', async () => {
    await addNode(3, spA, 3);
    await eventually(async () => (await cm(spA))?.data?.superPodDevice === bytes(spA, node(0, 0), node(1, 1), node(3, 3)), 10_000);
    await client.delete(paths.node(name(2)));
    await eventually(async () => (await cm(spB)) === undefined, 10_000);
    await client.delete(paths.node(name(1)));
    await eventually(async () => (await cm(spA))?.data?.superPodDevice === bytes(spA, node(0, 0), node(3, 3)), 10_000);
  }, 40_000);

  it('a malformed pingmesh-config is refused, logged and counted; detection keeps its state', async () => {
    const before = await rejectedConfigs();
    await config({ global: '{"activate":"on","task_interval":0}' });
    await eventually(async () => (await rejectedConfigs()) === before + 1, 10_000);
    expect(manager.pingmesh.state.detect).toBe(true);
    await addNode(4, spA, 4);
    await eventually(async () => (await cm(spA))?.data?.superPodDevice === bytes(spA, node(0, 0), node(3, 3), node(4, 4)), 10_000);
  }, 30_000);

  it('a node whose annotations name a super pod but do not parse (a null chip, which would crash ClusterD) is refused, logged and counted', async () => {
    const before = await rejected('pingmesh_node');
    const n = fakeNode({ name: name(9) });
    await client.create(paths.nodes(), { ...n, metadata: { ...n.metadata, annotations: { ...a3NodeAnnotations({ superPodId: spA, serverIndex: 9, npus: 2 }), baseDeviceInfos: '{"Ascend910-0":null}' } } });
    created.push(name(9));
    await eventually(async () => (await rejected('pingmesh_node')) === before + 1, 10_000);
    await settled();
    expect((await cm(spA))?.data?.superPodDevice).toBe(bytes(spA, node(0, 0), node(3, 3), node(4, 4)));
    await client.delete(paths.node(name(9)));
  }, 30_000);

  it('pingmesh-config all off: the ConfigMaps stay as they are and changes wait; on again, they are published', async () => {
    await config(pingmeshConfigData({ global: { activate: 'off' }, [spA]: { activate: 'off', taskInterval: 60 } }));
    await eventually(() => !manager.pingmesh.state.detect, 10_000);
    const held = await cm(spA);
    await client.delete(paths.node(name(4)));
    await addNode(5, spB, 5);
    await settled();
    expect((await cm(spA))?.metadata?.resourceVersion).toBe(held?.metadata?.resourceVersion);
    expect(await cm(spB)).toBeUndefined();
    await config(pingmeshConfigData({ [spB]: { activate: 'on', taskInterval: 1 } }));
    await eventually(async () => (await cm(spA))?.data?.superPodDevice === bytes(spA, node(0, 0), node(3, 3)), 10_000);
    expect((await eventually(() => cm(spB), 10_000)).data).toEqual({ superPodDevice: bytes(spB, node(5, 5)) });
  }, 40_000);

  it('a restart on an unchanged cluster writes nothing', async () => {
    const a = await cm(spA);
    const b = await cm(spB);
    await manager.stop();
    manager = await start();
    await settled();
    expect(manager.writer.writes.get('super_pod_device') ?? 0).toBe(0);
    expect((await cm(spA))?.metadata?.resourceVersion).toBe(a?.metadata?.resourceVersion);
    expect((await cm(spB))?.metadata?.resourceVersion).toBe(b?.metadata?.resourceVersion);
  }, 60_000);

  it('a label a user put on a super-pod ConfigMap stays until that super pod\'s devices change (ClusterD\'s check code)', async () => {
    await client.patch(paths.configMap(csNs, `super-pod-${spA}`), { metadata: { labels: { team: 'ops' } } });
    await addNode(6, spB, 6);
    await eventually(async () => (await cm(spB))?.data?.superPodDevice === bytes(spB, node(5, 5), node(6, 6)), 10_000);
    await settled();
    expect((await cm(spA))?.metadata?.labels).toEqual({ app: 'pingmesh', team: 'ops' });
    await addNode(7, spA, 7);
    const a = await eventually(async () => { const c = await cm(spA); return c?.data?.superPodDevice === bytes(spA, node(0, 0), node(3, 3), node(7, 7)) ? c : undefined; }, 10_000);
    expect(a.metadata?.labels).toEqual({ app: 'pingmesh' });
  }, 40_000);
});
