/**
 * `SwitchInfoCfg` inside the device-info CM (A3 UnifiedBus switch faults, docs/formats.md#device-info). There is no
 * per-node switch CM on the wire: `mindx-dl-switchinfo-<node>` is only ClusterD's internal name, used
 * as the map key in `cluster-info-switch-N`.
 */
import { goJson, goMap } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed } from '../parsed.ts';
import { severityRank, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { FaultTimeAndLevel } from './device-fault.ts';
import { deviceInfoValidator } from './device-info-ajv.ts';

const validateSwitchFaultInfo = deviceInfoValidator<SwitchFaultInfo>('SwitchFaultInfo');
/** Also used by schemas/cluster-info for the FaultCode events it carries. */
export const validateSwitchFaultEvent = deviceInfoValidator<SwitchFaultEvent>('SwitchFaultEvent');

/** ClusterD's internal name for a node's switch info; the key in cluster-info-switch-N. */
export const SWITCH_INFO_CM_PREFIX = 'mindx-dl-switchinfo-';
export const switchInfoCmName = (nodeName: string): string => `${SWITCH_INFO_CM_PREFIX}${nodeName}`;

/** Switch level vocabulary (not the NPU names) and its mapping (docs/formats.md#device-info, #level-vocabularies). */
export const SWITCH_LEVEL_TO_NPU = {
  NotHandle: 'NotHandleFault',
  SubHealthFault: 'SubHealthFault',
  RestartRequest: 'RestartRequest',
  PreSeparate: 'PreSeparateNPU',
  Separate: 'SeparateNPU',
} as const satisfies Record<string, NpuFaultLevel>;
export type SwitchFaultLevel = keyof typeof SWITCH_LEVEL_TO_NPU;
/** Switch `FaultLevel` -> `NodeStatus` as DP writes it. */
export const SWITCH_LEVEL_TO_NODE_STATUS = {
  NotHandle: 'Healthy',
  SubHealthFault: 'SubHealthy',
  RestartRequest: 'UnHealthy',
  PreSeparate: 'PreSeparate',
  Separate: 'UnHealthy',
} as const satisfies Record<SwitchFaultLevel, string>;
export const SWITCH_NODE_STATUSES = ['Healthy', 'SubHealthy', 'UnHealthy', 'PreSeparate'] as const;
const isSwitchLevel = (s: string): s is SwitchFaultLevel => Object.hasOwn(SWITCH_LEVEL_TO_NPU, s);

/** DP `SwitchFaultInfo` (no json tags), fields in Go order. */
export interface SwitchFaultInfo {
  /** Each element is itself a JSON string of a SwitchFaultEvent; null = nil slice. */
  readonly FaultCode: readonly string[] | null;
  readonly FaultLevel: string;
  /** Unix seconds. */
  readonly UpdateTime: number;
  readonly NodeStatus: string;
  /** Key `<AssembledFaultCode>_<SwitchChipId>_<SwitchPortId>`; Go map. */
  readonly FaultTimeAndLevelMap: Readonly<Record<string, FaultTimeAndLevel>> | null;
}

/** One element of `FaultCode`, fields in Go order. */
export interface SwitchFaultEvent {
  readonly EventType: number;
  /** e.g. `[0x00f103b0,155904,na,na]`. */
  readonly AssembledFaultCode: string;
  readonly PeerPortDevice: number;
  readonly PeerPortId: number;
  readonly SwitchChipId: number;
  readonly SwitchPortId: number;
  readonly Severity: number;
  readonly Assertion: number;
  /** Unix ms. */
  readonly AlarmRaisedTime: number;
}

export interface SwitchInfoView {
  readonly info: SwitchFaultInfo;
  readonly events: readonly SwitchFaultEvent[];
  readonly warnings: readonly string[];
}

/** What DP writes when switch faults are not enabled / not A3. */
export const ZERO_SWITCH_INFO: SwitchFaultInfo = { FaultCode: null, FaultLevel: '', UpdateTime: 0, NodeStatus: '', FaultTimeAndLevelMap: null };

export const switchEventWire = (e: SwitchFaultEvent): unknown => ({
  EventType: e.EventType,
  AssembledFaultCode: e.AssembledFaultCode,
  PeerPortDevice: e.PeerPortDevice,
  PeerPortId: e.PeerPortId,
  SwitchChipId: e.SwitchChipId,
  SwitchPortId: e.SwitchPortId,
  Severity: e.Severity,
  Assertion: e.Assertion,
  AlarmRaisedTime: e.AlarmRaisedTime,
});
export const encodeSwitchFaultEvent = (e: SwitchFaultEvent): string => goJson(switchEventWire(e));
export const switchPortKey = (e: Pick<SwitchFaultEvent, 'AssembledFaultCode' | 'SwitchChipId' | 'SwitchPortId'>): string =>
  `${e.AssembledFaultCode}_${e.SwitchChipId}_${e.SwitchPortId}`;

const timeLevelMapWire = (m: Readonly<Record<string, FaultTimeAndLevel>> | null): unknown =>
  m === null ? null : goMap(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, { fault_time: v.fault_time, fault_level: v.fault_level }])));

/** Go-ordered fields of SwitchFaultInfo (cluster-info appends `CmName`). */
export const switchInfoFields = (s: SwitchFaultInfo): Record<string, unknown> => ({
  FaultCode: s.FaultCode === null ? null : [...s.FaultCode],
  FaultLevel: s.FaultLevel,
  UpdateTime: s.UpdateTime,
  NodeStatus: s.NodeStatus,
  FaultTimeAndLevelMap: timeLevelMapWire(s.FaultTimeAndLevelMap),
});
export const encodeSwitchInfo = (s: SwitchFaultInfo): string => goJson(switchInfoFields(s));

const PORT_KEY_RE = /^(.+)_(0|[1-9][0-9]*)_(0|[1-9][0-9]*)$/;

/** Checks a schema-shaped SwitchFaultInfo: level vocabulary, FaultCode elements, map keys, times. */
export function checkSwitchInfo(info: SwitchFaultInfo, nowMs: number, where: string): Parsed<SwitchInfoView> {
  const warnings: string[] = [];
  if (info.FaultLevel !== '' && !isSwitchLevel(info.FaultLevel)) return rejected(`${where}: unknown FaultLevel ${JSON.stringify(info.FaultLevel)}`, 'unknown_value');
  if (info.NodeStatus !== '' && !(SWITCH_NODE_STATUSES as readonly string[]).includes(info.NodeStatus)) {
    return rejected(`${where}: unknown NodeStatus ${JSON.stringify(info.NodeStatus)}`, 'unknown_value');
  }
  const events: SwitchFaultEvent[] = [];
  for (const [i, s] of (info.FaultCode ?? []).entries()) {
    const e = parseValidated(`${where} FaultCode[${i}]`, s, validateSwitchFaultEvent);
    if (!e.ok) return e;
    events.push(pickEvent(e.value));
  }
  for (const [key, tl] of Object.entries(info.FaultTimeAndLevelMap ?? {})) {
    if (!PORT_KEY_RE.test(key)) return rejected(`${where}: bad FaultTimeAndLevelMap key ${JSON.stringify(key)} (want <code>_<chip>_<port>)`, 'schema');
    if (!isSwitchLevel(tl.fault_level)) return rejected(`${where}: unknown fault_level ${JSON.stringify(tl.fault_level)} for ${key}`, 'unknown_value');
    if (tl.fault_time <= 0) warnings.push(`${where}: fault_time of ${key} is not positive (${tl.fault_time})`);
    else if (tl.fault_time > nowMs) warnings.push(`${where}: fault_time of ${key} is in the future (${tl.fault_time} > ${nowMs})`);
  }
  // FaultCode as ClusterD holds it after parsing: each event re-marshalled (Go field order, unknown
  // fields dropped), so nothing we did not check is ever written back.
  return ok({ info: { ...info, FaultCode: info.FaultCode === null ? null : events.map(encodeSwitchFaultEvent) }, events, warnings });
}

const pickEvent = (e: SwitchFaultEvent): SwitchFaultEvent => ({
  EventType: e.EventType, AssembledFaultCode: e.AssembledFaultCode, PeerPortDevice: e.PeerPortDevice, PeerPortId: e.PeerPortId,
  SwitchChipId: e.SwitchChipId, SwitchPortId: e.SwitchPortId, Severity: e.Severity, Assertion: e.Assertion, AlarmRaisedTime: e.AlarmRaisedTime,
});

/** Parses a `SwitchInfoCfg` string. */
export function parseSwitchInfo(text: string, nowMs: number): Parsed<SwitchInfoView> {
  const where = 'SwitchInfoCfg';
  const json = parseValidated(where, text, validateSwitchFaultInfo);
  if (!json.ok) return json;
  const raw = json.value;
  const info: SwitchFaultInfo = {
    FaultCode: raw.FaultCode === null ? null : [...raw.FaultCode],
    FaultLevel: raw.FaultLevel,
    UpdateTime: raw.UpdateTime,
    NodeStatus: raw.NodeStatus,
    FaultTimeAndLevelMap: raw.FaultTimeAndLevelMap,
  };
  return checkSwitchInfo(info, nowMs, where);
}

/**
 * One FaultRecord per assembled switch code (source 'switch', no device): level = most serious over
 * its ports (per-port level from FaultTimeAndLevelMap, else the event's AlarmRaisedTime and the
 * overall FaultLevel), time = earliest valid time, detail = the port keys.
 */
export function switchFaultRecords(nodeName: string, view: SwitchInfoView, nowMs: number): FaultRecord[] {
  const byCode = new Map<string, { levels: SwitchFaultLevel[]; times: number[]; keys: Set<string> }>();
  const add = (code: string, key: string, level: SwitchFaultLevel, time: number): void => {
    const g = byCode.get(code) ?? { levels: [], times: [], keys: new Set<string>() };
    g.levels.push(level);
    if (time > 0 && time <= nowMs) g.times.push(time);
    g.keys.add(key);
    byCode.set(code, g);
  };
  const map = view.info.FaultTimeAndLevelMap ?? {};
  for (const [key, tl] of Object.entries(map)) {
    const m = PORT_KEY_RE.exec(key);
    if (m?.[1] !== undefined && isSwitchLevel(tl.fault_level)) add(m[1], key, tl.fault_level, tl.fault_time);
  }
  const overall = view.info.FaultLevel;
  for (const e of view.events) {
    const key = switchPortKey(e);
    if (Object.hasOwn(map, key) || !isSwitchLevel(overall)) continue;
    add(e.AssembledFaultCode, key, overall, e.AlarmRaisedTime);
  }
  const out: FaultRecord[] = [];
  for (const [code, g] of [...byCode].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const worst = [...g.levels].sort((a, b) => severityRank(SWITCH_LEVEL_TO_NPU[b]) - severityRank(SWITCH_LEVEL_TO_NPU[a]))[0]!;
    out.push({
      node: nodeName,
      source: 'switch',
      code,
      level: SWITCH_LEVEL_TO_NPU[worst],
      reportedLevel: worst,
      firstSeenMs: g.times.length > 0 ? Math.min(...g.times) : nowMs,
      detail: [...g.keys].sort().join(','),
    });
  }
  return out;
}
