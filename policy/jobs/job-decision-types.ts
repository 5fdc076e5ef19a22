/**
 * Data shapes of the job rescheduling decision: the decision with its reason chain and the
 * configuration with its defaults. The persisted part (per-job state, actions, pod refs) is vocabulary
 * shared with schemas/job-state (vocabulary/job-decision-state.ts), re-exported here for policy/.
 */
import type { JobAction, B6Row, BlockStep, DecisionKind, DecisionPhase } from '../../vocabulary/job-decision-state.ts';

export type {
  DecisionKind, DecisionPhase, B6Row, BlockStep, EvictionReason, RescheduleTaskReason, FsmFaultRank, JobAction, RestartScope, RestartMode, EscalationBlock, ActiveRestart, JobRescheduleState,
} from '../../vocabulary/job-decision-state.ts';

/** One link of the reason chain: fault -> level -> rule -> action (docs/CONVENTIONS.md#logs-and-metrics). */
export interface ReasonStep {
  readonly stage: 'fault' | 'level' | 'rule' | 'action';
  readonly detail: string;
  readonly row?: B6Row;
}

export interface JobDecision {
  /** Stable id: job uid + generation + step + fault-set fingerprint (job-decision-id.ts). */
  readonly decisionId: string;
  readonly jobKey: string;
  readonly jobUid: string;
  readonly kind: DecisionKind;
  readonly phase: DecisionPhase;
  readonly row?: B6Row;
  readonly actions: readonly JobAction[];
  readonly reasons: readonly ReasonStep[];
  /** Re-evaluate the job after this many ms (grace deadline, pending escalation, hide window...). */
  readonly requeueAfterMs?: number;
  /** A pending pod-level restart widened: to a block (docs/rules.md#resched.block-escalation) or to the job. */
  readonly widening?: BlockStep | 'job';
}

export interface JobDecisionConfig {
  /** Volcano `grace-over-time` (docs/rules.md#timing.volcano): grace deletion turns into force deletion after it. */
  readonly graceOverTimeMs: number;
  /** Pod-level replacements pending this long -> job level (job-pending-escalation.ts). */
  readonly pendingEscalationMs: number;
  /** Pending this long -> each widening step (job-block-escalation.ts); level1 shares the super-pod time. */
  readonly rackEscalationMs: number;
  readonly superPodEscalationMs: number;
  /** Volcano drops a cached fault job 300 s + grace-over-time after it was created (docs/rules.md#resched.fault-job-cache). */
  readonly faultJobBaseLifetimeMs: number;
  /** Hot switch handles at most this many faulty pods, else downgrade (docs/rules.md#hotswitch.entry). */
  readonly hotSwitchMaxPods: number;
  /** Remembered acted decision ids per job. */
  readonly actedHistoryCap: number;
}

export const DEFAULT_GRACE_OVER_TIME_MS = 900_000;
export const DEFAULT_FAULT_JOB_BASE_LIFETIME_MS = 300_000;
