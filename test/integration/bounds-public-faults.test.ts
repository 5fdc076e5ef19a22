/**
 * Public faults bounded against hostile input, on the real apiserver: public-fault ConfigMaps from an ordinary namespace
 * cannot make the controller hold more than --max-public-faults (ClusterD: 50,000) public faults,
 * even under ClusterD's sender rules (by default such ConfigMaps and faults for absent nodes are
 * refused outright: tenant-public-faults.test.ts).
 * Past the cap new faults are refused, counted and logged, existing ones still recover (ClusterD
 * pkg/domain/publicfault/cache.go).
 */
import { paths } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { encodePublicFault, PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS, type PubFault, type PubFaultInfo } from '../../schemas/public-fault/public-fault.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

const T0 = Date.UTC(2026, 0, 1);
const fault = (id: string, nodes: readonly string[], assertion: PubFault['assertion'] = 'occur'): PubFault => ({
  faultId: id, faultType: 'NPU', faultCode: '220001001', faultTime: T0, assertion, faultLocation: null,
  influence: nodes.map((nodeName) => ({ nodeName, nodeSN: '', deviceIds: [0] })), description: '',
});
const payload = (id: string, faults: readonly PubFault[]): string => encodePublicFault({ id, timestamp: T0, version: '1.0', resource: 'CCAE', faults } satisfies PubFaultInfo);

describe('public-fault cap', () => {
  const client = adminClient();
  const metrics = new Metrics({ processMetrics: false });
  const lines: LogLine[] = [];
  let manager: Manager;
  let ns = '';
  const created: string[] = [];

  const put = async (name: string, text: string): Promise<void> => {
    const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
    const data = { [PUBLIC_FAULT_DATA_KEY]: text };
    if (existing === undefined) {
      await client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { ...PUBLIC_FAULT_LABELS } }, data });
      created.push(name);
    } else await client.replace(paths.configMap(ns, name), { ...existing, data });
  };
  const hits = async (): Promise<number> => (await metrics.boundHits.get()).values.find((v) => v.labels.bound === 'public_faults')?.value ?? 0;

  beforeAll(async () => {
    ns = await newNamespace(client, 'pubfault');
    // ClusterD's sender rules (any namespace, any node name): the cap is then what bounds a flood.
    const open = ['--public-fault-namespaces=*', '--public-fault-unknown-nodes'];
    manager = new Manager({ clock: realClock, client, log: recordingLogger(lines), metrics, options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', ...open], {}) });
    await manager.start();
  }, 60_000);

  afterAll(async () => {
    // Public faults are never cleared by deleting their CM, but later tests start their own controller.
    for (const name of created) await client.delete(paths.configMap(ns, name)).catch(() => undefined);
    await manager.stop();
  });

  it('holds at most 50,000 by default: four ConfigMaps of 15,000 each leave 10,001 refused, counted and logged', async () => {
    await put('pf-first', payload('first-0001', [fault('f-first-01', ['pf-node-a'])]));
    const store = manager.deviceFaults.store.publicFaults;
    await eventually(() => store.size === 1);
    // 100 faults x 150 nodes = 15,000 faults per ConfigMap (about 780 KB each).
    const nodes = Array.from({ length: 150 }, (_, i) => `flood-${String(i).padStart(3, '0')}`);
    for (const c of ['a', 'b', 'c', 'd']) {
      await put(`pf-flood-${c}`, payload(`flood-${c}-0001`, Array.from({ length: 100 }, (_, i) => fault(`f-${c}-${String(i).padStart(6, '0')}`, nodes))));
    }
    await eventually(async () => (await hits()) >= 10_001, 60_000);
    expect(store.size).toBe(50_000);
    expect(await hits()).toBe(10_001);
    const line = lines.find((l) => l.msg.startsWith('public faults refused'));
    expect(line).toMatchObject({ level: 'warn', bound: 'public_faults', maxPublicFaults: 50_000 });
    // The first fault is kept and, at the cap, still recovers (ClusterD deletes without a check).
    expect(manager.deviceFaults.store.records('pf-node-a').map((r) => r.code)).toEqual(['220001001']);
    // A recover deletes a fault under 5 s old only when it turns 5 s old (ClusterD dealFault).
    await put('pf-first', payload('first-0002', [fault('f-first-01', ['pf-node-a'], 'recover')]));
    await eventually(() => store.size === 49_999, 10_000);
    expect(manager.deviceFaults.store.records('pf-node-a')).toEqual([]);
  }, 120_000);
});
