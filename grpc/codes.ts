/**
 * Response codes carried inside `Status.code` / `RespStatus.code` / `FaultQueryResult.code`
 * (ClusterD `CD/domain/common/code.go`, docs/grpc.md#response-codes), and the fixed texts real clients may log or match.
 */
export const Code = {
  OK: 0,
  SuccessCode: 200,
  ExitIsolateRanks: 201,
  UnRegistry: 400,
  OrderMix: 401,
  JobNotExist: 402,
  ProcessRecoverEnableOff: 403,
  ProcessNotReady: 404,
  RecoverableRetryError: 405,
  UnRecoverableRetryError: 406,
  DumpError: 407,
  UnInit: 408,
  InvalidReqParam: 409,
  InvalidReqRate: 410,
  OMIsRunning: 411,
  OMParamInvalid: 413,
  RateLimited: 429,
  ClientError: 499,
  OutOfMaxServeJobs: 500,
  OperateConfigMapError: 501,
  OperatePodGroupError: 502,
  ScheduleTimeout: 503,
  SignalQueueBusy: 504,
  EventQueueBusy: 505,
  ControllerEventCancel: 506,
  WaitReportTimeout: 507,
  WaitPlatStrategyTimeout: 508,
  WriteConfirmFaultOrWaitPlatResultFault: 509,
  HCCLRoutingConvergenceFail: 510,
  ServerInnerError: 599,
} as const;
export type CodeName = keyof typeof Code;

/** `Status` of recover.proto and fault.proto; `RespStatus` of pubfault.proto has the same shape. */
export interface Status {
  readonly code: number;
  readonly info: string;
}

export const status = (code: number, info: string): Status => ({ code, info });

/** Texts ClusterD uses on the wire (docs/grpc.md#taskd-sequence, #server-behaviour, #fault-service, #pubfault-service). */
export const Info = {
  initSuccess: (jobId: string) => `job(uid=${jobId}) init success`,
  registerSuccess: 'register success',
  /** The typo "HeathCheck" is ClusterD's own. */
  healthCheck: (jobId: string) => `jobId=${jobId}, receive HeathCheck`,
  reportReceived: (jobId: string, uuid: string, rpc: string) => `jobId=${jobId}, uuid=${uuid}, receive ${rpc}`,
  reportChanClosed: (jobId: string, uuid: string) => `jobId=${jobId}, uuid=${uuid}, chan closed`,
  processFaultReceived: 'receive ReportProcessFault',
  /** The misspelling "registed" is ClusterD's own. */
  recoverNotRegistered: (jobId: string) => `jobId=${jobId} not registed`,
  notifyNotRegistered: (jobId: string) => `jobId=${jobId} not registed, please wait agent register`,
  faultJobUnknown: (jobId: string) => `jobId=${jobId} not exist and is not multi-instance`,
  faultNotRegistered: (jobId: string, role: string) => `jobId=${jobId} not registered, role=${role}`,
  faultRateLimited: 'rate limited, there is too many requests, please retry later',
  faultJobInvalid: (jobId: string) => `job with jobId: ${jobId} is invalid`,
  qpsExceeded: (method: string) => `qps exceeded, method=${method}`,
  pubFaultSuccess: 'public fault send successfully',
  pubFaultLimited: 'limiter work by resource failed',
} as const;

/** The Recover report replies ClusterD builds once the state machine took the request (docs/grpc.md#server-behaviour). */
export const reportReceived = (jobId: string, uuid: string, rpc: string): Status =>
  status(Code.OK, Info.reportReceived(jobId, uuid, rpc));
