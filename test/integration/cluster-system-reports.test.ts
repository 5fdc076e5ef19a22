/**
 * ClusterD's two cluster-system reports on the real apiserver: scheduling-exception-report created at
 * start (empty, no labels), and statistic-fault-info (label mc-statistic-fault=true, FaultNum,
 * PublicFaults) once a public fault arrives, kept current through its recovery, never rewritten
 * when nothing changed. Public faults are read cluster-wide and the control plane is shared, so
 * only this file's node entry is compared byte for byte.
 */
import { randomBytes } from 'node:crypto';
import { paths } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { PublicFaultSender } from '../../tools/simulator/public-fault.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { SCHEDULING_EXCEPTION_CM_NAME } from '../../schemas/scheduling-exception/scheduling-exception.ts';
import { STATISTIC_FAULT_CM_NAME } from '../../schemas/statistic-fault/statistic-fault.ts';
import { STATISTIC_FAULT_RECONCILE_KEY } from '../../reconcilers/statistic-fault.reconciler.ts';
import { adminClient, ensureNamespace, eventually, newNamespace } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

describe('cluster-system reports as ClusterD writes them', () => {
  const client = adminClient();
  const node = `csr-${randomBytes(3).toString('hex')}`;
  let csNs = '';
  let manager: Manager;

  beforeAll(async () => {
    await ensureNamespace(client, 'mindx-dl');
    // Public faults are taken for nodes that exist (--public-fault-unknown-nodes is off).
    await createFakeNodes(client, [node, `${node}-kept`, `${node}-late`].map((name) => ({ name })));
    csNs = await newNamespace(client, 'cs');
    manager = new Manager({ clock: realClock,
      client, log: silentLogger, metrics: new Metrics({ processMetrics: false }),
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', `--cluster-system-namespace=${csNs}`], {}),
    });
    await manager.start();
  }, 60_000);

  afterAll(async () => {
    await manager.stop();
    for (const n of [node, `${node}-kept`, `${node}-late`]) await client.delete(paths.node(n)).catch(() => undefined);
  });

  const cm = (name: string): Promise<ConfigMap | undefined> => client.getOrUndefined<ConfigMap>(paths.configMap(csNs, name));

  // Its data is not compared: the control plane is shared, and jobs other files run may be listed
  // (the empty form is policy/jobs/scheduling-exception.test.ts's).
  it('scheduling-exception-report is created at the first 10 s check after start (as ClusterD\'s collector): no labels, no annotations', async () => {
    const report = await eventually(() => cm(SCHEDULING_EXCEPTION_CM_NAME), 25_000);
    expect(report.metadata?.labels).toBeUndefined();
    expect(report.metadata?.annotations).toBeUndefined();
  }, 30_000);

  it('statistic-fault-info follows a public fault: label, FaultNum, the node\'s entry in bytes; no rewrite when unchanged; the entry leaves on recovery', async () => {
    const before = await cm(STATISTIC_FAULT_CM_NAME);
    expect(before?.data?.PublicFaults ?? '').not.toContain(node);
    const sender = new PublicFaultSender(client);
    const timeMs = Date.now();
    const ack = await sender.send({ code: '220001001', targets: [{ node, npus: [2, 0] }], faultId: `pf-${node}`, resource: 'CCAE', timeMs });
    const entry = `"${node}":[{"resource":"CCAE","devIds":[2,0],"faultId":"pf-${node}","type":"Network","faultCode":"220001001","level":"SeparateNPU","faultTime":${Math.floor(timeMs / 1000)}}]`;
    const written = await eventually(async () => { const c = await cm(STATISTIC_FAULT_CM_NAME); return c?.data?.PublicFaults?.includes(entry) ? c : undefined; }, 15_000);
    process.stdout.write(`statistic-fault-info listed the public fault ${Date.now() - ack.atMs} ms after its ConfigMap write\n`);
    expect(written.metadata?.labels).toEqual({ 'mc-statistic-fault': 'true' });
    expect(Object.keys(written.data ?? {}).sort()).toEqual(['FaultNum', 'PublicFaults']);
    const listed = Object.values(JSON.parse(written.data!.PublicFaults!) as Record<string, unknown[]>).reduce((n, fs) => n + fs.length, 0);
    expect(written.data!.FaultNum).toBe(`{"publicFaultNum":${listed}}`);

    manager.statisticFault.queue.add(STATISTIC_FAULT_RECONCILE_KEY);
    await manager.statisticFault.idle();
    expect((await cm(STATISTIC_FAULT_CM_NAME))?.metadata?.resourceVersion).toBe(written.metadata?.resourceVersion);

    await sender.recover(`pf-${node}`);
    const after = await eventually(async () => { const c = await cm(STATISTIC_FAULT_CM_NAME); return c?.data?.PublicFaults?.includes(node) === false ? c : undefined; }, 15_000);
    expect(after.metadata?.labels).toEqual({ 'mc-statistic-fault': 'true' });
    expect(after.data?.FaultNum).toMatch(/^\{"publicFaultNum":\d+\}$/);
  }, 60_000);

  it('a restart re-reads no public-fault ConfigMap but reloads statistic-fault-info, and writes it only at the next message (as ClusterD)', async () => {
    const opts = parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', `--cluster-system-namespace=${csNs}`], {});
    const sender = new PublicFaultSender(client);
    const kept = `${node}-kept`;
    const late = `${node}-late`;
    const a = await sender.send({ code: '220001001', targets: [{ node: kept, npus: [1] }], faultId: `pf-${kept}` });
    await eventually(async () => (await cm(STATISTIC_FAULT_CM_NAME))?.data?.PublicFaults?.includes(kept) === true, 15_000);
    await manager.stop();
    // While it is down: the listed fault's ConfigMap goes, another fault's ConfigMap comes.
    await client.delete(paths.configMap(a.namespace, a.name));
    await sender.send({ code: '220001001', targets: [{ node: late, npus: [2] }], faultId: `pf-${late}` });
    const before = await cm(STATISTIC_FAULT_CM_NAME);
    manager = new Manager({ clock: realClock, client, log: silentLogger, metrics: new Metrics({ processMetrics: false }), options: opts });
    await manager.start();
    await eventually(() => manager.deviceFaults.effective(kept).some((r) => r.source === 'public' && r.device === 'Ascend910-1'), 10_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(manager.deviceFaults.effective(late).filter((r) => r.source === 'public')).toEqual([]);
    expect((await cm(STATISTIC_FAULT_CM_NAME))?.metadata?.resourceVersion).toBe(before?.metadata?.resourceVersion);
    // A recover from a new ConfigMap (same resource and faultId) clears the reloaded fault, within 5 s of its reload.
    await sender.send({ code: '220001001', targets: [{ node: kept, npus: [1] }], faultId: `pf-${kept}`, assertion: 'recover', name: `${a.name}-r` });
    await eventually(async () => (await cm(STATISTIC_FAULT_CM_NAME))?.data?.PublicFaults?.includes(kept) === false, 15_000);
    expect(manager.deviceFaults.effective(kept).filter((r) => r.source === 'public')).toEqual([]);
  }, 60_000);
});
