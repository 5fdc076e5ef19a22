import type { ErrorObject } from 'ajv';

/**
 * Why an input was refused: the bounded `reason` label of `clusterd_invalid_input_total` (README,
 * Metrics). Set where the rejection is made, never guessed from the free-text reason.
 */
export const REJECT_KINDS = {
  malformed_json: 'not JSON, or not a string',
  oversized: 'longer than the format allows',
  schema: 'wrong shape: a missing or mistyped field (JSON Schema)',
  out_of_range: 'a number outside the range of the Go type that reads it, or not an integer where Go wants one',
  check_code: 'CheckCode missing, empty or not the hash of the content',
  missing_key: 'a required ConfigMap data key is absent',
  bad_name: 'the ConfigMap name does not follow the format (e.g. mindx-dl-deviceinfo-<node>)',
  unknown_prefix: 'a DeviceList key with an unknown resource prefix, or mixed prefixes',
  bad_npu_name: 'a chip name that is not <prefix>-<int> (DeviceList lists, npu_name, ManuallySeparateNPU, UpgradeFaultReason)',
  bad_fault_code: 'a fault code token that is not 1-16 hex digits (the token is dropped, the rest kept)',
  unknown_value: 'a level, fault type, status or other enumerated value outside the vocabulary',
  unknown_node: 'names a node that cannot be resolved (a public fault\'s nodeSN)',
  invalid: 'any other inconsistency',
} as const;
export type RejectKind = keyof typeof REJECT_KINDS;

/** Result of parsing untrusted wire input: never throws, says why it rejected. */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string; readonly kind?: RejectKind };

export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const rejected = <T = never>(reason: string, kind: RejectKind = 'invalid'): Parsed<T> => ({ ok: false, reason, kind });
/** The kind of a rejection (`invalid` when the parser did not say). */
export const kindOf = (p: { readonly kind?: RejectKind }): RejectKind => p.kind ?? 'invalid';

export interface JsonLimits {
  /** Longer texts are refused before JSON.parse runs (UTF-16 code units); no cap when absent. */
  readonly maxChars?: number;
}

/** Longest JSON.parse message kept in a rejection: V8 quotes part of the input, which may be hostile. */
export const MAX_JSON_ERROR_CHARS = 200;

/**
 * JSON.parse for untrusted text, with the rejection texts every parser shares:
 * `<what>: not a string`, `<what>: oversized (N chars)`, `<what>: malformed JSON: <message>`.
 */
export function parseJson(what: string, text: string, limits: JsonLimits = {}): Parsed<unknown> {
  if (typeof text !== 'string') return rejected(`${what}: not a string`, 'malformed_json');
  if (limits.maxChars !== undefined && text.length > limits.maxChars) return rejected(`${what}: oversized (${text.length} chars)`, 'oversized');
  try {
    return ok(JSON.parse(text) as unknown);
  } catch (e) {
    return rejected(`${what}: malformed JSON: ${String((e as Error).message).slice(0, MAX_JSON_ERROR_CHARS)}`, 'malformed_json');
  }
}

type AjvResult = { readonly errors?: readonly (Pick<ErrorObject, 'instancePath' | 'message'> & { readonly keyword?: string })[] | null };

/**
 * A JSON Schema check: the code ajv generates at build time (tools/gen-validators.ts, the
 * `*.validators.gen.ts` files) or, in tests, `ajv.compile()`. Like ajv's ValidateFunction, it
 * keeps the errors of its last failed call in `errors`.
 */
export interface SchemaValidator<T = unknown> extends AjvResult {
  (data: unknown): data is T;
}

/** The errors of ajv's last failed validation on one line, e.g. `/DeviceInfo/UpdateTime must be integer`. */
export const ajvErrors = (validate: AjvResult): string =>
  (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`).join('; ');

/** Range keywords: the schemas carry each number's Go type as minimum/maximum (see go-json.ts). */
const RANGE_KEYWORDS: ReadonlySet<string> = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']);

/** `out_of_range` when a range keyword (or `integer` on a number) failed, else `schema`. */
export function ajvKind(validate: AjvResult, data?: unknown): RejectKind {
  for (const e of validate.errors ?? []) {
    if (e.keyword !== undefined && RANGE_KEYWORDS.has(e.keyword)) return 'out_of_range';
    if (e.keyword === 'type' && e.message === 'must be integer' && typeof pointerGet(data, e.instancePath) === 'number') return 'out_of_range';
  }
  return 'schema';
}

/** The value at a JSON pointer (ajv's instancePath), or undefined. */
function pointerGet(data: unknown, pointer: string): unknown {
  let v = data;
  for (const raw of pointer.split('/').slice(1)) {
    if (v === null || typeof v !== 'object') return undefined;
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    v = Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : undefined;
  }
  return v;
}

/** `<what>: <ajv errors>` with its kind. */
export const ajvRejected = <T = never>(what: string, validate: AjvResult, data?: unknown): Parsed<T> =>
  rejected(`${what}: ${ajvErrors(validate)}`, ajvKind(validate, data));

/** `parseJson`, then the ajv schema check (`<what>: <ajv errors>` on failure). */
export function parseValidated<T>(what: string, text: string, validate: SchemaValidator<T>, limits: JsonLimits = {}): Parsed<T> {
  const json = parseJson(what, text, limits);
  if (!json.ok) return json;
  return validate(json.value) ? ok(json.value) : ajvRejected(what, validate, json.value);
}
