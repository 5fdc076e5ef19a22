/**
 * config.Config end to end: the shipped controller (`node main.ts`) on the real apiserver, called
 * through MindCluster's config.proto as MindIE calls it. A MindIE PD deployment (server, coordinator
 * and controller instance jobs on kwok nodes, labelled `jobID` / `app`) and the server's
 * `rings-config-*` rank table: Register, SubscribeRankTable, the global rank table pushed after the
 * subscription and again when the rank table changes, and ClusterD's refusal without a registration.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Pod } from '../../runtime/kube-objects.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { fakeNodes, rand } from './recovery-fixtures.ts';
import { ControllerProcess, freePort } from './recovery-real-client.ts';

type Table = { jobId: string; rankTable: string };
type Group = { group_id: string; server_count: string; deploy_server?: string; server_list: Array<{ server_id: string; server_ip?: string; device?: Array<{ device_logical_id: string }> }> };

function configClient(target: string): Client {
  const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'config', 'config.proto');
  const ctor = (loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).config as GrpcObject).Config as ServiceClientConstructor;
  return new ctor(target, credentials.createInsecure());
}

const rankTable = (deviceIp: string): string => JSON.stringify({
  status: 'completed', version: '1.0', server_count: '1',
  server_list: [{ server_id: 'srv', host_ip: '10.9.0.1', container_ip: '172.30.0.9', device: [0, 1].map((d) => ({ device_id: String(d), device_ip: `${deviceIp}.${d}`, rank_id: String(d) })) }],
});

describe('config.Config on the shipped controller (real apiserver, MindCluster\'s config.proto)', () => {
  const admin = adminClient();
  let controller: ControllerProcess | undefined;
  const streams: Array<ClientReadableStream<Table>> = [];
  afterAll(async () => {
    for (const s of streams) s.cancel();
    await controller?.stop();
  }, 30_000);

  it('Register, SubscribeRankTable and the global rank table of a MindIE deployment', async () => {
    controller = await new ControllerProcess(await freePort(), ['--rescheduling=false'], join(mkdtempSync(join(tmpdir(), 'cfg-real-')), 'controller.log')).start().ready();
    const nodes = await fakeNodes(admin, `cfg-${rand()}`, 2);
    const ns = await newNamespace(admin, 'cfg');
    const jobId = `mindie-${rand()}`;
    for (const [i, app] of ['mindie-ms-server', 'mindie-ms-coordinator', 'mindie-ms-controller'].entries()) {
      const name = `${app}-${rand()}`;
      const labels = { jobID: jobId, app };
      const vc = await admin.create<KubeObject>(paths.vcJobs(ns), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: ns, labels }, spec: { minAvailable: 1, tasks: [{ name: 'w', replicas: 1 }] } });
      const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid: vc.metadata!.uid!, controller: true };
      await admin.create(paths.podGroups(ns), { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: `${name}-pg`, namespace: ns, labels, ownerReferences: [owner] }, spec: { minMember: 1 }, status: { phase: 'Running' } });
      await admin.create(paths.pods(ns), {
        apiVersion: 'v1', kind: 'Pod', metadata: { name: `${name}-0`, namespace: ns, labels, ownerReferences: [owner], annotations: { 'scheduling.k8s.io/group-name': `${name}-pg` } },
        spec: { nodeName: nodes[i % 2], tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image: 'mindie:latest' }] },
      });
    }
    const running = await eventually(async () => {
      const list = await admin.list<Pod>(paths.pods(ns));
      return list.items.length === 3 && list.items.every((p) => p.status?.phase === 'Running') ? list.items : undefined;
    }, 60_000);
    // kwok's fake nodes have no address: the kubelet's part is written here.
    for (const [i, p] of running.entries()) {
      await admin.patch(paths.podStatus(ns, p.metadata!.name!), { status: { hostIP: `10.8.0.${i + 1}`, podIP: `172.31.0.${i + 1}` } }, 'merge');
    }
    const pods = await eventually(async () => {
      const list = await admin.list<Pod>(paths.pods(ns));
      return list.items.every((p) => p.status?.podIP && p.status?.hostIP) ? list.items : undefined;
    }, 10_000);
    const ipOf = (app: string) => pods.find((p) => p.metadata?.labels?.app === app)!.status!;
    const cm = (deviceIp: string) => ({
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: 'rings-config-mindie-server-0', namespace: ns, labels: { 'mx-consumer-cim': 'true', jobID: jobId, 'grt-group/deploy-server': '1' } },
      data: { 'hccl.json': rankTable(deviceIp) },
    });
    await admin.create(paths.configMaps(ns), cm('192.168.40'));

    const c = configClient(controller.target);
    const subscribe = (): { messages: Table[]; status: Promise<{ code: number; details: string }> } => {
      const s = (c as unknown as Record<string, (r: object) => ClientReadableStream<Table>>).SubscribeRankTable!.call(c, { jobId, role: 'mindie-ms-controller' });
      streams.push(s);
      const messages: Table[] = [];
      s.on('data', (m: Table) => void messages.push(m));
      s.on('error', () => undefined);
      return { messages, status: new Promise((r) => s.on('status', (st: { code: number; details: string }) => r({ code: st.code, details: st.details }))) };
    };
    expect(await subscribe().status).toEqual({ code: GrpcStatus.UNKNOWN, details: `jobId=${jobId} not registered, role=mindie-ms-controller` });
    const registered = await new Promise<unknown>((resolve, reject) =>
      (c as unknown as Record<string, (r: object, cb: (e: ServiceError | null, r?: unknown) => void) => void>).Register!.call(c, { jobId, role: 'mindie-ms-controller' }, (e, r) => (e ? reject(e) : resolve(r))));
    expect(registered).toEqual({ code: 0, info: 'register success' });

    const s = subscribe();
    await eventually(() => s.messages.length >= 1, 20_000);
    const table = JSON.parse(s.messages[0]!.rankTable) as { version: string; status: string; server_group_list: Group[] };
    expect(s.messages[0]!.jobId).toBe(jobId);
    expect(table.status).toBe('completed');
    expect(table.server_group_list.map((g) => g.group_id)).toEqual(['0', '1', '2']);
    expect(table.server_group_list[0]!.server_list).toEqual([{ server_id: ipOf('mindie-ms-coordinator').hostIP, server_ip: ipOf('mindie-ms-coordinator').podIP }]);
    expect(table.server_group_list[1]!.server_list).toEqual([{ server_id: ipOf('mindie-ms-controller').hostIP, server_ip: ipOf('mindie-ms-controller').podIP }]);
    expect(table.server_group_list[2]).toMatchObject({ deploy_server: '1', server_count: '1', server_list: [{ server_id: '10.9.0.1', server_ip: '172.30.0.9' }] });

    // The rank table changes: pushed again.
    const before = s.messages.length;
    const current = await admin.get<KubeObject>(paths.configMap(ns, 'rings-config-mindie-server-0'));
    await admin.replace(paths.configMap(ns, 'rings-config-mindie-server-0'), { ...cm('192.168.41'), metadata: { ...cm('192.168.41').metadata, resourceVersion: current.metadata!.resourceVersion } });
    // Pushes of other triggers (the instance pods' events) may come first; the change's own push carries the new addresses.
    await eventually(() => s.messages.slice(before).some((m) => m.rankTable.includes('192.168.41.1')) || undefined, 10_000);
    expect(s.messages.at(-1)!.rankTable).toContain('192.168.41.1');
    c.close();
  }, 180_000);
});
