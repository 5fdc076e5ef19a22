/**
 * One pass of the per-job reconcile, decided (pure: time, the journal's state, the damper's restart
 * budget and what was last reported are inputs; the new state, the budget's next value, the breaker
 * admission to ask for and every record to write are outputs). reconcilers/job-decisions.reconciler.ts
 * reads the inputs, calls `decideJobStep`, commits (breaker admission, journal write-ahead), has the
 * executor act, then writes the records.
 *
 * The breaker is not an input: its budget is shared by every job decided in parallel, so a step only
 * proposes an admission (`admission`) and the reconcile's commit asks the breaker, synchronously,
 * before the write-ahead; a refusal turns the step into `heldByBreaker(step, reason)`. Flap damping's
 * budget is per job (one reconcile of a key at a time), so it is an input and its next value an output.
 */
import { aggregateJob, type FaultCause, type JobFaultAggregate, type JobFaultSnapshot } from './job-aggregation.ts';
import { alreadyActed, markActed } from './job-decision-id.ts';
import { decideJob } from './job-restart.ts';
import type { JobDecision, JobDecisionConfig, JobRescheduleState } from './job-decision-types.ts';
import type { JobKnobsInput } from './job-view.ts';
import { restartCountKey, sourceOf } from './breaker-accounting.ts';
import { afterRestart, deferRestart, entityOf, type FlapDampingConfig, type LastRestart } from '../faults/flap-damping.ts';
import { chainOf, decisionRecordInput, faultSummary, HISTORY_OUTCOME, reportable, type DecisionOutcome } from './job-decision-record.ts';
import { faultKey, type FaultRecord } from '../../vocabulary/fault-types.ts';
import type { ExecAction, PendingDecision } from '../../schemas/job-state/job-state.ts';
import type { DecisionRecordInput } from '../../schemas/decision-record/decision-record.ts';

/** The job as the decision history names it. */
export interface StepJob {
  readonly namespace: string;
  readonly name: string;
  readonly podGroup: string;
  readonly uid: string;
}

export interface JobStepInput {
  readonly job: StepJob;
  /** The job's fault snapshot from the caches (hidden faults marked). */
  readonly snapshot: JobFaultSnapshot;
  readonly knobs: JobKnobsInput;
  /** The persisted state (the journal's; its `acted` list says what was already carried out). */
  readonly state: JobRescheduleState | undefined;
  readonly nowMs: number;
  readonly config: Partial<JobDecisionConfig>;
  /** TaskD/MindIO registered the job with the Recover service. */
  readonly registered: boolean;
  readonly dryRun: boolean;
  /** The job's reset-config RetryTime now (resolves `bumpResetConfigRetryTime`); undefined: none readable (the action is dropped). */
  readonly resetRetryTime: number | undefined;
  /** Flap damping's restart budget (rule 2): the job's last restart, and which hardware recovered when (the fault view's). */
  readonly damping: {
    readonly config: FlapDampingConfig;
    readonly last: LastRestart | undefined;
    readonly recoveredSince: (entity: string, t: number) => boolean;
  };
  /** The decision last reported for the job (each is logged, counted and recorded once). */
  readonly lastReported: string | undefined;
}

/** What the breaker is asked to admit before a reschedule is carried out (policy/jobs/breaker-accounting.ts). */
export interface BreakerProposal {
  readonly kind: 'jobs';
  readonly key: string;
  readonly nodes: readonly string[];
  readonly source: string;
}

/** Records of a step, written after the commit (and after acting, for a decision that acts). */
export interface StepRecords {
  /** Log at info and count in decisions_total (else a debug line). */
  readonly report: boolean;
  /** The PodGroup Event's message; undefined: no Event. */
  readonly event?: string;
  /** The breaker-held Event's message (`FaultRescheduleHeld`). */
  readonly heldEvent?: string;
  /** The decision history's record; undefined: none. */
  readonly history?: DecisionRecordInput;
}

export interface JobStep {
  readonly decision: JobDecision;
  /** The aggregate without causes still hidden (what the decision names and times). */
  readonly shown: JobFaultAggregate;
  /** The aggregate decided on (the log line's faults). */
  readonly aggregate: JobFaultAggregate;
  readonly outcome: DecisionOutcome;
  /** When it was decided (the input's `nowMs`): the records' time. */
  readonly atMs: number;
  /** The state to store (marked acted when the decision acts). */
  readonly state: JobRescheduleState;
  /** A decision to carry out: written ahead (with its resolved actions) before any action. */
  readonly writeAhead?: PendingDecision;
  /** Asked of the breaker before the write-ahead (a reschedule: pods are deleted). */
  readonly admission?: BreakerProposal;
  /** Flap damping deferred the restart: re-decide then (nothing is stored or carried out). */
  readonly deferredUntilMs?: number;
  /** The damper's next value for the job, once the restart was carried out (undefined: unchanged). */
  readonly restarted?: LastRestart;
  /** The retry budget changed (vcjob-fault-npu-cm is rewritten). */
  readonly budgetChanged: boolean;
  readonly records: StepRecords;
  readonly requeueAfterMs?: number;
}

/** Decisions that delete pods: the reschedules the breaker counts and holds. */
export const reschedules = (dec: JobDecision): boolean => dec.actions.some((a) => a.type === 'evictPods' || a.type === 'forceDeletePods');

/** The restart a decision belongs to, whatever its step (grace, then force): `<uid>/g<generation>`. */
export const restartOf = (decisionId: string): string => decisionId.split('/').slice(0, 2).join('/');

/** A requeue is never sooner than 50 ms (a burst of passes of one key). */
const requeueOf = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : Math.max(ms, 50));

/**
 * The hardware (chips, nodes) behind the decision's causes; empty when a cause is not hardware (a
 * failed pod), so such a restart is never deferred by flap damping.
 */
export function causeEntities(agg: JobFaultAggregate): { readonly entities: readonly string[]; readonly nodes: readonly string[] } {
  const entities: string[] = [];
  const nodes = new Set<string>();
  let hardware = true;
  for (const r of agg.ranks) {
    for (const c of r.causes) {
      const node = c.node ?? r.node;
      if (node !== undefined) nodes.add(node);
      if (c.level === undefined || node === undefined) { hardware = false; continue; }
      entities.push(entityOf({ node, ...(c.device === undefined ? {} : { device: c.device }) }));
    }
  }
  return { entities: hardware ? [...new Set(entities)].sort() : [], nodes: [...nodes].sort() };
}

/** The writers of the faults behind the causes (policy/jobs/breaker-accounting.ts), for the breaker's record. */
function causeSources(agg: JobFaultAggregate, faults: readonly FaultRecord[]): string {
  const byKey = new Map(faults.map((f) => [faultKey(f), f]));
  return [...new Set(agg.ranks.flatMap((r) => r.causes.map((c) => sourceOf({ source: c.origin, origin: byKey.get(c.key)?.origin }))))].sort().join(', ');
}

/**
 * The causes a decision acts on: those not inside a hide window (job-fault-tasks.ts counts them the
 * same way). Heads the Event message and times fault -> action, so a fault Volcano would not see yet
 * is neither named nor timed. Only `causes` are filtered; ranks left with none are dropped.
 */
export function withoutHidden(agg: JobFaultAggregate, nowMs: number): JobFaultAggregate {
  const live = (c: FaultCause): boolean => c.hidden === undefined || c.hidden.untilMs <= nowMs;
  if (agg.ranks.every((r) => r.causes.every(live))) return agg;
  return { ...agg, ranks: agg.ranks.flatMap((r) => { const causes = r.causes.filter(live); return causes.length === 0 ? [] : [{ ...r, causes }]; }) };
}

/** Earliest first-seen time of the hardware faults behind the aggregate; 0 when none (failed pods). */
export function faultSinceMs(agg: JobFaultAggregate, faults: readonly FaultRecord[]): number {
  const byKey = new Map(faults.map((f) => [faultKey(f), f.firstSeenMs]));
  const times = agg.ranks.flatMap((r) => r.causes.flatMap((c) => (byKey.has(c.key) ? [byKey.get(c.key)!] : [])));
  return times.length === 0 ? 0 : Math.min(...times);
}

/** Relative actions resolved against the cluster state read, so the written-ahead ones are absolute (a replay repeats them exactly). */
function resolve(dec: JobDecision, retryTime: number | undefined, nowMs: number): ExecAction[] {
  return dec.actions.flatMap((a): ExecAction[] => {
    if (a.type !== 'bumpResetConfigRetryTime') return [a];
    return retryTime === undefined ? [] : [{ type: 'podRescheduledResetConfig', retryTime: a.podLevel ? retryTime + 1 : 0, updateTimeS: Math.floor(nowMs / 1000) }];
  });
}

/** Decides one pass of the job (docs/rules.md#decision.order), flap damping's deferral and what to record. */
export function decideJobStep(input: JobStepInput): JobStep {
  const { job, snapshot, state, nowMs, dryRun } = input;
  const aggregate = aggregateJob(snapshot);
  const out = decideJob({ aggregate, knobs: input.knobs, state, nowMs, config: input.config, registered: input.registered });
  const dec = out.decision;
  const shown = withoutHidden(aggregate, nowMs);
  const acting = dec.actions.length > 0 && !alreadyActed(state, dec);
  const next = acting ? markActed(out.state, dec) : out.state;
  const chain = faultSummary(shown) + chainOf(dec.reasons);
  const budgetChanged = (state?.retry?.times ?? ((input.knobs.faultRetryTimes ?? 0) > 0 ? input.knobs.faultRetryTimes : undefined)) !== next.retry?.times;
  const requeueAfterMs = requeueOf(dec.requeueAfterMs);
  const base = { decision: dec, shown, aggregate, atMs: nowMs, ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }) };

  if (acting && !dryRun && reschedules(dec)) {
    const causes = causeEntities(shown);
    const restart = restartOf(dec.decisionId);
    // Flap damping first (a deferred restart is not a reschedule the breaker should count).
    const until = deferRestart(causes.entities, input.damping.last, input.damping.recoveredSince, nowMs, input.damping.config, restart);
    if (until !== undefined) {
      const why = {
        stage: 'damping', detail: `flap damping: ${causes.entities.join(', ')} faulted again after recovering, or still faulty after the job was restarted for them (placed on them again), less than the damping period after that restart; decided again at ${new Date(until).toISOString()}`,
      };
      const report = reportable(dec, shown, 'deferred', input.lastReported);
      return {
        ...base, outcome: 'deferred', state: out.state, deferredUntilMs: until, budgetChanged: false, requeueAfterMs: requeueOf(until - nowMs)!,
        records: { report, ...(report ? { history: decisionRecordInput(job, shown, dec, [...dec.reasons, why], HISTORY_OUTCOME.deferred, nowMs) } : {}) },
      };
    }
    // Counted once per job and fault set, not per generation (policy/jobs/breaker-accounting.ts).
    const counted = shown.ranks.flatMap((r) => r.causes.map((c) => ({ origin: c.origin, node: c.node ?? r.node, device: c.device, code: c.code })));
    const admission: BreakerProposal = { kind: 'jobs', key: restartCountKey(job.uid, counted), nodes: causes.nodes, source: causeSources(shown, snapshot.faults) };
    const restarted = afterRestart(input.damping.last, causes.entities, nowMs, input.damping.config, restart);
    return {
      ...base, outcome: 'acted', state: next, admission, ...(restarted === undefined ? {} : { restarted }), budgetChanged,
      writeAhead: pendingOf(dec, chain, faultSinceMs(shown, snapshot.faults), resolve(dec, input.resetRetryTime, nowMs), nowMs),
      records: { report: reportable(dec, aggregate, 'acted', input.lastReported), event: chain, history: decisionRecordInput(job, shown, dec, dec.reasons, 'acted', nowMs) },
    };
  }
  if (acting && !dryRun) {
    return {
      ...base, outcome: 'acted', state: next, budgetChanged,
      writeAhead: pendingOf(dec, chain, faultSinceMs(shown, snapshot.faults), resolve(dec, input.resetRetryTime, nowMs), nowMs),
      records: { report: reportable(dec, aggregate, 'acted', input.lastReported), event: chain, history: decisionRecordInput(job, shown, dec, dec.reasons, 'acted', nowMs) },
    };
  }
  const outcome: DecisionOutcome = !acting ? (dec.actions.length > 0 ? 'already_acted' : 'no_action') : 'dry_run';
  const report = reportable(dec, aggregate, outcome, input.lastReported);
  return {
    ...base, outcome, state: next, budgetChanged,
    records: {
      report,
      ...(report && !dryRun ? { event: chain } : {}),
      ...(report ? { history: decisionRecordInput(job, shown, dec, dec.reasons, HISTORY_OUTCOME[outcome], nowMs) } : {}),
    },
  };
}

function pendingOf(dec: JobDecision, chain: string, since: number, actions: readonly ExecAction[], nowMs: number): PendingDecision {
  return {
    decisionId: dec.decisionId, atMs: nowMs, kind: dec.kind, phase: dec.phase, ...(dec.row === undefined ? {} : { row: dec.row }),
    chain, faultSinceMs: since, actions,
  };
}

/**
 * The step after the breaker refused its admission: nothing stored or carried out (a reset re-queues
 * the job, which is then decided again from the faults of that moment, not replayed); recorded as
 * held, with the breaker's reason as the last reason step, and a held Event.
 */
export function heldByBreaker(step: JobStep, job: StepJob, reason: string, nowMs: number, lastReported: string | undefined): JobStep {
  const { decision: dec, shown } = step;
  const report = reportable(dec, shown, 'held', lastReported);
  const { writeAhead: _w, admission: _a, restarted: _r, requeueAfterMs: _q, ...rest } = step;
  return {
    ...rest, outcome: 'held', budgetChanged: false,
    records: report
      ? { report, heldEvent: `${faultSummary(shown)}${chainOf(dec.reasons)} -> ${reason}`, history: decisionRecordInput(job, shown, dec, [...dec.reasons, { stage: 'breaker', detail: reason }], 'held', nowMs) }
      : { report },
  };
}
