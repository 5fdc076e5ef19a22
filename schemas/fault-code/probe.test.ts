import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
const schema: unknown = createRequire(import.meta.url)('./probe.schema.json');
it('works', () => {
  const v = new Ajv().compile(schema as object);
  expect(v({ a: 'x' })).toBe(true);
  expect(v({})).toBe(false);
});
