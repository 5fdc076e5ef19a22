/**
 * `mindx-dl/mindx-dl-nodeinfo-<node>`, written by NodeD (docs/formats.md#node-info). Data keys `NodeInfo`
 * (JSON, CheckCode over the inner NodeInfo) and `updateTime` (RFC3339, outside the hash).
 */
import { checkCode } from '../check-code.ts';
import { goJson } from '../go-json.ts';
import { ajvRejected, ok, parseJson, rejected, type Parsed, type SchemaValidator } from '../parsed.ts';
import { severityRank, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { validate as generated } from './node-info.validators.gen.ts';

export const NODE_INFO_NAMESPACE = 'mindx-dl';
export const NODE_INFO_CM_PREFIX = 'mindx-dl-nodeinfo-';
export const NODE_INFO_LABEL_KEY = 'mx-consumer-cim';
export const NODE_INFO_LABELS = { [NODE_INFO_LABEL_KEY]: 'true' } as const;
export const NODE_INFO_KEYS = { nodeInfo: 'NodeInfo', updateTime: 'updateTime' } as const;
/** NodeD owner reference target (set when found). */
export const NODED_DAEMONSET = { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'noded' } as const;

export const nodeInfoCmName = (nodeName: string): string => `${NODE_INFO_CM_PREFIX}${nodeName}`;
/** Node name of a node-info CM, or undefined when the CM is not one (wrong namespace or prefix). */
export function nodeNameOfNodeInfoCm(namespace: string, name: string): string | undefined {
  if (namespace !== NODE_INFO_NAMESPACE || !name.startsWith(NODE_INFO_CM_PREFIX)) return undefined;
  const node = name.slice(NODE_INFO_CM_PREFIX.length);
  return node === '' ? undefined : node;
}

/** NodeD levels (plus SubHealthFault, which ClusterD understands) -> NPU vocabulary. */
export const NODE_FAULT_LEVEL_TO_NPU = {
  NotHandleFault: 'NotHandleFault',
  PreSeparateFault: 'PreSeparateNPU',
  SeparateFault: 'SeparateNPU',
  SubHealthFault: 'SubHealthFault',
} as const satisfies Record<string, NpuFaultLevel>;
export type NodeFaultLevel = keyof typeof NODE_FAULT_LEVEL_TO_NPU;
export const NODE_STATUSES = ['Healthy', 'PreSeparate', 'UnHealthy'] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];
const isNodeLevel = (s: string): s is NodeFaultLevel => Object.hasOwn(NODE_FAULT_LEVEL_TO_NPU, s);

/** One faulty node device; fields in Go order. */
export interface FaultDev {
  /** IPMI entity name, e.g. `CPU`, `PSU`. */
  readonly DeviceType: string;
  readonly DeviceId: number;
  /** 8-hex-digit IPMI codes; null = nil slice. */
  readonly FaultCode: readonly string[] | null;
  readonly FaultLevel: string;
}

/** The hashed object. */
export interface NodeInfo {
  readonly FaultDevList: readonly FaultDev[] | null;
  readonly NodeStatus: string;
}

/** The `NodeInfo` data value. */
export interface NodeInfoCm {
  readonly NodeInfo: NodeInfo;
  readonly CheckCode: string;
}

export interface NodeInfoData {
  readonly cm: NodeInfoCm;
  /** `updateTime` converted to Unix ms (ClusterD NodeInfo.UpdateTime); undefined when absent. */
  readonly updateTimeMs: number | undefined;
  readonly warnings: readonly string[];
}

export interface WithWarningsCm {
  readonly cm: NodeInfoCm;
  readonly warnings: readonly string[];
}

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated as SchemaValidator<NodeInfoCm>;
const CODE_RE = /^[0-9A-Fa-f]{1,16}$/;
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export const nodeInfoWire = (n: NodeInfo): unknown => ({
  FaultDevList: n.FaultDevList === null ? null : n.FaultDevList.map((d) => ({
    DeviceType: d.DeviceType,
    DeviceId: d.DeviceId,
    FaultCode: d.FaultCode === null ? null : [...d.FaultCode],
    FaultLevel: d.FaultLevel,
  })),
  NodeStatus: n.NodeStatus,
});
export const nodeInfoCheckCode = (n: NodeInfo): string => checkCode(nodeInfoWire(n));
export const encodeNodeInfoCm = (cm: NodeInfoCm): string => goJson({ NodeInfo: nodeInfoWire(cm.NodeInfo), CheckCode: cm.CheckCode });

/** NodeStatus NodeD derives from the worst level: PreSeparateFault -> PreSeparate, SeparateFault -> UnHealthy. */
export function nodeStatusOf(devs: readonly Pick<FaultDev, 'FaultLevel'>[] | null): NodeStatus {
  const levels = new Set((devs ?? []).map((d) => d.FaultLevel));
  if (levels.has('SeparateFault')) return 'UnHealthy';
  if (levels.has('PreSeparateFault')) return 'PreSeparate';
  return 'Healthy';
}

/** Parses and verifies the `NodeInfo` data value. */
export function parseNodeInfoCm(text: string): Parsed<WithWarningsCm> {
  const where = NODE_INFO_KEYS.nodeInfo;
  const json = parseJson(where, text);
  if (!json.ok) return json;
  const raw = json.value;
  // Before the schema check, so that a missing CheckCode gets its own reason (not "must have required").
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const code = (raw as Record<string, unknown>)['CheckCode'];
    if (code === undefined || code === '') return rejected(`${where}: CheckCode is missing or empty`, 'check_code');
  }
  if (!validate(raw)) return ajvRejected(where, validate, raw);
  const warnings: string[] = [];
  // Rebuild from known fields only (ClusterD re-marshals its own struct before hashing).
  const info: NodeInfo = {
    FaultDevList: raw.NodeInfo.FaultDevList === null ? null : raw.NodeInfo.FaultDevList.map((d) => ({
      DeviceType: d.DeviceType, DeviceId: d.DeviceId, FaultCode: d.FaultCode, FaultLevel: d.FaultLevel,
    })),
    NodeStatus: raw.NodeInfo.NodeStatus,
  };
  const want = nodeInfoCheckCode(info);
  if (raw.CheckCode !== want) return rejected(`${where}: CheckCode mismatch: got ${raw.CheckCode}, canonical Go JSON of NodeInfo hashes to ${want}`, 'check_code');
  if (!(NODE_STATUSES as readonly string[]).includes(info.NodeStatus)) return rejected(`${where}: unknown NodeStatus ${JSON.stringify(info.NodeStatus)}`, 'unknown_value');
  for (const [i, d] of (info.FaultDevList ?? []).entries()) {
    const at = `${where}: FaultDevList[${i}]`;
    if (d.DeviceType === '') return rejected(`${at}: empty DeviceType`, 'schema');
    if (!isNodeLevel(d.FaultLevel)) return rejected(`${at}: unknown FaultLevel ${JSON.stringify(d.FaultLevel)}`, 'unknown_value');
    const bad = (d.FaultCode ?? []).find((c) => !CODE_RE.test(c));
    if (bad !== undefined) return rejected(`${at}: bad FaultCode ${JSON.stringify(bad)}`, 'bad_fault_code');
    if (new Set(d.FaultCode).size !== (d.FaultCode ?? []).length) warnings.push(`${at}: duplicate codes (counted once)`);
  }
  return ok({ cm: { NodeInfo: info, CheckCode: raw.CheckCode }, warnings });
}

/** RFC3339 -> Unix ms, or undefined when malformed. */
export function rfc3339ToMs(s: string): number | undefined {
  if (!RFC3339_RE.test(s)) return undefined;
  const ms = Date.parse(s);
  return Number.isNaN(ms) ? undefined : ms;
}
/** Unix ms -> RFC3339 in UTC, second precision (Go time.RFC3339). */
export const msToRfc3339 = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** Parses a node-info CM's `data`. A missing `updateTime` is a warning; a malformed one rejects. */
export function parseNodeInfoData(data: Readonly<Record<string, string>> | undefined): Parsed<NodeInfoData> {
  const text = data?.[NODE_INFO_KEYS.nodeInfo];
  if (text === undefined) return rejected(`data key ${NODE_INFO_KEYS.nodeInfo} is missing`, 'missing_key');
  const cm = parseNodeInfoCm(text);
  if (!cm.ok) return cm;
  const warnings = [...cm.value.warnings];
  const ut = data?.[NODE_INFO_KEYS.updateTime];
  let updateTimeMs: number | undefined;
  if (ut === undefined) warnings.push(`data key ${NODE_INFO_KEYS.updateTime} is missing`);
  else {
    updateTimeMs = rfc3339ToMs(ut);
    if (updateTimeMs === undefined) return rejected(`${NODE_INFO_KEYS.updateTime}: not an RFC3339 time: ${JSON.stringify(ut)}`, 'schema');
  }
  return ok({ cm: cm.value.cm, updateTimeMs, warnings });
}

/** The CM `data` NodeD writes (CheckCode computed; NodeStatus derived when not given). */
export function encodeNodeInfoData(input: { readonly faultDevList: readonly FaultDev[] | null; readonly nodeStatus?: NodeStatus; readonly updateTimeMs: number }): Record<string, string> {
  const info: NodeInfo = { FaultDevList: input.faultDevList, NodeStatus: input.nodeStatus ?? nodeStatusOf(input.faultDevList) };
  return {
    [NODE_INFO_KEYS.nodeInfo]: encodeNodeInfoCm({ NodeInfo: info, CheckCode: nodeInfoCheckCode(info) }),
    [NODE_INFO_KEYS.updateTime]: msToRfc3339(input.updateTimeMs),
  };
}

/**
 * One record per (node, code), source 'node', no device (the IPMI device is in `detail`, e.g. `PSU#1`);
 * the same code on several devices keeps the most serious level. NodeD has no per-fault time:
 * firstSeenMs = nowMs (callers carry first sight across versions).
 */
export function splitNodeFaults(nodeName: string, parsed: Pick<NodeInfoData, 'cm'>, nowMs: number): FaultRecord[] {
  const byCode = new Map<string, FaultRecord>();
  for (const d of parsed.cm.NodeInfo.FaultDevList ?? []) {
    if (!isNodeLevel(d.FaultLevel)) continue;
    const level = NODE_FAULT_LEVEL_TO_NPU[d.FaultLevel];
    const detail = `${d.DeviceType}#${d.DeviceId}`;
    for (const code of new Set(d.FaultCode ?? [])) {
      const prev = byCode.get(code);
      if (prev === undefined) {
        byCode.set(code, { node: nodeName, source: 'node', code, level, reportedLevel: d.FaultLevel, firstSeenMs: nowMs, detail });
        continue;
      }
      const worse = severityRank(level) > severityRank(prev.level);
      byCode.set(code, { ...prev, ...(worse ? { level, reportedLevel: d.FaultLevel } : {}), detail: `${prev.detail},${detail}` });
    }
  }
  return [...byCode.values()];
}
