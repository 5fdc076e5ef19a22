/**
 * Turns scenario results into text: every difference, marked allowed (with the allow-list entry and
 * its flag) or not. Used by the jest test's failure message and by `node test/conformance/cli.ts`.
 */
import { ALLOW_LIST } from './allow-list.ts';
import { allowedBy, formatDifference, type Allowed, type Difference } from './diff.ts';
import type { ScenarioResult } from './runner.ts';

export interface Verdict {
  readonly step: string;
  readonly difference: Difference;
  readonly allowed: Allowed | undefined;
}

export function verdicts(r: ScenarioResult, list: readonly Allowed[] = ALLOW_LIST): Verdict[] {
  return r.steps.flatMap((s) => s.differences.map((d) => ({ step: s.step, difference: d, allowed: allowedBy(d, list, s.step) })));
}

export function formatResult(r: ScenarioResult, list: readonly Allowed[] = ALLOW_LIST): string {
  const out: string[] = [`scenario ${r.scenario}`];
  for (const s of r.steps) {
    out.push(`\n== step: ${s.step} (settled after ${s.settleMs} ms${s.quiet ? '' : ', still changing'}; ${s.differences.length} difference(s))`);
    for (const d of s.differences) {
      const a = allowedBy(d, list, s.step);
      out.push(`${a === undefined ? 'DIVERGENCE' : `allowed [${a.id}] (${a.flag})`}: ${formatDifference(d)}`);
    }
  }
  out.push(`\ntimings: ${Object.entries(r.timings).map(([k, v]) => `${k}=${v}`).join(', ')}`);
  return out.join('\n');
}
