/** Builds a device-info CM `data` map the way the real Device Plugin writes it (for the DP simulator). */
import { compareUtf8, goJson, goMap } from '../go-json.ts';
import { mostSerious, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { encodeDeviceFaultList, type DeviceFault, type DeviceFaultType, type FaultTimeAndLevel } from './device-fault.ts';
import {
  DEFAULT_DEVICE_RESOURCE_PREFIX,
  DEVICE_INFO_DESCRIPTION,
  DEVICE_INFO_KEYS,
  DEVICE_LIST_SUFFIXES,
  deviceInfoCheckCode,
  encodeDeviceInfoCfg,
  type DeviceInfo,
  type DeviceResourcePrefix,
  type UpgradeReason,
} from './device-info.ts';
import { encodeSwitchInfo, type SwitchFaultInfo } from './switch-info.ts';

export interface DeviceInfoDataInput {
  readonly prefix?: DeviceResourcePrefix;
  readonly available: readonly string[];
  readonly unhealthy?: readonly string[];
  readonly networkUnhealthy?: readonly string[];
  readonly recovering?: readonly string[];
  readonly faults?: readonly DeviceFault[];
  /** Unix seconds. */
  readonly updateTimeS: number;
  /** Default -1. */
  readonly superPodId?: number;
  /** Default -1. */
  readonly serverIndex?: number;
  /** Only A5 1D/2D superpods carry it. */
  readonly rackId?: number;
  /** Undefined: key absent (910 A1/A2). Use ZERO_SWITCH_INFO for A3 without switch faults. */
  readonly switchInfo?: SwitchFaultInfo;
  readonly manuallySeparateNpu?: readonly string[];
  readonly upgradeFaultReason?: Readonly<Record<string, readonly UpgradeReason[]>>;
}

/** DP sorts its chip lists (sets.String.List()). */
const csv = (names: readonly string[] | undefined): string => [...new Set(names ?? [])].sort(compareUtf8).join(',');

/** The `DeviceList` map for a DeviceInfo (all five keys). */
export function buildDeviceList(input: Pick<DeviceInfoDataInput, 'prefix' | 'available' | 'unhealthy' | 'networkUnhealthy' | 'recovering' | 'faults'>): Record<string, string> {
  const p = input.prefix ?? DEFAULT_DEVICE_RESOURCE_PREFIX;
  return {
    [p + DEVICE_LIST_SUFFIXES.available]: csv(input.available),
    [p + DEVICE_LIST_SUFFIXES.fault]: encodeDeviceFaultList(input.faults ?? []),
    [p + DEVICE_LIST_SUFFIXES.unhealthy]: csv(input.unhealthy),
    [p + DEVICE_LIST_SUFFIXES.networkUnhealthy]: csv(input.networkUnhealthy),
    [p + DEVICE_LIST_SUFFIXES.recovering]: csv(input.recovering),
  };
}

export const encodeUpgradeFaultReason = (r: Readonly<Record<string, readonly UpgradeReason[]>>): string =>
  goJson(goMap(Object.fromEntries(Object.entries(r).map(([chip, rs]) => [chip, rs.map((x) => ({
    upgrade_time: x.upgrade_time, fault_code: x.fault_code, fault_level: x.fault_level, upgrade_type: x.upgrade_type,
  }))]))));

/** The whole CM `data` (CheckCode computed, `Description` verbatim). */
export function encodeDeviceInfoData(input: DeviceInfoDataInput): Record<string, string> {
  const info: DeviceInfo = { DeviceList: buildDeviceList(input), UpdateTime: input.updateTimeS };
  const data: Record<string, string> = {
    [DEVICE_INFO_KEYS.deviceInfo]: encodeDeviceInfoCfg({
      DeviceInfo: info,
      SuperPodID: input.superPodId ?? -1,
      ServerIndex: input.serverIndex ?? -1,
      CheckCode: deviceInfoCheckCode(info),
      ...(input.rackId === undefined ? {} : { RackID: input.rackId }),
    }),
  };
  if (input.switchInfo !== undefined) data[DEVICE_INFO_KEYS.switchInfo] = encodeSwitchInfo(input.switchInfo);
  data[DEVICE_INFO_KEYS.manuallySeparateNpu] = csv(input.manuallySeparateNpu);
  data[DEVICE_INFO_KEYS.upgradeFaultReason] = encodeUpgradeFaultReason(input.upgradeFaultReason ?? {});
  data[DEVICE_INFO_KEYS.description] = DEVICE_INFO_DESCRIPTION;
  return data;
}

export interface CodeAtLevel {
  readonly code: string;
  readonly level: NpuFaultLevel;
  /** Unix ms. */
  readonly timeMs: number;
}

/**
 * One merged DeviceFault as DP emits it for a chip and fault type: codes comma-joined in the given
 * order (de-duplicated, first wins), the four level fields = the most serious code level.
 */
export function makeDeviceFault(faultType: DeviceFaultType, npuName: string, codes: readonly CodeAtLevel[]): DeviceFault {
  const map: Record<string, FaultTimeAndLevel> = {};
  const order: string[] = [];
  for (const c of codes) {
    if (Object.hasOwn(map, c.code)) continue;
    order.push(c.code);
    map[c.code] = { fault_time: c.timeMs, fault_level: c.level };
  }
  const level = mostSerious(codes.map((c) => c.level)) ?? 'NormalNPU';
  return {
    fault_type: faultType,
    npu_name: npuName,
    large_model_fault_level: level,
    fault_level: level,
    fault_handling: level,
    fault_code: order.join(','),
    fault_time_and_level_map: map,
  };
}
