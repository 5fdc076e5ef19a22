/**
 * A deep copy of a JSON-shaped value (what the apiserver stores and serves): plain objects, arrays
 * and primitives are copied here, anything else by structuredClone. Same result as structuredClone
 * on such values, about ten times faster: the in-memory apiserver copies every object it takes in
 * and hands out, which made structuredClone one of a simulation's largest costs.
 */
export function copyJson<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) {
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = copyJson(v[i] as unknown);
    return out as T;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const x = copyJson((v as Record<string, unknown>)[k]);
    // An own `__proto__` key (JSON.parse makes one) stays a key, not the copy's prototype.
    if (k === '__proto__') Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true });
    else out[k] = x;
  }
  return out as T;
}
