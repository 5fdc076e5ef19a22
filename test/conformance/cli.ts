/**
 * Runs conformance scenarios outside jest and prints every difference (allowed or not):
 *   node test/conformance/cli.ts [--scenario NAME] [--json FILE]
 * Exit 0 when every difference is on the allow-list, 1 otherwise.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SCENARIOS } from './scenarios.ts';
import { runScenario } from './runner.ts';
import { formatResult, verdicts } from './report.ts';

const { values } = parseArgs({ options: { scenario: { type: 'string' }, json: { type: 'string' } } });
const chosen = SCENARIOS.filter((s) => values.scenario === undefined || s.name === values.scenario);
if (chosen.length === 0) {
  process.stderr.write(`no scenario ${values.scenario}; known: ${SCENARIOS.map((s) => s.name).join(', ')}\n`);
  process.exit(2);
}
let failed = 0;
const all = [];
for (const s of chosen) {
  const r = await runScenario(s, { log: (l) => process.stderr.write(`${l}\n`) });
  all.push(r);
  process.stdout.write(`${formatResult(r)}\n`);
  failed += verdicts(r).filter((v) => v.allowed === undefined).length;
}
if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(all, null, 2));
process.stdout.write(`\nconformance: ${failed} divergence(s) not on the allow-list\n`);
process.exit(failed === 0 ? 0 : 1);
