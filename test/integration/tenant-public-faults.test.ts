/**
 * Tenant isolation, public faults: a namespace-scoped tenant writes a public-fault ConfigMap
 * (label `mc-consumer-publicfault=true`) in its own namespace naming 30 nodes that do not exist,
 * 32 chips each. ClusterD reads such ConfigMaps from any namespace; here they are taken only from
 * the sender namespaces (`--public-fault-namespaces`) and only for nodes that exist, so the
 * blast-radius breaker (which counts the chips taken out of service) is not tripped by them and a
 * real SeparateNPU on another job is still acted on. A public fault from an allowed namespace naming
 * a real node still works, and the breaker says which ConfigMap its chips came from.
 */
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { encodePublicFault, PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS, type PubFault } from '../../schemas/public-fault/public-fault.ts';
import { BREAKER_CM_NAME, BREAKER_NAMESPACE, CLUSTER_SCOPE, parseBreakerState } from '../../schemas/breaker-state/breaker-state.ts';
import { vcJob } from '../../tools/job-peer/world.ts';
import { eventually } from '../support/cluster.ts';
import { newTenant } from '../support/tenant.ts';
import { jobsHarness, npusOf, readCm, report, runningPods, sleep, uidOf } from '../support/jobs-support.ts';
import { Client, credentials } from '@grpc/grpc-js';
import { unaryCall } from '../../grpc/testing.ts';
import { fakeNodes, rand, startManager as startGrpcManager } from './recovery-fixtures.ts';

const HOUR_MS = 3_600_000;

const publicFault = (id: string, influence: PubFault['influence'], assertion: PubFault['assertion'] = 'occur'): PubFault => ({
  faultId: id, faultType: 'NPU', faultCode: '220001001', faultTime: Date.now() - HOUR_MS, assertion, faultLocation: null, influence, description: 'tenant-isolation test',
});

async function writePublicFault(client: KubeClient, ns: string, name: string, faults: PubFault[]): Promise<void> {
  const data = { [PUBLIC_FAULT_DATA_KEY]: encodePublicFault({ id: `${name}-${Date.now()}`, timestamp: Date.now(), version: '1.0', resource: 'CCAE', faults }) };
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
  if (existing === undefined) {
    await client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { ...PUBLIC_FAULT_LABELS } }, data });
  } else await client.replace(paths.configMap(ns, name), { ...existing, data });
}

async function breakerState(client: KubeClient) {
  const p = parseBreakerState((await readCm(client, BREAKER_NAMESPACE, BREAKER_CM_NAME))?.data?.state);
  if (!p.ok) throw new Error(p.reason);
  return p.value;
}

describe('tenant isolation: public faults', () => {
  const h = jobsHarness();
  const { client } = h;

  beforeEach(async () => { await client.delete(paths.configMap(BREAKER_NAMESPACE, BREAKER_CM_NAME)).catch(() => undefined); });
  afterEach(async () => { await client.delete(paths.configMap(BREAKER_NAMESPACE, BREAKER_CM_NAME)).catch(() => undefined); });

  it('a tenant ConfigMap naming 30 absent nodes x 32 chips neither trips the breaker nor holds a real SeparateNPU on another job', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'tpf' });
    const { manager, metrics } = await h.startManager([]);
    const tenant = await newTenant(client, 'tpf-tenant');
    const ghosts = Array.from({ length: 30 }, (_, i) => `ghost-${tenant.ns}-${String(i).padStart(2, '0')}`);
    const chips = Array.from({ length: 32 }, (_, i) => i);
    // The tenant's own namespace and its own ServiceAccount: RBAC lets it write this.
    await writePublicFault(tenant.client, tenant.ns, 'pf-flood', [publicFault('tenant-flood-0001', ghosts.map((nodeName) => ({ nodeName, nodeSN: '', deviceIds: chips })))]);

    // Give the intake time to take it (the finding: the cluster scope tripped within 6 s).
    await sleep(6_000);
    // A real SeparateNPU on another job: its pods are deleted (not held).
    const job = await client.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name: 'victim', replicas: 1, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const [pod] = await runningPods(client, world.ns, 'victim', 1);
    await world.dp.injectChipFault({ node: pod!.spec!.nodeName!, npu: npusOf(pod!)[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(() => world.peer.statsOf('victim').deletedUids.has(uidOf(pod!)), 20_000);
    const state = await breakerState(client);
    expect(state.scopes[CLUSTER_SCOPE]?.tripped ?? false).toBe(false);
    // Nothing counted from the tenant's ConfigMap.
    const chipStamps = Object.values(state.scopes).flatMap((s) => s.window.chips);
    expect(chipStamps.filter((s) => s.key.startsWith('ghost-'))).toEqual([]);
    expect(ghosts.some((n) => manager.deviceFaults.store.records(n).length > 0)).toBe(false);
    const refused = (await metrics.publicFaultsRefused.get()).values;
    expect(refused.find((v) => v.labels.reason === 'namespace')?.value ?? 0).toBe(1);
    report(`tenant public faults: victim ${job.metadata?.name} rescheduled; breaker chips ${JSON.stringify(state.scopes[CLUSTER_SCOPE]?.window.chips ?? [])}`);
  }, 120_000);

  it('from a sender namespace, faults for the 30 absent nodes are refused and counted; a Node created later does not get them', async () => {
    const world = await h.startWorld({ nodes: 1, prefix: 'tpf' });
    const { manager, metrics } = await h.startManager([]);
    const ghosts = Array.from({ length: 30 }, (_, i) => `ghost-${world.ns}-${String(i).padStart(2, '0')}`);
    const name = `pf-ghosts-${world.ns}`;
    await writePublicFault(client, 'mindx-dl', name, [publicFault(`ghosts-${world.ns}`, ghosts.map((nodeName) => ({ nodeName, nodeSN: '', deviceIds: Array.from({ length: 32 }, (_, i) => i) })))]);
    try {
      const refused = async () => (await metrics.publicFaultsRefused.get()).values.find((v) => v.labels.reason === 'unknown_node' && v.labels.via === 'configmap')?.value ?? 0;
      expect(await eventually(async () => ((await refused()) === 30 ? 30 : undefined), 10_000)).toBe(30);
      expect(ghosts.some((n) => manager.deviceFaults.store.records(n).length > 0)).toBe(false);
      await client.create(paths.nodes(), { apiVersion: 'v1', kind: 'Node', metadata: { name: ghosts[0]! } });
      await sleep(1_000);
      expect(manager.deviceFaults.store.records(ghosts[0]!)).toEqual([]);
    } finally {
      await client.delete(paths.node(ghosts[0]!)).catch(() => undefined);
      await client.delete(paths.configMap('mindx-dl', name)).catch(() => undefined);
    }
  }, 60_000);

  it('with ClusterD\'s open rules (--public-fault-namespaces=* --public-fault-unknown-nodes) the tenant\'s faults are held, yet the breaker counts no chip of an absent node', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'tpf' });
    const { manager } = await h.startManager(['--public-fault-namespaces=*', '--public-fault-unknown-nodes']);
    const tenant = await newTenant(client, 'tpf-open');
    const ghosts = Array.from({ length: 30 }, (_, i) => `ghost-${tenant.ns}-${String(i).padStart(2, '0')}`);
    await writePublicFault(tenant.client, tenant.ns, 'pf-flood', [publicFault(`open-flood-${tenant.ns}`, ghosts.map((nodeName) => ({ nodeName, nodeSN: '', deviceIds: Array.from({ length: 32 }, (_, i) => i) })))]);
    await eventually(() => ghosts.every((n) => manager.deviceFaults.store.records(n).length === 32), 10_000);
    await client.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name: 'victim', replicas: 1, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const [pod] = await runningPods(client, world.ns, 'victim', 1);
    await world.dp.injectChipFault({ node: pod!.spec!.nodeName!, npu: npusOf(pod!)[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(() => world.peer.statsOf('victim').deletedUids.has(uidOf(pod!)), 20_000);
    const state = await breakerState(client);
    expect(state.scopes[CLUSTER_SCOPE]?.tripped ?? false).toBe(false);
    expect(Object.values(state.scopes).flatMap((s) => s.window.chips).filter((s) => s.key.startsWith('ghost-'))).toEqual([]);
    // The faults stay held (as ClusterD holds them); recover them so later tests start clean.
    await writePublicFault(tenant.client, tenant.ns, 'pf-flood', [publicFault(`open-flood-${tenant.ns}`, ghosts.map((nodeName) => ({ nodeName, nodeSN: '', deviceIds: [0] })), 'recover')]);
    await eventually(() => ghosts.every((n) => manager.deviceFaults.store.records(n).length === 0), 15_000);
  }, 120_000);

  it('a public fault from an allowed namespace naming a real node still acts, and the breaker names its ConfigMap', async () => {
    const world = await h.startWorld({ nodes: 2, prefix: 'tpf' });
    await h.startManager([]);
    await client.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name: 'target', replicas: 1, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const [pod] = await runningPods(client, world.ns, 'target', 1);
    const node = pod!.spec!.nodeName!;
    const npu = npusOf(pod!)[0]!;
    const chip = Number(npu.split('-').at(-1));
    const name = `pf-${world.ns}`;
    // mindx-dl: one of the default sender namespaces (admins only).
    await writePublicFault(client, 'mindx-dl', name, [publicFault(`allowed-${world.ns}`, [{ nodeName: node, nodeSN: '', deviceIds: [chip] }])]);
    try {
      await eventually(() => world.peer.statsOf('target').deletedUids.has(uidOf(pod!)), 20_000);
      const stamp = await eventually(async () => (await breakerState(client)).scopes[CLUSTER_SCOPE]?.window.chips.find((s) => s.key === `${node}/${npu}`), 10_000);
      expect(stamp.source).toBe(`public-fault mindx-dl/${name}`);
    } finally {
      // Leave no public fault behind for later tests (deleting the ConfigMap clears nothing).
      await writePublicFault(client, 'mindx-dl', name, [publicFault(`allowed-${world.ns}`, [{ nodeName: node, nodeSN: '', deviceIds: [chip] }], 'recover')]).catch(() => undefined);
      await sleep(6_000);
      await client.delete(paths.configMap('mindx-dl', name)).catch(() => undefined);
    }
  }, 120_000);

  it('over gRPC (PubFault.SendPublicFault, any network client), a fault for absent nodes is refused (409) and nothing is held; a real node\'s is taken', async () => {
    const { manager, target, metrics } = await startGrpcManager(client);
    const c = new Client(target, credentials.createInsecure());
    const [real] = await fakeNodes(client, `tpf-grpc-${rand()}`, 1);
    const now = Date.now();
    const req = (faultId: string, nodes: readonly string[], assertion = 'occur') => ({
      id: `tpf-${rand()}-0001`, timestamp: now, version: '1.0', resource: 'CCAE',
      faults: [{ faultId, faultType: 'NPU', faultCode: '220001001', faultTime: now, assertion, influence: nodes.map((nodeName) => ({ nodeName, deviceIds: Array.from({ length: 32 }, (_, i) => i) })), description: 'tenant-isolation test' }],
    });
    const ghosts = Array.from({ length: 30 }, (_, i) => `ghost-grpc-${rand()}-${i}`);
    try {
      const refused = await unaryCall<{ code: number; info: string }>(c, 'pubFault', 'SendPublicFault', req(`ghosts-${rand()}`, ghosts));
      expect(refused.code).toBe(409);
      expect(refused.info).toContain('no Node named');
      expect(ghosts.some((n) => manager.deviceFaults.store.records(n).length > 0)).toBe(false);
      expect((await metrics.publicFaultsRefused.get()).values.find((v) => v.labels.reason === 'unknown_node' && v.labels.via === 'grpc')?.value).toBe(30);
      const faultId = `real-${rand()}`;
      expect((await unaryCall<{ code: number }>(c, 'pubFault', 'SendPublicFault', req(faultId, [real!]))).code).toBe(0);
      await eventually(() => manager.deviceFaults.store.records(real!).some((r) => r.origin === 'grpc-pubfault/CCAE'), 5_000);
      await sleep(5_000);
      expect((await unaryCall<{ code: number }>(c, 'pubFault', 'SendPublicFault', req(faultId, [real!], 'recover'))).code).toBe(0);
      await eventually(() => manager.deviceFaults.store.records(real!).length === 0, 5_000);
    } finally {
      c.close();
      await manager.stop();
      await client.delete(paths.node(real!)).catch(() => undefined);
    }
  }, 60_000);
});
