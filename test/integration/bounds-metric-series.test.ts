/**
 * Metric series bounded against hostile input, on the real apiserver: one device-info with 10,000 distinct fault codes used to
 * make 10,001 `clusterd_faults` series (/metrics 26 KB -> 736 KB). The series of every metric whose
 * labels come from input are capped (--max-series-per-metric, 1,000); the rest is aggregated into
 * `code="other"`, counted in clusterd_bound_hits_total{bound="metric_series"} and logged.
 */
import { randomBytes } from 'node:crypto';
import { paths } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { adminClient, ensureNamespace, eventually } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

describe('metric series cap', () => {
  const client = adminClient();
  const lines: LogLine[] = [];
  let manager: Manager;
  const node = `series-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    await ensureNamespace(client, 'kube-system');
    manager = new Manager({ clock: realClock, client, log: recordingLogger(lines), metrics: new Metrics({ processMetrics: false }), options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0'], {}) });
    await manager.start();
  }, 60_000);
  afterAll(async () => {
    await client.delete(paths.configMap('kube-system', deviceInfoCmName(node))).catch(() => undefined);
    await manager.stop();
  });

  it('a device-info with 10,000 distinct codes makes at most 1,000 clusterd_faults series, the rest under code="other"', async () => {
    const now = Date.now();
    const codes = Array.from({ length: 10_000 }, (_, i) => ({ code: (0x81000000 + i).toString(16).toUpperCase(), level: 'NotHandleFault' as const, timeMs: now }));
    const data = encodeDeviceInfoData({ available: ['Ascend910-0'], faults: [makeDeviceFault('CardUnhealthy', 'Ascend910-0', codes)], updateTimeS: Math.floor(now / 1000) });
    const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${manager.httpPort}/metrics`)).text();
    // The shared test apiserver may hold other files' device-info faults: count relative to them.
    const faultSeries = (t: string): string[] => t.split('\n').filter((l) => l.startsWith('clusterd_faults{'));
    const total = (t: string): number => faultSeries(t).reduce((a, l) => a + Number(l.split(' ').pop()), 0);
    const other = (t: string): number => Number(/clusterd_faults\{[^}]*code="other"[^}]*\} (\d+)/.exec(t)?.[1] ?? 0);
    const baseline = total(await scrape());
    await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: deviceInfoCmName(node), namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
    const text = await eventually(async () => {
      const t = await scrape();
      return total(t) === baseline + 10_000 ? t : undefined;
    }, 30_000);
    expect(faultSeries(text).length).toBeLessThanOrEqual(1_001);
    expect(other(text)).toBeGreaterThanOrEqual(9_000);
    expect(text.length).toBeLessThan(200_000);
    expect(text).toMatch(/clusterd_bound_hits_total\{bound="metric_series"\} [1-9]/);
    expect(lines.some((l) => l.level === 'warn' && l.bound === 'metric_series' && l.metric === 'clusterd_faults')).toBe(true);
  }, 60_000);
});
