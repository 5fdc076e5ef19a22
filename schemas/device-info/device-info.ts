/**
 * `kube-system/mindx-dl-deviceinfo-<node>`, written by the Ascend Device Plugin (docs/formats.md#device-info).
 * Parse = JSON + schema + CheckCode over the canonical Go re-serialisation + name checks; never throws.
 */
import { checkCode } from '../check-code.ts';
import { goJson, goMap } from '../go-json.ts';
import { ajvRejected, ok, parseJson, parseValidated, rejected, type Parsed } from '../parsed.ts';
import { type DeviceFault, type Dropped, parseDeviceFaultList, parseNpuCsv, isNpuName, type WithWarnings } from './device-fault.ts';
import { deviceInfoValidator } from './device-info-ajv.ts';
import { parseSwitchInfo, type SwitchInfoView } from './switch-info.ts';

const validateDeviceInfoCfg = deviceInfoValidator<DeviceInfoCfg>('DeviceInfoCfg');
const validateUpgradeFaultReason = deviceInfoValidator<Record<string, UpgradeReason[] | null> | null>('UpgradeFaultReason');

export const DEVICE_INFO_NAMESPACE = 'kube-system';
export const DEVICE_INFO_CM_PREFIX = 'mindx-dl-deviceinfo-';
export const DEVICE_INFO_LABEL_KEY = 'mx-consumer-cim';
export const DEVICE_INFO_LABELS = { [DEVICE_INFO_LABEL_KEY]: 'true' } as const;
export const DEVICE_INFO_KEYS = {
  deviceInfo: 'DeviceInfoCfg',
  switchInfo: 'SwitchInfoCfg',
  manuallySeparateNpu: 'ManuallySeparateNPU',
  upgradeFaultReason: 'UpgradeFaultReason',
  description: 'Description',
} as const;
/** The `Description` data value, verbatim DP constant. */
export const DEVICE_INFO_DESCRIPTION =
  "The field[xxx.com/xxx] is sunset. Volcano has the ability to maintain the usage status of chips on its own, and can temporarily use this field by configuring the Volcano parameter 'self-maintain-available-card'";

/** `<P>`: `huawei.com/Ascend910`, or `huawei.com/npu` on A5 (GetAscend910Key). */
export const DEVICE_RESOURCE_PREFIXES = ['huawei.com/Ascend910', 'huawei.com/npu'] as const;
export type DeviceResourcePrefix = (typeof DEVICE_RESOURCE_PREFIXES)[number];
export const DEFAULT_DEVICE_RESOURCE_PREFIX: DeviceResourcePrefix = 'huawei.com/Ascend910';
/** DeviceList key suffixes after `<P>`. */
export const DEVICE_LIST_SUFFIXES = {
  available: '',
  fault: '-Fault',
  unhealthy: '-Unhealthy',
  networkUnhealthy: '-NetworkUnhealthy',
  recovering: '-Recovering',
} as const;
export type DeviceListPart = keyof typeof DEVICE_LIST_SUFFIXES;

export const deviceInfoCmName = (nodeName: string): string => `${DEVICE_INFO_CM_PREFIX}${nodeName}`;
/** Node name of a device-info CM, or undefined when the CM is not one (wrong namespace or prefix). */
export function nodeNameOfDeviceInfoCm(namespace: string, name: string): string | undefined {
  if (namespace !== DEVICE_INFO_NAMESPACE || !name.startsWith(DEVICE_INFO_CM_PREFIX)) return undefined;
  const node = name.slice(DEVICE_INFO_CM_PREFIX.length);
  return node === '' ? undefined : node;
}

/** The hashed object; fields in Go order. */
export interface DeviceInfo {
  /** Go map: keys sorted on output. */
  readonly DeviceList: Readonly<Record<string, string>>;
  /** Unix seconds. */
  readonly UpdateTime: number;
}

/** `DeviceInfoCfg` value (DP NodeDeviceInfoCache), fields in DP serialisation order. */
export interface DeviceInfoCfg {
  readonly DeviceInfo: DeviceInfo;
  readonly SuperPodID: number;
  readonly ServerIndex: number;
  readonly CheckCode: string;
  /** Pointer with omitempty: present only on A5 1D/2D superpods. */
  readonly RackID?: number;
}

/** `UpgradeFaultReason` element; `upgrade_time` in ms. */
export interface UpgradeReason {
  readonly upgrade_time: number;
  readonly fault_code: string;
  readonly fault_level: string;
  readonly upgrade_type: 'FaultFrequency' | 'FaultDuration' | 'FaultAutofill';
}

/** DeviceList broken into its five parts. */
export interface DeviceLists {
  readonly prefix: DeviceResourcePrefix;
  readonly available: readonly string[];
  readonly unhealthy: readonly string[];
  readonly networkUnhealthy: readonly string[];
  readonly recovering: readonly string[];
  readonly faults: readonly DeviceFault[];
}

/** Everything a device-info CM says, checked. */
export interface DeviceInfoData {
  readonly cfg: DeviceInfoCfg;
  readonly lists: DeviceLists;
  readonly manuallySeparateNpu: readonly string[];
  readonly upgradeFaultReason: Readonly<Record<string, readonly UpgradeReason[]>>;
  /**
   * SwitchInfoCfg is independent (ClusterD parses it separately): its failure does not drop the rest;
   * the store keeps the node's last good switch state instead. Undefined: the key is absent.
   */
  readonly switchInfo: Parsed<SwitchInfoView> | undefined;
  readonly warnings: readonly string[];
  /** Parts left out of an accepted ConfigMap (bad fault code tokens), to log and count. */
  readonly dropped: readonly Dropped[];
}

export const deviceInfoWire = (d: DeviceInfo): unknown => ({ DeviceList: goMap(d.DeviceList), UpdateTime: d.UpdateTime });

/** CheckCode of a DeviceInfo (hash of the inner object only, docs/formats.md#check-code). */
export const deviceInfoCheckCode = (d: DeviceInfo): string => checkCode(deviceInfoWire(d));

/** The `DeviceInfoCfg` string in DP field order. */
export const encodeDeviceInfoCfg = (cfg: DeviceInfoCfg): string =>
  goJson({
    DeviceInfo: deviceInfoWire(cfg.DeviceInfo),
    SuperPodID: cfg.SuperPodID,
    ServerIndex: cfg.ServerIndex,
    CheckCode: cfg.CheckCode,
    RackID: cfg.RackID,
  });

/** Parses and verifies a `DeviceInfoCfg` string: rejects a missing, empty or wrong CheckCode. */
export function parseDeviceInfoCfg(text: string): Parsed<DeviceInfoCfg> {
  const json = parseJson(DEVICE_INFO_KEYS.deviceInfo, text);
  if (!json.ok) return json;
  const raw = json.value;
  // Before the schema check, so that a missing CheckCode gets its own reason (not "must have required").
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const code = (raw as Record<string, unknown>)['CheckCode'];
    if (code === undefined || code === '') return rejected(`${DEVICE_INFO_KEYS.deviceInfo}: CheckCode is missing or empty`, 'check_code');
  }
  if (!validateDeviceInfoCfg(raw)) return ajvRejected(DEVICE_INFO_KEYS.deviceInfo, validateDeviceInfoCfg, raw);
  const info: DeviceInfo = { DeviceList: { ...raw.DeviceInfo.DeviceList }, UpdateTime: raw.DeviceInfo.UpdateTime };
  const want = deviceInfoCheckCode(info);
  if (raw.CheckCode !== want) {
    return rejected(`${DEVICE_INFO_KEYS.deviceInfo}: CheckCode mismatch: got ${raw.CheckCode}, canonical Go JSON of DeviceInfo hashes to ${want}`, 'check_code');
  }
  const cfg: DeviceInfoCfg = { DeviceInfo: info, SuperPodID: raw.SuperPodID, ServerIndex: raw.ServerIndex, CheckCode: raw.CheckCode };
  return ok(raw.RackID === undefined ? cfg : { ...cfg, RackID: raw.RackID });
}

function splitKey(key: string): { prefix: DeviceResourcePrefix; part: DeviceListPart } | undefined {
  for (const prefix of DEVICE_RESOURCE_PREFIXES) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    for (const [part, suffix] of Object.entries(DEVICE_LIST_SUFFIXES) as Array<[DeviceListPart, string]>) {
      if (rest === suffix) return { prefix, part };
    }
  }
  return undefined;
}

/** Breaks a DeviceList into its parts; rejects unknown or mixed prefixes and bad chip names. */
export function parseDeviceList(list: Readonly<Record<string, string>>, nowMs: number): Parsed<WithWarnings<DeviceLists>> {
  let prefix: DeviceResourcePrefix | undefined;
  const parts: Partial<Record<DeviceListPart, string>> = {};
  for (const [key, value] of Object.entries(list)) {
    const k = splitKey(key);
    if (k === undefined) return rejected(`DeviceList: unknown key ${JSON.stringify(key)} (known prefixes: ${DEVICE_RESOURCE_PREFIXES.join(', ')})`, 'unknown_prefix');
    if (prefix !== undefined && prefix !== k.prefix) return rejected(`DeviceList: mixed resource prefixes ${prefix} and ${k.prefix}`, 'unknown_prefix');
    prefix = k.prefix;
    parts[k.part] = value;
  }
  const csv: Partial<Record<Exclude<DeviceListPart, 'fault'>, string[]>> = {};
  for (const part of ['available', 'unhealthy', 'networkUnhealthy', 'recovering'] as const) {
    const p = parseNpuCsv(parts[part] ?? '', `DeviceList ${part}`);
    if (!p.ok) return p;
    csv[part] = p.value;
  }
  const faults = parseDeviceFaultList(parts.fault ?? '', nowMs, 'DeviceList Fault');
  if (!faults.ok) return faults;
  return ok({
    value: {
      prefix: prefix ?? DEFAULT_DEVICE_RESOURCE_PREFIX,
      available: csv.available ?? [],
      unhealthy: csv.unhealthy ?? [],
      networkUnhealthy: csv.networkUnhealthy ?? [],
      recovering: csv.recovering ?? [],
      faults: faults.value.value,
    },
    warnings: faults.value.warnings,
    dropped: faults.value.dropped ?? [],
  });
}

/** Parses an `UpgradeFaultReason` string (`""` = none). */
export function parseUpgradeFaultReason(text: string): Parsed<Record<string, readonly UpgradeReason[]>> {
  if (text === '') return ok({});
  const where = DEVICE_INFO_KEYS.upgradeFaultReason;
  const json = parseValidated(where, text, validateUpgradeFaultReason);
  if (!json.ok) return json;
  const raw = json.value;
  const out: Record<string, readonly UpgradeReason[]> = {};
  for (const [chip, reasons] of Object.entries(raw ?? {})) {
    if (!isNpuName(chip)) return rejected(`${where}: bad NPU name ${JSON.stringify(chip)}`, 'bad_npu_name');
    out[chip] = (reasons ?? []).map((r) => ({ upgrade_time: r.upgrade_time, fault_code: r.fault_code, fault_level: r.fault_level, upgrade_type: r.upgrade_type }));
  }
  return ok(out);
}

/**
 * Parses a device-info CM's `data`. `DeviceInfoCfg` is required; the other keys may be absent.
 * Warnings (zero/future fault_time, duplicate codes) are returned with the value, not fatal.
 */
export function parseDeviceInfoData(data: Readonly<Record<string, string>> | undefined, nowMs: number): Parsed<DeviceInfoData> {
  const text = data?.[DEVICE_INFO_KEYS.deviceInfo];
  if (text === undefined) return rejected(`data key ${DEVICE_INFO_KEYS.deviceInfo} is missing`, 'missing_key');
  const cfg = parseDeviceInfoCfg(text);
  if (!cfg.ok) return cfg;
  const lists = parseDeviceList(cfg.value.DeviceInfo.DeviceList, nowMs);
  if (!lists.ok) return lists;
  const manual = parseNpuCsv(data?.[DEVICE_INFO_KEYS.manuallySeparateNpu] ?? '', DEVICE_INFO_KEYS.manuallySeparateNpu);
  if (!manual.ok) return manual;
  const upgrade = parseUpgradeFaultReason(data?.[DEVICE_INFO_KEYS.upgradeFaultReason] ?? '');
  if (!upgrade.ok) return upgrade;
  const switchText = data?.[DEVICE_INFO_KEYS.switchInfo];
  const warnings = [...lists.value.warnings];
  const uniqueManual = [...new Set(manual.value)];
  if (uniqueManual.length !== manual.value.length) warnings.push(`${DEVICE_INFO_KEYS.manuallySeparateNpu}: duplicate chip names de-duplicated`);
  return ok({
    cfg: cfg.value,
    lists: lists.value.value,
    manuallySeparateNpu: uniqueManual,
    upgradeFaultReason: upgrade.value,
    switchInfo: switchText === undefined ? undefined : parseSwitchInfo(switchText, nowMs),
    warnings,
    dropped: lists.value.dropped ?? [],
  });
}
