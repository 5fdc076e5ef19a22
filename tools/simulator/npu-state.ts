/**
 * The NPU state of one simulated node and how the Ascend Device Plugin turns it into its device-info
 * CM (docs/formats.md#device-info) and into the count kubelet advertises. Pure: no I/O, time passed in.
 *
 * Health rules (docs/rules.md#levels.card-health, DP isHealthy; docs/formats.md#cluster-info AddFaultAndFix):
 * - a chip is Unhealthy when its chip-fault level is outside {NormalNPU, NotHandleFault, SubHealthFault}
 *   or it is in ManuallySeparateNPU; it then leaves `<P>` and enters `<P>-Unhealthy`. No pods are modelled,
 *   so the DP exceptions for chips in use (PreSeparateNPU, FreeRestartNPU under grace tolerance) never apply;
 * - a chip is network-unhealthy when its network level is outside {NormalNPU, NotHandleFault}; it enters
 *   `<P>-NetworkUnhealthy` and stays in `<P>` (docs/formats.md#device-info example);
 * - a chip being hot-reset is in `<P>-Recovering` and out of `<P>`.
 * kubelet's allocatable count = the number of chips in `<P>`.
 */
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { FAULT_TYPES, MANUALLY_SEPARATE_NPU, type DeviceFault } from '../../schemas/device-info/device-fault.ts';
import { makeDeviceFault, type CodeAtLevel, type DeviceInfoDataInput } from '../../schemas/device-info/device-info-encode.ts';
import { DEFAULT_DEVICE_RESOURCE_PREFIX, type DeviceInfoData, type DeviceResourcePrefix, type UpgradeReason } from '../../schemas/device-info/device-info.ts';
import { npuLevelOf } from '../../schemas/device-info/device-info-records.ts';
import { A5_NPU_NAME_PREFIX, InvalidFaultError, NPU_NAME_PREFIX, npuPhyId } from './fault-codes.ts';
import { newSwitchState, switchInfoOf, switchStateFromView, type SwitchMode, type SwitchState } from './switch-state.ts';

export type ChipFaultKind = 'card' | 'network';

export interface CodeState {
  readonly level: NpuFaultLevel;
  /** Unix ms (driver AlarmRaisedTime). */
  readonly timeMs: number;
}

export interface ChipFaults {
  /** By upper-case code, in arrival order. */
  readonly card: Map<string, CodeState>;
  readonly network: Map<string, CodeState>;
}

export interface NpuNodeState {
  readonly name: string;
  readonly npus: number;
  readonly prefix: DeviceResourcePrefix;
  readonly chipPrefix: string;
  superPodId: number;
  serverIndex: number;
  /** A5 rack (device-info RackID); undefined: the key is absent, as on A3. */
  readonly rackId: number | undefined;
  /** Chip name -> faults; chips without faults are absent. */
  readonly chips: Map<string, ChipFaults>;
  readonly manual: Set<string>;
  readonly upgrade: Map<string, UpgradeReason[]>;
  readonly recovering: Set<string>;
  readonly switch: SwitchState;
}

export interface NpuNodeSpec {
  readonly name: string;
  /** Default 8. */
  readonly npus?: number;
  /** Default `huawei.com/Ascend910`. */
  readonly prefix?: DeviceResourcePrefix;
  /** Default `zero` (A3 without switch fault reporting). `enabled` = A3 switch faults. */
  readonly switchMode?: SwitchMode;
  readonly superPodId?: number;
  readonly serverIndex?: number;
  /** A5 super-pod servers only. */
  readonly rackId?: number;
}

/** Chip names follow the resource: `Ascend910-<i>`, or `npu-<i>` for `huawei.com/npu` (A5). */
export const chipPrefixOf = (prefix: DeviceResourcePrefix): string => (prefix === 'huawei.com/npu' ? A5_NPU_NAME_PREFIX : NPU_NAME_PREFIX);

export function newNodeState(spec: NpuNodeSpec): NpuNodeState {
  return {
    name: spec.name,
    npus: spec.npus ?? 8,
    prefix: spec.prefix ?? DEFAULT_DEVICE_RESOURCE_PREFIX,
    chipPrefix: chipPrefixOf(spec.prefix ?? DEFAULT_DEVICE_RESOURCE_PREFIX),
    superPodId: spec.superPodId ?? -1,
    serverIndex: spec.serverIndex ?? -1,
    rackId: spec.rackId,
    chips: new Map(),
    manual: new Set(),
    upgrade: new Map(),
    recovering: new Set(),
    switch: newSwitchState(spec.switchMode ?? 'zero'),
  };
}

export const chipNames = (s: NpuNodeState): string[] => Array.from({ length: s.npus }, (_, i) => `${s.chipPrefix}-${i}`);

/** Canonical chip name on this node (`3` or `Ascend910-3` -> `Ascend910-3`); throws when out of range. */
export function chipName(s: NpuNodeState, npu: string | number): string {
  const id = typeof npu === 'number' ? npu : npuPhyId(npu);
  if (id === undefined || !Number.isInteger(id) || id < 0 || id >= s.npus) {
    throw new InvalidFaultError(`NPU ${JSON.stringify(npu)} is not a chip of node ${s.name} (${s.chipPrefix}-0..${s.chipPrefix}-${s.npus - 1})`);
  }
  return `${s.chipPrefix}-${id}`;
}

const chipOf = (s: NpuNodeState, chip: string): ChipFaults => {
  let c = s.chips.get(chip);
  if (c === undefined) {
    c = { card: new Map(), network: new Map() };
    s.chips.set(chip, c);
  }
  return c;
};

/** Adds or re-levels one code; the first fault_time is kept unless timeMs is forced. Returns whether anything changed. */
export function addChipCode(s: NpuNodeState, chip: string, kind: ChipFaultKind, code: string, level: NpuFaultLevel, timeMs: number, forceTime = false): boolean {
  const m = chipOf(s, chip)[kind];
  const key = code.toUpperCase();
  const prev = m.get(key);
  if (prev !== undefined && prev.level === level && (!forceTime || prev.timeMs === timeMs)) return false;
  m.set(key, { level, timeMs: prev !== undefined && !forceTime ? prev.timeMs : timeMs });
  return true;
}

/** Removes a code (all codes of that kind when undefined) from one chip or, with chip undefined, from every chip. */
export function removeChipCodes(s: NpuNodeState, chip: string | undefined, kind: ChipFaultKind, code?: string): boolean {
  let changed = false;
  for (const [name, c] of s.chips) {
    if (chip !== undefined && name !== chip) continue;
    const m = c[kind];
    if (code === undefined) {
      changed ||= m.size > 0;
      m.clear();
    } else {
      changed = m.delete(code.toUpperCase()) || changed;
    }
    if (c.card.size === 0 && c.network.size === 0) s.chips.delete(name);
  }
  return changed;
}

/** Puts a chip into ManuallySeparateNPU with an UpgradeFaultReason, as the DP frequency rule does. */
export function separateManually(s: NpuNodeState, chip: string, code: string, timeMs: number, type: UpgradeReason['upgrade_type'] = 'FaultFrequency'): boolean {
  if (s.manual.has(chip)) return false;
  s.manual.add(chip);
  s.upgrade.set(chip, [...(s.upgrade.get(chip) ?? []), { upgrade_time: timeMs, fault_code: code, fault_level: MANUALLY_SEPARATE_NPU, upgrade_type: type }]);
  return true;
}

/** An operator removing the chip from ManuallySeparateNPU (the DP then drops its upgrade reasons). */
export function releaseManually(s: NpuNodeState, chip: string): boolean {
  const had = s.manual.delete(chip);
  return s.upgrade.delete(chip) || had;
}

export function setRecovering(s: NpuNodeState, chip: string, on: boolean): boolean {
  if (s.recovering.has(chip) === on) return false;
  if (on) s.recovering.add(chip);
  else s.recovering.delete(chip);
  return true;
}

const CARD_HEALTHY: ReadonlySet<string> = new Set(['NormalNPU', 'NotHandleFault', 'SubHealthFault']);
const NETWORK_HEALTHY: ReadonlySet<string> = new Set(['NormalNPU', 'NotHandleFault']);
const codesOf = (m: Map<string, CodeState>): CodeAtLevel[] => [...m].map(([code, v]) => ({ code, level: v.level, timeMs: v.timeMs }));

/** The merged DeviceFault entries (at most one network and one chip entry per chip, chips by phy id). */
export function deviceFaults(s: NpuNodeState): DeviceFault[] {
  const out: DeviceFault[] = [];
  const names = [...new Set([...s.chips.keys(), ...s.manual])].sort((a, b) => (npuPhyId(a) ?? 0) - (npuPhyId(b) ?? 0));
  for (const chip of names) {
    const c = s.chips.get(chip);
    if (c !== undefined && c.network.size > 0) out.push(makeDeviceFault(FAULT_TYPES.network, chip, codesOf(c.network)));
    const card = c === undefined ? [] : codesOf(c.card);
    if (s.manual.has(chip)) {
      // The upgrade cache outranks every code: the entry carries ManuallySeparateNPU (empty code when none).
      const base = makeDeviceFault(FAULT_TYPES.card, chip, card);
      const lvl = MANUALLY_SEPARATE_NPU;
      out.push({ ...base, large_model_fault_level: lvl, fault_level: lvl, fault_handling: lvl });
    } else if (card.length > 0) {
      out.push(makeDeviceFault(FAULT_TYPES.card, chip, card));
    }
  }
  return out;
}

export interface ChipLists {
  readonly available: string[];
  readonly unhealthy: string[];
  readonly networkUnhealthy: string[];
  readonly recovering: string[];
}

/** The four chip lists per the DP health rules in the file comment. */
export function chipLists(s: NpuNodeState): ChipLists {
  const faults = deviceFaults(s);
  const bad = new Set<string>();
  const netBad = new Set<string>();
  for (const f of faults) {
    if (f.fault_type === FAULT_TYPES.card && !CARD_HEALTHY.has(f.fault_level)) bad.add(f.npu_name);
    if (f.fault_type === FAULT_TYPES.network && !NETWORK_HEALTHY.has(f.fault_level)) netBad.add(f.npu_name);
  }
  const all = chipNames(s);
  return {
    available: all.filter((c) => !bad.has(c) && !s.recovering.has(c)),
    unhealthy: all.filter((c) => bad.has(c)),
    networkUnhealthy: all.filter((c) => netBad.has(c)),
    recovering: all.filter((c) => s.recovering.has(c)),
  };
}

/** What encodeDeviceInfoData needs for this node at `updateTimeS`. */
export function deviceInfoInput(s: NpuNodeState, updateTimeS: number): DeviceInfoDataInput {
  const lists = chipLists(s);
  const switchInfo = switchInfoOf(s.switch, updateTimeS);
  return {
    prefix: s.prefix,
    ...lists,
    faults: deviceFaults(s),
    updateTimeS,
    superPodId: s.superPodId,
    serverIndex: s.serverIndex,
    ...(s.rackId === undefined ? {} : { rackId: s.rackId }),
    ...(switchInfo === undefined ? {} : { switchInfo }),
    manuallySeparateNpu: [...s.manual],
    upgradeFaultReason: Object.fromEntries(s.upgrade),
  };
}

/**
 * Rebuilds a node's state from the device-info CM a simulator (or a real DP) wrote, so a fresh process
 * (the CLI) adds to what is there. PublicFault/NodeUnhealthy entries are not the DP's and are ignored.
 */
export function nodeStateFromDeviceInfo(name: string, npus: number, d: DeviceInfoData): NpuNodeState {
  const view = d.switchInfo?.ok === true ? d.switchInfo.value : undefined;
  const s = newNodeState({ name, npus, prefix: d.lists.prefix, superPodId: d.cfg.SuperPodID, serverIndex: d.cfg.ServerIndex, ...(d.cfg.RackID === undefined ? {} : { rackId: d.cfg.RackID }) });
  const sw = switchStateFromView(view);
  s.switch.mode = sw.mode;
  for (const [k, v] of sw.faults) s.switch.faults.set(k, v);
  for (const f of d.lists.faults) {
    const kind: ChipFaultKind | undefined = f.fault_type === FAULT_TYPES.card ? 'card' : f.fault_type === FAULT_TYPES.network ? 'network' : undefined;
    if (kind === undefined) continue;
    const codes = f.fault_code === '' ? [] : f.fault_code.split(',');
    for (const code of codes) {
      const tl = f.fault_time_and_level_map?.[code];
      const level = npuLevelOf(tl?.fault_level ?? f.fault_level);
      if (level !== undefined) addChipCode(s, f.npu_name, kind, code, level, tl?.fault_time ?? 0, true);
    }
  }
  for (const chip of d.manuallySeparateNpu) s.manual.add(chip);
  for (const [chip, reasons] of Object.entries(d.upgradeFaultReason)) s.upgrade.set(chip, [...reasons]);
  for (const chip of d.lists.recovering) s.recovering.add(chip);
  return s;
}
