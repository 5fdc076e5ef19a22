/**
 * Device-info -> FaultRecords (ClusterD splitDeviceFault, docs/formats.md#device-info, docs/rules.md#ingest.split-per-code):
 * one record per (chip, code) with the code's own level.
 */
import { faultKey, severityRank, type FaultRecord, type FaultSource, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { FAULT_TYPES, MANUALLY_SEPARATE_NPU, type DeviceFault } from './device-fault.ts';
import type { DeviceInfoData, UpgradeReason } from './device-info.ts';
import { switchFaultRecords } from './switch-info.ts';

/** Record source per DeviceFault fault_type. */
export const SOURCE_OF_FAULT_TYPE: Readonly<Record<string, FaultSource>> = {
  [FAULT_TYPES.card]: 'npu',
  [FAULT_TYPES.network]: 'network',
  [FAULT_TYPES.public]: 'public',
  [FAULT_TYPES.node]: 'node',
};

/** Device-fault level -> NPU vocabulary (`NormalNetwork` is the network spelling of NormalNPU). */
export const npuLevelOf = (level: string): NpuFaultLevel | undefined =>
  level === 'NormalNetwork' ? 'NormalNPU' : severityRank(level) >= 0 ? (level as NpuFaultLevel) : undefined;

const validTime = (t: number | undefined, nowMs: number): number => (t !== undefined && t > 0 && t <= nowMs ? t : nowMs);

/** Keeps one record per faultKey: most serious level, earliest first sight. */
export function dedupeRecords(records: readonly FaultRecord[]): FaultRecord[] {
  const byKey = new Map<string, FaultRecord>();
  for (const r of records) {
    const k = faultKey(r);
    const prev = byKey.get(k);
    if (prev === undefined) {
      byKey.set(k, r);
      continue;
    }
    const worse = severityRank(r.level) > severityRank(prev.level) ? r : prev;
    byKey.set(k, { ...worse, firstSeenMs: Math.min(prev.firstSeenMs, r.firstSeenMs) });
  }
  return [...byKey.values()];
}

/** Splits merged DeviceFaults into per-code records (no de-duplication across entries). */
export function splitDeviceFaultList(nodeName: string, faults: readonly DeviceFault[], nowMs: number): FaultRecord[] {
  const out: FaultRecord[] = [];
  for (const f of faults) {
    const source = SOURCE_OF_FAULT_TYPE[f.fault_type];
    if (source === undefined) continue;
    const codes = f.fault_code === '' ? [] : [...new Set(f.fault_code.split(','))];
    if (codes.length === 0) {
      // An empty code of level ManuallySeparateNPU is the pseudo-code ManuallySeparateNPU (fault_time -1).
      if (f.fault_level === MANUALLY_SEPARATE_NPU) {
        out.push({ node: nodeName, device: f.npu_name, source, code: MANUALLY_SEPARATE_NPU, level: 'ManuallySeparateNPU', reportedLevel: f.fault_level, firstSeenMs: nowMs });
      }
      continue;
    }
    for (const code of codes) {
      const tl = f.fault_time_and_level_map?.[code];
      const reported = tl?.fault_level ?? f.fault_level;
      const level = npuLevelOf(reported);
      if (level === undefined) continue;
      out.push({ node: nodeName, device: f.npu_name, source, code, level, reportedLevel: reported, firstSeenMs: validTime(tl?.fault_time, nowMs) });
    }
  }
  return out;
}

const manualSince = (reasons: readonly UpgradeReason[] | undefined, nowMs: number): number => {
  const times = (reasons ?? []).filter((r) => r.fault_level === MANUALLY_SEPARATE_NPU).map((r) => validTime(r.upgrade_time, nowMs));
  return times.length > 0 ? Math.min(...times) : nowMs;
};

/**
 * All chip-level records of a device-info CM: per-code records of `<P>-Fault`, plus a
 * `ManuallySeparateNPU` pseudo-code record (source 'npu') for every chip in the `ManuallySeparateNPU`
 * key (first seen = its UpgradeFaultReason upgrade_time when known). De-duplicated by faultKey.
 */
export function splitDeviceFaults(nodeName: string, parsed: DeviceInfoData, nowMs: number): FaultRecord[] {
  const records = splitDeviceFaultList(nodeName, parsed.lists.faults, nowMs);
  for (const chip of parsed.manuallySeparateNpu) {
    records.push({
      node: nodeName,
      device: chip,
      source: 'npu',
      code: MANUALLY_SEPARATE_NPU,
      level: 'ManuallySeparateNPU',
      reportedLevel: MANUALLY_SEPARATE_NPU,
      firstSeenMs: manualSince(parsed.upgradeFaultReason[chip], nowMs),
      detail: `${MANUALLY_SEPARATE_NPU} key`,
    });
  }
  return dedupeRecords(records);
}

/** Chip records plus switch records (source 'switch') when SwitchInfoCfg parsed. */
export function deviceInfoRecords(nodeName: string, parsed: DeviceInfoData, nowMs: number): FaultRecord[] {
  const sw = parsed.switchInfo?.ok === true ? switchFaultRecords(nodeName, parsed.switchInfo.value, nowMs) : [];
  return [...splitDeviceFaults(nodeName, parsed, nowMs), ...sw];
}
