/**
 * The per-job reconcile: decide, record, act (docs/CONVENTIONS.md#reconcilers, #pure-decisions).
 *
 * For a job key (`<ns>/<podGroupName>`), on every burst of its faults or pod changes and on its timers:
 * 1. a pending decision left by a crash or a failed pass is carried out first (replay, idempotent);
 * 2. the job is aggregated from the caches, with the same snapshot as the aggregation pipeline (hidden
 *    faults marked, docs/rules.md#decision.hidden-by-filter; policy/job-aggregation), and decided (policy/job-restart
 *    `decideJob`, docs/rules.md#decision.order + docs/rules.md#resched.lifecycle) against the persisted state;
 * 3. a decision with actions not yet acted on is persisted WITH its resolved actions before anything
 *    is done (group commit in the job journal: one write for the decisions of a burst), then carried
 *    out, then the pending mark is cleared (lazily, with a later journal write once the decision's
 *    reason record, which nobody waits for, has landed). A restart between
 *    3a and 3c finds the pending decision and finishes it; it never decides that restart again (the
 *    state already holds it), so a job's pods are deleted once per fault;
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
import { aggregateJob, type FaultCause, type HiddenFault, type JobFaultAggregate, type JobFaultSnapshot } from '../policy/jobs/job-aggregation.ts';
import { alreadyActed, markActed } from '../policy/jobs/job-decision-id.ts';
import { decideJob } from '../policy/jobs/job-restart.ts';
import { faultKey, type FaultRecord } from '../vocabulary/fault-types.ts';
import type { JobDecision, JobDecisionConfig, JobRescheduleState } from '../policy/jobs/job-decision-types.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import { dropRecordCommand, JOB_STATE_NAMESPACE, type ExecAction, type PendingDecision } from '../schemas/job-state/job-state.ts';
import { jobIdentityProblem } from '../schemas/kube-names.ts';
import { createHash } from 'node:crypto';
import { readResetConfig, type ResetConfigDeps } from '../actions/job-reset-config.action.ts';
import type { ExecSummary, JobActionExecutor } from '../actions/job-action-executor.ts';
import type { JobEntry, JobIndex } from '../state/job-index.ts';
import type { JobStateStore } from '../actions/job-state.action.ts';
import { chainOf, decisionRecordInput, faultSummary, type DecisionOutcome, type DecisionReporter, type ReporterJob } from '../actions/job-report.action.ts';
import { recordDecision, type DecisionHistory } from '../actions/decision-history.action.ts';
import type { DecisionRecordOutcome } from '../schemas/decision-record/decision-record.ts';
import { jobNodes } from '../policy/jobs/job-view.ts';
import type { GoodputTracker } from '../telemetry/goodput.ts';
import { entityOf } from '../policy/faults/flap-damping.ts';
import type { BreakerGate } from '../policy/jobs/breaker-gate.ts';
import { restartCountKey, sourceOf } from '../policy/jobs/breaker-accounting.ts';
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
 * prepare = decided -> write-ahead sent; writeAhead = the pending record's write; deletes = write-ahead
 * done -> last pod DELETE answered.
 */
interface Stages { queued?: number; decide: number; prepare: number; writeAhead: number }
const round1 = (ms: number): number => Math.round(ms * 10) / 10;

/** How often a job whose journal record is unreadable is looked at again (to resume once it was removed). */
const UNREADABLE_RECHECK_MS = 10_000;

/** Decisions that delete pods: the reschedules the breaker counts and holds. */
const reschedules = (dec: JobDecision): boolean => dec.actions.some((a) => a.type === 'evictPods' || a.type === 'forceDeletePods');

/** The restart a decision belongs to, whatever its step (grace, then force): `<uid>/g<generation>`. */
const restartOf = (decisionId: string): string => decisionId.split('/').slice(0, 2).join('/');

/**
 * The hardware (chips, nodes) behind the decision's causes; empty when a cause is not hardware (a
 * failed pod), so such a restart is never deferred by flap damping.
 */
function causeEntities(agg: JobFaultAggregate): { readonly entities: readonly string[]; readonly nodes: readonly string[] } {
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

const historyJob = (e: JobEntry) => ({ namespace: e.view.namespace, name: e.view.name, podGroup: e.podGroup.metadata?.name ?? '', uid: e.view.uid });
const HISTORY_OUTCOME: Record<DecisionOutcome, DecisionRecordOutcome> = { acted: 'acted', replayed: 'acted', dry_run: 'dry_run', no_action: 'no_action', already_acted: 'already_acted', held: 'held', deferred: 'held' };

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

export function jobDecisionsReconciler(d: JobDecisionsDeps): Reconciler {
  const warned = new Map<string, string>();

  /** Resolves relative actions against the current cluster state so the persisted ones are absolute. */
  const resolve = (entry: JobEntry, dec: JobDecision, nowMs: number): ExecAction[] =>
    dec.actions.flatMap((a): ExecAction[] => {
      if (a.type !== 'bumpResetConfigRetryTime') return [a];
      const cur = readResetConfig(d.resetConfig, entry.view.namespace, entry.view.name);
      return typeof cur === 'string' ? [] : [{ type: 'podRescheduledResetConfig', retryTime: cur.info.RetryTime + 1, updateTimeS: Math.floor(nowMs / 1000) }];
    });

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
      job: job.key, decisionId: p.decisionId, deleted: s.deleted, alreadyGone: s.alreadyGone, annotated: s.annotated, recorded: s.recorded,
      ...(stages === undefined ? {} : { stagesMs: { ...stages, ...(s.deletesDoneMs === undefined ? {} : { deletes: round1(s.deletesDoneMs) }) } }),
    });
    await d.reporter.event(reporterJob(entry), p, p.chain, p.atMs);
    await recordDecision(d.history, recorded ?? decisionRecordInput(historyJob(entry), undefined, p, [{ stage: 'rule', detail: p.chain }], 'acted', p.atMs), ctx.signal);
    return s;
  };

  /**
   * The one place a decision decided but not carried out (held by the breaker, deferred by flap
   * damping) is recorded: log + decisions_total once per decision, the durable decision history
   * (outcome `held`, the holding rule as the last reason step) and, for the breaker, an Event.
   */
  const recordHeld = async (
    entry: JobEntry, shown: JobFaultAggregate, dec: JobDecision, outcome: 'held' | 'deferred', why: { readonly stage: string; readonly detail: string }, nowMs: number, ctx: ReconcileContext,
  ): Promise<void> => {
    if (!d.reporter.decided(reporterJob(entry), shown, dec, outcome)) return;
    if (outcome === 'held') await d.reporter.held(reporterJob(entry), dec, `${faultSummary(shown)}${chainOf(dec.reasons)} -> ${why.detail}`, nowMs);
    await recordDecision(d.history, decisionRecordInput(historyJob(entry), shown, dec, [...dec.reasons, why], HISTORY_OUTCOME[outcome], nowMs), ctx.signal);
  };

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
      let state = stored?.value.state;
      const pending = stored?.value.pending;
      if (pending !== undefined && !d.dryRun) {
        await carryOut(entry, pending, state, true, ctx);
        d.states.clear(key, stored!.value.state);
      }

      const nowMs = ctx.now();
      d.goodput?.podsObserved(key, entry.view.pods, nowMs);
      const snapshot = snapshotFromCache(entry, d.faultsOf, d.filtered);
      const aggregate = aggregateJob(snapshot);
      const out = decideJob({
        aggregate, knobs: entry.knobsInput, state, nowMs, config: d.config, registered: d.registered(uid),
      });
      const dec = out.decision;
      const tDecided = performance.now();
      const shown = withoutHidden(aggregate, nowMs);
      const acting = dec.actions.length > 0 && !alreadyActed(state, dec);
      const next = acting ? markActed(out.state, dec) : out.state;
      const requeue = (ms: number | undefined): Outcome => (ms === undefined ? {} : { requeueAfterMs: Math.max(ms, 50) });
      const causes = causeEntities(shown);
      if (acting && !d.dryRun && reschedules(dec)) {
        // Flap damping first (a deferred restart is not a reschedule the breaker should count).
        const until = d.damper.deferUntil(key, causes.entities, restartOf(dec.decisionId));
        if (until !== undefined) {
          ctx.log.info('job restart deferred by flap damping', { job: key, decisionId: dec.decisionId, entities: causes.entities, untilMs: until });
          const why = `flap damping: ${causes.entities.join(', ')} faulted again after recovering, or still faulty after the job was restarted for them (placed on them again), less than the damping period after that restart; decided again at ${new Date(until).toISOString()}`;
          await recordHeld(entry, shown, dec, 'deferred', { stage: 'damping', detail: why }, nowMs, ctx);
          return requeue(until - nowMs);
        }
        // Counted once per job and fault set, not per generation (policy/jobs/breaker-accounting.ts).
        const counted = shown.ranks.flatMap((r) => r.causes.map((c) => ({ origin: c.origin, node: c.node ?? r.node, device: c.device, code: c.code })));
        const v = d.breaker.admit('jobs', restartCountKey(uid, counted), causes.nodes, causeSources(shown, snapshot.faults));
        if (!v.allowed) {
          // Held: nothing persisted or carried out. A reset re-queues the job, which is then decided
          // again from the faults of that moment (not replayed).
          await recordHeld(entry, shown, dec, 'held', { stage: 'breaker', detail: v.reason }, nowMs, ctx);
          return requeue(undefined);
        }
      }
      const outcome = !acting ? (dec.actions.length > 0 ? 'already_acted' : 'no_action') : d.dryRun ? 'dry_run' : 'acted';
      const reported = d.reporter.decided(reporterJob(entry), aggregate, dec, outcome);
      const budgetBefore = state?.retry?.times ?? (entry.knobs.faultRetryTimes > 0 ? entry.knobs.faultRetryTimes : undefined);
      if (acting && !d.dryRun) {
        const p: PendingDecision = {
          decisionId: dec.decisionId, atMs: nowMs, kind: dec.kind, phase: dec.phase, ...(dec.row === undefined ? {} : { row: dec.row }),
          chain: faultSummary(shown) + chainOf(dec.reasons), faultSinceMs: faultSinceMs(shown, snapshot.faults), actions: resolve(entry, dec, nowMs),
        };
        const tPut = performance.now();
        await d.states.put(key, next, p); // BEFORE acting
        const stages: Stages = { ...(queued === undefined ? {} : { queued }), decide: round1(tDecided - t0), prepare: round1(tPut - tDecided), writeAhead: round1(performance.now() - tPut) };
        d.afterPersist?.(key, p);
        const done = await carryOut(entry, p, next, false, ctx, decisionRecordInput(historyJob(entry), shown, dec, dec.reasons, 'acted', nowMs), stages);
        // Lazy: written with a later journal commit (actions/job-state.action.ts), and not before the
        // reason record landed (a crash or a failed record write replays the decision, which adds it).
        d.states.clear(key, next, done.recording);
        if (reschedules(dec)) d.damper.restarted(key, causes.entities, restartOf(dec.decisionId));
      } else {
        if (acting) ctx.log.info('dry run: decision not carried out', { job: key, decisionId: dec.decisionId });
        await d.states.put(key, next);
        if (reported && !d.dryRun) await d.reporter.event(reporterJob(entry), dec, faultSummary(shown) + chainOf(dec.reasons), nowMs);
        if (reported) await recordDecision(d.history, decisionRecordInput(historyJob(entry), shown, dec, dec.reasons, HISTORY_OUTCOME[outcome], nowMs), ctx.signal);
      }
      state = next;
      if (budgetBefore !== state.retry?.times) d.onStateChanged();
      return requeue(dec.requeueAfterMs);
    },
  };
}
