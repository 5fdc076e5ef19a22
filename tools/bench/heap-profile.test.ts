import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heapProfile } from './heap-profile.ts';

// A process with a known heap: one holder owning 4 MB of its own, two holders sharing 2 MB, one
// small; the profile must give each holder what only it keeps alive.
const SCRIPT = `
const { writeHeapSnapshot } = require('node:v8');
// repeat() makes a cons-string tree that shares its halves; the JSON round trip gives flat strings.
const flat = (s) => JSON.parse(JSON.stringify(s));
globalThis.__testHolders = (() => {
  const shared = { blob: flat('y'.repeat(2 << 20)) };
  return { owner: { own: Array.from({ length: 4 }, (_, i) => flat(String(i).repeat(1 << 20))) }, left: { shared }, right: { shared }, small: { n: 1 } };
})();
writeHeapSnapshot(process.argv[1]);
`;

describe('heap-profile', () => {
  it('reports what each holder retains alone, and memory two holders share under neither', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'heap-profile-')), 'h.heapsnapshot');
    const r = spawnSync(process.execPath, ['-e', SCRIPT, file], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const lines: string[] = [];
    const retained = heapProfile(file, { holders: '__testHolders', print: (l) => lines.push(l) });
    const mib = (k: string): number => (retained.get(k) ?? Number.NaN) / 2 ** 20;
    expect(mib('owner')).toBeGreaterThan(4);
    expect(mib('owner')).toBeLessThan(4.1);
    expect(mib('left')).toBeLessThan(0.01);
    expect(mib('right')).toBeLessThan(0.01);
    expect(mib('small')).toBeLessThan(0.01);
    expect(lines.some((l) => /^\s+4\.0 MiB {2}owner/.test(l))).toBe(true);
  });
});
