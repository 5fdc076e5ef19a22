/**
 * The per-job reconcile: read, decide (pure), commit, act, record (docs/CONVENTIONS.md#reconcilers, #pure-decisions).
 *
 * For a job key (`<ns>/<podGroupName>`), on every burst of its faults or pod changes and on its timers:
 * 1. a pending decision left by a crash or a failed pass is carried out first (replay, idempotent);
 * 2. read: the job's facts from the caches (the same snapshot as the aggregation pipeline, hidden
 *    faults marked, docs/rules.md#decision.hidden-by-filter), the persisted state, flap damping's
 *    restart budget, the decision last reported; decide: policy/jobs/job-step.ts `decideJobStep`
 *    (pure: `decideJob`, docs/rules.md#decision.order + docs/rules.md#resched.lifecycle, the damping
 *    deferral, the breaker admission to ask for, the state to store and the records to write);
 * 3. commit, then act, then record: the breaker admits the proposed reschedule (synchronously, no
 *    await since the reads: the shared budget is spent once per slot) or the step is held; a decision
 *    with actions not yet acted on is written ahead WITH its resolved actions before anything is done
 *    (the job journal, actions/job-state.action.ts), then the executor carries it out, then the
 *    pending mark is cleared (lazily, once the decision's reason record, which nobody waits for, has
 *    landed) and the damper's budget updated. A restart between write-ahead and clear finds the
 *    pending decision and finishes it; it never decides that restart again (the state already holds
 *    it), so a job's pods are deleted once per fault;
 * 4. timers (grace -> force, pending escalation, fault-job lifetime) come back as `requeueAfterMs`
 *    computed from persisted timestamps.
 * A job whose PodGroup is gone has its state deleted.
 *
 * Before anything is read or written for a job, its identity (the PodGroup's controller
 * ownerReference, which the apiserver does not validate) must be usable as a ConfigMap key and in
 * names (schemas/kube-names.ts); a job failing that is refused: logged once, counted
 * (clusterd_jobs_refused_total), an Event JobIdentityRefused on its PodGroup, nothing written
 * (--refuse-malformed-job-identity=false: decided as ClusterD would, its state in memory only).
 * A job whose journal record is unreadable is not decided (the record may hold a restart already
 * carried out) and its record is left untouched; the log line and the Event JobStateUnreadable name
 * that one record and the command that drops only it; the job is looked at again every 10 s and,
 * once the record is gone, decided with no state.
 */
import { aggregateJob, type HiddenFault, type JobFaultAggregate, type JobFaultSnapshot } from '../policy/jobs/job-aggregation.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { JobDecisionConfig, JobRescheduleState } from '../policy/jobs/job-decision-types.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import { dropRecordCommand, JOB_STATE_NAMESPACE, type PendingDecision } from '../schemas/job-state/job-state.ts';
import { jobIdentityProblem } from '../schemas/kube-names.ts';
import { createHash } from 'node:crypto';
import { readResetConfig, type ResetConfigDeps } from '../actions/job-reset-config.action.ts';
import type { ExecSummary, JobActionExecutor } from '../actions/job-action-executor.ts';
import type { JobEntry, JobIndex } from '../state/job-index.ts';
import type { JobStateStore } from '../actions/job-state.action.ts';
import { decisionRecordInput, type DecisionReporter, type ReporterJob } from '../actions/job-report.action.ts';
import { recordDecision, type DecisionHistory } from '../actions/decision-history.action.ts';
import { jobNodes } from '../policy/jobs/job-view.ts';
import type { GoodputTracker } from '../telemetry/goodput.ts';
import type { BreakerGate } from '../policy/jobs/breaker-gate.ts';
import { causeEntities, decideJobStep, heldByBreaker, type JobStep } from '../policy/jobs/job-step.ts';
import type { FlapDamper } from '../state/flap-damper.ts';

export interface JobDecisionsDeps {
  readonly index: JobIndex;
  /** The scheduler view of a node (hidden faults left out). */
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  /**
   * The snapshot the aggregation pipeline uses (fault-filters.controller.ts jobSnapshot): visible plus
   * hidden faults of these nodes and the hide windows, so a hidden cause is docs/rules.md#decision.hidden-by-filter (wait for its
   * window, then re-decide) rather than no fault at all. Default: `faultsOf`, nothing hidden.
   */
  readonly filtered?: JobFaultsFiltered;
  readonly states: JobStateStore;
  readonly executor: JobActionExecutor;
  readonly reporter: DecisionReporter;
  /** The durable decision history: every reported decision is recorded there, so it outlives Events and restarts. */
  readonly history: DecisionHistory;
  readonly resetConfig: ResetConfigDeps;
  readonly config: Partial<JobDecisionConfig>;
  readonly dryRun: boolean;
  /**
   * Refuse a job whose identity cannot be a key or a name (schemas/kube-names.ts) before any write
   * (default); false = ClusterD: it is decided and acted on, its state in memory only.
   */
  readonly refuseMalformedIdentity?: boolean;
  /** TaskD/MindIO registered the job with the Recover service (docs/rules.md#decision.hot-switch, #decision.process-level); owned elsewhere. */
  readonly registered: (jobUid: string) => boolean;
  /** The job's retry budget or state changed (vcjob-fault-npu-cm). */
  readonly onStateChanged: () => void;
  /** A job went away (prune job-reschedule-reason). */
  readonly onGone: (key: string) => void;
  /** Test hook: called right after a decision is persisted, before it is carried out. */
  readonly afterPersist?: (key: string, pending: PendingDecision) => void;
  /**
   * Some of these nodes have a change the fault view has not evaluated yet (controllers/fault-view.ts
   * `awaitingAny`): the job is decided once it has, never on the view from before the change.
   */
  readonly viewAwaiting: (nodes: readonly string[]) => boolean;
  /** The blast-radius breaker: asked before every reschedule (pod deletions); held = not carried out. */
  readonly breaker: BreakerGate;
  /** Flap damping (rule 2): a restart for re-faults of the hardware the job was just restarted for waits. */
  readonly damper: FlapDamper;
  /** Goodput episodes (telemetry/goodput.ts): this reconcile observes decided, pods deleted and pods Running. */
  readonly goodput?: GoodputTracker;
  /** When the key's pass was scheduled (the burst gate's leading or trailing edge), for the latency breakdown. */
  readonly scheduledAtMs?: (key: string) => number | undefined;
}

/**
 * Where a fresh decision's time went (ms), logged with `job decision carried out` (docs/benchmarks.md
 * "Where one fault's time goes"): queued = scheduled -> reconcile start; decide = start -> decided;
 * prepare = decided -> write-ahead staged; writeAhead = staged -> the pass that carries it out (the
 * journal's commit, then the job's queue hop); deletes = that pass's start -> last pod DELETE answered.
 */
interface Stages { queued?: number; decide: number; prepare: number; writeAhead: number }
const round1 = (ms: number): number => Math.round(ms * 10) / 10;

/** How soon a job whose nodes await the fault view's evaluation is looked at again (one stage pass). */
export const VIEW_AWAIT_REQUEUE_MS = 20;

/** How often a job whose journal record is unreadable is looked at again (to resume once it was removed). */
const UNREADABLE_RECHECK_MS = 10_000;

const historyJob = (e: JobEntry) => ({ namespace: e.view.namespace, name: e.view.name, podGroup: e.podGroup.metadata?.name ?? '', uid: e.view.uid });

const reporterJob = (e: JobEntry): ReporterJob => ({
  key: e.view.key, namespace: e.view.namespace, podGroupName: e.podGroup.metadata?.name ?? '',
  ...(e.podGroup.metadata?.uid ? { podGroupUid: e.podGroup.metadata.uid } : {}),
});

/** Visible plus hidden faults of some nodes and the hide windows (faultKey -> window). */
export type JobFaultsFiltered = (nodes: readonly string[]) => { readonly faults: readonly FaultRecord[]; readonly hidden: ReadonlyMap<string, HiddenFault> };

/** The job's fault snapshot from the caches: the pipeline's (`filtered`) when given, else the scheduler view. */
export function snapshotFromCache(entry: JobEntry, faultsOf: (node: string) => readonly FaultRecord[], filtered?: JobFaultsFiltered): JobFaultSnapshot {
  const nodes = jobNodes(entry.view);
  const f = filtered?.(nodes);
  return f === undefined ? { job: entry.view, faults: nodes.flatMap((n) => faultsOf(n)) } : { job: entry.view, faults: f.faults, hidden: f.hidden };
}

/** The job's aggregate from the caches (pure apart from the reads). */
export function aggregateFromCache(entry: JobEntry, faultsOf: (node: string) => readonly FaultRecord[], filtered?: JobFaultsFiltered): JobFaultAggregate {
  return aggregateJob(snapshotFromCache(entry, faultsOf, filtered));
}

export { faultSinceMs, withoutHidden } from '../policy/jobs/job-step.ts';

/** A decision this process wrote ahead and has not carried out yet: carried out as a first run (not a replay), with its records. */
interface OwnDecision {
  readonly step: JobStep;
  /** The journal's term it was written ahead in (JobStateStore.term). */
  readonly term: number;
  readonly stagedAt: number;
  readonly stages: Omit<Stages, 'writeAhead'>;
}

export function jobDecisionsReconciler(d: JobDecisionsDeps): Reconciler {
  const warned = new Map<string, string>();
  /** job key -> the decision it wrote ahead, until its carry-out starts (one per job: a pass waits while its write-ahead is unwritten). */
  const own = new Map<string, OwnDecision>();

  /**
   * Carries out a persisted decision, then records it in the history. `recorded` = the structured
   * record (faults, reason steps) of a fresh decision; a replay records from the persisted chain, and
   * if the first run had recorded it already the record's name makes that a no-op (409).
   */
  const carryOut = async (entry: JobEntry, p: PendingDecision, state: JobRescheduleState | undefined, replay: boolean, ctx: ReconcileContext, recorded?: Parameters<typeof recordDecision>[1], stages?: Stages): Promise<ExecSummary> => {
    const job = { key: entry.view.key, namespace: entry.view.namespace, name: entry.view.name, uid: entry.view.uid };
    // The episode opens (or, after a restart, reopens from the persisted times) before acting. A
    // restart's completion (GracefulExit back to 0, RetryTime + 1) is bookkeeping, not a decision on a fault.
    const active = state?.active;
    if (p.phase !== 'complete') d.goodput?.decided(job, {
      faultSinceMs: p.faultSinceMs, atMs: p.atMs, awaitResume: p.kind === 'process',
      targets: (active?.targets ?? []).map((t) => t.uid), minRunning: active?.minAvailable ?? 0,
    });
    const s = await d.executor.run(job, p, { replay, signal: ctx.signal });
    if (s.deleted.length > 0) d.goodput?.podsDeleted(job.key, ctx.now());
    if (replay) d.reporter.countReplay(p.kind);
    ctx.log.info(replay ? 'pending job decision carried out (replay)' : 'job decision carried out', {
      job: job.key, decisionId: p.decisionId, deleted: s.deleted, alreadyGone: s.alreadyGone, annotated: s.annotated,
      ...(stages === undefined ? {} : { stagesMs: { ...stages, ...(s.deletesDoneMs === undefined ? {} : { deletes: round1(s.deletesDoneMs) }) } }),
    });
    await d.reporter.event(reporterJob(entry), p, p.chain, p.atMs);
    await recordDecision(d.history, recorded ?? decisionRecordInput(historyJob(entry), undefined, p, [{ stage: 'rule', detail: p.chain }], 'acted', p.atMs), ctx.signal);
    return s;
  };

  /**
   * Carries out the job's durable pending decision: this process's own (written ahead by an earlier
   * pass: its first run, with its records, then the damper's budget) or one left by a crash or a
   * failed pass (a replay, idempotent). Its clear is lazy (actions/job-state.action.ts) and held until
   * the decision's reason record landed (a crash or a failed record write replays the decision, which
   * adds it).
   */
  const carryOutPending = async (entry: JobEntry, p: PendingDecision, state: JobRescheduleState, ctx: ReconcileContext): Promise<void> => {
    const key = entry.view.key;
    const mine = own.get(key);
    own.delete(key); // a retry after a failed attempt is a replay
    const first = mine?.step.writeAhead?.decisionId === p.decisionId && mine.term === d.states.term ? mine : undefined;
    if (first !== undefined) d.afterPersist?.(key, p);
    const stages = first === undefined ? undefined : { ...first.stages, writeAhead: round1(performance.now() - first.stagedAt) };
    const done = await carryOut(entry, p, state, first === undefined, ctx, first?.step.records.history, stages);
    d.states.clear(key, state, done.recording);
    if (first !== undefined) d.damper.record(key, first.step.restarted);
  };

  /**
   * Writes a step's records when nothing is carried out (a carried-out decision's Event and history
   * record are written by `carryOut`): the log line and count, the held Event, the decision's Event,
   * the history record. Best effort each (they never fail the pass).
   */
  const record = async (entry: JobEntry, step: JobStep, ctx: ReconcileContext): Promise<void> => {
    const r = step.records;
    d.reporter.decided(reporterJob(entry), step.outcome === 'held' || step.outcome === 'deferred' ? step.shown : step.aggregate, step.decision, step.outcome, r.report);
    if (r.heldEvent !== undefined) await d.reporter.held(reporterJob(entry), step.decision, r.heldEvent, step.atMs);
    if (r.event !== undefined) await d.reporter.event(reporterJob(entry), step.decision, r.event, step.atMs);
    if (r.history !== undefined) await recordDecision(d.history, r.history, ctx.signal);
  };

  const requeue = (ms: number | undefined): Outcome => (ms === undefined ? {} : { requeueAfterMs: ms });

  return {
    name: 'job_decisions',
    async reconcile(key: string, ctx: ReconcileContext): Promise<Outcome> {
      const t0 = performance.now();
      const scheduledAt = d.scheduledAtMs?.(key);
      const queued = scheduledAt === undefined ? undefined : Math.max(0, ctx.now() - scheduledAt);
      const entry = d.index.job(key);
      if (entry === undefined) {
        for (const r of d.states.all().filter((x) => x.jobKey === key)) await d.states.remove(r.jobUid);
        d.reporter.forget(key);
        d.damper.forget(key);
        own.delete(key);
        d.goodput?.jobGone(key);
        d.onGone(key);
        return {};
      }
      const rv = entry.podGroup.metadata?.resourceVersion ?? '';
      if (entry.warnings.length > 0 && warned.get(key) !== rv) {
        warned.set(key, rv);
        ctx.log.warn('job knobs corrected', { job: key, warnings: entry.warnings });
      }
      const uid = entry.view.uid;
      // Before anything is read or written for it: an owner uid the apiserver never validated would
      // be a data key of the shared journal, and its 422 would fail the other jobs' records.
      const problem = jobIdentityProblem(entry.view);
      if (problem !== undefined && d.refuseMalformedIdentity !== false) {
        await d.reporter.refused(reporterJob(entry), entry.view, problem, ctx.now());
        return {};
      }
      const stored = d.states.get(uid);
      if (stored !== undefined && !stored.ok) {
        // Kept untouched, and the job is not decided: the record may hold a decision already carried
        // out (deciding afresh could restart the job twice) or a budget spent. The remedy drops that
        // one job's record; the shard's other jobs keep theirs.
        const where = d.states.where(uid);
        const remedy = where === undefined ? 'remove its record' : dropRecordCommand(where);
        const at = where === undefined ? '' : ` at ${JOB_STATE_NAMESPACE}/${where.name} key ${where.key}`;
        const sig = createHash('sha256').update(`${where?.name}|${d.states.text(uid) ?? ''}`).digest('hex').slice(0, 16);
        const message = `job state of ${key} unreadable${at} (${stored.reason}); the job is not decided until that one record is removed (the job then starts with no state): ${remedy}`;
        await d.reporter.unreadable(reporterJob(entry), sig, message, { reason: stored.reason, configMap: where?.name, dataKey: where?.key, remedy }, ctx.now());
        // Looked at again now and then (logged once per record text): once the record is gone the
        // job is decided, without waiting for its next change.
        return { requeueAfterMs: UNREADABLE_RECHECK_MS };
      }
      // The last put of the job was not written: fail this pass (its queue backs off), then decide again.
      const failure = d.states.takeFailure(uid);
      if (failure !== undefined) { own.delete(key); throw failure; }
      const state = stored?.value.state;
      const pending = stored?.value.pending;
      if (pending !== undefined && !d.dryRun) {
        // Written ahead but not durable yet: its commit queues the job again (onWritten), and that
        // pass carries it out. Nothing is decided meanwhile (the state already holds the decision).
        if (d.states.unwritten(uid)) return {};
        await carryOutPending(entry, pending, stored!.value.state, ctx);
      }

      // A pod that just arrived or left, a start: the view of its nodes is being evaluated again
      // (a step retry's or an in-place recovery's hide may start with the pod). Decide on that view.
      if (d.viewAwaiting(jobNodes(entry.view))) return { requeueAfterMs: VIEW_AWAIT_REQUEUE_MS };
      // Read: the job's facts, the journal's state, the damper's budget, what was last reported.
      const nowMs = ctx.now();
      d.goodput?.podsObserved(key, entry.view.pods, nowMs);
      const job = historyJob(entry);
      const lastReported = d.reporter.lastReported(key);
      const retry = readResetConfig(d.resetConfig, entry.view.namespace, entry.view.name);
      // Decide (pure, policy/jobs/job-step.ts).
      let step = decideJobStep({
        job, snapshot: snapshotFromCache(entry, d.faultsOf, d.filtered), knobs: entry.knobsInput, state, nowMs, config: d.config,
        registered: d.registered(uid), dryRun: d.dryRun, resetRetryTime: typeof retry === 'string' ? undefined : retry.info.RetryTime,
        damping: { config: d.damper.config, last: d.damper.last(key), recoveredSince: d.damper.recoveredSince }, lastReported,
      });
      const dec = step.decision;
      const tDecided = performance.now();
      // Commit. No await between the reads above and the breaker's admission: the admission is the
      // one place the shared budget is spent, synchronously, so two jobs decided in parallel never
      // both take its last slot; a refusal turns the step into a held one (nothing stored).
      if (step.deferredUntilMs !== undefined) {
        d.damper.countDeferred();
        ctx.log.info('job restart deferred by flap damping', { job: key, decisionId: dec.decisionId, entities: causeEntities(step.shown).entities, untilMs: step.deferredUntilMs });
      } else if (step.admission !== undefined) {
        const v = d.breaker.admit(step.admission.kind, step.admission.key, step.admission.nodes, step.admission.source);
        if (!v.allowed) step = heldByBreaker(step, job, v.reason, nowMs, lastReported);
      }
      if (step.outcome === 'held' || step.outcome === 'deferred') {
        await record(entry, step, ctx);
        return requeue(step.requeueAfterMs);
      }
      if (step.writeAhead !== undefined) {
        d.reporter.decided(reporterJob(entry), step.aggregate, dec, step.outcome, step.records.report);
        const tPut = performance.now();
        // Written ahead BEFORE acting. The pass does not wait for the journal's commit: the commit
        // queues the job again once the write-ahead is durable, and that pass carries it out (as a
        // crash's replay would, but as this decision's first run: `own`).
        const written = d.states.put(key, step.state, step.writeAhead);
        own.set(key, { step, term: d.states.term, stagedAt: tPut, stages: { ...(queued === undefined ? {} : { queued }), decide: round1(tDecided - t0), prepare: round1(tPut - tDecided) } });
        if (d.states.unwritten(uid)) {
          written.catch(() => undefined); // its failure reaches the job's next pass (takeFailure)
          if (step.budgetChanged) d.onStateChanged(); // the staged state is read at once
          return {};
        }
        await written; // kept in memory only (dry run, a uid that cannot be a key): carried out now
        await carryOutPending(entry, step.writeAhead, step.state, ctx);
      } else {
        if (step.outcome === 'dry_run') ctx.log.info('dry run: decision not carried out', { job: key, decisionId: dec.decisionId });
        // Not waited for: a state with nothing to carry out is seen by this process at once; a crash
        // before its commit only makes the job be decided again from the facts (no action twice:
        // only a write-ahead marks a decision acted, and it is durable before acting).
        d.states.put(key, step.state).catch(() => undefined); // a failure reaches the job's next pass (takeFailure)
        await record(entry, step, ctx);
      }
      if (step.budgetChanged) d.onStateChanged();
      return requeue(step.requeueAfterMs);
    },
  };
}
