/**
 * Inference jobs as ClusterD sees them (docs/rules.md#resched.pod-level-cap): a MindIE PD deployment
 * `mindie-job-1` in namespace `infer` as three instance jobs (PodGroups and pods labelled
 * `jobID=mindie-job-1`, `app=mindie-ms-server|-coordinator|-controller`; the server holds chips 0-1
 * of node-a) and an OME inference service `ome-llm` (label `ome.io/inferenceservice`) of two rank pods
 * on node-c and node-d, every job with `fault-scheduling=force`. The MindIE controller subscribes to
 * fault.Fault by its MindIE job id (ClusterD's multi-instance path), a client by the OME job's id, and
 * one for all jobs. Then a chip fault on the MindIE server's chip and its recovery, the device plugin's
 * frequency escalation (ManuallySeparateNPU, FaultFrequency) on OME rank 0's chip, OME rank 1's node
 * NotReady and Ready again, with GetFaultMsgSignal after each. Every answer and pushed message
 * (`gRPC fault.Fault`; job UIDs read `<name uid>`), and every ConfigMap both sides write (job-summary,
 * cluster-info, reset-config...) are compared. Neither side runs Volcano: clusterd-ts in ClusterD's role
 * (`--rescheduling=false`); the pod-level cap itself is the rescheduling half's and is proved by
 * test/integration/jobs-inference.test.ts.
 */
import { status as GrpcStatus, type Client, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { fromTarget } from '../../grpc/testing.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { chipName, separateManually } from '../../tools/simulator/npu-state.ts';
import type { Fields } from './collect.ts';
import { faultClient } from './scenario-fault-service.ts';
import { chipFault, recoverChip } from './scenario-process-recovery.ts';
import type { Scenario, SideContext } from './runner.ts';
import { readyPatch, type Write } from './world.ts';

const NS = 'infer';
const MINDIE_ID = 'mindie-job-1';
const CHIPS = [0, 1];
interface PodSpec { readonly node: string; readonly hostIp: string; readonly podIp: string; readonly chips: boolean }
interface JobSpec { readonly name: string; readonly uid: string; readonly labels: Record<string, string>; readonly pods: readonly PodSpec[] }
const force = { 'fault-scheduling': 'force' };
const JOBS: readonly JobSpec[] = [
  { name: 'mindie-server', uid: '1f0e0c3d-2222-4a2b-8c3d-000000000001', labels: { ...force, jobID: MINDIE_ID, app: 'mindie-ms-server' }, pods: [{ node: 'node-a', hostIp: '10.0.3.1', podIp: '127.17.0.1', chips: true }] },
  { name: 'mindie-coordinator', uid: '1f0e0c3d-2222-4a2b-8c3d-000000000002', labels: { ...force, jobID: MINDIE_ID, app: 'mindie-ms-coordinator' }, pods: [{ node: 'node-b', hostIp: '10.0.3.2', podIp: '127.17.0.2', chips: false }] },
  { name: 'mindie-controller', uid: '1f0e0c3d-2222-4a2b-8c3d-000000000003', labels: { ...force, jobID: MINDIE_ID, app: 'mindie-ms-controller' }, pods: [{ node: 'node-b', hostIp: '10.0.3.2', podIp: '127.17.0.3', chips: false }] },
  {
    name: 'ome-llm', uid: '1f0e0c3d-2222-4a2b-8c3d-000000000004', labels: { ...force, 'ome.io/inferenceservice': 'llm' }, pods: [
      { node: 'node-c', hostIp: '10.0.3.3', podIp: '127.17.0.4', chips: true },
      { node: 'node-d', hostIp: '10.0.3.4', podIp: '127.17.0.5', chips: true },
    ],
  },
];

const put = (collection: string, body: KubeObject, owner?: string): Write => ({ op: 'put', collection, body, ...(owner ? { ownerFrom: owner } : {}) });

function objects(): Write[] {
  const out: Write[] = [put(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })];
  for (const j of JOBS) {
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: j.name, uid: '', controller: true, blockOwnerDeletion: true };
    const pg = `${j.name}-${j.uid}`;
    const n = j.pods.length;
    const npus = j.pods.some((p) => p.chips) ? { minResources: { 'huawei.com/Ascend910': String(n * CHIPS.length) } } : {};
    out.push(
      put(paths.vcJobs(NS), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: j.name, namespace: NS, labels: j.labels }, spec: { minAvailable: n, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: n }] } }),
      put(paths.podGroups(NS), {
        apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: pg, namespace: NS, labels: j.labels, ownerReferences: [owner] },
        spec: { minMember: n, ...npus }, status: { phase: 'Running' },
      }, paths.vcJob(NS, j.name)),
    );
    for (const [rank, p] of j.pods.entries()) {
      const name = `${j.name}-worker-${rank}`;
      const chips: Record<string, string> = p.chips ? {
        'huawei.com/AscendReal': CHIPS.map((c) => `Ascend910-${c}`).join(','),
        'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({
          pod_name: name, server_id: p.hostIp, host_ip: p.hostIp, devices: CHIPS.map((c) => ({ device_id: String(c), device_ip: `192.168.${p.hostIp.split('.')[3]}.${c}` })),
        }),
      } : {};
      const res = p.chips ? { resources: { requests: { 'huawei.com/Ascend910': String(CHIPS.length) }, limits: { 'huawei.com/Ascend910': String(CHIPS.length) } } } : {};
      out.push(
        put(paths.pods(NS), {
          apiVersion: 'v1', kind: 'Pod',
          metadata: {
            name, namespace: NS, ownerReferences: [owner], labels: { ...j.labels, 'volcano.sh/job-name': j.name, 'volcano.sh/task-spec': 'worker' },
            annotations: { 'scheduling.k8s.io/group-name': pg, 'hccl/rankIndex': String(rank), ...chips },
          },
          spec: { nodeName: p.node, schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: 'infer:latest', ...res }] },
        }, paths.vcJob(NS, j.name)),
        { op: 'patch', path: paths.podStatus(NS, name), type: 'merge', body: { status: { phase: 'Running', hostIP: p.hostIp, podIP: p.podIp, conditions: [{ type: 'Ready', status: 'True' }] } } },
      );
    }
  }
  return out;
}

const codeName = (c: number): string => Object.entries(GrpcStatus).find(([, v]) => v === c)?.[0] ?? String(c);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface State { fields: Fields; calls: number; streams: Array<ClientReadableStream<unknown>>; clients: Map<string, Client>; uids: Map<string, string> }
const KEY = 'inference-fault';

async function state(ctx: SideContext): Promise<State> {
  let s = ctx.state.get(KEY) as State | undefined;
  if (s === undefined) {
    const uids = new Map<string, string>();
    for (const j of JOBS) uids.set((await ctx.admin.get<KubeObject>(paths.vcJob(NS, j.name))).metadata!.uid!, `<${j.name} uid>`);
    const st: State = { fields: {}, calls: 0, streams: [], clients: new Map(), uids };
    ctx.state.set(KEY, st);
    ctx.records.set('gRPC fault.Fault', () => st.fields);
    ctx.cleanups.push(() => { for (const x of st.streams) x.cancel(); for (const c of st.clients.values()) c.close(); });
    s = st;
  }
  return s;
}

/**
 * A client calling from where the subscriber runs: a job's subscriber from a pod of the job (the MindIE
 * controller's pod, OME rank 0), the all-jobs one from the host. The pod addresses are 127.0.0.0/8
 * aliases, so the calls really come from them (clusterd-ts serves a job's calls only from its pods).
 */
function clientFor(ctx: SideContext, s: State, which: string): Client {
  const ip = which === MINDIE_ID ? JOBS[2]!.pods[0]!.podIp : which === 'ome' ? JOBS[3]!.pods[0]!.podIp : undefined;
  const key = ip ?? 'host';
  let c = s.clients.get(key);
  if (c === undefined) {
    c = faultClient(ip === undefined ? ctx.grpcTarget : fromTarget(ip, ctx.grpcTarget));
    s.clients.set(key, c);
  }
  return c;
}

/** Each side's job UIDs as `<name uid>`, a uuid as its version. */
function scrub(s: State, v: string): string {
  const u = UUID.exec(v);
  if (u !== null && !s.uids.has(v)) return `<uuid v${u[1]}>`;
  let out = v;
  for (const [uid, label] of s.uids) out = out.replaceAll(uid, label);
  return out;
}
type NodeFaultInfo = { nodeIP?: string; nodeName?: string };
/**
 * ClusterD sorts `nodeFaultInfo` by nodeIP with an unstable sort over a Go map's entries
 * (component/clusterd/pkg/application/fault/publish_fault_plugin.go, grpc_service.go), so nodes of equal
 * nodeIP (here all "") come in random order: within each run of equal nodeIP, by nodeName. The order
 * by nodeIP itself is still compared.
 */
function tiesByName(list: readonly NodeFaultInfo[]): NodeFaultInfo[] {
  const out: NodeFaultInfo[] = [];
  for (let i = 0; i < list.length;) {
    let j = i;
    while (j < list.length && list[j]!.nodeIP === list[i]!.nodeIP) j++;
    out.push(...list.slice(i, j).sort((a, b) => ((a.nodeName ?? '') < (b.nodeName ?? '') ? -1 : (a.nodeName ?? '') > (b.nodeName ?? '') ? 1 : 0)));
    i = j;
  }
  return out;
}
const text = (s: State, m: unknown): string => JSON.stringify(m, (k, v: unknown) =>
  (typeof v === 'string' ? scrub(s, v) : k === 'nodeFaultInfo' && Array.isArray(v) ? tiesByName(v as NodeFaultInfo[]) : v));

/** The job id a label names: `ome` the OME job's UID, `all` "" (every job), else the text itself. */
async function jobId(ctx: SideContext, which: string): Promise<string> {
  if (which === 'all') return '';
  if (which !== 'ome') return which;
  return (await ctx.admin.get<KubeObject>(paths.vcJob(NS, 'ome-llm'))).metadata!.uid!;
}

type Unary = (req: unknown, opts: unknown, cb: (err: ServiceError | null, res?: Record<string, unknown>) => void) => void;

async function call(ctx: SideContext, method: 'Register' | 'GetFaultMsgSignal', which: string, role: string): Promise<void> {
  const s = await state(ctx);
  const id = await jobId(ctx, which);
  const c = clientFor(ctx, s, which);
  const answer = await new Promise<string>((resolve) => {
    (c as unknown as Record<string, Unary>)[method]!.call(c, { jobId: id, role }, { deadline: Date.now() + 10_000 }, (err, res) => resolve(err
      ? `error ${codeName(err.code)} ${scrub(s, JSON.stringify(err.details))}`
      : `code ${String(res?.code ?? 0)} ${scrub(s, JSON.stringify(String(res?.info ?? '')))}${method === 'GetFaultMsgSignal' ? ` signal=${text(s, res?.faultSignal ?? null)}` : ''}`));
  });
  s.fields[`call ${String(++s.calls).padStart(2, '0')} ${method} ${which} (${role})`] = answer;
}

async function subscribe(ctx: SideContext, which: string, role: string): Promise<void> {
  const s = await state(ctx);
  const c = clientFor(ctx, s, which);
  const st = (c as unknown as Record<string, (req: unknown) => ClientReadableStream<unknown>>).SubscribeFaultMsgSignal!.call(c, { jobId: await jobId(ctx, which), role });
  s.streams.push(st);
  let n = 0;
  s.fields[`stream ${which}`] = 'open';
  st.on('data', (m: unknown) => { s.fields[`stream ${which} message ${String(++n).padStart(2, '0')}`] = text(s, m); });
  st.on('error', () => undefined);
  st.on('status', (x: { code: number; details: string }) => {
    s.fields[`stream ${which}`] = x.code === GrpcStatus.OK ? 'ended OK' : `ended ${codeName(x.code)} ${scrub(s, JSON.stringify(x.details))}`;
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SUBSCRIBERS: ReadonlyArray<readonly [string, string]> = [[MINDIE_ID, 'mindie-ms-controller'], ['ome', 'FaultSubscriber'], ['all', 'FaultSubscriber']];

async function query(ctx: SideContext): Promise<void> {
  for (const [which, role] of SUBSCRIBERS) await call(ctx, 'GetFaultMsgSignal', which, role);
}

export const INFERENCE_JOB: Scenario = {
  name: 'inference-job',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }, { name: 'node-c' }, { name: 'node-d' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...objects()],
  steps: [
    {
      name: 'the MindIE controller, an OME client and an all-jobs client register and subscribe',
      perSide: async (ctx) => {
        for (const [which, role] of SUBSCRIBERS) {
          await call(ctx, 'Register', which, role);
          await subscribe(ctx, which, role);
        }
        await sleep(1500);
        await query(ctx);
      },
    },
    { name: 'chip fault 80E18402 on the MindIE server chip (node-a chip 0)', writes: (w, now) => [chipFault(w, 'node-a', 0, '80E18402', now)] },
    { name: 'queries after the MindIE fault', perSide: query },
    { name: 'the MindIE server chip recovered', writes: (w, now) => [recoverChip(w, 'node-a', 0, now)] },
    {
      name: 'device plugin escalates OME rank 0 chip by frequency (ManuallySeparateNPU)', writes: (w, now) => {
        const s = w.node('node-c');
        separateManually(s, chipName(s, 1), '80E18005', now);
        return [w.deviceInfo('node-c', now)];
      },
    },
    { name: 'queries after the frequency escalation', perSide: query },
    { name: 'OME rank 1 node (node-d) NotReady', writes: (_w, now) => [readyPatch('node-d', 'False', now)] },
    { name: 'queries after the node fault', perSide: query },
    { name: 'node-d Ready again', writes: (_w, now) => [readyPatch('node-d', 'True', now)] },
    { name: 'queries at the end', perSide: query },
  ],
};
