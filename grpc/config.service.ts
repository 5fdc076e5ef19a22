/**
 * `config.Config` service (config.proto, package `config`), docs/grpc.md#config-service. ClusterD:
 * component/clusterd/pkg/application/config/grpc_service.go and publisher.go.
 *
 * - Register(jobId, role): always `{0, "register success"}`; a new registration of a job id
 *   replaces the previous one (whose listening stream, if any, ends with status OK).
 * - SubscribeRankTable(jobId, role): without a registration UNKNOWN `jobId=<id> not registered,
 *   role=<role>`; else the stream listens (and a global rank table is generated for the job, pushed
 *   as `RankTableStream{jobId, rankTable}` each time one is generated) until the client leaves or the
 *   job registers again; when it ends the registration goes with it.
 *
 * With the caller check (ClusterD has none: any client may register any job id and read its
 * table), a job id that names a MindIE job is served only to a pod in that job's namespace or a
 * system caller (else PERMISSION_DENIED); one that names none yet to any pod, since MindIE may
 * register before its PodGroup exists, but a table is pushed only to a stream whose caller sees
 * the namespace of the job it was built for.
 *
 * ClusterD keeps every registration; an anonymous client could grow that map without bound, so we
 * keep at most `maxRegistrations` and, past it, forget the oldest one no stream listens on (else the
 * oldest): the answer stays 0 (a bound hit is counted).
 */
import { status as GrpcStatus, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { grpcCodeName, grpcError, refuseStream, reply, serverStream, unary, type CallContext } from './call-context.ts';
import type { Status } from './codes.ts';
import type { ConfigHandlers, Visibility } from './handlers.ts';
import type { ClientInfo, RankTableStream } from './messages.ts';
import { ServerSignalStream, type SignalStreamOptions } from './signal-stream.ts';
import { clip } from './validate.ts';

export const CONFIG_PATH = '/config.Config/';

interface Registration {
  readonly seq: number;
  /** Streams listening (ClusterD lets several read one publisher; the newest gets the pushes here). */
  readonly streams: Array<{ readonly stream: ServerSignalStream<RankTableStream>; readonly sees: Visibility }>;
}

export class ConfigRegistry {
  private readonly regs = new Map<string, Registration>();
  private seq = 0;
  readonly maxRegistrations: number;
  private readonly onEvict: (jobId: string) => void;

  constructor(maxRegistrations: number, onEvict: (jobId: string) => void = () => {}) {
    this.maxRegistrations = maxRegistrations;
    this.onEvict = onEvict;
  }

  get size(): number { return this.regs.size; }
  registered(jobId: string): boolean { return this.regs.has(jobId); }

  /** preemptPublisher: a fresh registration; the old one's streams end with status OK. */
  register(jobId: string): void {
    this.drop(jobId);
    if (this.regs.size >= this.maxRegistrations) {
      let victim: string | undefined;
      for (const [id, r] of this.regs) if (r.streams.length === 0) { victim = id; break; }
      victim ??= this.regs.keys().next().value;
      if (victim !== undefined) { this.drop(victim); this.onEvict(victim); }
    }
    this.regs.set(jobId, { seq: ++this.seq, streams: [] });
  }

  /** ListenDataChange by a caller who sees `sees`; false when the job id has no registration. */
  listen(jobId: string, stream: ServerSignalStream<RankTableStream>, sees: Visibility = () => true): boolean {
    const reg = this.regs.get(jobId);
    if (reg === undefined) return false;
    reg.streams.push({ stream, sees });
    // deletePublisher: the registration ends with the stream (unless it was replaced meanwhile)
    stream.onClose(() => { if (this.regs.get(jobId)?.seq === reg.seq) this.regs.delete(jobId); });
    return true;
  }

  /**
   * rankTableChange: the table of the job id's job in `namespace`, pushed to the newest listening
   * stream if its caller sees that namespace; false when none listens or its caller may not see it.
   */
  push(jobId: string, namespace: string, rankTable: string): boolean {
    const s = this.regs.get(jobId)?.streams.filter((x) => !x.stream.closed).at(-1);
    if (s === undefined || !s.sees(namespace)) return false;
    void s.stream.send({ jobId, rankTable });
    return true;
  }

  closeAll(): void {
    for (const id of [...this.regs.keys()]) this.drop(id);
  }

  private drop(jobId: string): void {
    const reg = this.regs.get(jobId);
    if (reg === undefined) return;
    this.regs.delete(jobId);
    for (const s of reg.streams) s.stream.close('replaced', true);
  }
}

export interface ConfigServiceDeps {
  readonly ctx: CallContext;
  readonly registry: ConfigRegistry;
  readonly handlers: ConfigHandlers;
  readonly streamOptions?: SignalStreamOptions;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const clientOf = (raw: unknown): ClientInfo => {
  const r = (raw ?? {}) as Record<string, unknown>;
  return { jobId: str(r.jobId), role: str(r.role) };
};

export function configService(d: ConfigServiceDeps): UntypedServiceImplementation {
  const { ctx, registry } = d;
  const subscribePath = `${CONFIG_PATH}SubscribeRankTable`;
  const registerPath = `${CONFIG_PATH}Register`;
  /**
   * A job id that names a MindIE job: only a pod in its namespace or a system caller. One that names
   * none yet (MindIE may register before its PodGroup exists): any pod, but pushes reach it only
   * for a job in a namespace it sees (ConfigRegistry.push).
   */
  const refusal = async (path: string, jobId: string, peer: string): Promise<string | undefined> => {
    if (ctx.gate.open) return undefined;
    const namespaces = await d.handlers.namespacesOf(jobId);
    return namespaces.length === 0 ? ctx.gate.strangerRefusal(path, peer) : ctx.gate.namespaceRefusal(path, namespaces, peer);
  };
  return {
    Register: unary<Status>(ctx, registerPath, async (raw, call) => {
      const c = clientOf(raw);
      const denied = await refusal(registerPath, c.jobId, call.getPeer());
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      registry.register(c.jobId);
      ctx.log.info('config service registration', { jobId: clip(c.jobId), role: clip(c.role) });
      return reply<Status>({ code: 0, info: 'register success' });
    }),
    SubscribeRankTable: serverStream(ctx, subscribePath, async (call: ServerWritableStream<unknown, unknown>) => {
      const c = clientOf(call.request);
      const notRegistered = `jobId=${c.jobId} not registered, role=${c.role}`;
      if (!registry.registered(c.jobId)) return refuseStream(ctx, subscribePath, call, GrpcStatus.UNKNOWN, notRegistered);
      const denied = await refusal(subscribePath, c.jobId, call.getPeer());
      if (denied !== undefined) return refuseStream(ctx, subscribePath, call, GrpcStatus.PERMISSION_DENIED, denied);
      if (call.cancelled) return;
      // the registration may have gone while the job id was looked up
      if (!registry.registered(c.jobId)) return refuseStream(ctx, subscribePath, call, GrpcStatus.UNKNOWN, notRegistered);
      const stream = new ServerSignalStream<RankTableStream>(call as ServerWritableStream<unknown, RankTableStream>, c, d.streamOptions);
      registry.listen(c.jobId, stream, ctx.gate.visibility(call.getPeer()));
      ctx.count({ method: subscribePath, grpcCode: grpcCodeName(GrpcStatus.OK) });
      ctx.log.info('rank table subscription', { jobId: clip(c.jobId), role: clip(c.role), streamId: stream.id });
      stream.onClose((reason) => ctx.log.info('rank table subscription ended', { jobId: clip(c.jobId), streamId: stream.id, reason }));
      d.handlers.subscribed(c.jobId);
    }),
  };
}
