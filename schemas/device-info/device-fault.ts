/**
 * `DeviceFault`, the element of the `<P>-Fault` JSON-array string (docs/formats.md#device-info), shared by the
 * node-side device-info CM and ClusterD's `cluster-info-device-N`.
 */
import { goJson, goMap } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed, type RejectKind } from '../parsed.ts';
import { NPU_LEVELS_BY_SEVERITY } from '../../vocabulary/fault-types.ts';
import { deviceInfoValidator } from './device-info-ajv.ts';

const validateDeviceFaultList = deviceInfoValidator<DeviceFault[]>('DeviceFaultList');

export const FAULT_TYPES = {
  card: 'CardUnhealthy',
  network: 'CardNetworkUnhealthy',
  public: 'PublicFault',
  node: 'NodeUnhealthy',
} as const;
export type DeviceFaultType = (typeof FAULT_TYPES)[keyof typeof FAULT_TYPES];
const FAULT_TYPE_SET: ReadonlySet<string> = new Set(Object.values(FAULT_TYPES));

/** Levels a DeviceFault may carry: the NPU vocabulary plus `NormalNetwork` (AddFaultAndFix). */
export const DEVICE_FAULT_LEVELS: readonly string[] = [...NPU_LEVELS_BY_SEVERITY, 'NormalNetwork'];
const LEVEL_SET: ReadonlySet<string> = new Set(DEVICE_FAULT_LEVELS);

/** Pseudo-code ClusterD gives an empty-code entry of level ManuallySeparateNPU (splitDeviceFault). */
export const MANUALLY_SEPARATE_NPU = 'ManuallySeparateNPU';

/** Chip names: `<DevicePublicNamePre><phyId>`, default `Ascend910-<phyId>`; here `<word>-<int>`. */
export const NPU_NAME_RE = /^[A-Za-z][A-Za-z0-9_]*-(0|[1-9][0-9]{0,4})$/;
/** One fault code token: hex digits as spelled in faultCode.json (no 0x). */
export const FAULT_CODE_RE = /^[0-9A-Fa-f]{1,16}$/;

export interface FaultTimeAndLevel {
  readonly fault_time: number;
  readonly fault_level: string;
}

/** Fields in Go declaration order (DP `common.DeviceFault`). */
export interface DeviceFault {
  readonly fault_type: string;
  readonly npu_name: string;
  readonly large_model_fault_level: string;
  readonly fault_level: string;
  readonly fault_handling: string;
  /** Comma-joined codes, de-duplicated on parse. */
  readonly fault_code: string;
  /** Go map (keys sorted on output); null = nil map. */
  readonly fault_time_and_level_map: Readonly<Record<string, FaultTimeAndLevel>> | null;
}

/** A part of an accepted input that was left out (logged and counted by the caller). */
export interface Dropped {
  readonly reason: string;
  readonly kind: RejectKind;
}

/** A parsed value plus the non-fatal findings a caller should log, and the parts it left out. */
export interface WithWarnings<T> {
  readonly value: T;
  readonly warnings: readonly string[];
  readonly dropped?: readonly Dropped[];
}

export const isNpuName = (s: string): boolean => NPU_NAME_RE.test(s);

/**
 * One string per chip name: every node lists the same `Ascend910-0`..`-15`, and each split makes new
 * strings (about 8 MiB of the FaultStore at 16,000 nodes x 16 NPUs, by a heap profile).
 * Bounded, so odd names cannot grow it: past the cap a name is kept as split.
 */
const NPU_NAMES = new Map<string, string>();
const NPU_NAMES_MAX = 4096;
function internNpuName(n: string): string {
  const s = NPU_NAMES.get(n);
  if (s !== undefined) return s;
  if (NPU_NAMES.size < NPU_NAMES_MAX) NPU_NAMES.set(n, n);
  return n;
}

/** Splits a CSV of chip names (`""` = none); rejects empty or malformed names. */
export function parseNpuCsv(csv: string, what: string): Parsed<string[]> {
  if (csv === '') return ok([]);
  const names = csv.split(',');
  const bad = names.find((n) => !isNpuName(n));
  if (bad !== undefined) return rejected(`${what}: bad NPU name ${JSON.stringify(bad)} (want <prefix>-<int>, e.g. Ascend910-3)`, 'bad_npu_name');
  return ok(names.map(internNpuName));
}

/** The map without the entries of dropped tokens (null stays null). */
const keepCodes = (m: DeviceFault['fault_time_and_level_map'], codes: readonly string[]): DeviceFault['fault_time_and_level_map'] =>
  m === null ? null : Object.fromEntries(Object.entries(m).filter(([k]) => codes.includes(k)));

/**
 * Checks and normalises a DeviceFault list already shaped by the schema. A bad code token is dropped
 * (listed in `dropped`); a bad chip name, fault type or level refuses the list.
 */
export function checkDeviceFaults(faults: readonly DeviceFault[], nowMs: number, where: string): Parsed<WithWarnings<DeviceFault[]>> {
  const warnings: string[] = [];
  const dropped: Dropped[] = [];
  const out: DeviceFault[] = [];
  for (const [i, f] of faults.entries()) {
    const at = `${where}[${i}]`;
    if (!FAULT_TYPE_SET.has(f.fault_type)) return rejected(`${at}: unknown fault_type ${JSON.stringify(f.fault_type)}`, 'unknown_value');
    if (!isNpuName(f.npu_name)) return rejected(`${at}: bad npu_name ${JSON.stringify(f.npu_name)}`, 'bad_npu_name');
    for (const k of ['large_model_fault_level', 'fault_level', 'fault_handling'] as const) {
      if (!LEVEL_SET.has(f[k])) return rejected(`${at}: unknown ${k} ${JSON.stringify(f[k])}`, 'unknown_value');
    }
    // ClusterD strips spaces before splitting (splitDeviceFault). A token that is still not a code is
    // dropped alone: ClusterD keeps every token, and refusing the whole ConfigMap would hide the
    // valid faults next to it (README, "Bad input").
    const spaceless = f.fault_code.replaceAll(' ', '');
    const tokens = spaceless === '' ? [] : spaceless.split(',');
    const codes = tokens.filter((c) => FAULT_CODE_RE.test(c));
    for (const bad of tokens.filter((c) => !FAULT_CODE_RE.test(c))) {
      dropped.push({ reason: `${at}: bad fault_code token ${JSON.stringify(bad.slice(0, 64))} on ${f.npu_name} dropped (want 1-16 hex digits)`, kind: 'bad_fault_code' });
    }
    const unique = [...new Set(codes)];
    if (unique.length !== codes.length) warnings.push(`${at}: duplicate codes in fault_code ${JSON.stringify(f.fault_code)} de-duplicated`);
    for (const [code, tl] of Object.entries(f.fault_time_and_level_map ?? {})) {
      if (!LEVEL_SET.has(tl.fault_level)) return rejected(`${at}: unknown fault_level ${JSON.stringify(tl.fault_level)} for code ${code}`, 'unknown_value');
      if (tl.fault_time <= 0) warnings.push(`${at}: fault_time of ${code} on ${f.npu_name} is not positive (${tl.fault_time})`);
      else if (tl.fault_time > nowMs) warnings.push(`${at}: fault_time of ${code} on ${f.npu_name} is in the future (${tl.fault_time} > ${nowMs})`);
    }
    const fault_code = unique.join(',');
    out.push(fault_code === f.fault_code ? f : { ...f, fault_code, fault_time_and_level_map: keepCodes(f.fault_time_and_level_map, unique) });
  }
  return ok({ value: out, warnings, dropped });
}

/** Parses a `<P>-Fault` string (a JSON array of DeviceFault). `""` counts as no faults. */
export function parseDeviceFaultList(text: string, nowMs: number, where = 'Fault'): Parsed<WithWarnings<DeviceFault[]>> {
  if (text === '') return ok({ value: [], warnings: [] });
  const json = parseValidated(where, text, validateDeviceFaultList);
  if (!json.ok) return json;
  return checkDeviceFaults(json.value, nowMs, where);
}

/** The Go-ordered model of one DeviceFault (map as a Go map). */
export const deviceFaultWire = (f: DeviceFault): unknown => ({
  fault_type: f.fault_type,
  npu_name: f.npu_name,
  large_model_fault_level: f.large_model_fault_level,
  fault_level: f.fault_level,
  fault_handling: f.fault_handling,
  fault_code: f.fault_code,
  fault_time_and_level_map:
    f.fault_time_and_level_map === null
      ? null
      : goMap(Object.fromEntries(Object.entries(f.fault_time_and_level_map).map(([k, v]) => [k, { fault_time: v.fault_time, fault_level: v.fault_level }]))),
});

/** The `<P>-Fault` string: `[]` for no faults, as DP writes it. */
export const encodeDeviceFaultList = (faults: readonly DeviceFault[]): string => goJson(faults.map(deviceFaultWire));
