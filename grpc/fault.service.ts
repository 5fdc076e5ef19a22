/**
 * `fault.Fault` service (fault.proto, package `fault`: paths `/fault.Fault/<Method>`), docs/grpc.md#fault-service.
 * jobId '' means cluster-wide and becomes '-1'. Go handler errors are gRPC UNKNOWN here as in ClusterD.
 *
 * Stricter than ClusterD: Register and SubscribeFaultMsgSignal for a job pass the caller gate
 * (peer.ts) with scope `namespace`: the caller must be a pod in the job's namespace, since the
 * legitimate subscriber of a job (a MindIE controller, whose subscription also starts the MindIE
 * RestartRequest hold of the server job, docs/rules.md#filter.mindie-hold) runs in a pod of its own beside the
 * job; another namespace's tenant cannot subscribe for the job. The cluster-wide publisher (`-1`)
 * names no job and is open to any address. Every publisher counts against the per-job, per-client
 * and total caps (registry.ts), refused with RESOURCE_EXHAUSTED.
 */
import { status as GrpcStatus, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { Code, Info, type Status } from './codes.ts';
import { grpcError, refuseStream, reply, serverStream, unary, type CallContext } from './call-context.ts';
import type { Awaitable, FaultHandlers } from './handlers.ts';
import { toClientInfo, type ClientInfo, type FaultMsgSignal, type FaultQueryResult } from './messages.ts';
import type { QueuedLimiter } from './rate-limit.ts';
import type { FaultRegistry, FaultRegisterOutcome } from './registry.ts';
import { ServerSignalStream, type SignalStreamOptions } from './signal-stream.ts';
import { peerIp } from './peer.ts';
import type { GrpcBound } from './call-context.ts';
import { clip, validFaultQueryJobId, validJobId, validRole } from './validate.ts';

export const FAULT_PATH = '/fault.Fault/';
export const CLUSTER_JOB_ID = '-1';

export interface FaultServiceDeps {
  readonly ctx: CallContext;
  readonly registry: FaultRegistry;
  readonly handlers: FaultHandlers;
  /** The job id names a job, or (ClusterD's multi-instance path) a MindIE job id whose instance job has `app=<role>`. */
  readonly jobExists: (jobId: string, role: string) => Awaitable<boolean>;
  /** GetFaultMsgSignal limiter (ClusterD: 10/s, burst 10, wait queue 50). */
  readonly queryLimiter: QueuedLimiter;
  /** Bound on each stream's queued writes. */
  readonly streamOptions?: SignalStreamOptions;
}

const CAP_BOUND: Readonly<Record<Exclude<FaultRegisterOutcome, 'ok' | 'max-serve-jobs'>, GrpcBound>> = {
  'roles-per-job': 'grpc_fault_roles_per_job',
  'publishers-per-client': 'grpc_fault_publishers_per_client',
  publishers: 'grpc_fault_publishers',
};

const faultClient = (raw: unknown): ClientInfo => {
  const c = toClientInfo(raw);
  return c.jobId === '' ? { ...c, jobId: CLUSTER_JOB_ID } : c;
};

export function faultService(d: FaultServiceDeps): UntypedServiceImplementation {
  const { ctx, registry, handlers } = d;
  const m = (name: string): string => FAULT_PATH + name;

  return {
    Register: unary<Status>(ctx, m('Register'), async (raw, call) => {
      const c = faultClient(raw);
      if (c.role === '') return grpcError(GrpcStatus.UNKNOWN, 'role is empty');
      if (!validRole(c.role)) return grpcError(GrpcStatus.UNKNOWN, `role=${clip(c.role)} is invalid`);
      if (c.jobId !== CLUSTER_JOB_ID && (!validJobId(c.jobId) || !(await d.jobExists(c.jobId, c.role)))) {
        return grpcError(GrpcStatus.UNKNOWN, Info.faultJobUnknown(clip(c.jobId)));
      }
      if (c.jobId !== CLUSTER_JOB_ID) {
        const denied = await ctx.gate.refusal(m('Register'), c.jobId, call.getPeer(), 'namespace');
        if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      }
      const client = peerIp(call.getPeer());
      const outcome = registry.register(c.jobId, c.role, client);
      if (outcome === 'max-serve-jobs') {
        return reply<Status>({ code: Code.OutOfMaxServeJobs, info: `serve jobs reach the max number ${registry.maxServeJobs}` });
      }
      if (outcome !== 'ok') {
        const cap = { 'roles-per-job': registry.maxRolesPerJob, 'publishers-per-client': registry.maxPublishersPerClient, publishers: registry.maxPublishers }[outcome];
        const details = `fault publisher refused: ${outcome} cap ${cap} reached, jobId=${clip(c.jobId)} role=${clip(c.role)}`;
        ctx.boundHit(CAP_BOUND[outcome], 'fault publisher refused at a cap', { jobId: clip(c.jobId), role: clip(c.role), client, cap });
        return grpcError(GrpcStatus.RESOURCE_EXHAUSTED, details);
      }
      ctx.log.info('fault publisher registered', { jobId: c.jobId, role: c.role });
      return reply<Status>({ code: Code.OK, info: Info.registerSuccess });
    }),

    SubscribeFaultMsgSignal: serverStream(ctx, m('SubscribeFaultMsgSignal'), async (call) => {
      const method = m('SubscribeFaultMsgSignal');
      const c = faultClient(call.request);
      if (!registry.isRegistered(c.jobId, c.role)) {
        refuseStream(ctx, method, call, GrpcStatus.UNKNOWN, Info.faultNotRegistered(clip(c.jobId), clip(c.role)));
        return;
      }
      if (c.jobId !== CLUSTER_JOB_ID) {
        const denied = await ctx.gate.refusal(method, c.jobId, call.getPeer(), 'namespace');
        if (denied !== undefined) {
          refuseStream(ctx, method, call, GrpcStatus.PERMISSION_DENIED, denied);
          return;
        }
      }
      const stream = new ServerSignalStream<FaultMsgSignal>(call as ServerWritableStream<unknown, FaultMsgSignal>, c, d.streamOptions);
      registry.attachStream(c.jobId, c.role, stream);
      ctx.count({ method, grpcCode: 'OK' });
      let subscription: ReturnType<FaultHandlers['subscribe']> | undefined;
      stream.onClose((reason) => {
        registry.detachStream(c.jobId, c.role, stream);
        ctx.log.info('fault stream closed', { jobId: c.jobId, role: c.role, reason });
        try {
          subscription?.onClose(reason);
        } catch (err) {
          ctx.log.error('fault subscription onClose failed', { jobId: c.jobId, err: String(err) });
        }
      });
      try {
        subscription = handlers.subscribe(stream);
      } catch (err) {
        ctx.log.error('fault subscribe handler failed', { jobId: c.jobId, err: String(err) });
        stream.close('server-ended');
        return;
      }
      if (stream.closed) subscription.onClose(stream.signal.reason as Parameters<typeof subscription.onClose>[0]);
    }),

    GetFaultMsgSignal: unary<FaultQueryResult>(ctx, m('GetFaultMsgSignal'), async (raw) => {
      const c = faultClient(raw);
      if (!validFaultQueryJobId(c.jobId)) return grpcError(GrpcStatus.UNKNOWN, Info.faultJobInvalid(clip(c.jobId)));
      if (!(await d.queryLimiter.acquire())) return grpcError(GrpcStatus.UNKNOWN, Info.faultRateLimited);
      const signal = await handlers.query(c.jobId);
      // ClusterD's texts (GetFaultMsgSignal, component/clusterd/pkg/application/fault/grpc_service.go).
      const info = c.jobId === CLUSTER_JOB_ID ? 'Succeed' : signal !== null ? 'all info returned' : `job with jobId: ${clip(c.jobId)} not found fault info`;
      return reply<FaultQueryResult>({ code: Code.SuccessCode, info, faultSignal: signal });
    }),
  };
}
