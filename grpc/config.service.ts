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
 * ClusterD keeps every registration; an anonymous client could grow that map without bound, so we
 * keep at most `maxRegistrations` and, past it, forget the oldest one no stream listens on (else the
 * oldest): the answer stays 0 (a bound hit is counted).
 */
import { status as GrpcStatus, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { grpcCodeName, refuseStream, reply, serverStream, unary, type CallContext } from './call-context.ts';
import type { Status } from './codes.ts';
import type { ConfigHandlers } from './handlers.ts';
import type { ClientInfo, RankTableStream } from './messages.ts';
import { ServerSignalStream, type SignalStreamOptions } from './signal-stream.ts';
import { clip } from './validate.ts';

export const CONFIG_PATH = '/config.Config/';

interface Registration {
  readonly seq: number;
  /** Streams listening (ClusterD lets several read one publisher; the newest gets the pushes here). */
  readonly streams: Array<ServerSignalStream<RankTableStream>>;
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

  /** ListenDataChange; false when the job id has no registration. */
  listen(jobId: string, stream: ServerSignalStream<RankTableStream>): boolean {
    const reg = this.regs.get(jobId);
    if (reg === undefined) return false;
    reg.streams.push(stream);
    // deletePublisher: the registration ends with the stream (unless it was replaced meanwhile)
    stream.onClose(() => { if (this.regs.get(jobId)?.seq === reg.seq) this.regs.delete(jobId); });
    return true;
  }

  /** rankTableChange: pushed to the newest listening stream; false when none listens. */
  push(jobId: string, rankTable: string): boolean {
    const s = this.regs.get(jobId)?.streams.filter((x) => !x.closed).at(-1);
    if (s === undefined) return false;
    void s.send({ jobId, rankTable });
    return true;
  }

  closeAll(): void {
    for (const id of [...this.regs.keys()]) this.drop(id);
  }

  private drop(jobId: string): void {
    const reg = this.regs.get(jobId);
    if (reg === undefined) return;
    this.regs.delete(jobId);
    for (const s of reg.streams) s.close('replaced', true);
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
  return {
    Register: unary<Status>(ctx, `${CONFIG_PATH}Register`, async (raw) => {
      const c = clientOf(raw);
      registry.register(c.jobId);
      ctx.log.info('config service registration', { jobId: clip(c.jobId), role: clip(c.role) });
      return reply<Status>({ code: 0, info: 'register success' });
    }),
    SubscribeRankTable: serverStream(ctx, subscribePath, async (call: ServerWritableStream<unknown, unknown>) => {
      const c = clientOf(call.request);
      if (!registry.registered(c.jobId)) return refuseStream(ctx, subscribePath, call, GrpcStatus.UNKNOWN, `jobId=${c.jobId} not registered, role=${c.role}`);
      const stream = new ServerSignalStream<RankTableStream>(call as ServerWritableStream<unknown, RankTableStream>, c, d.streamOptions);
      registry.listen(c.jobId, stream);
      ctx.count({ method: subscribePath, grpcCode: grpcCodeName(GrpcStatus.OK) });
      ctx.log.info('rank table subscription', { jobId: clip(c.jobId), role: clip(c.role), streamId: stream.id });
      stream.onClose((reason) => ctx.log.info('rank table subscription ended', { jobId: clip(c.jobId), streamId: stream.id, reason }));
      d.handlers.subscribed(c.jobId);
    }),
  };
}
