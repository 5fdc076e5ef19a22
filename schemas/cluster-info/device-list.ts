/**
 * The CD-recomputed `DeviceList` of a cluster-info-device entry (docs/formats.md#cluster-info, docs/rules.md#levels.card-health,
 * ClusterD AddFaultAndFix / mergeCode).
 */
import { compareUtf8 } from '../go-json.ts';
import { mostSerious, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { encodeDeviceFaultList, FAULT_TYPES, MANUALLY_SEPARATE_NPU, type DeviceFault, type FaultTimeAndLevel } from '../device-info/device-fault.ts';
import { DEFAULT_DEVICE_RESOURCE_PREFIX, DEVICE_LIST_SUFFIXES, type DeviceResourcePrefix } from '../device-info/device-info.ts';

/** Levels that keep a chip available (AddFaultAndFix). */
export const NORMAL_DEVICE_LEVELS: ReadonlySet<string> = new Set(['NotHandleFault', 'SubHealthFault', 'NormalNPU', 'NormalNetwork']);

export interface DeviceListInput {
  readonly prefix?: DeviceResourcePrefix;
  /** The chips available before CD's faults are applied (e.g. from the device plugin's list). */
  readonly available: readonly string[];
  readonly unhealthy?: readonly string[];
  readonly networkUnhealthy?: readonly string[];
  readonly recovering?: readonly string[];
  /** The merged list that goes into `<P>-Fault` (see mergeDeviceFaults). */
  readonly faults: readonly DeviceFault[];
  /**
   * Faults the scheduler-view filters hide or drop (merged like `faults`): removed from the chip
   * lists before `faults` are applied (ClusterD DelFaultAndFix), so a chip the device plugin lists
   * because of them alone leaves `-Unhealthy` / `-NetworkUnhealthy`.
   */
  readonly withheld?: readonly DeviceFault[];
  /** Chips a withheld fault never releases (the device plugin's `ManuallySeparateNPU` key). */
  readonly pinned?: readonly string[];
}

const csv = (names: Iterable<string>): string => [...new Set(names)].sort(compareUtf8).join(',');

/**
 * Applies DelFaultAndFix for every withheld fault, then AddFaultAndFix for every fault: a level
 * outside NORMAL_DEVICE_LEVELS removes the chip from `<P>` and adds it to `-Unhealthy` (CardUnhealthy,
 * PublicFault) or `-NetworkUnhealthy` (CardNetworkUnhealthy). So a chip leaves a list only when no
 * non-normal fault of that list's kind remains visible. Always returns the five keys; lists sorted;
 * `""` when empty. (A removed fault never puts the chip back into `<P>`: a job may be using it.)
 */
export function recomputeDeviceList(input: DeviceListInput): Record<string, string> {
  const available = new Set(input.available);
  const unhealthy = new Set(input.unhealthy ?? []);
  const network = new Set(input.networkUnhealthy ?? []);
  const pinned = new Set(input.pinned ?? []);
  for (const f of input.withheld ?? []) {
    // A manual separation is never hidden from the scheduler (ClusterD applies it after the filters).
    if (NORMAL_DEVICE_LEVELS.has(f.fault_level) || f.fault_level === MANUALLY_SEPARATE_NPU || pinned.has(f.npu_name)) continue;
    if (f.fault_type === FAULT_TYPES.card || f.fault_type === FAULT_TYPES.public) unhealthy.delete(f.npu_name);
    else if (f.fault_type === FAULT_TYPES.network) network.delete(f.npu_name);
  }
  for (const f of input.faults) {
    if (NORMAL_DEVICE_LEVELS.has(f.fault_level)) continue;
    available.delete(f.npu_name);
    if (f.fault_type === FAULT_TYPES.card || f.fault_type === FAULT_TYPES.public) unhealthy.add(f.npu_name);
    else if (f.fault_type === FAULT_TYPES.network) network.add(f.npu_name);
  }
  const p = input.prefix ?? DEFAULT_DEVICE_RESOURCE_PREFIX;
  return {
    [p + DEVICE_LIST_SUFFIXES.available]: csv(available),
    [p + DEVICE_LIST_SUFFIXES.fault]: encodeDeviceFaultList(input.faults),
    [p + DEVICE_LIST_SUFFIXES.unhealthy]: csv(unhealthy),
    [p + DEVICE_LIST_SUFFIXES.networkUnhealthy]: csv(network),
    [p + DEVICE_LIST_SUFFIXES.recovering]: csv(input.recovering ?? []),
  };
}

const TYPE_OF_SOURCE: Readonly<Partial<Record<FaultRecord['source'], string>>> = {
  npu: FAULT_TYPES.card,
  network: FAULT_TYPES.network,
  public: FAULT_TYPES.public,
};

/**
 * Merges per-code chip records back into one DeviceFault per (chip, fault_type) (ClusterD mergeCode):
 * codes sorted and comma-joined, per-code time and level in the map, the four level fields = the most
 * serious level. A ManuallySeparateNPU pseudo-code contributes its level but no code. Public faults
 * carry fault_time in seconds, the others in ms. Records without a device or of node/switch sources
 * are ignored. Output sorted by chip name, then fault_type.
 */
export function mergeDeviceFaults(records: readonly FaultRecord[]): DeviceFault[] {
  const groups = new Map<string, { npu: string; type: string; levels: NpuFaultLevel[]; codes: Map<string, FaultTimeAndLevel> }>();
  for (const r of records) {
    const type = TYPE_OF_SOURCE[r.source];
    if (type === undefined || r.device === undefined) continue;
    const key = `${r.device}\u0000${type}`;
    const g = groups.get(key) ?? { npu: r.device, type, levels: [], codes: new Map<string, FaultTimeAndLevel>() };
    groups.set(key, g);
    g.levels.push(r.level);
    if (r.code === MANUALLY_SEPARATE_NPU) continue;
    const time = type === FAULT_TYPES.public ? Math.floor(r.firstSeenMs / 1000) : r.firstSeenMs;
    const prev = g.codes.get(r.code);
    if (prev === undefined || mostSerious([prev.fault_level as NpuFaultLevel, r.level]) !== prev.fault_level) {
      g.codes.set(r.code, { fault_time: time, fault_level: r.level });
    }
  }
  const sorted = [...groups.values()].sort((a, b) => compareUtf8(a.npu, b.npu) || compareUtf8(a.type, b.type));
  return sorted.map((g) => {
    const level = mostSerious(g.levels) ?? 'NormalNPU';
    const codes = [...g.codes.keys()].sort(compareUtf8);
    return {
      fault_type: g.type,
      npu_name: g.npu,
      large_model_fault_level: level,
      fault_level: level,
      fault_handling: level,
      fault_code: codes.join(','),
      fault_time_and_level_map: Object.fromEntries(codes.map((c) => [c, g.codes.get(c)!])),
    };
  });
}
