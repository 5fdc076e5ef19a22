/**
 * The durable last good device-info on the real apiserver: a node whose device-info turned invalid keeps its last
 * good faults in cluster-info across a controller restart (the leader persists the raw last good
 * device-info in mindx-dl/clusterd-ts-device-info-last-good and the next process restores it); a
 * deleted device-info removes the node's device entry, as ClusterD does, and the log says so.
 */
import { randomBytes } from 'node:crypto';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { LAST_GOOD_CM_NAME } from '../../state/device-info-last-good.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { adminClient, ensureNamespace, eventually, newNamespace } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';
import { deviceEntries } from '../support/cluster-info-read.ts';

const chips = (n: number): string[] => Array.from({ length: n }, (_, i) => `Ascend910-${i}`);
const UNHEALTHY = 'huawei.com/Ascend910-Unhealthy';

async function putCm(client: KubeClient, name: string, data: Record<string, string>): Promise<void> {
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
  if (existing === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
  else await client.replace(paths.configMap('kube-system', name), { ...existing, data });
}

describe('last good device-info across a restart', () => {
  const client = adminClient();
  const lines: LogLine[] = [];
  let manager: Manager | undefined;
  const node = `lastgood-${randomBytes(3).toString('hex')}`;
  const cmName = deviceInfoCmName(node);
  const start = async (): Promise<Manager> => {
    const m = new Manager({ clock: realClock, client, log: recordingLogger(lines), metrics: new Metrics({ processMetrics: false }), options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0'], {}) });
    await m.start();
    return m;
  };
  const persisted = async (): Promise<Record<string, string>> => (await client.getOrUndefined<ConfigMap>(paths.configMap('mindx-dl', LAST_GOOD_CM_NAME)))?.data ?? {};

  beforeAll(async () => {
    for (const ns of ['mindx-dl', 'kube-system']) await ensureNamespace(client, ns);
  });
  afterAll(async () => {
    await manager?.stop();
    await client.delete(paths.configMap('kube-system', cmName)).catch(() => undefined);
  });

  it('keeps the fault of a node whose device-info is invalid after the controller restarts', async () => {
    manager = await start();
    const now = Date.now();
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
    await putCm(client, cmName, encodeDeviceInfoData({ available: chips(8).filter((c) => c !== 'Ascend910-3'), unhealthy: ['Ascend910-3'], faults: [fault], updateTimeS: Math.floor(now / 1000) }));
    await eventually(async () => (await deviceEntries(client))[cmName]?.DeviceList[UNHEALTHY] === 'Ascend910-3');

    // The device plugin's next write is broken (wrong CheckCode): the last good state is kept and persisted.
    const next = encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) });
    await putCm(client, cmName, { ...next, DeviceInfoCfg: next.DeviceInfoCfg!.replace(/"CheckCode":"[0-9a-f]+"/, `"CheckCode":"${'0'.repeat(64)}"`) });
    await eventually(async () => (await persisted())[cmName] !== undefined);

    await manager.stop();
    manager = await start();
    await eventually(() => manager!.isLeader);
    await manager.clusterInfo.idle();
    const entry = (await deviceEntries(client))[cmName];
    expect(entry?.DeviceList[UNHEALTHY]).toBe('Ascend910-3');
    expect(manager.deviceFaults.store.records(node).map((r) => r.code)).toContain('80E18402');
    expect(lines.some((l) => l.msg.startsWith('device-info still invalid at start; its last good state restored') && l.node === node)).toBe(true);
  }, 90_000);

  it('keeps it across a failover: a standby started while the device-info is invalid takes over with the fault', async () => {
    await manager?.stop();
    manager = undefined;
    const node2 = `${node}-fo`;
    const cm2 = deviceInfoCmName(node2);
    const leaseNs = await newNamespace(client, 'lastgood');
    const elect = (log: LogLine[]): Manager => new Manager({ clock: realClock,
      client, log: recordingLogger(log), metrics: new Metrics({ processMetrics: false }),
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', '--leader-elect', `--leader-election-namespace=${leaseNs}`, '--lease-duration-seconds=5'], {}),
    });
    const a = elect(lines);
    try {
      await a.start();
      await eventually(() => a.isLeader);
      const now = Date.now();
      const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-5', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
      await putCm(client, cm2, encodeDeviceInfoData({ available: chips(8).filter((c) => c !== 'Ascend910-5'), unhealthy: ['Ascend910-5'], faults: [fault], updateTimeS: Math.floor(now / 1000) }));
      await eventually(async () => (await deviceEntries(client))[cm2]?.DeviceList[UNHEALTHY] === 'Ascend910-5');
      await putCm(client, cm2, { DeviceInfoCfg: '{"DeviceInfo":', ManuallySeparateNPU: '' });
      await eventually(async () => (await persisted())[cm2] !== undefined);
      manager = elect(lines);
      await manager.start();
      expect(manager.isLeader).toBe(false);
      expect(lines.some((l) => l.msg.startsWith('device-info still invalid at start; its last good state restored') && l.node === node2)).toBe(true);
    } finally {
      await a.stop(); // releases the Lease
    }
    await eventually(() => manager!.isLeader, 10_000);
    manager.clusterInfo.queue.add('cluster-info');
    await manager.clusterInfo.idle();
    expect((await deviceEntries(client))[cm2]?.DeviceList[UNHEALTHY]).toBe('Ascend910-5');
    await client.delete(paths.configMap('kube-system', cm2));
    await eventually(async () => (await persisted())[cm2] === undefined);
  }, 90_000);

  it('forgets the persisted copy once the device plugin writes a valid device-info again', async () => {
    await putCm(client, cmName, encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) }));
    await eventually(async () => (await deviceEntries(client))[cmName]?.DeviceList[UNHEALTHY] === '');
    await eventually(async () => (await persisted())[cmName] === undefined);
  }, 30_000);

  it('removes the node\'s device entry when its device-info is deleted, as ClusterD, and logs it', async () => {
    await client.delete(paths.configMap('kube-system', cmName));
    await eventually(async () => (await deviceEntries(client))[cmName] === undefined);
    expect(lines.some((l) => l.msg === 'device-info ConfigMap deleted; the node\'s device faults are removed (as ClusterD does)' && l.node === node)).toBe(true);
  }, 30_000);

  it('a damaged persisted entry is loud and kept as it is, and the node\'s fault stays in cluster-info across a restart', async () => {
    await manager?.stop();
    manager = await start();
    const node3 = `${node}-dmg`;
    const cm3 = deviceInfoCmName(node3);
    try {
      const now = Date.now();
      const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-2', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
      await putCm(client, cm3, encodeDeviceInfoData({ available: chips(8).filter((c) => c !== 'Ascend910-2'), unhealthy: ['Ascend910-2'], faults: [fault], updateTimeS: Math.floor(now / 1000) }));
      await eventually(async () => (await deviceEntries(client))[cm3]?.DeviceList[UNHEALTHY] === 'Ascend910-2');
      await putCm(client, cm3, { DeviceInfoCfg: '{"DeviceInfo":', ManuallySeparateNPU: '' });
      const saved = await eventually(async () => (await persisted())[cm3]);
      await manager.stop();

      // The persisted copy is damaged while the controller is down (cut in half).
      const damaged = saved.slice(0, Math.floor(saved.length / 2));
      const lg = (await client.getOrUndefined<ConfigMap>(paths.configMap('mindx-dl', LAST_GOOD_CM_NAME)))!;
      await client.replace(paths.configMap('mindx-dl', LAST_GOOD_CM_NAME), { ...lg, data: { ...lg.data, [cm3]: damaged } });

      const metrics = new Metrics({ processMetrics: false });
      manager = new Manager({ clock: realClock, client, log: recordingLogger(lines), metrics, options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0'], {}) });
      await manager.start();
      await eventually(() => manager!.isLeader);
      await manager.clusterInfo.idle();
      await manager.lastGood.idle();
      // The node's fault does not vanish: its last published entry stands in until the device plugin writes a valid device-info.
      expect((await deviceEntries(client))[cm3]?.DeviceList[UNHEALTHY]).toBe('Ascend910-2');
      expect(manager.deviceFaults.store.records(node3).map((r) => r.code)).toContain('80E18402');
      // Kept as it is, not replaced by less.
      expect((await persisted())[cm3]).toBe(damaged);

      // Loud: an error line naming the node and the entry, and a metric.
      expect(lines.some((l) => l.level === 'error' && l.msg.startsWith('persisted last good device-info entry is damaged') && l.node === node3 && l.fallback === 'published')).toBe(true);
      expect((await metrics.lastGoodDamaged.get()).values).toEqual([{ labels: { fallback: 'published' }, value: 1 }]);
      // The live device-info wins once valid again: the fault clears and the damaged entry goes.
      await putCm(client, cm3, encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) }));
      await eventually(async () => (await deviceEntries(client))[cm3]?.DeviceList[UNHEALTHY] === '');
      await eventually(async () => (await persisted())[cm3] === undefined);
    } finally {
      await client.delete(paths.configMap('kube-system', cm3)).catch(() => undefined);
    }
  }, 90_000);
});
