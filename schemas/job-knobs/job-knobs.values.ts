/**
 * Value parsers for the PodGroup knobs (docs/formats.md#job-knobs). Each takes the raw string
 * (or undefined when the key is absent) and returns the parsed value plus warnings; none throws.
 * Warnings quote at most 64 characters of a hostile value.
 */

export interface Read<T> {
  readonly value: T;
  readonly warnings: readonly string[];
}

const read = <T>(value: T, ...warnings: string[]): Read<T> => ({ value, warnings });

/** A value quoted for a warning, cut to 64 characters. */
export function quote(raw: string): string {
  return raw.length <= 64 ? JSON.stringify(raw) : `${JSON.stringify(raw.slice(0, 64))}… (${raw.length} chars)`;
}

const invalid = (key: string, raw: string, fallback: string, why = 'invalid value'): string =>
  `${key}: ${why} ${quote(raw)}; using ${fallback}`;

/** One of `allowed`; absent or `''` gives `fallback` silently, anything else `fallback` plus a warning. */
export function readEnum<T extends string>(
  key: string,
  raw: string | undefined,
  allowed: readonly T[],
  fallback: T,
): Read<T> {
  if (raw === undefined || raw === '') return read(fallback);
  if ((allowed as readonly string[]).includes(raw)) return read(raw as T);
  return read(fallback, invalid(key, raw, fallback));
}

/** One of `allowed`, or undefined: absent or `''` silently, anything else with a warning. */
export function readOptionalEnum<T extends string>(key: string, raw: string | undefined, allowed: readonly T[]): Read<T | undefined> {
  if (raw === undefined || raw === '') return read(undefined);
  if ((allowed as readonly string[]).includes(raw)) return read(raw as T);
  return read(undefined, `${key}: invalid value ${quote(raw)}; ignored`);
}

/**
 * A decimal integer in [min, max] (digits only, at most 9 of them, an optional leading `+`); absent or
 * `''` gives `fallback` silently; anything else (non-numeric, negative, out of range) gives
 * `fallback` plus a warning.
 */
export function readIntInRange(
  key: string,
  raw: string | undefined,
  min: number,
  max: number,
  fallback: number,
): Read<number> {
  if (raw === undefined || raw === '') return read(fallback);
  if (!/^\+?[0-9]{1,9}$/.test(raw)) return read(fallback, invalid(key, raw, String(fallback), 'not a non-negative integer:'));
  const n = Number(raw);
  if (n < min || n > max) return read(fallback, invalid(key, raw, String(fallback), `outside ${min}-${max}:`));
  return read(n);
}

/**
 * A comma-separated list of known tokens (whitespace removed, as ClusterD does): unknown or
 * duplicate tokens are dropped with a warning, order is kept.
 */
export function readCsv<T extends string>(
  key: string,
  raw: string | undefined,
  allowed: readonly T[],
  maxChars: number,
): Read<readonly T[]> {
  if (raw === undefined || raw === '') return read([]);
  if (raw.length > maxChars) return read([], `${key}: value of ${raw.length} chars exceeds ${maxChars}; ignored`);
  const out: T[] = [];
  const warnings: string[] = [];
  for (const token of raw.replace(/\s+/g, '').split(',')) {
    if (token === '') continue;
    if (!(allowed as readonly string[]).includes(token)) warnings.push(`${key}: unknown item ${quote(token)} ignored`);
    else if (out.includes(token as T)) warnings.push(`${key}: duplicate item ${quote(token)} ignored`);
    else out.push(token as T);
  }
  return { value: out, warnings };
}

/** Default hiding time of a custom fault filter entry without `:seconds` (ClusterD: 60 s). */
export const FILTER_DEFAULT_SECONDS = 60;
/** Longest hiding time accepted (ClusterD: 24 h); longer or invalid values fall back to 60 s. */
export const FILTER_MAX_SECONDS = 24 * 60 * 60;
export const FILTER_MAX_ENTRIES = 1000;

/** Splits on commas outside `[...]` (UB switch codes look like `[0x08520003,na,L2,na]`). */
function splitTopLevel(value: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === ',' && depth === 0) {
      items.push(value.slice(start, i));
      start = i + 1;
    }
  }
  items.push(value.slice(start));
  return items;
}

/**
 * `huawei.com/schedule.filter.faultCode` / `.faultLevel`: `key[:seconds],...` -> key -> seconds.
 * Full-width `，` and `：` are accepted as separators. A missing, non-numeric, negative or > 24 h
 * seconds value gives 60 s (with a warning when present but invalid). A repeated key keeps the last.
 */
export function readFaultFilter(key: string, raw: string | undefined, maxChars: number): Read<ReadonlyMap<string, number>> {
  const out = new Map<string, number>();
  if (raw === undefined || raw === '') return read(out);
  if (raw.length > maxChars) return read(out, `${key}: value of ${raw.length} chars exceeds ${maxChars}; ignored`);
  const warnings: string[] = [];
  const value = raw.replaceAll('，', ',').replaceAll('：', ':');
  for (const item of splitTopLevel(value)) {
    const entry = item.trim();
    if (entry === '') continue;
    if (out.size >= FILTER_MAX_ENTRIES) {
      warnings.push(`${key}: more than ${FILTER_MAX_ENTRIES} entries; the rest ignored`);
      break;
    }
    const colon = entry.indexOf(':', entry.lastIndexOf(']') + 1);
    const name = (colon < 0 ? entry : entry.slice(0, colon)).trim();
    if (name === '') {
      warnings.push(`${key}: entry ${quote(entry)} has no code or level; ignored`);
      continue;
    }
    if (colon < 0) {
      out.set(name, FILTER_DEFAULT_SECONDS);
      continue;
    }
    const secs = entry.slice(colon + 1).trim();
    const n = /^\+?[0-9]{1,9}$/.test(secs) ? Number(secs) : Number.NaN;
    if (Number.isNaN(n) || n > FILTER_MAX_SECONDS) {
      warnings.push(invalid(key, secs, `${FILTER_DEFAULT_SECONDS} s for ${quote(name)}`, 'invalid seconds'));
      out.set(name, FILTER_DEFAULT_SECONDS);
    } else {
      out.set(name, n);
    }
  }
  return { value: out, warnings };
}

/** One `rank:type` item of ProcessConfirmFault / ProcessResultFault; type 0 = HBM only, 1 = other. */
export interface ProcessFaultRank {
  readonly rankId: number;
  readonly faultType: string;
}

/**
 * `"rank:type,rank:type"` (ClusterD String2Faults): trimmed, outer commas ignored; malformed items
 * (not exactly one colon, non-numeric rank, odd type token) are dropped with a warning.
 */
export function readProcessFaults(key: string, raw: string | undefined, maxChars: number): Read<readonly ProcessFaultRank[] | undefined> {
  if (raw === undefined) return read(undefined);
  if (raw.length > maxChars) return read([], `${key}: value of ${raw.length} chars exceeds ${maxChars}; ignored`);
  const trimmed = raw.trim().replace(/^,+|,+$/g, '');
  if (trimmed === '') return read([]);
  const out: ProcessFaultRank[] = [];
  const warnings: string[] = [];
  let bad = 0;
  for (const item of trimmed.split(',')) {
    const m = /^\s*([0-9]{1,9}):([0-9A-Za-z_-]{1,32})\s*$/.exec(item);
    if (m) out.push({ rankId: Number(m[1]), faultType: m[2]! });
    else if (bad++ < 5) warnings.push(`${key}: malformed item ${quote(item)} ignored`);
  }
  if (bad > 5) warnings.push(`${key}: ${bad - 5} more malformed items ignored`);
  return { value: out, warnings };
}

/** A free-form string capped at `maxChars`; longer values are ignored with a warning. */
export function readString(key: string, raw: string | undefined, maxChars: number): Read<string | undefined> {
  if (raw === undefined || raw === '') return read(undefined);
  if (raw.length > maxChars) return read(undefined, `${key}: value of ${raw.length} chars exceeds ${maxChars}; ignored`);
  return read(raw);
}

/** An optional decimal integer in [min, max]; absent or `''` silently undefined, anything else invalid undefined plus a warning. */
export function readOptionalInt(key: string, raw: string | undefined, min: number, max: number): Read<number | undefined> {
  if (raw === undefined || raw === '') return read(undefined);
  if (!/^\+?[0-9]{1,9}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    return read(undefined, `${key}: not an integer in ${min}-${max}: ${quote(raw)}; ignored`);
  }
  return read(Number(raw));
}

/**
 * `level1` of a multilevel affinity config `level2=8,level1=4` (pods per group). Absent: undefined
 * silently; no valid `level1` pair: undefined plus a warning (the plugin refuses such a job too).
 */
export function readAffinityLevel1(key: string, raw: string | undefined, maxChars: number, max: number): Read<number | undefined> {
  if (raw === undefined || raw === '') return read(undefined);
  if (raw.length > maxChars) return read(undefined, `${key}: value of ${raw.length} chars exceeds ${maxChars}; ignored`);
  const pair = raw.split(',').map((x) => x.split('=')).find((kv) => kv.length === 2 && kv[0]?.trim() === 'level1');
  const n = pair?.[1]?.trim() ?? '';
  if (!/^[0-9]{1,9}$/.test(n) || Number(n) < 1 || Number(n) > max) return read(undefined, `${key}: no level1=<1-${max}> in ${quote(raw)}; ignored`);
  return read(Number(n));
}
