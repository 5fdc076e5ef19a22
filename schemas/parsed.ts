import type { ErrorObject, ValidateFunction } from 'ajv';

/** Result of parsing untrusted wire input: never throws, says why it rejected. */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const rejected = <T = never>(reason: string): Parsed<T> => ({ ok: false, reason });

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
  if (typeof text !== 'string') return rejected(`${what}: not a string`);
  if (limits.maxChars !== undefined && text.length > limits.maxChars) return rejected(`${what}: oversized (${text.length} chars)`);
  try {
    return ok(JSON.parse(text) as unknown);
  } catch (e) {
    return rejected(`${what}: malformed JSON: ${String((e as Error).message).slice(0, MAX_JSON_ERROR_CHARS)}`);
  }
}

/** The errors of ajv's last failed validation on one line, e.g. `/DeviceInfo/UpdateTime must be integer`. */
export const ajvErrors = (validate: { readonly errors?: readonly Pick<ErrorObject, 'instancePath' | 'message'>[] | null }): string =>
  (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`).join('; ');

/** `parseJson`, then the ajv schema check (`<what>: <ajv errors>` on failure). */
export function parseValidated<T>(what: string, text: string, validate: ValidateFunction<T>, limits: JsonLimits = {}): Parsed<T> {
  const json = parseJson(what, text, limits);
  if (!json.ok) return json;
  return validate(json.value) ? ok(json.value) : rejected(`${what}: ${ajvErrors(validate)}`);
}
