/**
 * `volcano-system/vcjob-fault-npu-cm` (docs/formats.md#vcjob-fault-npu-cm, docs/rules.md#resched.fault-nodes, #resched.retry-budget). Volcano writes it
 * every scheduling session; we write it because we replace Volcano's rescheduling half.
 *
 * Data keys:
 * - `fault-node`: Go `[]FaultNodeInfoToCm` of the nodes whose IsFaultNode is true, or `""` when none;
 * - `remain-retry-times`: Go `map[JobID]*RemainRetryTimes`, JobID = `<ns>/<jobName>-<jobUID>` (the
 *   PodGroup name), or `""` when empty.
 * The update is incremental: keys we do not write (legacy keys, anyone else's) are kept.
 * Parsing follows Go `json.Unmarshal` (absent or null scalars are zero, unknown keys dropped).
 */
import { goJson } from '../go-json.ts';
import { ok, parseValidated, type Parsed } from '../parsed.ts';
import { validateFaultNodes, validateRemainRetryTimes } from './vcjob-fault-npu.validators.gen.ts';

export const VCJOB_FAULT_NPU_CM_NAME = 'vcjob-fault-npu-cm';
export const VCJOB_FAULT_NPU_NAMESPACE = 'volcano-system';
export const FAULT_NODE_KEY = 'fault-node';
export const REMAIN_RETRY_TIMES_KEY = 'remain-retry-times';
/** Keys older Volcano versions wrote; they may linger and are left alone. */
export const LEGACY_KEYS = ['fault-job-910x8', 'fault-job-910bx2', 'node-rankIndex-Occurrence', 'checkCode'] as const;
/** `NodeHealthState` values Volcano writes. */
export const NODE_HEALTH_STATES = ['Healthy', 'NodeUnhealthy', 'CardUnhealthy', 'CardNetworkUnhealthy'] as const;
export type NodeHealthState = (typeof NODE_HEALTH_STATES)[number];
export const MAX_VCJOB_FAULT_NPU_VALUE_CHARS = 1024 * 1024;

/** Volcano's JobID of a job: `<ns>/<podGroupName>` with podGroupName = `<jobName>-<jobUID>`. */
export const vcJobId = (namespace: string, jobName: string, jobUid: string): string => `${namespace}/${jobName}-${jobUid}`;

/** Go `FaultDeviceList` (json tags), fields in declaration order. No fault_time_and_level_map here. */
export interface FaultDeviceList {
  readonly fault_type: string;
  readonly npu_name: string;
  readonly fault_level: string;
  readonly fault_handling: string;
  readonly large_model_fault_level: string;
  readonly fault_code: string;
}

/** Go `FaultNodeInfoToCm`, fields in declaration order. `null` = Go nil slice. */
export interface FaultNode {
  readonly FaultDeviceList: readonly FaultDeviceList[] | null;
  readonly NodeName: string;
  readonly UnhealthyNPU: readonly string[] | null;
  readonly NetworkUnhealthyNPU: readonly string[] | null;
  /** One of NODE_HEALTH_STATES as Volcano writes it; other strings are carried as they are. */
  readonly NodeHealthState: string;
  /** Unix seconds. */
  readonly UpdateTime: number;
}

/** Go `RemainRetryTimes`. */
export interface RemainRetryTimes {
  /** The job UID that owns the budget (a job re-created under the same name gets a new budget). */
  readonly UUID: string;
  readonly Times: number;
}

/** remain-retry-times: JobID -> budget. A Map, so hostile keys such as `__proto__` are inert. */
export type RemainRetryTimesMap = ReadonlyMap<string, RemainRetryTimes>;

type Raw = Record<string, unknown>;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const strList = (v: unknown): string[] | null => (Array.isArray(v) ? v.map(String) : null);

const faultDevice = (d: Raw): FaultDeviceList => ({
  fault_type: str(d.fault_type),
  npu_name: str(d.npu_name),
  fault_level: str(d.fault_level),
  fault_handling: str(d.fault_handling),
  large_model_fault_level: str(d.large_model_fault_level),
  fault_code: str(d.fault_code),
});

const faultNode = (n: FaultNode | Raw): FaultNode => {
  const r = n as Raw;
  return {
    FaultDeviceList: Array.isArray(r.FaultDeviceList) ? (r.FaultDeviceList as Raw[]).map(faultDevice) : null,
    NodeName: str(r.NodeName),
    UnhealthyNPU: strList(r.UnhealthyNPU),
    NetworkUnhealthyNPU: strList(r.NetworkUnhealthyNPU),
    NodeHealthState: str(r.NodeHealthState),
    UpdateTime: num(r.UpdateTime),
  };
};

const LIMITS = { maxChars: MAX_VCJOB_FAULT_NPU_VALUE_CHARS };

/** Parses the `fault-node` value; `""` (no fault nodes) and `null` give `[]`. Never throws. */
export function parseFaultNodes(text: string): Parsed<readonly FaultNode[]> {
  if (text === '') return ok([]);
  const json = parseValidated(FAULT_NODE_KEY, text, validateFaultNodes, LIMITS);
  if (!json.ok) return json;
  if (json.value === null) return ok([]);
  return ok((json.value as Raw[]).map(faultNode));
}

/**
 * The `fault-node` value: `""` when there is no fault node, else the Go JSON array. The order is kept
 * (Volcano's follows Go map iteration, i.e. random); pass the nodes sorted, e.g. by NodeName, so that
 * an unchanged state encodes to unchanged bytes.
 */
export function encodeFaultNodes(nodes: readonly FaultNode[]): string {
  return nodes.length === 0 ? '' : goJson(nodes.map(faultNode));
}

/** Parses the `remain-retry-times` value; `""` and `null` give an empty map. Never throws. */
export function parseRemainRetryTimes(text: string): Parsed<RemainRetryTimesMap> {
  if (text === '') return ok(new Map());
  const json = parseValidated(REMAIN_RETRY_TIMES_KEY, text, validateRemainRetryTimes, LIMITS);
  if (!json.ok) return json;
  const out = new Map<string, RemainRetryTimes>();
  for (const [k, v] of Object.entries((json.value ?? {}) as Record<string, Raw>)) {
    out.set(k, { UUID: str(v.UUID), Times: num(v.Times) });
  }
  return ok(out);
}

/** The `remain-retry-times` value: `""` when empty, else the Go map JSON (keys sorted). */
export function encodeRemainRetryTimes(map: RemainRetryTimesMap): string {
  if (map.size === 0) return '';
  return goJson(new Map([...map].map(([k, v]) => [k, { UUID: v.UUID, Times: v.Times }] as const)));
}

export interface VcjobFaultNpuContent {
  readonly faultNodes: readonly FaultNode[];
  readonly remainRetryTimes: RemainRetryTimesMap;
}

/** Parses both keys of the ConfigMap's data (an absent key reads as empty). Never throws. */
export function parseVcjobFaultNpuData(data: Readonly<Record<string, string>> | undefined): Parsed<VcjobFaultNpuContent> {
  const get = (k: string): string => (data && Object.hasOwn(data, k) && typeof data[k] === 'string' ? data[k] : '');
  const nodes = parseFaultNodes(get(FAULT_NODE_KEY));
  if (!nodes.ok) return nodes;
  const times = parseRemainRetryTimes(get(REMAIN_RETRY_TIMES_KEY));
  if (!times.ok) return times;
  return ok({ faultNodes: nodes.value, remainRetryTimes: times.value });
}

/**
 * The ConfigMap data to write: `existingData` with our two keys overwritten (Volcano's incremental
 * update; legacy and foreign keys are kept).
 */
export function encodeVcjobFaultNpuData(
  content: VcjobFaultNpuContent,
  existingData?: Readonly<Record<string, string>>,
): Record<string, string> {
  const kept = Object.entries(existingData ?? {}).filter(([, v]) => typeof v === 'string');
  return Object.fromEntries([
    ...kept,
    [REMAIN_RETRY_TIMES_KEY, encodeRemainRetryTimes(content.remainRetryTimes)],
    [FAULT_NODE_KEY, encodeFaultNodes(content.faultNodes)],
  ]);
}
