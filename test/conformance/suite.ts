/**
 * The differential conformance suite of one scenario: it runs on the real ClusterD and on
 * clusterd-ts (each alone on a fresh control plane of its own, identical input bytes at the same
 * moments), and after every step each difference in what they wrote must be on the reviewed
 * allow-list. Each scenario has its own test file under scenarios/ (named as the scenario), so the
 * test command can run them on parallel workers; `make conformance` runs them all.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCENARIOS } from './scenarios.ts';
import { runScenario, type ScenarioResult } from './runner.ts';
import { formatDifference } from './diff.ts';
import { formatResult, verdicts } from './report.ts';

export function conformanceSuite(name: string): void {
  const scenario = SCENARIOS.find((s) => s.name === name);
  if (scenario === undefined) throw new Error(`no conformance scenario named ${name} (test/conformance/scenarios.ts)`);

  describe(`conformance with the real ClusterD: ${scenario.name}`, () => {
    let result: ScenarioResult | undefined;
    let failure: unknown;

    beforeAll(async () => {
      try {
        result = await runScenario(scenario);
      } catch (e) {
        failure = e;
        return;
      }
      const file = join(process.env.CONFORMANCE_REPORT_DIR ?? tmpdir(), `clusterd-ts-conformance-${scenario.name}.txt`);
      writeFileSync(file, formatResult(result));
      writeFileSync(file.replace(/\.txt$/, '.json'), JSON.stringify(result, null, 2));
      process.stdout.write(`conformance ${scenario.name}: report in ${file} (and .json); ${Object.entries(result.timings).map(([k, v]) => `${k}=${v}`).join(', ')}\n`);
    }, 20 * 60_000);

    test('the scenario ran on both sides', () => {
      expect(failure).toBeUndefined();
      expect(result?.steps.map((s) => s.step)).toEqual(['start', ...scenario.steps.map((s) => s.name)]);
    });

    test.each(['start', ...scenario.steps.map((s) => s.name)])('after "%s": every difference from ClusterD is on the allow-list', (step) => {
      const r = result?.steps.find((s) => s.step === step);
      if (r === undefined) throw new Error(`step not run (${String(failure ?? 'see the first test')})`);
      const divergences = verdicts({ ...result!, steps: [r] }).filter((v) => v.allowed === undefined).map((v) => formatDifference(v.difference));
      expect(divergences).toEqual([]);
    });
  });
}
