/**
 * `TrainingDataTrace` service (profiling.proto, no package: `/TrainingDataTrace/<Method>`),
 * docs/grpc.md#trainingdatatrace-service. ClusterD: component/clusterd/pkg/application/profiling/grpc_service.go.
 *
 * - SubscribeDataTraceSwitch: TaskD opens it at every start. One stream per job id: a new one ends
 *   the previous with status OK (preemptPublisher). A job id without a stream must be a job of the
 *   job cache, or the `jobID` label of a multi-instance job whose `app` label is the role, and the
 *   served jobs must be under the cap; else UNKNOWN `jobId=<id> not registered, role=<role>`. The
 *   server sends nothing until a Modify reaches the job; the stream lasts until the client leaves or
 *   is preempted.
 * - ModifyTrainingDataTraceSwitch / GetTrainingDataTraceSwitch name the job `namespace/jobName`; the
 *   rest is the injected handler's (ConfigMap `data-trace-<job>` or a push to the subscriber). With
 *   the caller check, only a pod in that namespace or a system caller is served (ClusterD's only
 *   caller, ascend-faultdiag-online, runs inside its own process: component/ascend-faultdiag-online/
 *   pkg/utils/grpc/client.go); others get PERMISSION_DENIED and nothing is written.
 *
 * Where ClusterD's handler returns a response together with an error, grpc-go drops the response
 * and answers UNKNOWN with the error's text: so do we (`grpcError`).
 */
import { status as GrpcStatus, type ServerUnaryCall, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { grpcCodeName, grpcError, refuseStream, reply, serverStream, unary, type CallContext, type UnaryOutcome } from './call-context.ts';
import type { DataTraceHandlers, DataTraceOutcome } from './handlers.ts';
import { toProfilingSwitch, type ClientInfo, type DataStatusRes, type DataTypeRes, type ProfilingSwitch } from './messages.ts';
import { ServerSignalStream, type SignalStreamOptions } from './signal-stream.ts';
import { clip } from './validate.ts';
import { DataTraceCode } from './service-constants.ts';

export { DataTraceCode };

export const DATATRACE_PATH = '/TrainingDataTrace/';

export const DataTraceInfo = {
  badJobNsName: 'the format of jobNsName is not namespace/jobName',
  modified: 'successfully changed profiling marker enable status',
  update: 'update profiling switch',
  notRegistered: (c: ClientInfo) => `jobId=${c.jobId} not registered, role=${c.role}`,
} as const;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** parseAndValidateJobNsName: exactly one `/` (either side may be empty, as strings.Split allows). */
export function splitJobNsName(jobNsName: string): { namespace: string; name: string } | undefined {
  const parts = jobNsName.split('/');
  return parts.length === 2 ? { namespace: parts[0]!, name: parts[1]! } : undefined;
}

/**
 * The live subscription of each job id (ClusterD's publishers map). Bounded: a job id gets an entry
 * only when it names a known job and fewer than `maxServeJobs` are served.
 */
export class DataTraceRegistry {
  private readonly streams = new Map<string, ServerSignalStream<DataStatusRes>>();
  readonly maxServeJobs: number;
  constructor(maxServeJobs: number) { this.maxServeJobs = maxServeJobs; }
  has(jobId: string): boolean { return this.streams.has(jobId); }
  get size(): number { return this.streams.size; }
  /** The new stream replaces the job's previous one, which ends with status OK. */
  preempt(jobId: string, stream: ServerSignalStream<DataStatusRes>): void {
    const prev = this.streams.get(jobId);
    this.streams.set(jobId, stream);
    prev?.close('replaced', true);
    stream.onClose(() => { if (this.streams.get(jobId) === stream) this.streams.delete(jobId); });
  }
  /** publish: queue the message on the job's stream; the error text when there is none. */
  publish(jobId: string, profilingSwitch: ProfilingSwitch | null): string | undefined {
    const s = this.streams.get(jobId);
    if (s === undefined || s.closed) return `publisher for job ${jobId} not found`;
    void s.send({ message: DataTraceInfo.update, profilingSwitch, code: DataTraceCode.OK });
    return undefined;
  }
  closeAll(): void {
    for (const s of [...this.streams.values()]) s.close('shutdown', true);
    this.streams.clear();
  }
}

export interface DataTraceServiceDeps {
  readonly ctx: CallContext;
  readonly registry: DataTraceRegistry;
  readonly handlers: DataTraceHandlers;
  readonly streamOptions?: SignalStreamOptions;
}

function answer<Res extends { code: number }>(o: DataTraceOutcome<Res>): UnaryOutcome<Res> {
  return 'error' in o ? grpcError(GrpcStatus.UNKNOWN, o.error) : { kind: 'reply', response: o.reply, code: o.reply.code };
}

export function dataTraceService(d: DataTraceServiceDeps): UntypedServiceImplementation {
  const { ctx, registry } = d;
  const subscribePath = `${DATATRACE_PATH}SubscribeDataTraceSwitch`;
  // Modify / Get name the namespace themselves: the caller check comes right after the format
  // answer (which depends on the request alone), before any answer that depends on the job, so a
  // caller of another namespace learns nothing of it (not even whether the job exists).
  const modifyPath = `${DATATRACE_PATH}ModifyTrainingDataTraceSwitch`;
  const getPath = `${DATATRACE_PATH}GetTrainingDataTraceSwitch`;
  return {
    ModifyTrainingDataTraceSwitch: unary<DataTypeRes>(ctx, modifyPath, async (raw: unknown, call: ServerUnaryCall<unknown, DataTypeRes>) => {
      const req = (raw ?? {}) as Record<string, unknown>;
      const job = splitJobNsName(str(req.jobNsName));
      if (job === undefined) return grpcError(GrpcStatus.UNKNOWN, DataTraceInfo.badJobNsName);
      const denied = ctx.gate.namespaceRefusal(modifyPath, [job.namespace], call.getPeer());
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      const out = await d.handlers.modify({ ...job, profilingSwitch: toProfilingSwitch(req.profilingSwitch) }, (jobId, sw) => registry.publish(jobId, sw));
      if (!('error' in out)) ctx.log.info('data trace switch changed', { job: clip(`${job.namespace}/${job.name}`) });
      return answer(out);
    }),
    GetTrainingDataTraceSwitch: unary<DataStatusRes>(ctx, getPath, async (raw: unknown, call: ServerUnaryCall<unknown, DataStatusRes>) => {
      const job = splitJobNsName(str((raw as Record<string, unknown> | null)?.jobNsName));
      if (job === undefined) return reply<DataStatusRes>({ message: DataTraceInfo.badJobNsName, profilingSwitch: null, code: DataTraceCode.InvalidParam });
      const denied = ctx.gate.namespaceRefusal(getPath, [job.namespace], call.getPeer());
      if (denied !== undefined) return grpcError(GrpcStatus.PERMISSION_DENIED, denied);
      return answer(await d.handlers.get(job.namespace, job.name));
    }),
    SubscribeDataTraceSwitch: serverStream(ctx, subscribePath, async (call: ServerWritableStream<unknown, unknown>) => {
      const raw = (call.request ?? {}) as Record<string, unknown>;
      const client: ClientInfo = { jobId: str(raw.jobId), role: str(raw.role) };
      // ClusterD's answer first (an unknown job is UNKNOWN whoever asks), then the caller check on
      // the pods of the job the id names (a multi-instance id names its server job).
      const jobKey = await d.handlers.jobOf(client.jobId, client.role);
      if (!registry.has(client.jobId) && (jobKey === undefined || registry.size >= registry.maxServeJobs)) {
        if (jobKey !== undefined) ctx.log.warn('data trace subscription refused: served jobs at the cap', { jobId: clip(client.jobId), cap: registry.maxServeJobs });
        return refuseStream(ctx, subscribePath, call, GrpcStatus.UNKNOWN, DataTraceInfo.notRegistered(client));
      }
      const refusal = await ctx.gate.refusal(subscribePath, jobKey ?? client.jobId, call.getPeer());
      if (refusal !== undefined) return refuseStream(ctx, subscribePath, call, GrpcStatus.PERMISSION_DENIED, refusal);
      if (call.cancelled) return;
      const stream = new ServerSignalStream<DataStatusRes>(call as ServerWritableStream<unknown, DataStatusRes>, client, d.streamOptions);
      registry.preempt(client.jobId, stream);
      ctx.count({ method: subscribePath, grpcCode: grpcCodeName(GrpcStatus.OK) });
      ctx.log.info('data trace subscription', { jobId: clip(client.jobId), role: clip(client.role), streamId: stream.id });
      stream.onClose((reason) => ctx.log.info('data trace subscription ended', { jobId: clip(client.jobId), streamId: stream.id, reason }));
    }),
  };
}
