/**
 * A3 UnifiedBus switch faults of one simulated node, as the device plugin folds them into the
 * `SwitchInfoCfg` key of its device-info CM (docs/formats.md#device-info). Pure state, no I/O.
 */
import { mostSerious } from '../../vocabulary/fault-types.ts';
import {
  SWITCH_LEVEL_TO_NODE_STATUS,
  SWITCH_LEVEL_TO_NPU,
  ZERO_SWITCH_INFO,
  encodeSwitchFaultEvent,
  switchPortKey,
  type SwitchFaultEvent,
  type SwitchFaultInfo,
  type SwitchFaultLevel,
  type SwitchInfoView,
} from '../../schemas/device-info/switch-info.ts';

/**
 * `absent`: no SwitchInfoCfg key (910 A1/A2). `zero`: the zero struct (A3 without -enableSwitchFault,
 * the default here). `enabled`: real switch fault reporting (A3 with -enableSwitchFault).
 */
export type SwitchMode = 'absent' | 'zero' | 'enabled';

export interface SwitchPortFault {
  readonly event: SwitchFaultEvent;
  readonly level: SwitchFaultLevel;
}

export interface SwitchState {
  mode: SwitchMode;
  /** By port key `<AssembledFaultCode>_<SwitchChipId>_<SwitchPortId>`, in arrival order. */
  readonly faults: Map<string, SwitchPortFault>;
}

export interface SwitchFaultSpec {
  /** Assembled code, e.g. `[0x00f103b0,155904,na,na]`. */
  readonly code: string;
  readonly level: SwitchFaultLevel;
  readonly switchChipId?: number;
  readonly switchPortId?: number;
  readonly peerPortDevice?: number;
  readonly peerPortId?: number;
  /** Unix ms. */
  readonly timeMs: number;
}

export const newSwitchState = (mode: SwitchMode): SwitchState => ({ mode, faults: new Map() });

const rank = (l: SwitchFaultLevel): string => SWITCH_LEVEL_TO_NPU[l];

/** Adds (or re-levels) one port fault; returns whether anything changed. Enables switch reporting. */
export function addSwitchFault(s: SwitchState, f: SwitchFaultSpec): boolean {
  const event: SwitchFaultEvent = {
    EventType: 11,
    AssembledFaultCode: f.code,
    PeerPortDevice: f.peerPortDevice ?? 0,
    PeerPortId: f.peerPortId ?? 0,
    SwitchChipId: f.switchChipId ?? 0,
    SwitchPortId: f.switchPortId ?? 0,
    Severity: 2,
    Assertion: 1,
    AlarmRaisedTime: f.timeMs,
  };
  const key = switchPortKey(event);
  const prev = s.faults.get(key);
  const wasEnabled = s.mode === 'enabled';
  s.mode = 'enabled';
  if (prev !== undefined && prev.level === f.level) return !wasEnabled;
  s.faults.set(key, { event: prev?.event ?? event, level: f.level });
  return true;
}

/** Removes port faults matching code (and chip/port when given); all of them when code is undefined. */
export function removeSwitchFaults(s: SwitchState, code?: string, switchChipId?: number, switchPortId?: number): boolean {
  let changed = false;
  for (const [key, f] of s.faults) {
    const e = f.event;
    if (code !== undefined && e.AssembledFaultCode !== code) continue;
    if (switchChipId !== undefined && e.SwitchChipId !== switchChipId) continue;
    if (switchPortId !== undefined && e.SwitchPortId !== switchPortId) continue;
    s.faults.delete(key);
    changed = true;
  }
  return changed;
}

/** The SwitchInfoCfg value, or undefined when the key is absent. */
export function switchInfoOf(s: SwitchState, updateTimeS: number): SwitchFaultInfo | undefined {
  if (s.mode === 'absent') return undefined;
  if (s.mode === 'zero') return ZERO_SWITCH_INFO;
  const faults = [...s.faults.entries()];
  const worstNpu = mostSerious(faults.map(([, f]) => rank(f.level)));
  const worst = faults.find(([, f]) => rank(f.level) === worstNpu)?.[1].level;
  return {
    FaultCode: faults.map(([, f]) => encodeSwitchFaultEvent(f.event)),
    FaultLevel: worst ?? '',
    UpdateTime: updateTimeS,
    NodeStatus: worst === undefined ? 'Healthy' : SWITCH_LEVEL_TO_NODE_STATUS[worst],
    FaultTimeAndLevelMap: Object.fromEntries(faults.map(([key, f]) => [key, { fault_time: f.event.AlarmRaisedTime, fault_level: f.level }])),
  };
}

/** Rebuilds switch state from a parsed SwitchInfoCfg (for a simulator taking over an existing CM). */
export function switchStateFromView(view: SwitchInfoView | undefined): SwitchState {
  if (view === undefined) return newSwitchState('absent');
  const info = view.info;
  const isZero = info.FaultCode === null && info.FaultLevel === '' && info.NodeStatus === '' && info.FaultTimeAndLevelMap === null;
  const s = newSwitchState(isZero ? 'zero' : 'enabled');
  const map = info.FaultTimeAndLevelMap ?? {};
  for (const e of view.events) {
    const key = switchPortKey(e);
    const lvl = map[key]?.fault_level ?? info.FaultLevel;
    if (Object.hasOwn(SWITCH_LEVEL_TO_NPU, lvl)) s.faults.set(key, { event: e, level: lvl as SwitchFaultLevel });
  }
  return s;
}
