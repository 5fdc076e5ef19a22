// cachedBundle (tools/bundle/build.ts): reused while its inputs are unchanged, rebuilt after a change.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cachedBundle } from './build.ts';

describe('cachedBundle', () => {
  const root = mkdtempSync(join(tmpdir(), 'cached-bundle-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('builds once, reuses the bundle while no input changed, and builds again when one did', async () => {
    const first = await cachedBundle(root);
    expect(existsSync(first)).toBe(true);
    expect(existsSync(join(dirname(first), 'protos', 'recover.proto'))).toBe(true);
    const index = join(root, 'inputs.json');
    const inputs = JSON.parse(readFileSync(index, 'utf8')) as string[];
    expect(inputs).toContain(join(dirname(new URL(import.meta.url).pathname), '..', '..', 'main.ts'));

    // Unchanged: the same file, no build (the index is not rewritten).
    writeFileSync(index, JSON.stringify(inputs, null, 1));
    expect(await cachedBundle(root)).toBe(first);
    expect(readFileSync(index, 'utf8')).toBe(JSON.stringify(inputs, null, 1));

    // A listed input whose content is not what the bundles were built from: built again, and the
    // index rewritten from the new build's own inputs (only a build writes it).
    const edited = join(root, 'edited.ts');
    writeFileSync(edited, 'export const a = 1;\n');
    writeFileSync(index, JSON.stringify([...inputs, edited]));
    expect(await cachedBundle(root)).toBe(first); // main.ts's sources are those of the first build: the same key
    expect(JSON.parse(readFileSync(index, 'utf8'))).toEqual(inputs);
  }, 120_000);
});
