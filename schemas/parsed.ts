/** Result of parsing untrusted wire input: never throws, says why it rejected. */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const rejected = <T = never>(reason: string): Parsed<T> => ({ ok: false, reason });
