import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate, outputOf, SPECS } from './gen-validators.ts';

const REPO = join(import.meta.dirname, '..');

describe('generated schema validators', () => {
  it.each(SPECS.map((s) => [outputOf(s), s] as const))('%s is what ajv generates from the schema now (run `node tools/gen-validators.ts --write`)', (path, spec) => {
    expect(readFileSync(join(REPO, path), 'utf8')).toBe(generate(spec));
  });
});
