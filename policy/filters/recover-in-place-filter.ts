/**
 * Recover-in-place filter (docs/rules.md#filter.recover-in-place, #timing.clusterd): for a job whose strategies include
 * `recover-in-place`, the L2/L3 faults (RestartRequest / RestartBusiness) of a pod rank are hidden from
 * the scheduler while the pod can be restarted in place:
 * - the pod rank's faults are only L2/L3, NotHandleFault, and SubHealthFault when the job's
 *   subHealthyStrategy is `ignore`;
 * - the job has not reported the pod as "must exit" after the fault time;
 * - every L2/L3 fault is younger than 60 s;
 * - rank 0, if it has faults, qualifies too (otherwise nothing is hidden).
 */
import type { LeveledFault } from '../faults/fault-level.ts';
import type { FilterVerdict } from './filters.ts';
import { reason } from '../reasons.ts';

export const RECOVER_IN_PLACE_MAX_AGE_MS = 60_000;
const L2_L3: readonly string[] = ['RestartRequest', 'RestartBusiness'];

export interface RecoverInPlaceJob {
  readonly recoverInPlace: boolean;
  /** PodGroup label subHealthyStrategy (default `ignore`). */
  readonly subHealthyStrategy?: string;
}

export interface PodRankFaults {
  readonly podRank: number;
  readonly faults: readonly LeveledFault[];
  /** When the job reported this pod as having to exit (ms), if it did. */
  readonly mustExitReportedMs?: number;
}

function qualifies(job: RecoverInPlaceJob, r: PodRankFaults, nowMs: number): { ok: boolean; why: string; untilMs?: number } {
  const allowed = new Set([...L2_L3, 'NotHandleFault', ...((job.subHealthyStrategy ?? 'ignore') === 'ignore' ? ['SubHealthFault'] : [])]);
  const other = r.faults.find((f) => !allowed.has(f.level));
  if (other !== undefined) return { ok: false, why: `pod rank ${r.podRank} has ${other.level} (${other.fault.code})` };
  const l23 = r.faults.filter((f) => L2_L3.includes(f.level));
  if (l23.length === 0) return { ok: false, why: `pod rank ${r.podRank} has no L2/L3 fault` };
  const oldest = Math.min(...l23.map((f) => f.fault.firstSeenMs));
  if (r.mustExitReportedMs !== undefined && r.mustExitReportedMs >= oldest) return { ok: false, why: `pod rank ${r.podRank} reported must-exit at ${r.mustExitReportedMs}` };
  if (nowMs - oldest >= RECOVER_IN_PLACE_MAX_AGE_MS) return { ok: false, why: `pod rank ${r.podRank} fault older than 60 s` };
  return { ok: true, why: `pod rank ${r.podRank} restarts in place`, untilMs: oldest + RECOVER_IN_PLACE_MAX_AGE_MS };
}

/**
 * Verdicts per pod rank. Only L2/L3 faults of qualifying ranks are hidden (NotHandle/SubHealth
 * faults are not touched by this filter); the map holds a verdict for each L2/L3 fault, keyed by
 * pod rank, in the order of `faults`.
 */
export function recoverInPlaceVerdicts(job: RecoverInPlaceJob, ranks: readonly PodRankFaults[], nowMs: number): Map<number, FilterVerdict[]> {
  const out = new Map<number, FilterVerdict[]>();
  if (!job.recoverInPlace) return out;
  const rank0 = ranks.find((r) => r.podRank === 0 && r.faults.length > 0);
  const rank0Check = rank0 === undefined ? undefined : qualifies(job, rank0, nowMs);
  for (const r of ranks) {
    const l23 = r.faults.filter((f) => L2_L3.includes(f.level));
    if (l23.length === 0) continue;
    const q = rank0Check !== undefined && !rank0Check.ok ? { ok: false, why: `rank 0 cannot restart in place: ${rank0Check.why}` } : qualifies(job, r, nowMs);
    out.set(
      r.podRank,
      l23.map((f): FilterVerdict =>
        q.ok
          ? { action: 'hide', untilMs: 'untilMs' in q ? q.untilMs : undefined, reasons: [reason('recover-in-place', q.why, { code: f.fault.code, level: 'hidden' })] }
          : { action: 'pass', reasons: [reason('recover-in-place', q.why, { code: f.fault.code, level: f.level })] },
      ),
    );
  }
  return out;
}
