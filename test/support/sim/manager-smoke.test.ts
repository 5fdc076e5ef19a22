/**
 * The assembled controller on the in-memory apiserver: `new Manager` as production builds it (every
 * flow, its informers and writers) with a MemoryKubeClient in place of the HTTP one. A chip fault
 * written into a node's device-info ConfigMap comes out in cluster-info, also when the apiserver drops
 * every watch, expires them (410) and answers writes with 500 on the way. Real time (the smoke test of
 * the seam; the simulation suite drives a virtual clock).
 */
import { paths, type KubeClient } from '../../../runtime/kube-client.ts';
import type { ConfigMap } from '../../../runtime/kube-objects.ts';
import { Manager } from '../../../controllers/manager.ts';
import { parseOptions } from '../../../controllers/options.ts';
import { silentLogger } from '../../../telemetry/logger.ts';
import { Metrics } from '../../../telemetry/metrics.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../../schemas/device-info/device-info.ts';
import { MemoryApiServer, WRITE_VERBS } from './memory-apiserver.ts';
import { realClock } from '../../../runtime/clock.ts';
import { deviceEntries } from '../cluster-info-read.ts';

const chips = (n: number): string[] => Array.from({ length: n }, (_, i) => `Ascend910-${i}`);

async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function putDeviceInfo(client: KubeClient, node: string, data: Record<string, string>): Promise<void> {
  const path = paths.configMap('kube-system', deviceInfoCmName(node));
  const cur = await client.getOrUndefined<ConfigMap>(path);
  if (cur === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: deviceInfoCmName(node), namespace: 'kube-system', labels: DEVICE_INFO_LABELS }, data });
  else await client.replace(path, { ...cur, data });
}

describe('the Manager on the in-memory apiserver', () => {
  const server = new MemoryApiServer();
  const agent = server.client('device-plugin');
  const controller = server.client('clusterd-ts');
  const metrics = new Metrics({ processMetrics: false });
  let manager: Manager;

  beforeAll(async () => {
    manager = new Manager({
      clock: realClock, client: controller, log: silentLogger, metrics,
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0'], {}),
    });
    await manager.start();
  }, 30_000);

  afterAll(async () => {
    await manager.stop();
    server.close();
  });

  it('publishes a chip fault from device-info in cluster-info', async () => {
    const now = Date.now();
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
    await putDeviceInfo(agent, 'node-a', encodeDeviceInfoData({
      available: chips(8).filter((c) => c !== 'Ascend910-3'), unhealthy: ['Ascend910-3'], faults: [fault], updateTimeS: Math.floor(now / 1000),
    }));
    const entry = await eventually(async () => (await deviceEntries(agent))[deviceInfoCmName('node-a')]);
    expect(entry.DeviceList['huawei.com/Ascend910-Unhealthy']).toBe('Ascend910-3');
    expect(entry.DeviceList['huawei.com/Ascend910-Fault']).toContain('"fault_code":"80E18402"');
    // Counted like HTTP requests, through the client's onRequest hook.
    expect((await metrics.apiRequests.get()).values.some((v) => v.labels.method === 'POST' && v.labels.code === '201')).toBe(true);
  });

  it('gets there through dropped and expired watches and failing writes', async () => {
    const { relists } = manager.sources.deviceInfo.health();
    server.dropWatches();
    server.failNext(3, { status: 500 }, { verbs: WRITE_VERBS, client: controller, path: /\/namespaces\/mindx-dl\/configmaps/ });
    const now = Date.now();
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-5', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
    await putDeviceInfo(agent, 'node-b', encodeDeviceInfoData({
      available: chips(8).filter((c) => c !== 'Ascend910-5'), unhealthy: ['Ascend910-5'], faults: [fault], updateTimeS: Math.floor(now / 1000),
    }));
    await eventually(async () => (await deviceEntries(agent))[deviceInfoCmName('node-b')]?.DeviceList['huawei.com/Ascend910-Unhealthy'] === 'Ascend910-5' || undefined);
    expect((await metrics.apiRequests.get()).values.filter((v) => v.labels.code === '500').reduce((n, v) => n + v.value, 0)).toBe(3);

    server.compact();
    server.expireWatches();
    await putDeviceInfo(agent, 'node-a', encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) }));
    await eventually(async () => (await deviceEntries(agent))[deviceInfoCmName('node-a')]?.DeviceList['huawei.com/Ascend910-Unhealthy'] === '' || undefined);
    expect(manager.sources.deviceInfo.health().relists).toBeGreaterThan(relists);
  }, 30_000);
});
