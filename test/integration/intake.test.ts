/**
 * Intake end to end on the real apiserver: device-info and node-info ConfigMaps written as the real
 * agents write them come out as cluster-info-* that a Go reader accepts; bad input is rejected with
 * the last good state kept.
 */
import { randomBytes } from 'node:crypto';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { encodeNodeInfoData, NODE_INFO_LABELS, nodeInfoCmName } from '../../schemas/node-info/node-info.ts';
import { parseClusterInfo, CLUSTER_INFO_NODE_CM, type NodeInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { adminClient, ensureNamespace, eventually } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';
import { deviceEntries } from '../support/cluster-info-read.ts';

const chips = (n: number): string[] => Array.from({ length: n }, (_, i) => `Ascend910-${i}`);

async function putCm(client: KubeClient, ns: string, name: string, labels: Record<string, string>, data: Record<string, string>): Promise<void> {
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
  if (existing === undefined) await client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels }, data });
  else await client.replace(paths.configMap(ns, name), { ...existing, data });
}

describe('fault intake to cluster-info', () => {
  const client = adminClient();
  const metrics = new Metrics({ processMetrics: false });
  let manager: Manager;
  const node = `intake-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    for (const ns of ['mindx-dl', 'kube-system']) await ensureNamespace(client, ns);
    manager = new Manager({ clock: realClock, client, options: parseOptions(['--http-port=0', '--cluster-info-refresh-seconds=0'], {}), log: silentLogger, metrics });
    await manager.start();
  }, 60_000);

  afterAll(async () => { await manager.stop(); });

  it('publishes a SeparateNPU chip fault as Volcano reads it', async () => {
    const now = Date.now();
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, encodeDeviceInfoData({
      available: chips(8).filter((c) => c !== 'Ascend910-3'), unhealthy: ['Ascend910-3'], faults: [fault], updateTimeS: Math.floor(now / 1000),
    }));
    const entry = await eventually(async () => (await deviceEntries(client))[deviceInfoCmName(node)]);
    expect(entry.CmName).toBe(deviceInfoCmName(node));
    expect(entry.DeviceList['huawei.com/Ascend910']).toBe('Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7');
    expect(entry.DeviceList['huawei.com/Ascend910-Unhealthy']).toBe('Ascend910-3');
    expect(entry.DeviceList['huawei.com/Ascend910-Fault']).toContain('"fault_code":"80E18402"');
    expect(Object.keys(entry.DeviceList).sort()).toEqual(['huawei.com/Ascend910', 'huawei.com/Ascend910-Fault', 'huawei.com/Ascend910-NetworkUnhealthy', 'huawei.com/Ascend910-Recovering', 'huawei.com/Ascend910-Unhealthy']);
  });

  it('drops an update with a wrong CheckCode and keeps the last good state', async () => {
    const before = await deviceEntries(client);
    const good = before[deviceInfoCmName(node)]!;
    const data = encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) });
    const tampered = { ...data, DeviceInfoCfg: data.DeviceInfoCfg!.replace(/"CheckCode":"[0-9a-f]+"/, `"CheckCode":"${'0'.repeat(64)}"`) };
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, tampered);
    await eventually(async () => (await metrics.invalidInput.get()).values.some((v) => v.labels.format === 'device-info' && v.value > 0));
    await manager.clusterInfo.idle();
    expect((await deviceEntries(client))[deviceInfoCmName(node)]).toEqual(good);
  });

  it('drops malformed JSON and keeps the last good state', async () => {
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, { DeviceInfoCfg: '{"DeviceInfo":', ManuallySeparateNPU: '' });
    await eventually(async () => (await metrics.invalidInput.get()).values.filter((v) => v.labels.format === 'device-info').reduce((a, v) => a + v.value, 0) >= 2);
    await manager.clusterInfo.idle();
    expect((await deviceEntries(client))[deviceInfoCmName(node)]?.DeviceList['huawei.com/Ascend910-Unhealthy']).toBe('Ascend910-3');
  });

  it('clears the chip when the device plugin reports it healthy again', async () => {
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) }));
    await eventually(async () => (await deviceEntries(client))[deviceInfoCmName(node)]?.DeviceList['huawei.com/Ascend910-Unhealthy'] === '');
  });

  it('publishes NodeD faults in cluster-info-node-cm', async () => {
    await putCm(client, 'mindx-dl', nodeInfoCmName(node), NODE_INFO_LABELS, encodeNodeInfoData({
      faultDevList: [{ DeviceType: 'CPU', DeviceId: 1, FaultCode: ['00000011'], FaultLevel: 'SeparateFault' }], updateTimeMs: Date.now(),
    }));
    const entry = await eventually(async () => {
      const cm = await client.get<ConfigMap>(paths.configMap('mindx-dl', CLUSTER_INFO_NODE_CM));
      const parsed = parseClusterInfo('node', cm.data?.[CLUSTER_INFO_NODE_CM] ?? '');
      return parsed.ok ? (parsed.value[nodeInfoCmName(node)] as NodeInfoEntry | undefined) : undefined;
    });
    expect(entry.NodeStatus).toBe('UnHealthy');
    expect(entry.FaultDevList?.[0]?.FaultCode).toEqual(['00000011']);
  });

  it('removes the node\'s device entry when its device-info ConfigMap is deleted, as ClusterD does', async () => {
    const gone = `${node}-del`;
    const now = Date.now();
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-1', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
    await putCm(client, 'kube-system', deviceInfoCmName(gone), DEVICE_INFO_LABELS, encodeDeviceInfoData({
      available: chips(8).filter((c) => c !== 'Ascend910-1'), unhealthy: ['Ascend910-1'], faults: [fault], updateTimeS: Math.floor(now / 1000),
    }));
    await eventually(async () => (await deviceEntries(client))[deviceInfoCmName(gone)]?.DeviceList['huawei.com/Ascend910-Unhealthy'] === 'Ascend910-1');
    await client.delete(paths.configMap('kube-system', deviceInfoCmName(gone)));
    await eventually(() => manager.sources.deviceInfo.get(`kube-system/${deviceInfoCmName(gone)}`) === undefined);
    // The pass may be held back by the reconciler's minimum interval (a delayed requeue that idle()
    // does not wait for), so wait for the write itself.
    await eventually(async () => (await deviceEntries(client))[deviceInfoCmName(gone)] === undefined);
  });

  it('writes nothing when nothing changed (resync, replayed events)', async () => {
    // Let a pass still held back by the minimum interval (after the previous test) finish first.
    await new Promise((r) => setTimeout(r, 500));
    await manager.clusterInfo.idle();
    const before = manager.writer.writes.get('cluster_info') ?? 0;
    manager.deviceFaults.resync();
    manager.clusterInfo.queue.add('cluster-info');
    await new Promise((r) => setTimeout(r, 500));
    await manager.clusterInfo.idle();
    expect(manager.writer.writes.get('cluster_info') ?? 0).toBe(before);
  });
});
