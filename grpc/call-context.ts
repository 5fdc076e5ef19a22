/**
 * Shared plumbing of the service implementations: the unary QPS interceptor, request counting,
 * logging, and the rule that nothing a client sends can crash the process (a handler that throws
 * becomes gRPC UNKNOWN, as a Go handler's returned error does in ClusterD).
 */
import { status as GrpcStatus, type ServerUnaryCall, type ServerWritableStream, type handleUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { Info } from './codes.ts';
import type { CountRequest, GrpcLogger } from './handlers.ts';
import type { CallerGate } from './peer.ts';
import { TokenBucket, type Now } from './rate-limit.ts';

export const HEALTH_CHECK_METHOD = '/Recover/HealthCheck';

/** gRPC status number -> name (`OK`, `UNKNOWN`, ...), for logs and the request counter. */
export const grpcCodeName = (code: number): string =>
  (Object.entries(GrpcStatus).find(([, v]) => v === code)?.[0]) ?? String(code);

/**
 * ClusterD's unary interceptor (docs/grpc.md#transport): `/Recover/HealthCheck` has its own bucket, every other
 * unary method shares one. Streams are not limited.
 */
export class UnaryRateLimiter {
  private readonly shared: TokenBucket;
  private readonly health: TokenBucket;

  constructor(limits: { unaryQps: number; healthCheckQps: number }, now: Now) {
    this.shared = new TokenBucket(limits.unaryQps, limits.unaryQps, now);
    this.health = new TokenBucket(limits.healthCheckQps, limits.healthCheckQps, now);
  }

  allow(method: string): boolean {
    return (method === HEALTH_CHECK_METHOD ? this.health : this.shared).tryTake();
  }
}

/** The caps on what callers hold in the server (each refusal or drop is a bound hit). */
export type GrpcBound =
  | 'grpc_fault_roles_per_job'
  | 'grpc_fault_publishers_per_client'
  | 'grpc_fault_publishers'
  | 'grpc_side_streams_per_job'
  | 'grpc_config_registrations'
  | 'grpc_job_clients'
  | 'grpc_stream_pending_writes';

export interface CallContext {
  readonly log: GrpcLogger;
  readonly count: CountRequest;
  readonly limiter: UnaryRateLimiter;
  /** Calls that act on a job: only from an address of one of the job's pods (peer.ts). */
  readonly gate: CallerGate;
  /** A cap refused or dropped something (counted and logged by the wiring). */
  readonly boundHit: (bound: GrpcBound, message: string, fields: Record<string, unknown>) => void;
}

/** What a unary implementation decides: a response (with its body code), or a gRPC error. */
export type UnaryOutcome<Res> =
  | { readonly kind: 'reply'; readonly response: Res; readonly code: number; readonly reason?: string }
  | { readonly kind: 'error'; readonly grpcCode: GrpcStatus; readonly details: string };

export const reply = <Res extends { code: number; info?: string }>(response: Res): UnaryOutcome<Res> => ({
  kind: 'reply',
  response,
  code: response.code,
});
export const grpcError = (grpcCode: GrpcStatus, details: string): UnaryOutcome<never> => ({ kind: 'error', grpcCode, details });

/** Wrap a unary implementation with rate limiting, error containment, counting and logging. */
export function unary<Res>(
  ctx: CallContext,
  method: string,
  run: (request: unknown, call: ServerUnaryCall<unknown, Res>) => Promise<UnaryOutcome<Res>>,
): handleUnaryCall<unknown, Res> {
  return (call, callback: sendUnaryData<Res>) => {
    if (!ctx.limiter.allow(method)) {
      // counted, but logged at debug only: a flood must not turn into a log flood
      ctx.count({ method, grpcCode: grpcCodeName(GrpcStatus.UNKNOWN) });
      ctx.log.debug('grpc call rate-limited', { method });
      callback({ code: GrpcStatus.UNKNOWN, details: Info.qpsExceeded(method) });
      return;
    }
    run(call.request, call).then(
      (outcome) => finish(ctx, method, callback, outcome),
      (err: unknown) => {
        ctx.log.error('grpc handler failed', { method, err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
        finish(ctx, method, callback, grpcError(GrpcStatus.UNKNOWN, 'internal error'));
      },
    );
  };
}

function finish<Res>(ctx: CallContext, method: string, callback: sendUnaryData<Res>, outcome: UnaryOutcome<Res>): void {
  if (outcome.kind === 'reply') {
    ctx.count({ method, grpcCode: 'OK', code: outcome.code });
    ctx.log.debug('grpc call', { method, code: outcome.code });
    callback(null, outcome.response);
  } else {
    ctx.count({ method, grpcCode: grpcCodeName(outcome.grpcCode) });
    // the caller gate (peer.ts) logs its own refusals, at most one line a minute
    const level = outcome.grpcCode === GrpcStatus.PERMISSION_DENIED ? 'debug' : 'warn';
    ctx.log[level]('grpc call refused', { method, grpcCode: grpcCodeName(outcome.grpcCode), details: outcome.details });
    callback({ code: outcome.grpcCode, details: outcome.details });
  }
}

/** Refuse a server-streaming call with a gRPC status (counted and logged). */
export function refuseStream(ctx: CallContext, method: string, call: ServerWritableStream<unknown, unknown>, code: GrpcStatus, details: string): void {
  ctx.count({ method, grpcCode: grpcCodeName(code) });
  const level = code === GrpcStatus.PERMISSION_DENIED ? 'debug' : 'warn';
  ctx.log[level]('grpc stream refused', { method, grpcCode: grpcCodeName(code), details });
  call.emit('error', { code, details });
}

/** Wrap a server-streaming implementation so that a throw or rejection ends the call with UNKNOWN. */
export function serverStream(
  ctx: CallContext,
  method: string,
  run: (call: ServerWritableStream<unknown, unknown>) => Promise<void>,
): (call: ServerWritableStream<unknown, unknown>) => void {
  return (call) => {
    run(call).catch((err: unknown) => {
      ctx.log.error('grpc stream handler failed', { method, err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      if (!call.writableEnded && !call.cancelled) refuseStream(ctx, method, call, GrpcStatus.UNKNOWN, 'internal error');
    });
  };
}
