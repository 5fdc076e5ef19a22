/**
 * What the gRPC transport needs from the rest of the controller. The transport validates, rate-limits
 * and keeps the client registry; everything that needs cluster state or the recovery state machine
 * (policy/recovery/recovery-fsm.ts via actions/) is one of these injected handlers.
 */
import type { Status } from './codes.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import type {
  ClientInfo,
  DataStatusRes,
  DataTypeRes,
  JobSummarySignal,
  ProfilingSwitch,
  FaultMsgSignal,
  ProcessFaultRequest,
  PublicFaultRequest,
  RecoverStatusRequest,
  RecoverStrategyRequest,
  StopCompleteRequest,
  StressTestParam,
  StressTestResultMsg,
  SwitchNics,
  SwitchResultMsg,
} from './messages.ts';

export type Awaitable<T> = T | Promise<T>;

/** May the caller see or act on namespace `namespace`'s jobs (grpc/peer.ts CallerGate.visibility)? */
export type Visibility = (namespace: string) => boolean;

/** winston-compatible: `logger.info(msg, fields)`. */
export interface GrpcLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
}

/** One finished call (unary) or one accepted/refused stream, for `requests_total{method,grpc_code,code}`. */
export interface RequestRecord {
  /** Full method path, e.g. `/Recover/Init`. */
  readonly method: string;
  /** gRPC status name: `OK`, `UNKNOWN`, `RESOURCE_EXHAUSTED`, ... */
  readonly grpcCode: string;
  /** The `code` inside the response body, when the call returned one. */
  readonly code?: number;
}
export type CountRequest = (record: RequestRecord) => void;

/** Why a server stream ended. */
export type StreamCloseReason =
  | 'client-cancelled' // the client went away or the connection dropped (mid-recovery included)
  | 'replaced' // a new subscriber / publisher for the same key took over
  | 'server-ended' // stream.end() was called (controller reset): status OK
  | 'write-error' // a write failed
  | 'slow-consumer' // the client did not read: its queued writes reached the bound, the stream was reset
  | 'forgotten' // the job was dropped from the registry (job deleted)
  | 'shutdown'; // the server is stopping

/** A server-push stream handed to a handler. */
export interface SignalStream<T> {
  readonly id: number;
  readonly client: ClientInfo;
  readonly closed: boolean;
  /** Aborted once the stream is over, whatever the reason (`signal.reason` is a StreamCloseReason). */
  readonly signal: AbortSignal;
  /** Resolves true once the message was handed to HTTP/2, false if the stream is (or became) closed. */
  send(message: T): Promise<boolean>;
  /** Finish the stream with gRPC status OK, as ClusterD does on every controller reset. */
  end(): void;
}

/** What a handler returns for a new subscription. */
export interface StreamSubscription {
  /** Called exactly once when the stream ends, for any reason. */
  onClose(reason: StreamCloseReason): void;
}

export interface ProcessSignalSubscription extends StreamSubscription {
  /** The current recovery uuid carried by keep-alive signals ('' when idle). */
  currentUuid?(): string;
}

/**
 * Recover service (docs/grpc.md#recover-service, #server-behaviour). The transport already checked: Init idempotency and job existence;
 * Register: already registered -> 0, Init done (408), job exists (402), job cap (500); reports: job
 * registered (400). The handler answers the rest.
 */
export interface RecoverHandlers {
  /** First Init of an existing job: 0 when process recovery or hotSwitch is on, 403 when off, 502 on lookup error. */
  init(client: ClientInfo): Awaitable<Status>;
  /** First Register: patch PodGroup label `process-recover-enable=on` (502 on failure), create the job's FSM; 0. */
  register(client: ClientInfo): Awaitable<Status>;
  /**
   * A (re)subscription of a registered job. ClusterD resets the job's controller here. Any previous
   * stream of the job was already closed with reason `replaced`.
   */
  subscribe(stream: SignalStream<ProcessManageSignal>): ProcessSignalSubscription;
  /** Usually `reportReceived(jobId, uuid, 'ReportStopComplete')`, or 599 `chan closed` after a reset. */
  reportStopComplete(request: StopCompleteRequest): Awaitable<Status>;
  reportRecoverStrategy(request: RecoverStrategyRequest): Awaitable<Status>;
  reportRecoverStatus(request: RecoverStatusRequest): Awaitable<Status>;
  /** Usually `{0, 'receive ReportProcessFault'}`, even when the FSM refused the event. */
  reportProcessFault(request: ProcessFaultRequest): Awaitable<Status>;
  /** The O&M operations (stress test, NIC switch); without them the O&M rpcs answer 413. */
  readonly om?: OmHandlers;
}

export type OmKind = 'stressTest' | 'switchNic';

/** docs/grpc.md#om: online stress test and NIC switch. The transport checked the caller gate only. */
export interface OmHandlers {
  /** StressTest: 413 + reason, 411 while the job's FSM is busy, else 0. */
  stressTest(request: StressTestParam): Awaitable<Status>;
  switchNicTrack(request: SwitchNics): Awaitable<Status>;
  /** ReplyStressTestResult / ReplySwitchNicResult: 400 unless registered, else 0 `reply success`. */
  replyStressTestResult(request: StressTestResultMsg): Awaitable<Status>;
  replySwitchNicResult(request: SwitchResultMsg): Awaitable<Status>;
  /** SubscribeNotifyExecStressTest / SubscribeNotifySwitch of a registered job: the operation's agent messages go here. */
  notifyStream(kind: OmKind, stream: SignalStream<unknown>): void;
  /** SubscribeStressTestResponse / SubscribeSwitchNicSignal: the refusal (UNKNOWN + text), or undefined to serve. */
  resultRefusal(kind: OmKind, jobId: string): string | undefined;
  /** Serves one result message, then ends the stream (ClusterD: one message per subscription). */
  resultStream(kind: OmKind, stream: SignalStream<{ jobID: string; msg: string }>): void;
}

/** Fault subscription service (docs/grpc.md#fault-service). `jobId` '-1' means cluster-wide. */
export interface FaultHandlers {
  /** A new publisher stream for (jobId, role); push `fault` / `normal` FaultMsgSignal messages. */
  subscribe(stream: SignalStream<FaultMsgSignal>): StreamSubscription;
  /** The current fault view of a job; null when there is none (answered 200 with an empty faultSignal). */
  query(jobId: string): Awaitable<FaultMsgSignal | null>;
}

/** Public-fault intake (docs/grpc.md#pubfault-service). Structure, resource and rate were already checked. */
export interface PubFaultHandlers {
  /** Check codes against the public-fault config and ingest: 0 `public fault send successfully`, or 409 + reason. */
  sendPublicFault(request: PublicFaultRequest): Awaitable<Status>;
}

/** A TrainingDataTrace answer: a reply, or the error ClusterD's handler returned (UNKNOWN with its text). */
export type DataTraceOutcome<Res> = { readonly reply: Res } | { readonly error: string };

/** TrainingDataTrace (docs/grpc.md#trainingdatatrace-service). `namespace/name` was already split. */
export interface DataTraceHandlers {
  /**
   * preRegistry: the key of the job `jobId` names (a job of the job cache, or the job whose PodGroup
   * has `jobID=<jobId>` and `app=<role>`: a multi-instance job); undefined when none. The caller
   * check asks about that job's pods.
   */
  jobOf(jobId: string, role: string): Awaitable<string | undefined>;
  /** `publish(jobKey, switch)` queues the switch on the job's subscription; its error text when there is none. */
  modify(
    request: { readonly namespace: string; readonly name: string; readonly profilingSwitch: ProfilingSwitch | null },
    publish: (jobId: string, profilingSwitch: ProfilingSwitch | null) => string | undefined,
  ): Awaitable<DataTraceOutcome<DataTypeRes>>;
  get(namespace: string, name: string): Awaitable<DataTraceOutcome<DataStatusRes>>;
}

/** config.Config (docs/grpc.md#config-service): the transport keeps registrations and streams. */
export interface ConfigHandlers {
  /**
   * The namespaces of the MindIE server jobs that MindIE job id `jobId` names (their PodGroups carry
   * `jobID=<jobId>`, `app=mindie-ms-server`); none while there is no such job yet.
   */
  namespacesOf(jobId: string): Awaitable<readonly string[]>;
  /** A stream now listens for `jobId`: generate its global rank table (pushed through the registry). */
  subscribed(jobId: string): void;
}

/** job.Job (docs/grpc.md#job-service): the transport keeps clients, streams and the broadcast. */
export interface JobHandlers {
  /**
   * SubscribeJobSummarySignalList's first messages: every job of the summary in a namespace the
   * caller sees, in NPU-bounded batches, and their count.
   */
  allJobs(sees: Visibility): Awaitable<{ readonly batches: ReadonlyArray<readonly JobSummarySignal[]>; readonly total: number }>;
}

export interface GrpcHandlers {
  readonly recover: RecoverHandlers;
  readonly fault: FaultHandlers;
  readonly pubFault: PubFaultHandlers;
  readonly dataTrace: DataTraceHandlers;
  readonly config: ConfigHandlers;
  readonly job: JobHandlers;
}

/** The logger used when none is injected. */
export const silentLogger: GrpcLogger = { info() {}, warn() {}, error() {}, debug() {} };
