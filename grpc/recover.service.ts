/**
 * `Recover` service (recover.proto, no package: paths `/Recover/<Method>`), docs/grpc.md#recover-service, #server-behaviour.
 * Transport only: checks, registry bookkeeping, keep-alive; decisions go to RecoverHandlers.
 * Every call that acts on a job (Init, Register, the subscriptions, the reports, the O&M replies)
 * first passes the caller gate (peer.ts): stricter than ClusterD, which serves any address.
 */
import { status as GrpcStatus, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { Code, Info, status, type Status } from './codes.ts';
import { grpcError, refuseStream, reply, serverStream, unary, type CallContext, type UnaryOutcome } from './call-context.ts';
import type { OmKind, RecoverHandlers } from './handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import {
  processManageSignal,
  toClientInfo,
  toProcessFaultRequest,
  toRecoverStatusRequest,
  toRecoverStrategyRequest,
  toStopCompleteRequest,
  toStressTestParam,
  toStressTestResult,
  toSwitchNics,
  toSwitchResult,
  type ClientInfo,
  type FaultRank,
} from './messages.ts';
import { clientKind, type RecoverRegistry } from './registry.ts';
import { ServerSignalStream, type SignalStreamOptions } from './signal-stream.ts';
import { checkReportSizes, clip, validJobId, validRole } from './validate.ts';
import type { QueueClock } from '../runtime/clock.ts';

export const RECOVER_PATH = '/Recover/';
export const DEFAULT_KEEP_ALIVE_SIGNAL_MS = 5_000;

export interface RecoverServiceDeps {
  readonly ctx: CallContext;
  readonly registry: RecoverRegistry;
  readonly handlers: RecoverHandlers;
  /** Interval of `keep-alive` signals on each subscription (ClusterD: 5 s). */
  readonly keepAliveSignalMs?: number;
  /** The controller's clock (runtime/clock.ts): the keep-alive signals' period. */
  readonly clock: QueueClock;
  /** Bound on each stream's queued writes. */
  readonly streamOptions?: SignalStreamOptions;
}

type Reply = Promise<UnaryOutcome<Status>>;
const answer = (s: Status): UnaryOutcome<Status> => reply({ code: s.code, info: s.info });
const invalidRole = (c: ClientInfo): UnaryOutcome<Status> => answer(status(Code.InvalidReqParam, `role=${clip(c.role)} is invalid`));
const peerOf = (call: { getPeer(): string }): string => call.getPeer();

export function recoverService(d: RecoverServiceDeps): UntypedServiceImplementation {
  const { ctx, registry, handlers } = d;
  const keepAliveMs = d.keepAliveSignalMs ?? DEFAULT_KEEP_ALIVE_SIGNAL_MS;
  const m = (name: string): string => RECOVER_PATH + name;

  const noteRole = (method: string, c: ClientInfo): void => {
    if (clientKind(c.role) === 'other') ctx.log.warn('unexpected Recover client role', { method, jobId: clip(c.jobId), role: clip(c.role) });
  };

  /** A report: 400 unless registered, 409 when oversized, else the handler's answer. */
  const report = <R extends { jobId: string; faultRanks?: readonly FaultRank[] }>(
    name: string,
    parse: (raw: unknown) => R,
    sizes: (r: R) => Parameters<typeof checkReportSizes>[0],
    handle: (r: R) => Promise<Status> | Status,
  ) =>
    unary<Status>(ctx, m(name), async (raw, call): Reply => {
      const r = parse(raw);
      const denied = await ctx.gate.refusal(m(name), r.jobId, peerOf(call));
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      if (!registry.isRegistered(r.jobId)) {
        return answer(status(Code.UnRegistry, `jobId=${clip(r.jobId)} is not registered`));
      }
      const size = checkReportSizes(sizes(r));
      if (!size.ok) return answer(status(Code.InvalidReqParam, size.reason));
      ctx.log.info(`receive ${name}`, { jobId: r.jobId });
      return answer(await handle(r));
    });

  const subscribeProcessManageSignal = serverStream(ctx, m('SubscribeProcessManageSignal'), async (call) => {
    const method = m('SubscribeProcessManageSignal');
    const client = toClientInfo(call.request);
    const denied = await ctx.gate.refusal(method, client.jobId, peerOf(call));
    if (denied !== undefined) {
      refuseStream(ctx, method, call, GrpcStatus.PERMISSION_DENIED, denied);
      return;
    }
    if (!registry.isRegistered(client.jobId)) {
      refuseStream(ctx, method, call, GrpcStatus.UNKNOWN, Info.recoverNotRegistered(clip(client.jobId)));
      return;
    }
    noteRole(method, client);
    const stream = new ServerSignalStream<ProcessManageSignal>(call as ServerWritableStream<unknown, ProcessManageSignal>, client, d.streamOptions);
    registry.attachStream(client, stream); // a previous subscriber of the job is closed as `replaced`
    ctx.count({ method, grpcCode: 'OK' });
    ctx.log.info('process signal stream opened', { jobId: client.jobId, role: client.role, streamId: stream.id });
    let subscription: ReturnType<RecoverHandlers['subscribe']> | undefined;
    // A keep-alive every keepAliveMs, re-armed after each (a period on the controller's clock).
    let timer: unknown;
    let open = true;
    const keepAlive = (): void => {
      timer = d.clock.setTimeout(() => {
        if (!open) return;
        const uuid = subscription?.currentUuid?.() ?? '';
        void stream.send(processManageSignal({ uuid, jobId: client.jobId, signalType: 'keep-alive' }));
        keepAlive();
      }, keepAliveMs);
    };
    keepAlive();
    stream.onClose((reason) => {
      open = false;
      d.clock.clearTimeout(timer);
      registry.detachStream(client.jobId, stream);
      const level = reason === 'client-cancelled' || reason === 'write-error' || reason === 'slow-consumer' ? 'warn' : 'info';
      ctx.log[level]('process signal stream closed', { jobId: client.jobId, streamId: stream.id, reason });
      try {
        subscription?.onClose(reason);
      } catch (err) {
        ctx.log.error('recover subscription onClose failed', { jobId: client.jobId, err: String(err) });
      }
    });
    try {
      subscription = handlers.subscribe(stream);
    } catch (err) {
      ctx.log.error('recover subscribe handler failed', { jobId: client.jobId, err: String(err) });
      stream.close('server-ended');
      return;
    }
    if (stream.closed) subscription.onClose(stream.signal.reason as Parameters<typeof subscription.onClose>[0]);
  });

  /**
   * SubscribeNotifySwitch / SubscribeNotifyExecStressTest: UNKNOWN until registered, then open; the
   * operation's agent messages come on it, and it ends with the job's controller reset (docs/grpc.md#om).
   */
  const idleNotifyStream = (name: string, kind: OmKind) =>
    serverStream(ctx, m(name), async (call) => {
      const client = toClientInfo(call.request);
      const denied = await ctx.gate.refusal(m(name), client.jobId, peerOf(call));
      if (denied !== undefined) {
        refuseStream(ctx, m(name), call, GrpcStatus.PERMISSION_DENIED, denied);
        return;
      }
      if (!registry.isRegistered(client.jobId)) {
        refuseStream(ctx, m(name), call, GrpcStatus.UNKNOWN, Info.notifyNotRegistered(clip(client.jobId)));
        return;
      }
      const stream = new ServerSignalStream<unknown>(call, client, d.streamOptions);
      if (registry.attachSideStream(client.jobId, stream) === 'cap') {
        const cap = registry.maxSideStreamsPerJob;
        ctx.boundHit('grpc_side_streams_per_job', 'notify stream refused at the per-job cap', { method: m(name), jobId: clip(client.jobId), cap });
        stream.close('server-ended', false);
        refuseStream(ctx, m(name), call, GrpcStatus.RESOURCE_EXHAUSTED, `jobId=${clip(client.jobId)} holds ${cap} notify streams already`);
        return;
      }
      ctx.count({ method: m(name), grpcCode: 'OK' });
      stream.onClose(() => registry.detachSideStream(client.jobId, stream));
      handlers.om?.notifyStream(kind, stream);
    });

  /** O&M result streams: UNKNOWN unless the job runs that operation; then one message and OK (docs/grpc.md#om). */
  const omResultStream = (name: string, op: string, kind: OmKind) =>
    serverStream(ctx, m(name), async (call) => {
      const jobId = String((call.request as { jobID?: unknown } | null)?.jobID ?? '');
      const denied = await ctx.gate.refusal(m(name), jobId, peerOf(call));
      if (denied !== undefined) {
        refuseStream(ctx, m(name), call, GrpcStatus.PERMISSION_DENIED, denied);
        return;
      }
      const om = handlers.om;
      const refusal = om === undefined
        ? (registry.isRegistered(jobId) ? `jobId=${clip(jobId)} no ${op} operation running` : Info.recoverNotRegistered(clip(jobId)))
        : om.resultRefusal(kind, jobId);
      if (om === undefined || refusal !== undefined) {
        refuseStream(ctx, m(name), call, GrpcStatus.UNKNOWN, refusal ?? '');
        return;
      }
      ctx.count({ method: m(name), grpcCode: 'OK' });
      om.resultStream(kind, new ServerSignalStream<{ jobID: string; msg: string }>(call as ServerWritableStream<unknown, { jobID: string; msg: string }>, { jobId, role: '' }, d.streamOptions));
    });

  /** StressTest / SwitchNicTrack: the O&M platform's request (413 without an O&M handler). */
  const omStart = <R extends { jobId: string }>(name: string, parse: (raw: unknown) => R, handle: (r: R) => Promise<Status> | Status) =>
    unary<Status>(ctx, m(name), async (raw, call): Reply => {
      const r = parse(raw);
      if (handlers.om === undefined) return answer(status(Code.OMParamInvalid, `${name} is not supported by this server`));
      const denied = await ctx.gate.refusal(m(name), r.jobId, peerOf(call));
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      ctx.log.info(`receive ${name}`, { jobId: clip(r.jobId) });
      return answer(await handle(r));
    });

  /** ReplyStressTestResult / ReplySwitchNicResult: the agents' result (400 unless registered). */
  const omReply = <R extends { jobId: string }>(name: string, parse: (raw: unknown) => R, handle: (r: R) => Promise<Status> | Status) =>
    unary<Status>(ctx, m(name), async (raw, call): Reply => {
      const r = parse(raw);
      const denied = await ctx.gate.refusal(m(name), r.jobId, peerOf(call));
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      if (!registry.isRegistered(r.jobId)) return answer(status(Code.UnRegistry, Info.recoverNotRegistered(clip(r.jobId))));
      if (handlers.om === undefined) return answer(status(Code.OMParamInvalid, `${name}: no operation running for jobId=${clip(r.jobId)}`));
      ctx.log.info(`receive ${name}`, { jobId: r.jobId });
      return answer(await handle(r));
    });

  return {
    Init: unary<Status>(ctx, m('Init'), async (raw, call): Reply => {
      const c = toClientInfo(raw);
      if (!validJobId(c.jobId)) return answer(status(Code.OperatePodGroupError, `jobId=${clip(c.jobId)} is invalid`));
      if (!validRole(c.role)) return invalidRole(c);
      const denied = await ctx.gate.refusal(m('Init'), c.jobId, peerOf(call));
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      noteRole(m('Init'), c);
      return answer(await registry.init(c, (x) => handlers.init(x)));
    }),
    Register: unary<Status>(ctx, m('Register'), async (raw, call): Reply => {
      const c = toClientInfo(raw);
      if (!validRole(c.role)) return invalidRole(c);
      const denied = await ctx.gate.refusal(m('Register'), c.jobId, peerOf(call));
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      return answer(await registry.register(c, (x) => handlers.register(x)));
    }),
    SubscribeProcessManageSignal: subscribeProcessManageSignal,
    ReportStopComplete: report('ReportStopComplete', toStopCompleteRequest, (r) => ({ faultRanks: r.faultRanks, strings: [r.status.info] }), (r) => handlers.reportStopComplete(r)),
    ReportRecoverStrategy: report('ReportRecoverStrategy', toRecoverStrategyRequest, (r) => ({ faultRanks: r.faultRanks, lists: [r.strategies] }), (r) => handlers.reportRecoverStrategy(r)),
    ReportRecoverStatus: report('ReportRecoverStatus', toRecoverStatusRequest, (r) => ({ strings: [r.status.info, r.strategy], lists: [r.isolateRankIds] }), (r) => handlers.reportRecoverStatus(r)),
    ReportProcessFault: report('ReportProcessFault', toProcessFaultRequest, (r) => ({ faultRanks: r.faultRanks }), (r) => handlers.reportProcessFault(r)),
    HealthCheck: unary<Status>(ctx, m('HealthCheck'), async (raw): Reply => answer(status(Code.OK, Info.healthCheck(clip(toClientInfo(raw).jobId, 256))))),
    SwitchNicTrack: omStart('SwitchNicTrack', toSwitchNics, (r) => handlers.om!.switchNicTrack(r)),
    SubscribeSwitchNicSignal: omResultStream('SubscribeSwitchNicSignal', 'switch nic', 'switchNic'),
    SubscribeNotifySwitch: idleNotifyStream('SubscribeNotifySwitch', 'switchNic'),
    ReplySwitchNicResult: omReply('ReplySwitchNicResult', toSwitchResult, (r) => handlers.om!.replySwitchNicResult(r)),
    StressTest: omStart('StressTest', toStressTestParam, (r) => handlers.om!.stressTest(r)),
    SubscribeStressTestResponse: omResultStream('SubscribeStressTestResponse', 'stress test', 'stressTest'),
    SubscribeNotifyExecStressTest: idleNotifyStream('SubscribeNotifyExecStressTest', 'stressTest'),
    ReplyStressTestResult: omReply('ReplyStressTestResult', toStressTestResult, (r) => handlers.om!.replyStressTestResult(r)),
  };
}
