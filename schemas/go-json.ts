/**
 * Byte-for-byte Go `encoding/json.Marshal` output (docs/formats.md#check-code), so CheckCodes match ClusterD.
 *
 * Modelling rules:
 * - plain objects are Go structs: keys in insertion order (= Go declaration order); `undefined` values
 *   are omitted (omitempty / absent field);
 * - `goMap(record)`, `goMapOf(entries)` or a JS `Map` is a Go map: keys sorted byte-wise (UTF-8);
 * - `null` is a nil slice/map/pointer; arrays encode as arrays (`[]` for an empty slice);
 * - numbers: every wire number we write is a Go integer field (int32/int64/uint...), so a plain number
 *   must be an integer in JS's exact range, |n| <= 2^53-1, and encodes in plain digits; anything else
 *   (a fraction, 1e21, NaN) throws rather than emit what Go's json.Unmarshal into an integer refuses.
 *   Parsers enforce the same range per field in the JSON Schemas, so accepted input always re-encodes.
 *   A Go float64 field is written through `goFloat(x)`: shortest round-trip, e-notation when
 *   |x| < 1e-6 or |x| >= 1e21, exponent as `e-7` / `e+21` (encoding/json trims strconv's `e-07`);
 *   -0 encodes as `0`; NaN/Infinity throw;
 * - bigint as an integer; Uint8Array as base64 (Go []byte);
 * - strings escaped as Go >= 1.22 does with HTML escaping on; a lone surrogate (only JSON.parse of a
 *   `\udXXX` escape makes one) is written as a raw U+FFFD, as Go's Unmarshal-then-Marshal does, so a
 *   re-encode is a fixpoint (the fuzz suite found the escaped `\ufffd` form was not).
 */

/** A Go map value: encoded with its keys sorted byte-wise. Build with `goMap` / `goMapOf`. */
export class GoMap<V = unknown> {
  readonly #entries: ReadonlyArray<readonly [string, V]>;
  constructor(entries: Iterable<readonly [string, V]>) {
    this.#entries = [...entries];
  }
  /** Entries in insertion order (they are sorted only when encoded). */
  entries(): ReadonlyArray<readonly [string, V]> {
    return this.#entries;
  }
}

/** Marks a record as a Go map (keys sorted on output). */
export const goMap = <V>(record: Readonly<Record<string, V>>): GoMap<V> => new GoMap(Object.entries(record));

/** A Go map from entries; a repeated key keeps its last value (as a Go map would). */
export const goMapOf = <V>(entries: Iterable<readonly [string, V]>): GoMap<V> => new GoMap(new Map(entries));

/** A Go float64 field's value (plain numbers are integers, see the header). */
export class GoFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
}
export const goFloat = (x: number): GoFloat => new GoFloat(x);

/** Thrown for values Go's encoder would refuse (NaN, Infinity) or that have no Go model. */
export class GoJsonError extends Error {
  override readonly name = 'GoJsonError';
}

const HEX = '0123456789abcdef';

/** Escape table for code units < 0x80; undefined = emit as is. */
const ASCII_ESCAPES: ReadonlyArray<string | undefined> = (() => {
  const t: Array<string | undefined> = [];
  for (let c = 0; c < 0x80; c++) {
    if (c < 0x20) t[c] = `\\u00${HEX[c >> 4]}${HEX[c & 0xf]}`;
  }
  t[0x22] = '\\"';
  t[0x5c] = '\\\\';
  t[0x0a] = '\\n';
  t[0x0d] = '\\r';
  t[0x09] = '\\t';
  t[0x08] = '\\b';
  t[0x0c] = '\\f';
  t[0x3c] = '\\u003c';
  t[0x3e] = '\\u003e';
  t[0x26] = '\\u0026';
  return t;
})();

/** Go's quoted JSON string, HTML-escaped; lone surrogates become U+FFFD (what Go decodes them to). */
export function goQuote(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let rep: string | undefined;
    if (c < 0x80) {
      rep = ASCII_ESCAPES[c];
    } else if (c === 0x2028) {
      rep = '\\u2028';
    } else if (c === 0x2029) {
      rep = '\\u2029';
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++; // valid pair: emitted verbatim
        continue;
      }
      rep = '\ufffd';
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      rep = '\ufffd';
    }
    if (rep !== undefined) {
      out += s.slice(start, i) + rep;
      start = i + 1;
    }
  }
  return out + s.slice(start) + '"';
}

/** An integer field: plain digits, only in the exact range (a Go int64 reader gets exactly this value). */
export function goInteger(n: number): string {
  if (!Number.isSafeInteger(n)) throw new GoJsonError(`json: ${String(n)} is not an integer in [-(2^53-1), 2^53-1]: it has no exact Go integer encoding (use goFloat for a float64 field)`);
  return n === 0 ? '0' : String(n);
}

/** Go's float64 formatting as encoding/json writes it. */
export function goNumber(n: number): string {
  if (!Number.isFinite(n)) throw new GoJsonError(`json: unsupported value: ${n}`);
  if (n === 0) return '0';
  // ECMAScript Number::toString is the shortest round-trip form and switches to exponent form at
  // exactly Go's thresholds (exp < -6 || exp >= 21); its exponent spelling (`e-7`, `e+21`) is what
  // encoding/json produces after trimming strconv's two-digit negative exponents.
  return String(n);
}

/** UTF-8 byte-wise comparison of two strings (Go's sort of map keys). */
export function compareUtf8(a: string, b: string): number {
  // Below the surrogates a UTF-16 unit is its code point: the first differing pair of units decides.
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const ua = a.charCodeAt(i);
  const ub = b.charCodeAt(i);
  if (ua < 0xd800 && ub < 0xd800) return ua < ub ? -1 : 1;
  return compareCodePoints(a, b);
}

function compareCodePoints(a: string, b: string): number {
  // For well-formed strings, comparing code points equals comparing UTF-8 bytes.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.codePointAt(i) ?? 0;
    const cb = b.codePointAt(i) ?? 0;
    if (ca !== cb) return ca < cb ? -1 : 1;
    if (ca > 0xffff) i++;
  }
  return a.length - b.length;
}

function encodeMap(entries: Iterable<readonly [unknown, unknown]>, seen: Set<object>): string {
  const kv: Array<[string, string]> = [];
  for (const [k, v] of entries) {
    if (v === undefined) continue;
    if (typeof k !== 'string') throw new GoJsonError(`json: unsupported map key type ${typeof k}`);
    kv.push([k, encode(v, seen)]);
  }
  // Go sorts on the UTF-8 bytes of the keys (a lone surrogate sorts as its WTF-8 bytes would).
  kv.sort((x, y) => compareUtf8(x[0], y[0]));
  return `{${kv.map(([k, v]) => `${goQuote(k)}:${v}`).join(',')}}`;
}

function encode(v: unknown, seen: Set<object>): string {
  switch (typeof v) {
    case 'string':
      return goQuote(v);
    case 'number':
      return goInteger(v);
    case 'bigint':
      return v.toString();
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      break;
    default:
      throw new GoJsonError(`json: unsupported type: ${typeof v}`);
  }
  if (v === null) return 'null';
  if (seen.has(v)) throw new GoJsonError('json: unsupported value: encountered a cycle');
  seen.add(v);
  try {
    if (Array.isArray(v)) {
      return `[${v.map((e: unknown) => {
        if (e === undefined) throw new GoJsonError('json: undefined array element has no Go model');
        return encode(e, seen);
      }).join(',')}]`;
    }
    if (v instanceof GoMap) return encodeMap(v.entries(), seen);
    if (v instanceof GoFloat) return goNumber(v.value);
    if (v instanceof Map) return encodeMap(v.entries(), seen);
    if (v instanceof Uint8Array) return `"${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')}"`;
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      throw new GoJsonError(`json: unsupported object type ${(v as object).constructor?.name ?? 'unknown'}`);
    }
    const parts: string[] = [];
    for (const [k, fv] of Object.entries(v)) {
      if (fv === undefined) continue;
      parts.push(`${goQuote(k)}:${encode(fv, seen)}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    seen.delete(v);
  }
}

/** Go `json.Marshal(value)` as a string. Throws GoJsonError where Go would fail. */
export function goJson(value: unknown): string {
  if (value === undefined) throw new GoJsonError('json: top-level undefined has no Go model');
  return encode(value, new Set());
}
