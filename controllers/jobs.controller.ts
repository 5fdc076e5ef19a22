/**
 * The jobs flow (job- and pod-level rescheduling): pods, PodGroups and node faults -> the keys of the jobs they touch
 * (policy/jobs/job-pipeline.ts) -> the burst window (runtime/burst-gate.ts: a quiet job's key is
 * queued at once, what follows within --burst-window-ms coalesced by `addAfter`) -> the per-job
 * decision reconcile (reconcilers/job-decisions.reconciler.ts, which aggregates the job from the
 * caches) -> actions/ and the job ConfigMap reconcilers. This file holds the flow's only subscribe
 * (docs/CONVENTIONS.md#data-path).
 *
 * Modes:
 * - `--rescheduling=false` (ClusterD role beside the real Volcano ascend plugin): the job index is read
 *   for other consumers (`aggregateNow`), but no decision is made and nothing is deleted, tainted or written
 *   (no vcjob-fault-npu-cm, job-reschedule-reason, tor-share-cm, reset-config GracefulExit/RetryTime).
 * - `--dry-run`: decisions are made, logged and counted; nothing is written or acted on, no Events.
 */
import { filter, map, merge, type Subscription } from 'rxjs';
import { objectKey } from '../runtime/reflector.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import { BurstGate } from '../runtime/burst-gate.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { HiddenFault, JobFaultAggregate } from '../policy/jobs/job-aggregation.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { JOB_RESCHEDULE_REASON_CM_NAME, JOB_RESCHEDULE_REASON_NAMESPACE } from '../schemas/job-reschedule-reason/job-reschedule-reason.ts';
import { VCJOB_FAULT_NPU_CM_NAME, VCJOB_FAULT_NPU_NAMESPACE } from '../schemas/vcjob-fault-npu/vcjob-fault-npu.ts';
import { TOR_SHARE_CM_NAME, TOR_SHARE_NAMESPACE } from '../schemas/tor-share/tor-share.ts';
import { JOB_STATE_NAMESPACE, type PendingDecision } from '../schemas/job-state/job-state.ts';
import { CLUSTERD_FAULT_TAINT_KEY } from '../policy/faults/job-isolation.ts';
import { JobActionExecutor, type HandOffSink, type JobActionHooks } from '../actions/job-action-executor.ts';
import { JOB_RESCHEDULE_REASON_FLUSH_KEY, JOB_RESCHEDULE_REASON_KEY, RescheduleReasonStore, rescheduleReasonReconciler } from '../reconcilers/job-reschedule-reason.reconciler.ts';
import { VCJOB_FAULT_NPU_KEY, vcjobFaultNpuReconciler } from '../reconcilers/vcjob-fault-npu.reconciler.ts';
import { TOR_AFFINITY_LABEL, TOR_SHARE_KEY, torShareReconciler } from '../reconcilers/tor-share.reconciler.ts';
import type { ResetConfigDeps } from '../actions/job-reset-config.action.ts';
import type { FaultView } from './fault-view.ts';
import type { Options } from './options.ts';
import type { Sources } from './sources/sources.ts';
import type { JobIndex } from '../state/job-index.ts';
import { jobKeys$ } from '../policy/jobs/job-pipeline.ts';
import { JobStateStore } from '../actions/job-state.action.ts';
import { DecisionReporter } from '../actions/job-report.action.ts';
import { aggregateFromCache, jobDecisionsReconciler } from '../reconcilers/job-decisions.reconciler.ts';
import { nodeIsolationReconciler } from '../reconcilers/job-isolation.reconciler.ts';
import { DecisionHistory } from '../actions/decision-history.action.ts';
import { DECISION_HISTORY_KEY, decisionHistoryReconciler } from '../reconcilers/decision-history.reconciler.ts';
import type { BreakerGate } from '../policy/jobs/breaker-gate.ts';
import { FlapDamper } from '../state/flap-damper.ts';
import { flapDampingOf } from './options.ts';
import { jobIdentityProblem } from '../schemas/kube-names.ts';

const JOB_JOURNAL_KEY = 'job-journal';
/**
 * Least time between two writes of job-reschedule-reason records (fewer writes in a storm): the first record after a
 * quiet spell is written at once, a storm's later ones share a write about a second later. Nobody
 * waits for it (the job's journal clear is held until its record landed).
 */
const REASON_WRITE_GAP_MS = 1000;
/**
 * Jobs decided at once. A pass that carries out a decision holds its worker through the pod DELETEs,
 * the Event and the DecisionRecord (mostly waiting on the apiserver, little CPU); the pass that
 * writes it ahead does not wait for the journal's commit. With 4, a 13-job storm was decided in waves
 * of 4 about half a second apart, each wave's journal write-aheads in two or three commits (in the
 * storm bench, 8 of its 9 job_state writes). With more workers a storm's jobs reach their
 * write-aheads together and share a commit, and none waits in the queue behind another's DELETEs.
 */
const DECISION_WORKERS = 16;

export interface JobsControllerDeps {
  readonly client: KubeClient;
  readonly sources: Sources;
  /** The fault view (controllers/fault-view.ts): scheduler views kept per node, and the nodes whose view changed. */
  readonly deviceFaults: Pick<FaultView, 'store' | 'changes$' | 'effective' | 'jobView' | 'recoveredSince' | 'awaitingAny'>;
  readonly writer: ConfigMapWriter;
  readonly options: Options;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The controller's clock (runtime/clock.ts): decisions' times, burst windows, every loop's timers. */
  readonly clock: QueueClock;
  /** Test hooks around action execution (make an action fail or hang). */
  readonly hooks?: JobActionHooks;
  readonly afterPersist?: (key: string, pending: PendingDecision) => void;
  /** TaskD/MindIO registered the job with the Recover service (the recovery controller knows). */
  readonly registered: (jobUid: string) => boolean;
  /** The process-level / hot-switch FSMs take the decision's hand-off (required: no silent skip). */
  readonly handOff: HandOffSink;
  /**
   * The scheduler-view filters (fault-filters.controller.ts): visible plus hidden faults of these nodes
   * and the hide windows, so aggregates mark hidden causes (docs/rules.md#decision.hidden-by-filter). Default: the filtered view only.
   */
  readonly filtered?: (nodes: readonly string[]) => { readonly faults: readonly FaultRecord[]; readonly hidden: ReadonlyMap<string, HiddenFault> };
  /** The blast-radius breaker (breaker.controller.ts): asked before every reschedule and node isolation. */
  readonly breaker: BreakerGate;
}

/** What the flow hands its one subscriber. */
type Work =
  | { type: 'job'; key: string } | { type: 'gone'; key: string } | { type: 'pg'; key: string } | { type: 'nodes'; nodes: readonly string[] }
  // A job left the index (its owner deleted, its last pod gone): only the TOR view still holds it.
  | { type: 'left' };

interface Loops {
  readonly decisions: ControllerLoop;
  readonly vcjobFaultNpu: ControllerLoop;
  readonly reasons: ControllerLoop;
  readonly torShare: ControllerLoop;
  readonly isolation: ControllerLoop;
  /** Prunes the decision history (per job, total, TTL). */
  readonly history: ControllerLoop;
  /** The job journal's group commits (actions/job-state.action.ts). */
  readonly journal: ControllerLoop;
}

export class JobsController {
  /** The sources' one job index (controllers/sources/job-index-feed.ts), read in its default claims mode. */
  readonly index: JobIndex;
  readonly states: JobStateStore;
  /** The reason records (reconcilers/job-reschedule-reason); undefined without rescheduling. */
  private reasonStore: RescheduleReasonStore | undefined;
  readonly loops: Loops | undefined;
  /** The burst window (--burst-window-ms) on the decision queue's job keys. */
  private readonly gate: BurstGate | undefined;
  /**
   * The durable decision history (DecisionRecords): every decision about a job is recorded through
   * `recordDecision(history, ...)` (actions/decision-history.action.ts); undefined only with
   * --rescheduling=false, where no decision is taken.
   */
  readonly history: DecisionHistory | undefined;
  private sub: Subscription | undefined;
  private readonly d: JobsControllerDeps;
  private readonly now: () => number;
  /** Flap damping's restart budget (policy/faults/flap-damping.ts rule 2; the holds are the fault view's). */
  readonly damper: FlapDamper;

  constructor(d: JobsControllerDeps) {
    this.d = d;
    this.now = () => d.clock.now();
    const { sources: s, writer, options, log, metrics, client } = d;
    this.damper = new FlapDamper(flapDampingOf(options), this.now, (e, t) => d.deviceFaults.recoveredSince(e, t), metrics);
    // Counted claims only, the index's default unless --trust-pod-npu-annotations (policy/jobs/npu-claims.ts):
    // a forged AscendReal must not make a job restart on another's faults (each restart counts toward
    // the blast-radius breaker).
    this.index = s.jobIndex.index;
    const mindxDl = (name: string) => s.mindxDlConfigMaps.get(`${JOB_STATE_NAMESPACE}/${name}`);
    this.states = new JobStateStore({
      cached: mindxDl, cachedNames: () => [...s.mindxDlConfigMaps.store.values()].map((c) => c.metadata?.name ?? ''),
      writer, client, dryRun: options.dryRun, log: log.child({ controller: 'job_decisions' }), metrics, now: this.now,
      // A write-ahead after a quiet spell goes out at once; in a burst the next waits until 50 ms
      // after the previous one (the default), so a storm's write-aheads share a write (100 ms held
      // 9 of the single bench's 50 faults, which come 70-100 ms after the previous one). Only
      // write-aheads before acting count: a gap after any commit (it was the 200 ms burst window)
      // made every decision that followed another job's completion or decision wait out the rest
      // of it (the single bench's write-ahead p50 161 ms), which is why it was once set to 0.
      wake: (ms) => this.loops?.journal.queue.addAfter(JOB_JOURNAL_KEY, ms),
      expediteHold: () => this.reasonStore?.expedite(),
      onHoldFailed: (key) => this.loops?.decisions.queue.add(key),
      // The job's pass that carries out its durable write-ahead (or fails its unwritten put): no
      // decision waits for a journal commit (actions/job-state.action.ts).
      onWritten: (key) => this.loops?.decisions.queue.add(key),
      onPutFailed: (key) => this.loops?.decisions.queue.add(key),
    });
    if (!options.rescheduling) { this.loops = undefined; this.gate = undefined; this.history = undefined; return; }
    const faultsOf = (n: string) => d.deviceFaults.effective(n);
    const loop = (r: ConstructorParameters<typeof ControllerLoop>[0], workers = 1) => new ControllerLoop(r, { log, metrics, clock: d.clock, workers });
    const reasonStore = this.reasonStore = new RescheduleReasonStore({
      cached: () => s.mindxDlConfigMaps.get(`${JOB_RESCHEDULE_REASON_NAMESPACE}/${JOB_RESCHEDULE_REASON_CM_NAME}`),
      writer, liveJobKeys: () => this.index.liveJobKeys(), log: log.child({ controller: 'job_reschedule_reason' }),
      gapMs: REASON_WRITE_GAP_MS, now: this.now, wake: (ms) => this.loops?.reasons.queue.addAfter(JOB_RESCHEDULE_REASON_FLUSH_KEY, ms),
    });
    const resetConfig: ResetConfigDeps = { cached: (ns, name) => s.resetConfigs.get(`${ns}/${name}`), writer };
    const executor = new JobActionExecutor({ client, log, metrics, now: this.now, reasons: reasonStore, resetConfig, hooks: d.hooks, handOff: d.handOff });
    // --dry-run posts no Events: it writes nothing to the cluster, so the chart's dry-run ClusterRole
    // grants no events verbs (docs/rbac.md); decisions are explained in the logs and decisions_total.
    const reporter = new DecisionReporter({ log: log.child({ controller: 'job_decisions' }), metrics, ...(options.dryRun ? {} : { events: client }) });
    const vcjobFaultNpu = loop(vcjobFaultNpuReconciler({
      nodes: () => d.deviceFaults.store.nodeNames(), faultsOf,
      retryJobs: () => this.retryJobs(),
      cached: () => s.volcanoConfigMaps.get(`${VCJOB_FAULT_NPU_NAMESPACE}/${VCJOB_FAULT_NPU_CM_NAME}`), writer,
    }));
    const reasons = loop(rescheduleReasonReconciler(reasonStore));
    const bounds = { perJob: options.decisionHistoryPerJob, total: options.decisionHistoryMaxRecords, ttlMs: options.decisionHistoryTtlHours * 3_600_000 };
    const history = new DecisionHistory({
      client, log: log.child({ controller: 'decision_history' }), metrics, bounds, dryRun: options.dryRun,
      onRecorded: () => this.loops?.history.queue.add(DECISION_HISTORY_KEY),
    });
    this.history = history;
    this.loops = {
      decisions: loop(jobDecisionsReconciler({
        index: this.index, faultsOf, ...(d.filtered === undefined ? {} : { filtered: d.filtered }),
        states: this.states, executor, reporter, history, resetConfig, dryRun: options.dryRun, breaker: d.breaker, damper: this.damper,
        refuseMalformedIdentity: options.refuseMalformedJobIdentity,
        config: {
          graceOverTimeMs: options.graceOverTimeSeconds * 1000, pendingEscalationMs: options.pendingEscalationSeconds * 1000,
          rackEscalationMs: options.rackEscalationMs, superPodEscalationMs: options.superPodEscalationMs,
        },
        viewAwaiting: (nodes) => {
          const waits = d.deviceFaults.awaitingAny(nodes, this.now());
          if (waits) metrics.decisionsAwaitingView.inc();
          return waits;
        },
        registered: d.registered, afterPersist: d.afterPersist, goodput: metrics.goodput, scheduledAtMs: (k) => this.gate?.scheduledAt(k),
        onStateChanged: () => vcjobFaultNpu.queue.add(VCJOB_FAULT_NPU_KEY),
        onGone: () => { reasons.queue.add(JOB_RESCHEDULE_REASON_KEY); vcjobFaultNpu.queue.add(VCJOB_FAULT_NPU_KEY); },
      }), DECISION_WORKERS),
      vcjobFaultNpu,
      reasons,
      torShare: loop(torShareReconciler({
        client, nodeByIp: () => this.nodeByIp(), torJobs: () => this.torJobs(),
        cached: () => s.volcanoConfigMaps.get(`${TOR_SHARE_NAMESPACE}/${TOR_SHARE_CM_NAME}`), writer,
      })),
      isolation: loop(nodeIsolationReconciler({
        node: (n) => s.nodes.get(n), faultsOf, client, metrics, dryRun: options.dryRun,
        enabled: options.nodeTaints, holdMs: options.nodeTaintHoldSeconds * 1000, breaker: d.breaker,
      }), 2),
      // Dry run writes nothing, so it prunes nothing either.
      journal: loop({ name: 'job_journal', reconcile: async () => { await this.states.commitDue(); return {}; } }),
      history: loop(options.dryRun ? { name: 'decision_history', reconcile: async () => ({}) } : decisionHistoryReconciler({ client, index: history.index, bounds, metrics })),
    };
    this.gate = new BurstGate(this.loops.decisions.queue, options.burstWindowMs, this.now);
  }

  /** Subscribes the flow (pods and PodGroups after the index applied them); call before the sources start. */
  start(): void {
    const { sources: s, deviceFaults, options, log } = this.d;
    if (!options.rescheduling) log.info('rescheduling off (ClusterD role): job decisions and job ConfigMaps are left to Volcano');
    const pgEvents$ = s.jobIndex.podGroups$;
    const keys$ = jobKeys$({
      podKeys$: s.jobIndex.pods$.pipe(map(({ keys }) => keys)),
      podGroupKeys$: pgEvents$.pipe(filter((ev) => ev.type !== 'delete'), map((ev) => objectKey(ev.obj))),
      faultNodes$: deviceFaults.changes$.pipe(map((c) => c.nodes)),
    }, { jobKeysOnNodes: (nodes) => this.index.jobKeysOnNodes(nodes) });
    const work$ = merge(
      keys$.pipe(map((key): Work => (this.index.job(key) !== undefined ? { type: 'job', key } : { type: 'left' }))),
      // A deleted Volcano Job or AscendJob takes its job out of the index (state/job-index.ts:
      // an unverified owner is no job) before its PodGroup and pods go.
      merge(s.vcJobs.events$, s.ascendJobs.events$).pipe(filter((ev) => ev.type === 'delete'), map((): Work => ({ type: 'left' }))),
      pgEvents$.pipe(map((ev): Work => (ev.type === 'delete' ? { type: 'gone', key: objectKey(ev.obj) } : { type: 'pg', key: objectKey(ev.obj) }))),
      deviceFaults.changes$.pipe(map((c): Work => ({ type: 'nodes', nodes: c.nodes }))),
    );
    this.sub = work$.subscribe({
      next: (w) => this.dispatch(w),
      error: (err: unknown) => log.error('jobs flow failed', { err: String(err), stack: (err as Error)?.stack }),
    });
  }

  private dispatch(w: Work): void {
    const l = this.loops;
    switch (w.type) {
      case 'job': {
        // Leading edge for a quiet job, the rest of its burst coalesced into one pass at the window's end.
        const wait = this.gate?.touch(w.key);
        if (wait !== undefined) l?.torShare.queue.addAfter(TOR_SHARE_KEY, wait);
        break;
      }
      case 'gone':
        l?.decisions.queue.add(w.key);
        l?.torShare.queue.add(TOR_SHARE_KEY);
        break;
      case 'left':
        l?.torShare.queue.add(TOR_SHARE_KEY);
        break;
      case 'pg':
        l?.vcjobFaultNpu.queue.add(VCJOB_FAULT_NPU_KEY);
        break;
      case 'nodes':
        l?.vcjobFaultNpu.queue.add(VCJOB_FAULT_NPU_KEY);
        for (const n of w.nodes) l?.isolation.queue.add(n);
        break;
    }
  }

  /** Starts the reconcilers (on synced caches) and queues every key once, so a restart resumes. */
  startLoops(): void {
    const l = this.loops;
    if (l === undefined) return;
    this.states.resume();
    this.reasonStore?.resume();
    for (const loop of Object.values(l)) loop.start();
    for (const key of this.index.jobKeys()) l.decisions.queue.add(key);
    for (const r of this.states.all()) l.decisions.queue.add(r.jobKey);
    l.vcjobFaultNpu.queue.add(VCJOB_FAULT_NPU_KEY);
    l.reasons.queue.add(JOB_RESCHEDULE_REASON_KEY);
    l.torShare.queue.add(TOR_SHARE_KEY);
    l.history.queue.add(DECISION_HISTORY_KEY);
    for (const n of this.d.deviceFaults.store.nodeNames()) l.isolation.queue.add(n);
    for (const [name, node] of this.d.sources.nodes.store) {
      if ((node.spec?.taints ?? []).some((t) => t.key === CLUSTERD_FAULT_TAINT_KEY)) l.isolation.queue.add(name);
    }
  }

  /** After a breaker reset: every job and node is decided again from the current state. */
  requeueAll(): void {
    const l = this.loops;
    if (l === undefined) return;
    for (const key of this.index.jobKeys()) l.decisions.queue.add(key);
    for (const n of this.d.sources.nodes.store.keys()) l.isolation.queue.add(n);
  }

  /** Stops the reconcilers (lost leadership, shutdown); the flow keeps the job index current. */
  async stopLoops(): Promise<void> {
    // Whoever may no longer lead writes nothing: staged journal changes and queued reason records are
    // dropped (a pending decision they leave is replayed by the next leader, idempotently). No pass
    // waits on another loop (a write-ahead's commit queues its job again, a reason record holds only
    // the journal's clear), so the order of these and the loops' stop does not matter.
    this.reasonStore?.abandon();
    this.states.abandon();
    if (this.loops !== undefined) await Promise.all(Object.values(this.loops).map((l: ControllerLoop) => l.stop()));
  }

  async stop(): Promise<void> {
    this.sub?.unsubscribe();
    await this.stopLoops();
  }

  /** The job's aggregate now, from the caches (for consumers that cannot wait for a burst). */
  aggregateNow(key: string): JobFaultAggregate | undefined {
    const e = this.index.job(key);
    return e === undefined ? undefined : aggregateFromCache(e, (n) => this.d.deviceFaults.effective(n), this.d.filtered);
  }

  /** A job refused by the decisions reconciler (schemas/kube-names.ts) enters no shared ConfigMap either. */
  private admitted(h: { readonly uid: string; readonly name: string }): boolean {
    return !this.d.options.refuseMalformedJobIdentity || jobIdentityProblem(h) === undefined;
  }

  private retryJobs() {
    const states = new Map(this.states.all().map((r) => [r.jobUid, r.state]));
    return this.index.jobHeaders().filter((h) => h.knobs.faultRetryTimes > 0 && this.admitted(h)).map((h) => {
      const budget = states.get(h.uid)?.retry;
      return { key: h.key, uid: h.uid, faultRetryTimes: h.knobs.faultRetryTimes, ...(budget ? { budget } : {}) };
    });
  }

  private nodeByIp(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [name, n] of this.d.sources.nodes.store) {
      const addrs = n.status?.addresses ?? [];
      for (const a of addrs) if (a.type === 'InternalIP') out.set(a.address, name);
    }
    return out;
  }

  private torJobs() {
    return this.index.jobHeaders().flatMap((h) => {
      if (!this.admitted(h)) return [];
      const affinity = h.labels[TOR_AFFINITY_LABEL];
      if (affinity !== 'large-model-schema' && affinity !== 'normal-schema') return [];
      const e = this.index.job(h.key);
      return e === undefined ? [] : [{ name: h.name, affinity, nodes: e.view.pods.flatMap((p) => (p.node === undefined ? [] : [p.node])) }];
    });
  }
}
