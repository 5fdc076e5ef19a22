import { readFileSync } from 'node:fs';
import { readmeWithReference } from './gen-reference.ts';

describe('README reference', () => {
  it('lists every flag and metric as the code defines them (run `node tools/gen-reference.ts --write`)', async () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).toBe(await readmeWithReference(readme));
  });
});
