/**
 * TrainingDataTrace over gRPC (the snapshot's profiling.proto through grpc-js): two running
 * Volcano-like jobs of one rank pod each, `dt-mounted` whose pod mounts
 * /user/cluster-info/datatrace-config (Modify writes `data-trace-dt-mounted`) and `dt-plain` whose
 * pod does not (Modify only pushes to the subscriber). TaskD's subscription is opened from each
 * job's pod address (as TaskD in the pod: clusterd-ts checks the caller), and one for a job that
 * does not exist. Every answer (gRPC status, body code and message), every pushed message and
 * every stream end is recorded in `gRPC TrainingDataTrace` and compared; the ConfigMaps are
 * compared as written objects, and the data-trace ConfigMap's owner in `data-trace owner`.
 */
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { fromTarget } from '../../grpc/testing.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Fields } from './collect.ts';
import type { Scenario, SideContext } from './runner.ts';
import { configMap, type Write } from './world.ts';

const NS = 'dt';
const MOUNT_PATH = '/user/cluster-info/datatrace-config';
const JOBS = [
  { name: 'dt-mounted', node: 'node-a', ip: '127.17.0.1', mounted: true, uid: '3b0f6a52-5d8e-4c1f-9a77-0c2d1e4f5a61' },
  { name: 'dt-plain', node: 'node-b', ip: '127.17.0.2', mounted: false, uid: '8e4c2b19-7f3a-4d6e-b1c0-9a8f7e6d5c42' },
] as const;
const ON = { CommunicationOperator: 'on', Step: 'on', SaveCheckpoint: 'off', FP: 'on', DataLoader: 'off' };
const ALL_OFF = { CommunicationOperator: 'off', Step: 'off', SaveCheckpoint: 'off', FP: 'off', DataLoader: 'off' };

const put = (collection: string, body: KubeObject, owner?: string): Write => ({ op: 'put', collection, body, ...(owner ? { ownerFrom: owner } : {}) });

function jobObjects(): Write[] {
  const out: Write[] = [put(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })];
  for (const j of JOBS) {
    const ownerRef = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: j.name, uid: '', controller: true, blockOwnerDeletion: true };
    const pod = `${j.name}-worker-0`;
    const hostIp = j.node === 'node-a' ? '10.0.1.1' : '10.0.1.2';
    out.push(
      put(paths.vcJobs(NS), {
        apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: j.name, namespace: NS },
        spec: { minAvailable: 1, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: 1 }] },
      }),
      put(paths.podGroups(NS), {
        apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
        metadata: { name: `${j.name}-${j.uid}`, namespace: NS, ownerReferences: [ownerRef] },
        spec: { minMember: 1, minResources: { 'huawei.com/Ascend910': '2' } }, status: { phase: 'Running' },
      }, paths.vcJob(NS, j.name)),
      put(paths.pods(NS), {
        apiVersion: 'v1', kind: 'Pod',
        metadata: {
          name: pod, namespace: NS, ownerReferences: [ownerRef],
          labels: { app: j.name, 'volcano.sh/job-name': j.name, 'volcano.sh/task-spec': 'worker' },
          annotations: {
            'hccl/rankIndex': '0', 'scheduling.k8s.io/group-name': `${j.name}-${j.uid}`, 'huawei.com/AscendReal': 'Ascend910-0,Ascend910-1',
            'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({
              pod_name: pod, server_id: hostIp, host_ip: hostIp, devices: [0, 1].map((c) => ({ device_id: String(c), device_ip: `192.168.9.${c}` })),
            }),
          },
        },
        spec: {
          nodeName: j.node, schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
          ...(j.mounted ? { volumes: [{ name: 'data-trace', emptyDir: {} }] } : {}),
          containers: [{
            name: 'train', image: 'training:latest',
            resources: { requests: { 'huawei.com/Ascend910': '2' }, limits: { 'huawei.com/Ascend910': '2' } },
            ...(j.mounted ? { volumeMounts: [{ name: 'data-trace', mountPath: MOUNT_PATH }] } : {}),
          }],
        },
      }, paths.vcJob(NS, j.name)),
      {
        op: 'patch', path: paths.podStatus(NS, pod), type: 'merge',
        body: { status: { phase: 'Running', hostIP: hostIp, podIP: j.ip, conditions: [{ type: 'Ready', status: 'True' }] } },
      },
    );
  }
  return out;
}

let ctor: ServiceClientConstructor | undefined;
/** ClusterD's TrainingDataTrace service from the snapshot's profiling.proto. */
function traceClient(target: string): Client {
  if (ctor === undefined) {
    const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'profiling', 'profiling.proto');
    ctor = loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).TrainingDataTrace as ServiceClientConstructor;
  }
  return new ctor(target, credentials.createInsecure());
}

const codeName = (c: number): string => Object.entries(GrpcStatus).find(([, v]) => v === c)?.[0] ?? String(c);
const switchText = (s: unknown): string => (s === null || s === undefined ? 'nil' : JSON.stringify(s));

/** Per side: the record's fields, the open streams, a call counter. */
interface State { fields: Fields; calls: number; streams: Map<string, { call: ClientReadableStream<unknown>; messages: number }>; clients: Client[] }
const KEY = 'data-trace';
const state = (ctx: SideContext): State => {
  let s = ctx.state.get(KEY) as State | undefined;
  if (s === undefined) {
    s = { fields: {}, calls: 0, streams: new Map(), clients: [] };
    ctx.state.set(KEY, s);
    const st = s;
    ctx.records.set('gRPC TrainingDataTrace', () => st.fields);
    ctx.cleanups.push(() => { for (const x of st.streams.values()) x.call.cancel(); for (const c of st.clients) c.close(); });
  }
  return s;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** TaskD's SubscribeDataTraceSwitch from `ip`, recorded as `stream <label>`. */
function subscribe(ctx: SideContext, label: string, ip: string, jobId: string): void {
  const s = state(ctx);
  const c = traceClient(fromTarget(ip, ctx.grpcTarget));
  s.clients.push(c);
  const call = (c as unknown as Record<string, (req: unknown) => ClientReadableStream<unknown>>).SubscribeDataTraceSwitch!.call(c, { jobId, role: 'taskd' });
  const entry = { call, messages: 0 };
  s.streams.set(label, entry);
  s.fields[`stream ${label}`] = 'open';
  call.on('data', (m: { message?: string; code?: number; profilingSwitch?: unknown }) => {
    s.fields[`stream ${label} message ${++entry.messages}`] = `code ${m.code ?? 0} ${JSON.stringify(m.message ?? '')} switch=${switchText(m.profilingSwitch)}`;
  });
  call.on('error', () => undefined);
  call.on('status', (st: { code: number; details: string }) => {
    // grpc-go ends an OK stream without a message, grpc-js with "OK"; no client reads it.
    s.fields[`stream ${label}`] = st.code === GrpcStatus.OK ? 'ended OK' : `ended ${codeName(st.code)} ${JSON.stringify(st.details)}`;
  });
}

/** One unary call, recorded as `call NN <method> <request>`. */
async function unary(ctx: SideContext, method: 'ModifyTrainingDataTraceSwitch' | 'GetTrainingDataTraceSwitch', request: Record<string, unknown>): Promise<void> {
  const s = state(ctx);
  const c = traceClient(ctx.grpcTarget);
  s.clients.push(c);
  const answer = await new Promise<string>((resolve) => {
    const fn = (c as unknown as Record<string, (req: unknown, opts: unknown, cb: (err: ServiceError | null, res?: Record<string, unknown>) => void) => void>)[method]!;
    fn.call(c, request, { deadline: Date.now() + 10_000 }, (err, res) => resolve(err
      ? `error ${codeName(err.code)} ${JSON.stringify(err.details)}`
      : `code ${String(res?.code ?? 0)} ${JSON.stringify(res?.message ?? '')}${method === 'GetTrainingDataTraceSwitch' ? ` switch=${switchText(res?.profilingSwitch)}` : ''}`));
  });
  s.fields[`call ${String(++s.calls).padStart(2, '0')} ${method} ${JSON.stringify(request)}`] = answer;
}

/** The data-trace ConfigMap's ownerReferences (the UID is left out: it differs per cluster). */
async function recordOwner(ctx: SideContext): Promise<void> {
  const cm = await ctx.admin.get<KubeObject>(paths.configMap(NS, 'data-trace-dt-mounted')).catch(() => undefined);
  const refs = (cm?.metadata?.ownerReferences ?? []) as Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }>;
  const jobUid = (await ctx.admin.get<KubeObject>(paths.vcJob(NS, 'dt-mounted'))).metadata?.uid;
  const f: Fields = { count: String(refs.length) };
  refs.forEach((r, i) => { f[`owner ${i}`] = `${r.apiVersion} ${r.kind} ${r.name} uid=${r.uid === jobUid ? 'the Job' : r.uid} controller=${String(r.controller)} blockOwnerDeletion=${String(r.blockOwnerDeletion)}`; });
  ctx.records.set('data-trace owner', () => f);
}

const mounted = JOBS[0];
const plain = JOBS[1];

export const DATA_TRACE: Scenario = {
  name: 'data-trace',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    {
      name: 'TaskD subscribes: both jobs, and a job that does not exist',
      perSide: async (ctx) => {
        const uid = async (name: string) => (await ctx.admin.get<KubeObject>(paths.vcJob(NS, name))).metadata!.uid!;
        subscribe(ctx, 'dt-mounted', mounted.ip, await uid(mounted.name));
        subscribe(ctx, 'dt-plain', plain.ip, await uid(plain.name));
        subscribe(ctx, 'unknown job', plain.ip, 'f0f0f0f0-0000-4000-8000-000000000000');
        await sleep(2000);
      },
    },
    {
      name: 'Modify: the plain job (pushed only), a malformed name, a job that does not exist',
      perSide: async (ctx) => {
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${plain.name}`, profilingSwitch: ON });
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${plain.name}/x`, profilingSwitch: ON });
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/nobody`, profilingSwitch: ON });
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${plain.name}` });
        await sleep(1000);
      },
    },
    {
      name: 'Modify: the mounted job (data-trace ConfigMap created, pushed)',
      perSide: async (ctx) => {
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}`, profilingSwitch: ON });
        await sleep(1000);
        await recordOwner(ctx);
      },
    },
    {
      name: 'Get: mounted job, plain job (no ConfigMap), malformed name, no namespace',
      perSide: async (ctx) => {
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}` });
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: `${NS}/${plain.name}` });
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: mounted.name });
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: `/${mounted.name}` });
      },
    },
    {
      name: 'Modify: the mounted job again (update), and without a switch',
      perSide: async (ctx) => {
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}`, profilingSwitch: ALL_OFF });
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}` });
        await sleep(1000);
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}` });
      },
    },
    {
      name: 'a second TaskD subscription of the plain job preempts the first',
      perSide: async (ctx) => {
        const uid = (await ctx.admin.get<KubeObject>(paths.vcJob(NS, plain.name))).metadata!.uid!;
        subscribe(ctx, 'dt-plain (second)', plain.ip, uid);
        await sleep(1500);
        await unary(ctx, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${NS}/${plain.name}`, profilingSwitch: ALL_OFF });
        await sleep(1000);
      },
    },
    {
      name: 'someone rewrites data-trace-dt-mounted with a number and without the key',
      writes: () => [configMap(NS, 'data-trace-dt-mounted', { profilingSwitch: '{"fp":"on","Step":1}' }, { reset: 'true' })],
    },
    {
      name: 'Get after the rewrite',
      perSide: async (ctx) => {
        await sleep(1000);
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}` });
      },
    },
    {
      name: 'the key removed',
      writes: () => [configMap(NS, 'data-trace-dt-mounted', { other: 'x' }, { reset: 'true' })],
    },
    {
      name: 'Get without the key',
      perSide: async (ctx) => {
        await sleep(1000);
        await unary(ctx, 'GetTrainingDataTraceSwitch', { jobNsName: `${NS}/${mounted.name}` });
      },
    },
  ],
};
