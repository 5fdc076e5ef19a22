/**
 * Every number a schema accepts is in the range of the Go type that reads it (else ClusterD's readers fail to decode what we accept):
 * each `integer` carries `minimum`/`maximum` (int32, uint32 or the JS-exact part of int64/uint64,
 * |n| <= 2^53-1) or an `enum`, so parse and encode (go-json.ts) agree with the Go consumers by
 * construction. No schema has a float field; one would need `goFloat` in its encoder.
 */
import { readdirSync, readFileSync } from 'node:fs';

const MAX_EXACT = Number.MAX_SAFE_INTEGER;
const dir = new URL('./', import.meta.url);
const schemaFiles = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.schema.json')).sort();

/** Every sub-schema whose `type` allows integers or numbers, with its JSON pointer. */
function numericNodes(node: unknown, path = ''): Array<{ path: string; schema: Record<string, unknown> }> {
  if (node === null || typeof node !== 'object') return [];
  const out: Array<{ path: string; schema: Record<string, unknown> }> = [];
  if (!Array.isArray(node)) {
    const s = node as Record<string, unknown>;
    const types = Array.isArray(s['type']) ? (s['type'] as unknown[]) : [s['type']];
    if (types.includes('integer') || types.includes('number')) out.push({ path, schema: s });
  }
  for (const [k, v] of Object.entries(node)) out.push(...numericNodes(v, `${path}/${k}`));
  return out;
}

describe('JSON Schemas: numbers in the range of their Go types', () => {
  it('finds the schemas', () => {
    expect(schemaFiles.length).toBeGreaterThanOrEqual(15);
  });

  it.each(schemaFiles)('%s: every integer is bounded within the exact range, no floats', (file) => {
    const schema: unknown = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
    for (const { path, schema: s } of numericNodes(schema)) {
      const types = Array.isArray(s['type']) ? s['type'] : [s['type']];
      expect({ path, float: types.includes('number') }).toEqual({ path, float: false });
      if (Array.isArray(s['enum'])) continue;
      const { minimum, maximum } = s as { minimum?: number; maximum?: number };
      expect({ path, minimum: typeof minimum, maximum: typeof maximum }).toEqual({ path, minimum: 'number', maximum: 'number' });
      expect(minimum!).toBeGreaterThanOrEqual(-MAX_EXACT);
      expect(maximum!).toBeLessThanOrEqual(MAX_EXACT);
    }
  });
});
