/**
 * Fault filters of ClusterD's device processor chain (docs/rules.md#filter.chain-order to #ingest.pre-separate) share one verdict
 * type. A filter decides, per fault, what the scheduler view (what Volcano sees in cluster-info) gets;
 * hidden faults stay in the job view (fault subscribers, recovery FSM), as ClusterD keeps them in
 * its "deleted" cache (docs/rules.md#filter.two-views). Order matters and follows ClusterD's chain:
 * custom-filter -> UCE-accompany -> step-retry -> recover-in-place -> stress-test -> pre-separate.
 */
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import { earliest } from '../policy-operator.ts';
import type { ReasonChain } from '../reasons.ts';

export const FILTER_CHAIN_ORDER = ['custom-filter', 'uce-accompany', 'step-retry', 'recover-in-place', 'stress-test', 'pre-separate'] as const;

export type FilterVerdict =
  | { readonly action: 'pass'; readonly reasons: ReasonChain }
  /** Hidden from the scheduler view now; decide again at `untilMs` (undefined: while the inputs stay the same). */
  | { readonly action: 'hide'; readonly untilMs?: number; readonly reasons: ReasonChain }
  /** Suppressed for good (this instance of the fault). */
  | { readonly action: 'drop'; readonly reasons: ReasonChain }
  /** Kept, at another level. */
  | { readonly action: 'relevel'; readonly level: NpuFaultLevel; readonly reasons: ReasonChain };

export const PASS: FilterVerdict = { action: 'pass', reasons: [] };

export type FaultFilter = (f: LeveledFault) => FilterVerdict;

export interface FilteredView {
  /** What the scheduler sees, levels after re-levelling, each chain extended by the filters that touched it. */
  readonly visible: readonly LeveledFault[];
  readonly hidden: ReadonlyArray<{ readonly fault: LeveledFault; readonly reasons: ReasonChain }>;
  readonly dropped: ReadonlyArray<{ readonly fault: LeveledFault; readonly reasons: ReasonChain }>;
  /** Earliest `untilMs` among hidden faults: re-run the filters then. */
  readonly recheckAtMs: number | undefined;
}

/** Runs the filters in order on each fault: the first hide/drop wins; relevels accumulate. */
export function applyFilters(faults: readonly LeveledFault[], filters: readonly FaultFilter[]): FilteredView {
  const visible: LeveledFault[] = [];
  const hidden: Array<{ fault: LeveledFault; reasons: ReasonChain }> = [];
  const dropped: Array<{ fault: LeveledFault; reasons: ReasonChain }> = [];
  let recheckAtMs: number | undefined;
  for (const original of faults) {
    let f = original;
    let outcome: 'visible' | 'hidden' | 'dropped' = 'visible';
    for (const filter of filters) {
      const v = filter(f);
      if (v.action === 'pass') {
        if (v.reasons.length > 0) f = { ...f, reasons: [...f.reasons, ...v.reasons] };
        continue;
      }
      if (v.action === 'relevel') {
        f = { ...f, level: v.level, reasons: [...f.reasons, ...v.reasons] };
        continue;
      }
      const reasons = [...f.reasons, ...v.reasons];
      if (v.action === 'hide') {
        hidden.push({ fault: f, reasons });
        recheckAtMs = earliest(recheckAtMs, v.untilMs);
        outcome = 'hidden';
      } else {
        dropped.push({ fault: f, reasons });
        outcome = 'dropped';
      }
      break;
    }
    if (outcome === 'visible') visible.push(f);
  }
  return { visible, hidden, dropped, recheckAtMs };
}
