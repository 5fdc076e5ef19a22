/**
 * Recording stand-ins for the handlers, for tests and local runs where the recovery state machine is
 * not the subject: every call is recorded, answers are configurable, and the latest stream of each
 * job is kept so a test can push signals and watch for close notifications.
 */
import { Code, Info, reportReceived, status, type Status } from './codes.ts';
import type { DataTraceOutcome, GrpcHandlers, SignalStream, StreamCloseReason } from './handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import type { ClientInfo, DataStatusRes, FaultMsgSignal, JobSummarySignal } from './messages.ts';

export interface RecordedCall { readonly method: string; readonly request: unknown }
export interface RecordedClose { readonly service: 'recover' | 'fault'; readonly jobId: string; readonly streamId: number; readonly reason: StreamCloseReason }

export interface StubHandlers extends GrpcHandlers {
  readonly calls: RecordedCall[];
  readonly closes: RecordedClose[];
  readonly recoverStreams: Map<string, SignalStream<ProcessManageSignal>>;
  readonly faultStreams: Map<string, SignalStream<FaultMsgSignal>>;
  /** Answer of Init for a first Init (default 0). */
  initAnswer: (client: ClientInfo) => Status;
  registerAnswer: (client: ClientInfo) => Status;
  /** Uuid used in report replies and keep-alives. */
  uuid: string;
  faultView: (jobId: string) => FaultMsgSignal | null;
  pubFaultAnswer: Status;
  /** TrainingDataTrace: the job ids that exist, and `namespace/name` -> job id (a running job). */
  readonly dataTraceJobs: Set<string>;
  readonly dataTraceNames: Map<string, string>;
  /** Get's answer for any job. */
  dataTraceGet: DataTraceOutcome<DataStatusRes>;
  /** job.Job: what SubscribeJobSummarySignalList sends first (the signals the caller sees). */
  jobBatches: JobSummarySignal[][];
  /** config.Config: MindIE job id -> the namespaces of its server jobs (none: unknown). */
  readonly configNamespaces: Map<string, string[]>;
  /** Resolves with the first recorded item matching `pred`, waiting up to `timeoutMs`. */
  waitForCall(pred: (c: RecordedCall) => boolean, timeoutMs?: number): Promise<RecordedCall>;
  waitForClose(pred: (c: RecordedClose) => boolean, timeoutMs?: number): Promise<RecordedClose>;
  waitForStream(jobId: string, minId?: number, timeoutMs?: number): Promise<SignalStream<ProcessManageSignal>>;
}

/** Poll `probe` until it returns a value, or reject after `timeoutMs`. */
export async function eventually<T>(probe: () => T | undefined, timeoutMs = 5_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function stubHandlers(): StubHandlers {
  const calls: RecordedCall[] = [];
  const closes: RecordedClose[] = [];
  const recoverStreams = new Map<string, SignalStream<ProcessManageSignal>>();
  const faultStreams = new Map<string, SignalStream<FaultMsgSignal>>();
  const record = (method: string, request: unknown): void => void calls.push({ method, request });

  const stub: StubHandlers = {
    calls,
    closes,
    recoverStreams,
    faultStreams,
    initAnswer: (c) => status(Code.OK, Info.initSuccess(c.jobId)),
    registerAnswer: () => status(Code.OK, Info.registerSuccess),
    uuid: '',
    faultView: () => null,
    pubFaultAnswer: status(Code.OK, Info.pubFaultSuccess),
    dataTraceJobs: new Set(),
    dataTraceNames: new Map(),
    jobBatches: [],
    configNamespaces: new Map(),
    dataTraceGet: { error: 'configmaps "data-trace-job" not found' },
    recover: {
      init: (c) => (record('Init', c), stub.initAnswer(c)),
      register: (c) => (record('Register', c), stub.registerAnswer(c)),
      subscribe: (stream) => {
        record('Subscribe', stream.client);
        recoverStreams.set(stream.client.jobId, stream);
        return {
          currentUuid: () => stub.uuid,
          onClose: (reason) => void closes.push({ service: 'recover', jobId: stream.client.jobId, streamId: stream.id, reason }),
        };
      },
      reportStopComplete: (r) => (record('ReportStopComplete', r), reportReceived(r.jobId, stub.uuid, 'ReportStopComplete')),
      reportRecoverStrategy: (r) => (record('ReportRecoverStrategy', r), reportReceived(r.jobId, stub.uuid, 'ReportRecoverStrategy')),
      reportRecoverStatus: (r) => (record('ReportRecoverStatus', r), reportReceived(r.jobId, stub.uuid, 'ReportRecoverStatus')),
      reportProcessFault: (r) => (record('ReportProcessFault', r), status(Code.OK, Info.processFaultReceived)),
    },
    fault: {
      subscribe: (stream) => {
        record('FaultSubscribe', stream.client);
        faultStreams.set(`${stream.client.jobId}/${stream.client.role}`, stream);
        return { onClose: (reason) => void closes.push({ service: 'fault', jobId: stream.client.jobId, streamId: stream.id, reason }) };
      },
      query: (jobId) => (record('FaultQuery', jobId), stub.faultView(jobId)),
    },
    pubFault: { sendPublicFault: (r) => (record('SendPublicFault', r), stub.pubFaultAnswer) },
    job: {
      allJobs: (sees) => {
        const batches = stub.jobBatches.map((b) => b.filter((x) => sees(x.namespace))).filter((b) => b.length > 0);
        return { batches, total: batches.reduce((n, b) => n + b.length, 0) };
      },
    },
    config: { subscribed: (jobId) => record('SubscribeRankTable', jobId), namespacesOf: (jobId) => stub.configNamespaces.get(jobId) ?? [] },
    dataTrace: {
      jobOf: (jobId) => (stub.dataTraceJobs.has(jobId) ? jobId : undefined),
      modify: (r, publish) => {
        record('ModifyTrainingDataTraceSwitch', r);
        const jobId = stub.dataTraceNames.get(`${r.namespace}/${r.name}`);
        const err = jobId === undefined ? 'no such job' : publish(jobId, r.profilingSwitch);
        return err === undefined ? { reply: { message: 'successfully changed profiling marker enable status', code: 200 } } : { error: `notify subscribe err ${err}` };
      },
      get: (ns, name) => (record('GetTrainingDataTraceSwitch', { ns, name }), stub.dataTraceGet),
    },
    waitForCall: (pred, timeoutMs) => eventually(() => calls.find(pred), timeoutMs, 'handler call'),
    waitForClose: (pred, timeoutMs) => eventually(() => closes.find(pred), timeoutMs, 'stream close'),
    waitForStream: (jobId, minId = 0, timeoutMs) =>
      eventually(() => {
        const s = recoverStreams.get(jobId);
        return s !== undefined && s.id > minId && !s.closed ? s : undefined;
      }, timeoutMs, `subscription of ${jobId}`),
  };
  return stub;
}
