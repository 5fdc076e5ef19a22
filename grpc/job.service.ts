/**
 * `job.Job` service (job.proto, package `job`), docs/grpc.md#job-service. ClusterD:
 * component/clusterd/pkg/application/jobinfo/job_grpc_service.go.
 *
 * - Register(role): roles CCAgent, DefaultUser1, DefaultUser2, FdAgent only (else UNKNOWN
 *   `role:<role> is not in whitelist`); `{200, "registration successful", clientId}` with a fresh
 *   random uuid; at the client cap `{429, "client num limit, max client num is <cap>", ""}`.
 * - SubscribeJobSummarySignal / SubscribeJobSummarySignalList(role, clientId): the client must be
 *   registered with that role (UNKNOWN `invalid clientId: <id>, please register first` / `invalid
 *   role: <role>, please check role first`), at most 20 streams a role (a client's new stream
 *   replaces its old one, which ends CANCELLED `context canceled`), 20 subscriptions a second
 *   (UNKNOWN `rate limited, there is too many requests, please retry later`). The List variant first
 *   sends every job of the job summary in batches of at most 40,000 NPUs; then every job summary
 *   signal is sent as it comes (the List variant wraps each in a list of one). When a client's last
 *   stream ends the client is forgotten.
 * - Every job summary change is broadcast to every registered client, subscribed or not: each
 *   keeps at most 10 undelivered signals (more are dropped), delivered when it subscribes.
 *
 * ClusterD caps clients at 100,000; we at `maxClients` (each holds up to 10 references to shared signals).
 *
 * ClusterD sends every job to every client (its clients, CCAgent and FdAgent, are system
 * components). With the caller check, Register and the subscriptions from an address that is no
 * pod's and no system caller's are refused (PERMISSION_DENIED), and a client that is not a system
 * caller gets only the signals (List batches included) of jobs in the namespaces where its caller
 * has a pod: the registering caller's until it subscribes, then the reading one's.
 */
import { status as GrpcStatus, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { grpcCodeName, refuseStream, reply, serverStream, unary, type CallContext } from './call-context.ts';
import type { JobHandlers, Visibility } from './handlers.ts';
import type { JobSummarySignal } from './messages.ts';
import { TokenBucket, type Now } from './rate-limit.ts';
import { ServerSignalStream, type SignalStreamOptions } from './signal-stream.ts';
import { clip } from './validate.ts';
import { JOB_MAX_NPUS_PER_BATCH, newUuid } from './service-constants.ts';

export { JOB_MAX_NPUS_PER_BATCH, newUuid };

export const JOB_PATH = '/job.Job/';
export const JOB_ROLE_WHITELIST = ['CCAgent', 'DefaultUser1', 'DefaultUser2', 'FdAgent'] as const;
/** constant.MsgCacheNumPerClient, MaxClientPerRole, RequestNumPerSecondLimit (MaxNPUsPerBatch: service-constants.ts). */
export const JOB_MSG_CACHE = 10;
export const JOB_MAX_STREAMS_PER_ROLE = 20;
export const JOB_SUBSCRIBE_QPS = 20;

type Listener = ServerSignalStream<unknown> & { readonly list: boolean; readonly raw: ServerWritableStream<unknown, unknown> };

/** The stream's handler returns its cancelled context's error: CANCELLED `context canceled`. */
const cancel = (l: Listener): void => {
  if (l.closed) return;
  try { l.raw.emit('error', { code: GrpcStatus.CANCELLED, details: 'context canceled' }); } catch { /* gone */ }
  l.close('replaced', false);
};

interface JobClient {
  readonly role: string;
  /** Whose signals it gets: the namespaces of its caller (the registering one, then the reading one). */
  sees: Visibility;
  readonly pending: JobSummarySignal[];
  stream: Listener | undefined;
  streams: number;
}

export class JobClientRegistry {
  private readonly clients = new Map<string, JobClient>();
  private readonly active = new Map<string, number>();
  readonly maxClients: number;
  private readonly now: Now;
  constructor(maxClients: number, now: Now) { this.maxClients = maxClients; this.now = now; }
  get size(): number { return this.clients.size; }
  get(id: string): JobClient | undefined { return this.clients.get(id); }
  activeOf(role: string): number { return this.active.get(role) ?? 0; }

  add(id: string, role: string, sees: Visibility = () => true): void {
    this.clients.set(id, { role, sees, pending: [], stream: undefined, streams: 0 });
    if (!this.active.has(role)) this.active.set(role, 0);
  }

  /** The client's stream is `stream`, read by a caller who sees `sees`. */
  attach(id: string, c: JobClient, stream: Listener, sees: Visibility = c.sees): void {
    const old = c.stream;
    c.stream = stream;
    c.sees = sees;
    c.streams++;
    this.active.set(c.role, this.activeOf(c.role) + 1);
    stream.onClose(() => {
      c.streams--;
      this.active.set(c.role, this.activeOf(c.role) - 1);
      if (c.stream === stream) c.stream = undefined;
      if (c.streams <= 0 && this.clients.get(id) === c) this.clients.delete(id);
    });
    // manageClientContext: the old stream's context is cancelled
    if (old !== undefined) cancel(old);
    this.flush(c);
  }

  /** A refused subscription (rate): the old stream is cancelled and the client, left without one, forgotten. */
  refuse(id: string, c: JobClient): void {
    if (c.stream !== undefined) cancel(c.stream);
    if (this.clients.get(id) === c) this.clients.delete(id);
  }

  broadcast(signal: JobSummarySignal): void {
    for (const c of this.clients.values()) {
      if (c.pending.length >= JOB_MSG_CACHE || !c.sees(signal.namespace)) continue;
      c.pending.push(signal);
      this.flush(c);
    }
  }

  flush(c: JobClient): void {
    const s = c.stream;
    if (s === undefined || s.closed) return;
    for (const sig of c.pending.splice(0)) {
      if (!c.sees(sig.namespace)) continue;
      const out = clearLargeHccl(sig);
      void s.send(s.list ? { jobSummarySignals: [out], ReportTime: String(this.now()), JobTotalNum: 1 } : out);
    }
  }

  closeAll(): void {
    for (const c of this.clients.values()) c.stream?.close('shutdown', true);
    this.clients.clear();
  }
}

/** handleSingleJobInfo: a job of more than 40,000 NPUs (`rank_id` occurrences) goes without its hccl.json. */
export function clearLargeHccl(s: JobSummarySignal): JobSummarySignal {
  const n = s.HcclJson.split('rank_id').length - 1;
  return n > JOB_MAX_NPUS_PER_BATCH ? { ...s, HcclJson: '' } : s;
}

export interface JobServiceDeps {
  readonly ctx: CallContext;
  readonly registry: JobClientRegistry;
  readonly handlers: JobHandlers;
  readonly now: Now;
  readonly streamOptions?: SignalStreamOptions;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export function jobService(d: JobServiceDeps): UntypedServiceImplementation {
  const { ctx, registry } = d;
  const limiter = new TokenBucket(JOB_SUBSCRIBE_QPS, JOB_SUBSCRIBE_QPS, d.now);
  const registerPath = `${JOB_PATH}Register`;

  const subscribe = (name: 'SubscribeJobSummarySignal' | 'SubscribeJobSummarySignalList', list: boolean) => {
    const path = `${JOB_PATH}${name}`;
    return serverStream(ctx, path, async (call: ServerWritableStream<unknown, unknown>) => {
      const r = (call.request ?? {}) as Record<string, unknown>;
      const role = str(r.role);
      const clientId = str(r.clientId);
      const c = registry.get(clientId);
      if (c === undefined) return refuseStream(ctx, path, call, GrpcStatus.UNKNOWN, `invalid clientId: ${clientId}, please register first`);
      if (c.role !== role) return refuseStream(ctx, path, call, GrpcStatus.UNKNOWN, `invalid role: ${role}, please check role first`);
      const denied = ctx.gate.strangerRefusal(path, call.getPeer());
      if (denied !== undefined) return refuseStream(ctx, path, call, GrpcStatus.PERMISSION_DENIED, denied);
      const sees = ctx.gate.visibility(call.getPeer());
      const active = registry.activeOf(role);
      if (active >= JOB_MAX_STREAMS_PER_ROLE && c.stream === undefined) {
        return refuseStream(ctx, path, call, GrpcStatus.UNKNOWN, `role ${role} exceeded max subscription limit: current ${active}, max ${JOB_MAX_STREAMS_PER_ROLE}`);
      }
      if (!limiter.tryTake()) {
        registry.refuse(clientId, c);
        return refuseStream(ctx, path, call, GrpcStatus.UNKNOWN, 'rate limited, there is too many requests, please retry later');
      }
      const stream = Object.assign(new ServerSignalStream<unknown>(call, { jobId: clientId, role }, d.streamOptions), { list, raw: call }) as Listener;
      ctx.count({ method: path, grpcCode: grpcCodeName(GrpcStatus.OK) });
      ctx.log.info('job summary subscription', { role: clip(role), clientId: clip(clientId), list, streamId: stream.id });
      if (list) {
        const { batches, total } = await d.handlers.allJobs(sees);
        const reportTime = String(d.now());
        for (const b of batches) void stream.send({ jobSummarySignals: b.map(clearLargeHccl), ReportTime: reportTime, JobTotalNum: total });
      }
      registry.attach(clientId, c, stream, sees);
    });
  };

  return {
    Register: unary(ctx, registerPath, async (raw, call) => {
      const role = str((raw as Record<string, unknown> | null)?.role);
      if (!(JOB_ROLE_WHITELIST as readonly string[]).includes(role)) {
        ctx.log.warn('job service registration refused: role not in the whitelist', { role: clip(role) });
        return { kind: 'error', grpcCode: GrpcStatus.UNKNOWN, details: `role:${role} is not in whitelist` };
      }
      // A tenant's pod always has a pod's address: an address no pod has is no client of ours.
      const denied = ctx.gate.strangerRefusal(registerPath, call.getPeer());
      if (denied !== undefined) return { kind: 'error', grpcCode: GrpcStatus.PERMISSION_DENIED, details: denied };
      if (registry.size >= registry.maxClients) {
        ctx.boundHit('grpc_job_clients', 'job service registration refused: client cap', { cap: registry.maxClients });
        return reply({ code: 429, info: `client num limit, max client num is ${registry.maxClients}`, clientId: '' });
      }
      const clientId = newUuid();
      registry.add(clientId, role, ctx.gate.visibility(call.getPeer()));
      ctx.log.info('job service client registered', { role, clientId });
      return reply({ code: 200, info: 'registration successful', clientId });
    }),
    SubscribeJobSummarySignal: subscribe('SubscribeJobSummarySignal', false),
    SubscribeJobSummarySignalList: subscribe('SubscribeJobSummarySignalList', true),
  };
}
