/**
 * config.Config over gRPC (the snapshot's config.proto through grpc-js): a MindIE PD deployment
 * `mindie-job-1` in namespace `mindie` as three instance jobs (PodGroup and pods labelled
 * `jobID=mindie-job-1` and `app=mindie-ms-server` / `-coordinator` / `-controller`, one pod each) and
 * the server instance's rank table `rings-config-mindie-server-0` (label mx-consumer-cim=true, a
 * `grt-group/deploy-server` label, status completed). The MindIE controller registers and subscribes;
 * the rank table ConfigMap, a controller pod and the registration change. Every answer, every pushed
 * `RankTableStream` (its rank table byte for byte) and every stream end is recorded in
 * `gRPC config.Config` and compared.
 */
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Fields } from './collect.ts';
import type { Scenario, SideContext } from './runner.ts';
import { configMap, type Write } from './world.ts';

const NS = 'mindie';
const JOB_ID = 'mindie-job-1';
const INSTANCES = [
  { app: 'mindie-ms-server', name: 'mindie-server', node: 'node-a', hostIp: '10.0.2.1', podIp: '172.20.0.3', uid: '5a1e0c3d-1111-4a2b-8c3d-000000000001' },
  { app: 'mindie-ms-coordinator', name: 'mindie-coordinator', node: 'node-b', hostIp: '10.0.2.2', podIp: '172.20.0.4', uid: '5a1e0c3d-1111-4a2b-8c3d-000000000002' },
  { app: 'mindie-ms-controller', name: 'mindie-controller', node: 'node-b', hostIp: '10.0.2.2', podIp: '172.20.0.5', uid: '5a1e0c3d-1111-4a2b-8c3d-000000000003' },
] as const;

const put = (collection: string, body: KubeObject, owner?: string): Write => ({ op: 'put', collection, body, ...(owner ? { ownerFrom: owner } : {}) });

function rankTable(status: string, deviceIp: string): string {
  return JSON.stringify({
    status, version: '1.0', server_count: '1',
    server_list: [{ server_id: 'node-a', host_ip: '10.0.2.1', container_ip: '172.20.0.3', device: [0, 1].map((d) => ({ device_id: String(d), device_ip: `${deviceIp}.${d}`, rank_id: String(d) })) }],
  });
}
const ringsConfig = (status: string, deviceIp: string): Write => configMap(NS, 'rings-config-mindie-server-0', { 'hccl.json': rankTable(status, deviceIp) },
  { 'mx-consumer-cim': 'true', jobID: JOB_ID, 'grt-group/deploy-server': '1' });

function objects(): Write[] {
  const out: Write[] = [put(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })];
  for (const i of INSTANCES) {
    const labels = { jobID: JOB_ID, app: i.app };
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: i.name, uid: '', controller: true, blockOwnerDeletion: true };
    const pod = `${i.name}-0`;
    out.push(
      put(paths.vcJobs(NS), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: i.name, namespace: NS, labels }, spec: { minAvailable: 1, tasks: [{ name: 'worker', replicas: 1 }] } }),
      put(paths.podGroups(NS), {
        apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: `${i.name}-${i.uid}`, namespace: NS, labels, ownerReferences: [owner] },
        spec: { minMember: 1 }, status: { phase: 'Running' },
      }, paths.vcJob(NS, i.name)),
      put(paths.pods(NS), {
        apiVersion: 'v1', kind: 'Pod',
        metadata: { name: pod, namespace: NS, labels, ownerReferences: [owner], annotations: { 'scheduling.k8s.io/group-name': `${i.name}-${i.uid}` } },
        spec: { nodeName: i.node, schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: 'mindie:latest' }] },
      }, paths.vcJob(NS, i.name)),
      { op: 'patch', path: paths.podStatus(NS, pod), type: 'merge', body: { status: { phase: 'Running', hostIP: i.hostIp, podIP: i.podIp, conditions: [{ type: 'Ready', status: 'True' }] } } },
    );
  }
  out.push(ringsConfig('completed', '192.168.30'));
  return out;
}

let ctor: ServiceClientConstructor | undefined;
function configClient(target: string): Client {
  if (ctor === undefined) {
    const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'config', 'config.proto');
    ctor = (loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).config as GrpcObject).Config as ServiceClientConstructor;
  }
  return new ctor(target, credentials.createInsecure());
}

const codeName = (c: number): string => Object.entries(GrpcStatus).find(([, v]) => v === c)?.[0] ?? String(c);

interface State { fields: Fields; calls: number; streams: Array<ClientReadableStream<unknown>>; client: Client | undefined }
const KEY = 'config';
function state(ctx: SideContext): State {
  let s = ctx.state.get(KEY) as State | undefined;
  if (s === undefined) {
    const st: State = { fields: {}, calls: 0, streams: [], client: undefined };
    ctx.state.set(KEY, st);
    ctx.records.set('gRPC config.Config', () => st.fields);
    ctx.cleanups.push(() => { for (const x of st.streams) x.cancel(); st.client?.close(); });
    s = st;
  }
  s.client ??= configClient(ctx.grpcTarget);
  return s;
}

async function register(ctx: SideContext, jobId: string): Promise<void> {
  const s = state(ctx);
  const c = s.client!;
  const answer = await new Promise<string>((resolve) =>
    (c as unknown as Record<string, (r: object, o: object, cb: (e: ServiceError | null, r?: { code?: number; info?: string }) => void) => void>).Register!.call(c, { jobId, role: 'mindie-ms-controller' }, { deadline: Date.now() + 10_000 },
      (e, r) => resolve(e ? `error ${codeName(e.code)} ${JSON.stringify(e.details)}` : `code ${r?.code ?? 0} ${JSON.stringify(r?.info ?? '')}`)));
  s.fields[`call ${String(++s.calls).padStart(2, '0')} Register ${jobId}`] = answer;
}

function subscribe(ctx: SideContext, label: string, jobId: string): void {
  const s = state(ctx);
  const c = s.client!;
  const call = (c as unknown as Record<string, (r: object) => ClientReadableStream<{ jobId?: string; rankTable?: string }>>).SubscribeRankTable!.call(c, { jobId, role: 'mindie-ms-controller' });
  s.streams.push(call);
  let n = 0;
  s.fields[`stream ${label}`] = 'open';
  call.on('data', (m: { jobId?: string; rankTable?: string }) => { s.fields[`stream ${label} message ${++n}`] = `jobId=${m.jobId ?? ''} rankTable=${m.rankTable ?? ''}`; });
  call.on('error', () => undefined);
  // grpc-go ends an OK stream without a message, grpc-js with "OK"; no client reads it.
  call.on('status', (st: { code: number; details: string }) => { s.fields[`stream ${label}`] = st.code === GrpcStatus.OK ? 'ended OK' : `ended ${codeName(st.code)} ${JSON.stringify(st.details)}`; });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const CONFIG_RANK_TABLE: Scenario = {
  name: 'config-rank-table',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...objects()],
  steps: [
    {
      name: 'MindIE subscribes without registering, registers, subscribes',
      perSide: async (ctx) => {
        subscribe(ctx, 'unregistered', JOB_ID);
        await sleep(1000);
        await register(ctx, JOB_ID);
        subscribe(ctx, 'first', JOB_ID);
        await sleep(6000);
      },
    },
    { name: 'the server instance\'s rank table changes', writes: () => [ringsConfig('completed', '192.168.31')], settleMinMs: 4000 },
    { name: 'the rank table is not complete', writes: () => [ringsConfig('initializing', '192.168.31')], settleMinMs: 4000 },
    { name: 'the rank table is complete again', writes: () => [ringsConfig('completed', '192.168.32')], settleMinMs: 4000 },
    {
      name: 'the controller pod gets a label',
      writes: () => [{ op: 'patch', path: paths.pod(NS, 'mindie-controller-0'), type: 'merge', body: { metadata: { labels: { touched: 'yes' } } } }],
      settleMinMs: 4000,
    },
    {
      name: 'MindIE registers again (the first stream ends) and subscribes',
      perSide: async (ctx) => {
        await register(ctx, JOB_ID);
        await sleep(1000);
        subscribe(ctx, 'second', JOB_ID);
        await sleep(6000);
      },
    },
  ],
};
