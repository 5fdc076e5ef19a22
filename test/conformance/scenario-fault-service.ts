/**
 * fault.Fault over gRPC (the snapshot's fault.proto through grpc-js): the job of
 * scenario-process-recovery.ts (two rank pods on node-a and node-b; nobody subscribes to Recover)
 * and node-c without a job. A subscriber for the job (from rank 0's pod address, as a client in the
 * job's pod: clusterd-ts checks the caller) and one for all jobs (jobId "") register and subscribe;
 * a registration for a job that does not exist and a subscription without registration are refused.
 * Then a chip fault on the job's node and its recovery, a chip fault on node-c and its recovery, with
 * GetFaultMsgSignal (the job, all jobs) after each. Every answer (gRPC status, body code, info), every
 * pushed message and every stream end is recorded in `gRPC fault.Fault` and compared; in messages the
 * job's UID (different on each side) reads `<job uid>` and a uuid its version (`<uuid vN>`).
 */
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { fromTarget } from '../../grpc/testing.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Fields } from './collect.ts';
import type { Scenario, SideContext } from './runner.ts';
import { chipFault, JOB, jobObjects, NS, podIp, recoverChip } from './scenario-process-recovery.ts';

let ctor: ServiceClientConstructor | undefined;
/** ClusterD's fault.Fault service from the snapshot's fault.proto. */
export function faultClient(target: string): Client {
  if (ctor === undefined) {
    const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'fault', 'fault.proto');
    ctor = (loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).fault as GrpcObject).Fault as ServiceClientConstructor;
  }
  return new ctor(target, credentials.createInsecure());
}

const codeName = (c: number): string => Object.entries(GrpcStatus).find(([, v]) => v === c)?.[0] ?? String(c);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface State { fields: Fields; calls: number; streams: Array<ClientReadableStream<unknown>>; clients: Client[]; jobUid: string }
const KEY = 'fault';

async function state(ctx: SideContext): Promise<State> {
  let s = ctx.state.get(KEY) as State | undefined;
  if (s === undefined) {
    const jobUid = (await ctx.admin.get<KubeObject>(paths.vcJob(NS, JOB))).metadata!.uid!;
    const st: State = { fields: {}, calls: 0, streams: [], clients: [], jobUid };
    ctx.state.set(KEY, st);
    ctx.records.set('gRPC fault.Fault', () => st.fields);
    ctx.cleanups.push(() => { for (const x of st.streams) x.cancel(); for (const c of st.clients) c.close(); });
    s = st;
  }
  return s;
}

/** A message as compared: the job's UID and the uuid's value replaced (see the file comment). */
function text(s: State, m: unknown): string {
  return JSON.stringify(m, (k, v: unknown) => {
    if (typeof v !== 'string') return v;
    if (k === 'uuid') { const u = UUID.exec(v); return u === null ? v : `<uuid v${u[1]}>`; }
    return v === s.jobUid ? '<job uid>' : v;
  });
}

/** The job id a label names: `job` the job's UID, `all` "" (every job), else the text itself. */
const jobId = (s: State, which: string): string => (which === 'job' ? s.jobUid : which === 'all' ? '' : which);

type Unary = (req: unknown, opts: unknown, cb: (err: ServiceError | null, res?: Record<string, unknown>) => void) => void;

/** One unary call from `ip` (default: the host), recorded as `call NN <method> <which>`. */
async function call(ctx: SideContext, method: 'Register' | 'GetFaultMsgSignal', which: string, role: string, ip?: string): Promise<void> {
  const s = await state(ctx);
  const c = faultClient(ip === undefined ? ctx.grpcTarget : fromTarget(ip, ctx.grpcTarget));
  s.clients.push(c);
  const answer = await new Promise<string>((resolve) => {
    (c as unknown as Record<string, Unary>)[method]!.call(c, { jobId: jobId(s, which), role }, { deadline: Date.now() + 10_000 }, (err, res) => resolve(err
      ? `error ${codeName(err.code)} ${JSON.stringify(err.details).replaceAll(s.jobUid, '<job uid>')}`
      : `code ${String(res?.code ?? 0)} ${JSON.stringify(String(res?.info ?? '').replaceAll(s.jobUid, '<job uid>'))}${method === 'GetFaultMsgSignal' ? ` signal=${text(s, res?.faultSignal ?? null)}` : ''}`));
  });
  s.fields[`call ${String(++s.calls).padStart(2, '0')} ${method} ${which} (${role})`] = answer;
}

/** SubscribeFaultMsgSignal from `ip`, recorded as `stream <label>` and its messages. */
async function subscribe(ctx: SideContext, label: string, which: string, role: string, ip?: string): Promise<void> {
  const s = await state(ctx);
  const c = faultClient(ip === undefined ? ctx.grpcTarget : fromTarget(ip, ctx.grpcTarget));
  s.clients.push(c);
  const st = (c as unknown as Record<string, (req: unknown) => ClientReadableStream<unknown>>).SubscribeFaultMsgSignal!.call(c, { jobId: jobId(s, which), role });
  s.streams.push(st);
  let n = 0;
  s.fields[`stream ${label}`] = 'open';
  st.on('data', (m: unknown) => { s.fields[`stream ${label} message ${String(++n).padStart(2, '0')}`] = text(s, m); });
  st.on('error', () => undefined);
  st.on('status', (x: { code: number; details: string }) => {
    s.fields[`stream ${label}`] = x.code === GrpcStatus.OK ? 'ended OK' : `ended ${codeName(x.code)} ${JSON.stringify(x.details.replaceAll(s.jobUid, '<job uid>'))}`;
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROLE = 'FaultSubscriber';

/** GetFaultMsgSignal for the job and for all jobs. */
async function query(ctx: SideContext): Promise<void> {
  await call(ctx, 'GetFaultMsgSignal', 'job', ROLE, podIp(0));
  await call(ctx, 'GetFaultMsgSignal', 'all', ROLE);
}

export const FAULT_SERVICE: Scenario = {
  name: 'fault-service',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }, { name: 'node-c' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    {
      name: 'clients register and subscribe (the job, all jobs), refusals, queries',
      perSide: async (ctx) => {
        await call(ctx, 'Register', 'no-such-job-0001', ROLE);
        await subscribe(ctx, 'unregistered', 'job', 'OtherRole', podIp(0));
        await call(ctx, 'Register', 'job', ROLE, podIp(0));
        await subscribe(ctx, 'job', 'job', ROLE, podIp(0));
        await call(ctx, 'Register', 'all', ROLE);
        await subscribe(ctx, 'all', 'all', ROLE);
        await sleep(1500);
        await query(ctx);
      },
    },
    { name: 'chip fault 80E18402 on node-a chip 0 (the job, rank 0)', writes: (w, now) => [chipFault(w, 'node-a', 0, '80E18402', now)] },
    { name: 'queries after the job fault', perSide: query },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-a', 0, now)] },
    { name: 'queries after the recovery', perSide: query },
    { name: 'chip fault 80E18402 on node-c chip 1 (no job)', writes: (w, now) => [chipFault(w, 'node-c', 1, '80E18402', now)] },
    { name: 'queries after the fault without a job', perSide: query },
    { name: 'node-c chip recovered', writes: (w, now) => [recoverChip(w, 'node-c', 1, now)] },
    { name: 'queries at the end', perSide: query },
  ],
};
