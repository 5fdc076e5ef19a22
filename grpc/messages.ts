/**
 * TypeScript shapes of the messages this server exchanges, with the wire field names (keepCase), and
 * normalisers that turn whatever proto-loader decoded into these shapes without ever throwing.
 * Field numbers live in grpc/protos/*.proto (docs/grpc.md#recover-service, #fault-service, #pubfault-service).
 */
import type { Status } from './codes.ts';
import type { ProcessManageSignal, WireFaultRank } from '../vocabulary/process-manage-signal.ts';

export interface ClientInfo { readonly jobId: string; readonly role: string }
/** recover.proto FaultRank; one definition with the signal it travels in. */
export type FaultRank = WireFaultRank;

export interface StopCompleteRequest { readonly jobId: string; readonly status: Status; readonly faultRanks: readonly FaultRank[] }
export interface RecoverStrategyRequest {
  readonly jobId: string;
  readonly faultRanks: readonly FaultRank[];
  readonly strategies: readonly string[];
}
export interface RecoverStatusRequest {
  readonly jobId: string;
  readonly status: Status;
  readonly strategy: string;
  readonly isolateRankIds: readonly string[];
}
export interface ProcessFaultRequest { readonly jobId: string; readonly faultRanks: readonly FaultRank[] }

export interface SwitchFaultInfo {
  readonly faultCode: string;
  readonly switchChipId: string;
  readonly switchPortId: string;
  readonly faultTime: string;
  readonly faultLevel: string;
}
export interface DeviceFaultInfo {
  readonly deviceId: string;
  readonly deviceType: string;
  readonly faultCodes: readonly string[];
  readonly faultLevel: string;
  readonly faultType: readonly string[];
  readonly faultReason: readonly string[];
  readonly switchFaultInfos: readonly SwitchFaultInfo[];
  readonly faultLevels: readonly string[];
}
export interface NodeFaultInfo {
  readonly nodeName: string;
  readonly nodeIP: string;
  readonly nodeSN: string;
  readonly faultLevel: string;
  readonly faultDevice: readonly DeviceFaultInfo[];
}
export interface FaultMsgSignal {
  readonly uuid: string;
  readonly jobId: string;
  /** `fault` or `normal`. */
  readonly signalType: string;
  readonly nodeFaultInfo: readonly NodeFaultInfo[];
}
export interface FaultQueryResult { readonly code: number; readonly info: string; readonly faultSignal: FaultMsgSignal | null }

export interface PubFaultInfo { readonly nodeName: string; readonly nodeSN: string; readonly deviceIds: readonly number[] }
export interface PublicFault {
  readonly faultId: string;
  readonly faultType: string;
  readonly faultCode: string;
  readonly faultTime: number;
  readonly assertion: string;
  readonly faultLocation: Readonly<Record<string, string>>;
  readonly influence: readonly PubFaultInfo[];
  readonly description: string;
}
export interface PublicFaultRequest {
  readonly id: string;
  readonly timestamp: number;
  readonly version: string;
  readonly resource: string;
  readonly faults: readonly PublicFault[];
}

// ---- normalisers: unknown (decoded) -> typed, never throwing ----

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v !== '' && Number.isFinite(Number(v))) return Number(v);
  return 0;
};
const list = <T>(v: unknown, f: (x: unknown) => T): T[] => (Array.isArray(v) ? v.map(f) : []);

/** profiling.proto ProfilingSwitch: each field `on` / `off` (ClusterD passes any text through). */
export interface ProfilingSwitch {
  readonly CommunicationOperator: string;
  readonly Step: string;
  readonly SaveCheckpoint: string;
  readonly FP: string;
  readonly DataLoader: string;
}
export const PROFILING_SWITCH_FIELDS = ['CommunicationOperator', 'Step', 'SaveCheckpoint', 'FP', 'DataLoader'] as const;

/** DataStatusRes (Get's answer and every pushed message); a null switch is left off the wire. */
export interface DataStatusRes { readonly message: string; readonly profilingSwitch: ProfilingSwitch | null; readonly code: number }
export interface DataTypeRes { readonly message: string; readonly code: number }

/** job.proto JobSummarySignal (wire field names; `HcclJson` upper-case as in the proto). */
export interface JobSummarySignal {
  readonly uuid: string; readonly jobId: string; readonly jobName: string; readonly namespace: string; readonly frameWork: string;
  readonly jobStatus: string; readonly time: string; readonly cmIndex: string; readonly total: string; readonly HcclJson: string;
  readonly deleteTime: string; readonly sharedTorIp: string; readonly masterAddr: string; readonly operator: string; readonly sid: string;
}

/** config.proto RankTableStream: a job's global rank table (JSON text). */
export interface RankTableStream { readonly jobId: string; readonly rankTable: string }

/** A decoded ProfilingSwitch sub-message, or null when the request carried none (Go: a nil pointer). */
export function toProfilingSwitch(v: unknown): ProfilingSwitch | null {
  if (v === null || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  return { CommunicationOperator: str(o.CommunicationOperator), Step: str(o.Step), SaveCheckpoint: str(o.SaveCheckpoint), FP: str(o.FP), DataLoader: str(o.DataLoader) };
}

const strMap = (v: unknown): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(obj(v))) out[k] = str(x);
  return out;
};

export const toClientInfo = (v: unknown): ClientInfo => ({ jobId: str(obj(v)['jobId']), role: str(obj(v)['role']) });
export const toFaultRank = (v: unknown): FaultRank => ({ rankId: str(obj(v)['rankId']), faultType: str(obj(v)['faultType']) });
/** A missing `status` counts as code 0 (docs/grpc.md#server-behaviour: the real server would crash on it). */
export const toStatus = (v: unknown): Status => ({ code: num(obj(v)['code']), info: str(obj(v)['info']) });

export const toStopCompleteRequest = (v: unknown): StopCompleteRequest => {
  const o = obj(v);
  return { jobId: str(o['jobId']), status: toStatus(o['status']), faultRanks: list(o['faultRanks'], toFaultRank) };
};
export const toRecoverStrategyRequest = (v: unknown): RecoverStrategyRequest => {
  const o = obj(v);
  return { jobId: str(o['jobId']), faultRanks: list(o['faultRanks'], toFaultRank), strategies: list(o['strategies'], str) };
};
export const toRecoverStatusRequest = (v: unknown): RecoverStatusRequest => {
  const o = obj(v);
  return {
    jobId: str(o['jobId']),
    status: toStatus(o['status']),
    strategy: str(o['strategy']),
    isolateRankIds: list(o['isolateRankIds'], str),
  };
};
export const toProcessFaultRequest = (v: unknown): ProcessFaultRequest => {
  const o = obj(v);
  return { jobId: str(o['jobId']), faultRanks: list(o['faultRanks'], toFaultRank) };
};
export const toProcessManageSignal = (v: unknown): ProcessManageSignal => {
  const o = obj(v);
  return {
    uuid: str(o['uuid']),
    jobId: str(o['jobId']),
    signalType: str(o['signalType']),
    actions: list(o['actions'], str),
    faultRanks: list(o['faultRanks'], toFaultRank),
    changeStrategy: str(o['changeStrategy']),
    timeout: num(o['timeout']),
    nodeRankIds: list(o['nodeRankIds'], str),
    extraParams: str(o['extraParams']),
  };
};

const toPubFaultInfo = (v: unknown): PubFaultInfo => {
  const o = obj(v);
  return { nodeName: str(o['nodeName']), nodeSN: str(o['nodeSN']), deviceIds: list(o['deviceIds'], num) };
};
const toPublicFault = (v: unknown): PublicFault => {
  const o = obj(v);
  return {
    faultId: str(o['faultId']),
    faultType: str(o['faultType']),
    faultCode: str(o['faultCode']),
    faultTime: num(o['faultTime']),
    assertion: str(o['assertion']),
    faultLocation: strMap(o['faultLocation']),
    influence: list(o['influence'], toPubFaultInfo),
    description: str(o['description']),
  };
};
export const toPublicFaultRequest = (v: unknown): PublicFaultRequest => {
  const o = obj(v);
  return {
    id: str(o['id']),
    timestamp: num(o['timestamp']),
    version: str(o['version']),
    resource: str(o['resource']),
    faults: list(o['faults'], toPublicFault),
  };
};

/** A signal with every list present, as the wire would carry it (helper for senders and tests). */
export const processManageSignal = (s: Partial<ProcessManageSignal> & Pick<ProcessManageSignal, 'jobId' | 'signalType'>): ProcessManageSignal => ({
  uuid: '', actions: [], faultRanks: [], changeStrategy: '', timeout: 0, nodeRankIds: [], extraParams: '', ...s,
});

// ---- O&M: online stress test and NIC switch (recover.proto; docs/grpc.md#om) ----

export interface StressTestParam {
  readonly jobId: string;
  /** node -> ops; a map entry without a value decodes as null (ClusterD: "stress test ops is nil"). */
  readonly stressParam: Readonly<Record<string, readonly number[] | null>>;
  readonly allNodesOps: readonly number[];
}
export interface SwitchNics {
  readonly jobId: string;
  readonly nicOps: Readonly<Record<string, { readonly dev: readonly string[]; readonly op: readonly boolean[] }>>;
}
export interface StressOpResultMsg { readonly code: string; readonly result: string }
export interface StressTestResultMsg { readonly jobId: string; readonly stressResult: Readonly<Record<string, Readonly<Record<string, StressOpResultMsg>>>> }
export interface SwitchResultMsg { readonly jobId: string; readonly result: boolean }

const ops = (v: unknown): number[] => list(v, num);
export const toStressTestParam = (v: unknown): StressTestParam => {
  const o = obj(v);
  const stressParam: Record<string, number[] | null> = {};
  for (const [node, x] of Object.entries(obj(o['stressParam']))) stressParam[node] = x === null || x === undefined ? null : ops(obj(x)['ops']);
  return { jobId: str(o['jobID']), stressParam, allNodesOps: ops(o['allNodesOps']) };
};
export const toSwitchNics = (v: unknown): SwitchNics => {
  const o = obj(v);
  const nicOps: Record<string, { dev: string[]; op: boolean[] }> = {};
  for (const [node, x] of Object.entries(obj(o['nicOps']))) nicOps[node] = { dev: list(obj(x)['dev'], str), op: list(obj(x)['op'], (b) => b === true) };
  return { jobId: str(o['jobID']), nicOps };
};
export const toStressTestResult = (v: unknown): StressTestResultMsg => {
  const o = obj(v);
  const stressResult: Record<string, Record<string, StressOpResultMsg>> = {};
  for (const [rank, r] of Object.entries(obj(o['stressResult']))) {
    const byOp: Record<string, StressOpResultMsg> = {};
    for (const [op, x] of Object.entries(obj(obj(r)['rankResult']))) byOp[op] = { code: str(obj(x)['code']), result: str(obj(x)['result']) };
    stressResult[rank] = byOp;
  }
  return { jobId: str(o['jobId']), stressResult };
};
export const toSwitchResult = (v: unknown): SwitchResultMsg => ({ jobId: str(obj(v)['jobId']), result: obj(v)['result'] === true });
