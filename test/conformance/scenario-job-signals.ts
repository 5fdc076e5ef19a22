/**
 * job.Job over gRPC (the snapshot's job.proto through grpc-js): clients register (whitelisted roles
 * and one that is not), subscribe (plain and List, a bad client id, a wrong role), then a PyTorch
 * job of one rank pod goes pending -> running -> pod deleted -> PodGroup deleted and a late List subscriber reads the job
 * summary. Every answer (client ids as their format), every signal (uuid as its format, times
 * normalised by the runner, the job id as the Job it names) and every stream end is recorded in
 * `gRPC job.Job` and compared.
 */
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Fields } from './collect.ts';
import { EXCEPTION_CHECK_MS, type Scenario, type SideContext } from './runner.ts';
import type { Write } from './world.ts';
import { exceptionReported } from './exception-report.ts';

const NS = 'jobsig';
const JOB = 'sig-job';
const PG = `${JOB}-0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f`;
const POD = `${JOB}-worker-0`;
const OWNER = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: JOB, uid: '', controller: true, blockOwnerDeletion: true };
const V4_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const put = (collection: string, body: KubeObject, owner?: string): Write => ({ op: 'put', collection, body, ...(owner ? { ownerFrom: owner } : {}) });

function jobCreated(): Write[] {
  const labels = { framework: 'pytorch' };
  return [
    put(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }),
    put(paths.vcJobs(NS), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: JOB, namespace: NS, labels }, spec: { minAvailable: 1, tasks: [{ name: 'worker', replicas: 1 }] } }),
    put(paths.podGroups(NS), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: PG, namespace: NS, labels, ownerReferences: [OWNER] },
      spec: { minMember: 1, minResources: { 'huawei.com/Ascend910': '2' } }, status: { phase: 'Running' },
    }, paths.vcJob(NS, JOB)),
    put(paths.pods(NS), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name: POD, namespace: NS, ownerReferences: [OWNER], labels: { app: JOB, 'volcano.sh/job-name': JOB },
        annotations: { 'hccl/rankIndex': '0', 'scheduling.k8s.io/group-name': PG },
      },
      spec: {
        nodeName: 'node-a', schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
        containers: [{ name: 'train', image: 'training:latest', env: [{ name: 'MASTER_ADDR', value: '10.0.3.1' }], resources: { requests: { 'huawei.com/Ascend910': '2' }, limits: { 'huawei.com/Ascend910': '2' } } }],
      },
    }, paths.vcJob(NS, JOB)),
  ];
}

function podRuns(): Write[] {
  return [
    {
      op: 'patch', path: paths.pod(NS, POD), type: 'merge',
      body: { metadata: { annotations: { 'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({ pod_name: POD, server_id: '10.0.3.1', devices: [0, 1].map((d) => ({ device_id: String(d), device_ip: `192.168.3.${d}` })) }) } } },
    },
    { op: 'patch', path: paths.podStatus(NS, POD), type: 'merge', body: { status: { phase: 'Running', hostIP: '10.0.3.1', podIP: '172.21.0.1', conditions: [{ type: 'Ready', status: 'True' }] } } },
  ];
}

// Two steps: ClusterD's job queue is read once a second, so a pod and its PodGroup deleted together
// are one transition there and two here (controllers/job-summary.controller.ts reacts at once).
const podDeleted = (): Write[] => [{ op: 'delete', path: paths.pod(NS, POD) }];
const podGroupDeleted = (): Write[] => [{ op: 'delete', path: paths.podGroup(NS, PG) }];

let ctor: ServiceClientConstructor | undefined;
function jobClient(target: string): Client {
  if (ctor === undefined) {
    const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'job', 'job.proto');
    ctor = (loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).job as GrpcObject).Job as ServiceClientConstructor;
  }
  return new ctor(target, credentials.createInsecure());
}

const codeName = (c: number): string => Object.entries(GrpcStatus).find(([, v]) => v === c)?.[0] ?? String(c);
type Signal = Record<string, string>;
const signalText = (m: Signal): string =>
  Object.entries(m).map(([k, v]) => `${k}=${k === 'uuid' ? (V4_UUID.test(v) ? '<uuid v4>' : JSON.stringify(v)) : v}`).join(' ');

interface State { fields: Fields; calls: number; streams: Array<ClientReadableStream<unknown>>; client: Client | undefined; ids: Map<string, string> }
const KEY = 'job';
function state(ctx: SideContext): State {
  let s = ctx.state.get(KEY) as State | undefined;
  if (s === undefined) {
    const st: State = { fields: {}, calls: 0, streams: [], client: undefined, ids: new Map() };
    ctx.state.set(KEY, st);
    ctx.records.set('gRPC job.Job', () => st.fields);
    ctx.cleanups.push(() => { for (const x of st.streams) x.cancel(); st.client?.close(); });
    s = st;
  }
  s.client ??= jobClient(ctx.grpcTarget);
  return s;
}

async function register(ctx: SideContext, label: string, role: string): Promise<void> {
  const s = state(ctx);
  const c = s.client!;
  const answer = await new Promise<string>((resolve) =>
    (c as unknown as Record<string, (r: object, o: object, cb: (e: ServiceError | null, r?: { code?: number; info?: string; clientId?: string }) => void) => void>).Register!.call(c, { role }, { deadline: Date.now() + 10_000 }, (e, r) => {
      if (e) return resolve(`error ${codeName(e.code)} ${JSON.stringify(e.details)}`);
      if (r?.clientId) s.ids.set(label, r.clientId);
      resolve(`code ${r?.code ?? 0} ${JSON.stringify(r?.info ?? '')} clientId=${V4_UUID.test(r?.clientId ?? '') ? '<uuid v4>' : JSON.stringify(r?.clientId ?? '')}`);
    }));
  s.fields[`call ${String(++s.calls).padStart(2, '0')} Register ${label} (${role})`] = answer;
}

function subscribe(ctx: SideContext, label: string, role: string, client: string, list: boolean): void {
  const s = state(ctx);
  const c = s.client!;
  const method = list ? 'SubscribeJobSummarySignalList' : 'SubscribeJobSummarySignal';
  const call = (c as unknown as Record<string, (r: object) => ClientReadableStream<unknown>>)[method]!.call(c, { role, clientId: s.ids.get(client) ?? client });
  s.streams.push(call);
  let n = 0;
  s.fields[`stream ${label}`] = 'open';
  call.on('data', (m: Signal | { jobSummarySignals?: Signal[]; ReportTime?: string; JobTotalNum?: number }) => {
    const key = `stream ${label} message ${String(++n).padStart(2, '0')}`;
    if (list) {
      const l = m as { jobSummarySignals?: Signal[]; ReportTime?: string; JobTotalNum?: number };
      s.fields[key] = `total=${l.JobTotalNum ?? 0} reportTime=${l.ReportTime ?? ''} [${(l.jobSummarySignals ?? []).map(signalText).join(' | ')}]`;
    } else s.fields[key] = signalText(m as Signal);
  });
  call.on('error', () => undefined);
  call.on('status', (st: { code: number; details: string }) => { s.fields[`stream ${label}`] = st.code === GrpcStatus.OK ? 'ended OK' : `ended ${codeName(st.code)} ${JSON.stringify(st.details)}`; });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const JOB_SIGNALS: Scenario = {
  name: 'job-signals',
  nodes: [{ name: 'node-a' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)])],
  steps: [
    {
      name: 'clients register and subscribe',
      perSide: async (ctx) => {
        await register(ctx, 'cc', 'CCAgent');
        await register(ctx, 'fd', 'FdAgent');
        await register(ctx, 'bad', 'taskd');
        subscribe(ctx, 'unknown client', 'CCAgent', 'no-such-client', false);
        subscribe(ctx, 'wrong role', 'FdAgent', 'cc', false);
        subscribe(ctx, 'cc', 'CCAgent', 'cc', false);
        subscribe(ctx, 'fd list', 'FdAgent', 'fd', true);
        await sleep(1500);
      },
    },
    // Each side reports (and clears) the pending job in scheduling-exception-report on its own 10 s
    // check: these steps wait for both checks.
    { name: 'a PyTorch job is created (pending)', writes: () => jobCreated(), settleMinMs: EXCEPTION_CHECK_MS },
    exceptionReported('the pending job', [JOB], 'PodPending'),
    { name: 'its pod runs', writes: () => podRuns(), settleMinMs: EXCEPTION_CHECK_MS },
    { name: 'its pod is deleted', writes: () => podDeleted(), settleMinMs: EXCEPTION_CHECK_MS },
    { name: 'its PodGroup is deleted', writes: () => podGroupDeleted(), settleMinMs: EXCEPTION_CHECK_MS },
    {
      name: 'a late List subscriber',
      perSide: async (ctx) => {
        await register(ctx, 'late', 'DefaultUser1');
        subscribe(ctx, 'late list', 'DefaultUser1', 'late', true);
        await sleep(1500);
      },
    },
  ],
};
