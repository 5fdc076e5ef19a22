/**
 * Public faults from third parties (docs/formats.md#public-fault, docs/rules.md#ingest.public-faults): a ConfigMap in any namespace
 * with label `mc-consumer-publicfault=true` and data key `PublicFault`, or the same payload over gRPC
 * `PubFault/SendPublicFault`. Every value rule has its own reason. Stateful rules (per-resource token
 * bucket, cluster-wide cap of 50,000 faults, assertion timing) are not here.
 */
import { goJson, goMap } from '../go-json.ts';
import { ajvRejected, kindOf, ok, parseJson, rejected, type Parsed, type RejectKind } from '../parsed.ts';
import { DEFAULT_PUBLIC_FAULT_CONFIG, publicFaultLevel, type PublicFaultConfig } from './public-fault-config.ts';
import { validatePubFaultInfo } from './public-fault-ajv.ts';

export const PUBLIC_FAULT_LABEL_KEY = 'mc-consumer-publicfault';
export const PUBLIC_FAULT_LABELS = { [PUBLIC_FAULT_LABEL_KEY]: 'true' } as const;
export const PUBLIC_FAULT_DATA_KEY = 'PublicFault';
/** The CM value must stay under 1 MB. */
export const PUBLIC_FAULT_MAX_BYTES = 1024 * 1024;
export const PUBLIC_FAULT_VERSION = '1.0';
export const PUBLIC_FAULT_TYPES = ['NPU', 'Node', 'Network', 'Storage'] as const;
export const PUBLIC_FAULT_ASSERTIONS = ['occur', 'recover', 'once'] as const;
export type PubFaultAssertion = (typeof PUBLIC_FAULT_ASSERTIONS)[number];
/** 2025-01-01T00:00:00Z: timestamps must not be earlier. */
export const PUBLIC_FAULT_MIN_TIME_MS = Date.UTC(2025, 0, 1);
export const PUBLIC_FAULT_LIMITS = { minFaults: 1, maxFaults: 100, minInfluences: 1, maxInfluences: 1000, maxDeviceIds: 32, deviceIdEnd: 32 } as const;
const ID_RE = /^[A-Za-z0-9._-]{8,128}$/;
const CODE_RE = /^[0-9]{9}$/;
/** ClusterD checker.go: a DNS-1123-like node name, and a description of up to 512 non-space-or-space characters. */
const NODE_NAME_RE = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
/** Go's `[\S ]`: anything but \t \n \f \r (RE2's \s is ASCII-only). */
const DESCRIPTION_RE = /^[^\t\n\f\r]*$/;
const FAULT_LOCATION_LIMITS = { maxEntries: 10, maxKeyBytes: 16, maxValueBytes: 128 } as const;

/** Fields in Go order (api.PubFaultInfo, camelCase tags). */
export interface PubFaultInfluence {
  readonly nodeName: string;
  /** Node annotation `product-serial-number`. */
  readonly nodeSN: string;
  /** Physical NPU ids in [0, 32); null = nil slice. */
  readonly deviceIds: readonly number[] | null;
}
export interface PubFault {
  readonly faultId: string;
  readonly faultType: string;
  /** 9 digits. */
  readonly faultCode: string;
  /** Unix ms. */
  readonly faultTime: number;
  readonly assertion: PubFaultAssertion;
  /** Go map; null = nil map. */
  readonly faultLocation: Readonly<Record<string, string>> | null;
  readonly influence: readonly PubFaultInfluence[];
  readonly description: string;
}
export interface PubFaultInfo {
  /**
   * Faults of the message that failed their checks and were left out (ClusterD checkFaultsAndFlush
   * removes an invalid fault and keeps the rest; only a message with no valid fault is refused).
   */
  readonly dropped?: ReadonlyArray<{ readonly faultId: string; readonly reason: string; readonly kind: RejectKind }>;
  readonly id: string;
  /** Unix ms. */
  readonly timestamp: number;
  readonly version: string;
  readonly resource: string;
  readonly faults: readonly PubFault[];
}

interface RawInfluence { nodeName?: string; nodeSN?: string; deviceIds?: number[] | null }
interface RawFault {
  faultId: string; faultType: string; faultCode: string; faultTime: number; assertion: string;
  faultLocation?: Record<string, string> | null; influence: RawInfluence[] | null; description?: string;
}
interface RawInfo { id: string; timestamp: number; version: string; resource: string; faults: RawFault[] | null }

const isMsTime = (t: number): boolean => t >= 1e12 && t <= 9_999_999_999_999 && t >= PUBLIC_FAULT_MIN_TIME_MS;

function checkFault(f: RawFault, at: string, cfg: PublicFaultConfig): Parsed<PubFault> {
  if (!ID_RE.test(f.faultId)) return rejected(`${at}.faultId: must be 8-128 characters of [A-Za-z0-9._-], got ${JSON.stringify(f.faultId)}`, 'schema');
  if (!(PUBLIC_FAULT_TYPES as readonly string[]).includes(f.faultType)) return rejected(`${at}.faultType: must be one of ${PUBLIC_FAULT_TYPES.join('|')}, got ${JSON.stringify(f.faultType)}`, 'unknown_value');
  if (!CODE_RE.test(f.faultCode)) return rejected(`${at}.faultCode: must be 9 digits, got ${JSON.stringify(f.faultCode)}`, 'bad_fault_code');
  if (publicFaultLevel(cfg, f.faultCode) === undefined) return rejected(`${at}.faultCode: ${f.faultCode} is not in publicFaultCode`, 'unknown_value');
  if (!isMsTime(f.faultTime)) return rejected(`${at}.faultTime: must be a 13-digit ms time not before 2025-01-01, got ${f.faultTime}`, 'out_of_range');
  if (!(PUBLIC_FAULT_ASSERTIONS as readonly string[]).includes(f.assertion)) return rejected(`${at}.assertion: must be one of ${PUBLIC_FAULT_ASSERTIONS.join('|')}, got ${JSON.stringify(f.assertion)}`, 'unknown_value');
  const loc = Object.entries(f.faultLocation ?? {});
  if (loc.length > FAULT_LOCATION_LIMITS.maxEntries) return rejected(`${at}.faultLocation: at most ${FAULT_LOCATION_LIMITS.maxEntries} entries, got ${loc.length}`, 'out_of_range');
  if (loc.some(([k, v]) => Buffer.byteLength(k) > FAULT_LOCATION_LIMITS.maxKeyBytes || Buffer.byteLength(v) > FAULT_LOCATION_LIMITS.maxValueBytes)) {
    return rejected(`${at}.faultLocation: keys at most ${FAULT_LOCATION_LIMITS.maxKeyBytes} bytes, values at most ${FAULT_LOCATION_LIMITS.maxValueBytes}`, 'out_of_range');
  }
  const description = f.description ?? '';
  if ([...description].length > 512 || !DESCRIPTION_RE.test(description)) return rejected(`${at}.description: at most 512 characters, no tab, newline, form feed or carriage return`, 'invalid');
  const inf = f.influence ?? [];
  const L = PUBLIC_FAULT_LIMITS;
  if (inf.length < L.minInfluences || inf.length > L.maxInfluences) return rejected(`${at}.influence: must have ${L.minInfluences}-${L.maxInfluences} entries, got ${inf.length}`, 'out_of_range');
  const influence: PubFaultInfluence[] = [];
  for (const [j, x] of inf.entries()) {
    const ai = `${at}.influence[${j}]`;
    const nodeName = x.nodeName ?? '';
    const nodeSN = x.nodeSN ?? '';
    if (nodeName === '' && nodeSN === '') return rejected(`${ai}: needs a nodeName or a nodeSN`, 'schema');
    if (nodeName !== '' && !NODE_NAME_RE.test(nodeName)) return rejected(`${ai}.nodeName: not a valid node name: ${JSON.stringify(nodeName.slice(0, 64))}`, 'invalid');
    const ids = x.deviceIds ?? [];
    // ClusterD checkDeviceIds: 1-32 ids; a node-wide influence (no ids) makes the fault invalid.
    if (ids.length === 0) return rejected(`${ai}.deviceIds: at least 1 id (ClusterD takes no node-wide public fault)`, 'out_of_range');
    if (ids.length > L.maxDeviceIds) return rejected(`${ai}.deviceIds: at most ${L.maxDeviceIds} ids, got ${ids.length}`, 'out_of_range');
    const out = ids.find((d) => d < 0 || d >= L.deviceIdEnd);
    if (out !== undefined) return rejected(`${ai}.deviceIds: id ${out} is outside [0, ${L.deviceIdEnd})`, 'out_of_range');
    if (new Set(ids).size !== ids.length) return rejected(`${ai}.deviceIds: ids must be unique`, 'invalid');
    influence.push({ nodeName, nodeSN, deviceIds: x.deviceIds ?? null });
  }
  return ok({
    faultId: f.faultId,
    faultType: f.faultType,
    faultCode: f.faultCode,
    faultTime: f.faultTime,
    assertion: f.assertion as PubFaultAssertion,
    faultLocation: f.faultLocation === undefined || f.faultLocation === null ? null : { ...f.faultLocation },
    influence,
    description,
  });
}

/**
 * Applies every value rule to a payload that came from JSON or gRPC (int64 already numbers).
 * `config` supplies the allowed resources and known codes (default: the shipped publicFaultConfiguration.json).
 */
export function validatePublicFault(raw: unknown, config: PublicFaultConfig = DEFAULT_PUBLIC_FAULT_CONFIG): Parsed<PubFaultInfo> {
  if (raw === null || raw === undefined) return rejected('request: empty public fault', 'schema');
  if (!validatePubFaultInfo(raw)) return ajvRejected('schema', validatePubFaultInfo, raw);
  const v = raw as unknown as RawInfo;
  if (!ID_RE.test(v.id)) return rejected(`id: must be 8-128 characters of [A-Za-z0-9._-], got ${JSON.stringify(v.id)}`, 'schema');
  if (!isMsTime(v.timestamp)) return rejected(`timestamp: must be a 13-digit ms time not before 2025-01-01, got ${v.timestamp}`, 'out_of_range');
  if (v.version !== PUBLIC_FAULT_VERSION) return rejected(`version: must be ${PUBLIC_FAULT_VERSION}, got ${JSON.stringify(v.version)}`, 'unknown_value');
  if (!config.publicFaultResource.includes(v.resource)) return rejected(`resource: ${JSON.stringify(v.resource)} is not in publicFaultResource`, 'unknown_value');
  const faults = v.faults ?? [];
  const L = PUBLIC_FAULT_LIMITS;
  if (faults.length < L.minFaults || faults.length > L.maxFaults) return rejected(`faults: must have ${L.minFaults}-${L.maxFaults} entries, got ${faults.length}`, 'out_of_range');
  const out: PubFault[] = [];
  const dropped: Array<{ faultId: string; reason: string; kind: RejectKind }> = [];
  let first: Parsed<PubFault> | undefined;
  for (const [i, f] of faults.entries()) {
    const c = checkFault(f, `faults[${i}]`, config);
    if (c.ok) { out.push(c.value); continue; }
    first ??= c;
    dropped.push({ faultId: String(f.faultId), reason: c.reason, kind: kindOf(c) });
  }
  // No valid fault: the message is refused, with its first fault's reason.
  if (out.length === 0 && first !== undefined && !first.ok) return rejected(faults.length === 1 ? first.reason : `no valid fault; ${first.reason}`, kindOf(first));
  return ok({ ...(dropped.length === 0 ? {} : { dropped }), id: v.id, timestamp: v.timestamp, version: v.version, resource: v.resource, faults: out });
}

/** Parses a `PublicFault` text (CM value). */
export function parsePublicFault(text: string, config: PublicFaultConfig = DEFAULT_PUBLIC_FAULT_CONFIG): Parsed<PubFaultInfo> {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > PUBLIC_FAULT_MAX_BYTES) return rejected(`size: ${bytes} bytes is over the ${PUBLIC_FAULT_MAX_BYTES}-byte limit`, 'oversized');
  const json = parseJson(PUBLIC_FAULT_DATA_KEY, text);
  if (!json.ok) return json;
  return validatePublicFault(json.value, config);
}

/** Parses a public-fault CM's `data`. */
export function parsePublicFaultData(data: Readonly<Record<string, string>> | undefined, config: PublicFaultConfig = DEFAULT_PUBLIC_FAULT_CONFIG): Parsed<PubFaultInfo> {
  const text = data?.[PUBLIC_FAULT_DATA_KEY];
  if (text === undefined) return rejected(`data key ${PUBLIC_FAULT_DATA_KEY} is missing`, 'missing_key');
  return parsePublicFault(text, config);
}

/** Go JSON of a public-fault payload (what a sender would put in the CM). */
export const encodePublicFault = (v: PubFaultInfo): string =>
  goJson({
    id: v.id,
    timestamp: v.timestamp,
    version: v.version,
    resource: v.resource,
    faults: v.faults.map((f) => ({
      faultId: f.faultId,
      faultType: f.faultType,
      faultCode: f.faultCode,
      faultTime: f.faultTime,
      assertion: f.assertion,
      faultLocation: f.faultLocation === null ? null : goMap(f.faultLocation),
      influence: f.influence.map((x) => ({ nodeName: x.nodeName, nodeSN: x.nodeSN, deviceIds: x.deviceIds === null ? null : [...x.deviceIds] })),
      description: f.description,
    })),
  });
