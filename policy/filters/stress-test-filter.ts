/**
 * Stress-test fault filter (docs/rules.md#filter.stress-test, #recover.stress-test): while an online stress test runs on a
 * node, its stress-test result codes 80818C05 (high level, SeparateNPU) and 80818C06 (low level,
 * SubHealthFault) are removed from the scheduler view; the stress-test flow handles the result.
 */
import type { LeveledFault } from '../faults/fault-level.ts';
import type { FilterVerdict } from './filters.ts';
import { reason } from '../reasons.ts';

export const STRESS_TEST_CODES: readonly string[] = ['80818C05', '80818C06'];

export function stressTestVerdict(f: LeveledFault, nodesUnderStressTest: ReadonlySet<string>): FilterVerdict {
  if (!nodesUnderStressTest.has(f.fault.node) || !STRESS_TEST_CODES.includes(f.fault.code.toUpperCase())) return { action: 'pass', reasons: [] };
  return { action: 'hide', reasons: [reason('stress-test', `stress test running on ${f.fault.node}`, { code: f.fault.code, level: 'hidden' })] };
}
