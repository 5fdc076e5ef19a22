/**
 * Every scenario of SCENARIOS has its test file under scenarios/ and every file there names one:
 * a scenario without a file would silently never run.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SCENARIOS } from './scenarios.ts';

test('each conformance scenario has exactly one test file, named as the scenario', () => {
  const dir = fileURLToPath(new URL('./scenarios/', import.meta.url));
  const files = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => f.replace(/\.test\.ts$/, '')).sort();
  expect(files).toEqual(SCENARIOS.map((s) => s.name).sort());
});
