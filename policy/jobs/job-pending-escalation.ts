/**
 * Pod-level -> job-level escalation when replacement pods stay pending (docs/rules.md#resched.pending-escalation, #resched.lifecycle, #decision.pod-level).
 *
 * Volcano counts `PendingSessionNum`, +1 per scheduling session once the fault pods were deleted and
 * the job is still not fully allocated; at 6 sessions it widens to the logical super-pod, at 12 to the
 * whole job. Sessions run every 1 s (`--schedule-period=1s`, docs/rules.md#timing.volcano) and never overlap, so 12 sessions
 * take *at least* 12 s of wall time, plus each session's own run time (not documented; it
 * grows with cluster size).
 *
 * Our time-based equivalent: escalate when the replacements have been pending for
 * `DEFAULT_POD_ESCALATION_PENDING_MS` = 15 s, measured from the first evaluation that sees every
 * targeted pod gone or replaced (= Volcano's "delete succeeded"). 12 s is the earliest Volcano could
 * act; the extra 3 s (~250 ms per session) covers session run time and our own event latency
 * (200 ms burst window, requeue). Escalating too early is the costly error (a job-level restart costs
 * minutes), escalating a few seconds late is cheap, so we lean late. Configurable.
 *
 * Never escalates: a job capped at pod level (`huawei.com/recover_policy_path=pod`, an inference job:
 * docs/rules.md#resched.pod-level-cap), `process-recover-enable=on` (docs/rules.md#resched.pending-escalation),
 * hot-switch deletions, external mode, or a restart that is already job level.
 * Before job level, super-pod, multilevel and A5 rack jobs widen block by block (job-block-escalation.ts).
 */
import type { EscalationBlock, RestartScope } from './job-decision-types.ts';
import type { JobKnobsInput } from './job-view.ts';

export const VOLCANO_SESSION_PERIOD_MS = 1_000;
export const VOLCANO_JOB_ESCALATION_SESSIONS = 12;
export const DEFAULT_POD_ESCALATION_PENDING_MS = 15_000;
/** The widening steps, leaning late the same way: 3 sessions -> 3.75 s, 6 sessions -> 7.5 s (docs/rules.md#resched.block-escalation). */
export const DEFAULT_RACK_ESCALATION_MS = 3_750;
export const DEFAULT_SUPER_POD_ESCALATION_MS = 7_500;

/** Why a job may never go past pod level (docs/rules.md#resched.pod-level-cap); undefined when it may. */
export function podLevelCap(knobs: JobKnobsInput): 'recover_policy_path=pod' | 'inference-job' | undefined {
  if (knobs.recoverPolicyPath === 'pod') return 'recover_policy_path=pod';
  return knobs.inferenceCap === undefined ? undefined : 'inference-job';
}

/** Why (if at all) a restart of this scope may not widen to job level. */
export function escalationBlockFor(knobs: JobKnobsInput, scope: RestartScope, hotSwitch: boolean): EscalationBlock | undefined {
  if (scope !== 'pod') return 'not-pod-level';
  if (hotSwitch) return 'hot-switch';
  const cap = podLevelCap(knobs);
  if (cap !== undefined) return cap;
  if (knobs.processRecoverEnable === 'on') return 'process-recover-enable=on';
  return undefined;
}

export interface PendingVerdict {
  /** Start of the pending period to persist; undefined when not pending. */
  readonly pendingSinceMs?: number;
  readonly escalate: boolean;
  /** When to look again if still pending and not yet due. */
  readonly requeueAfterMs?: number;
  readonly detail: string;
}

/**
 * @param pendingSinceMs persisted start of the pending period, if any
 * @param pending every targeted pod is gone/replaced but the job is not fully allocated yet
 */
export function evaluatePending(
  pendingSinceMs: number | undefined,
  pending: boolean,
  nowMs: number,
  pendingMs: number,
  block: EscalationBlock | undefined,
): PendingVerdict {
  if (!pending) return { escalate: false, detail: 'replacements not pending' };
  const since = pendingSinceMs ?? nowMs;
  const waited = nowMs - since;
  if (block !== undefined) {
    return { pendingSinceMs: since, escalate: false, detail: `replacements pending ${waited} ms; no escalation (${block})` };
  }
  if (waited >= pendingMs) {
    return { pendingSinceMs: since, escalate: true, detail: `replacements pending ${waited} ms >= ${pendingMs} ms: escalate to job level` };
  }
  return {
    pendingSinceMs: since,
    escalate: false,
    requeueAfterMs: pendingMs - waited,
    detail: `replacements pending ${waited} ms of ${pendingMs} ms before job-level escalation`,
  };
}
