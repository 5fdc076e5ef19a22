/**
 * The few rules of Go's `encoding/json.Unmarshal` into a struct that the pingmesh inputs depend on
 * (docs/formats.md#pingmesh-config): a field matches a key case-insensitively (a later key wins), an
 * integer field takes only an integer literal in its type's range, `null` leaves a field as it was, a
 * value of another JSON type fails the whole Unmarshal. JSON.parse keeps no literal, so numbers are
 * parsed with their source text (a reviver's `context.source`).
 */
import { MAX_JSON_ERROR_CHARS, ok, rejected, type Parsed } from '../parsed.ts';

/** A JSON number as written (`1`, `1.0`, `1e1`): Go's integer fields accept only the first kind. */
export class NumberLiteral {
  readonly source: string;
  constructor(source: string) {
    this.source = source;
  }
}

type Reviver = (this: unknown, key: string, value: unknown, context?: { readonly source?: string }) => unknown;

/** JSON.parse with every number kept as its literal (NumberLiteral). */
export function parseJsonLiterals(what: string, text: string): Parsed<unknown> {
  const reviver: Reviver = (_key, value, context) => (typeof value === 'number' ? new NumberLiteral(context?.source ?? String(value)) : value);
  try {
    return ok(JSON.parse(text, reviver as (this: unknown, key: string, value: unknown) => unknown) as unknown);
  } catch (e) {
    return rejected(`${what}: malformed JSON: ${String((e as Error).message).slice(0, MAX_JSON_ERROR_CHARS)}`, 'malformed_json');
  }
}

/** Go's case folding of a field name against a key (the Kelvin sign and long s fold to ASCII too). */
export const goFieldMatches = (key: string, field: string): boolean => key.toLowerCase().toUpperCase() === field.toUpperCase();

/** A Go integer field of `bits` bits (signed unless `unsigned`) from a literal; undefined when Go refuses it. */
export function goInt(lit: NumberLiteral, bits: 32 | 64, unsigned = false): number | undefined {
  if (!/^-?(0|[1-9]\d*)$/.test(lit.source)) return undefined;
  const n = BigInt(lit.source);
  const lo = unsigned ? 0n : -(1n << BigInt(bits - 1));
  const hi = unsigned ? (1n << BigInt(bits)) - 1n : (1n << BigInt(bits - 1)) - 1n;
  return n < lo || n > hi ? undefined : Number(n);
}

/** Go's strconv.Atoi (int64): an optional sign and decimal digits; undefined when it fails. */
export function goAtoi(s: string): bigint | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < -(1n << 63n) || n > (1n << 63n) - 1n ? undefined : n;
}

/** Go's strings.Trim(s, " "): spaces only. */
export const trimSpaces = (s: string): string => s.replace(/^ +| +$/g, '');

export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof NumberLiteral);
