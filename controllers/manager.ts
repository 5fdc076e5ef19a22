/**
 * Builds and runs everything the controller does, from injected clients, logger and metrics, so
 * main.ts, the integration tests and the benchmark run the same wiring in or out of process.
 */
import type { Server } from 'node:http';
import { map } from 'rxjs';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { startHttpServer, type HealthSource, type Leadership } from '../telemetry/http-server.ts';
import { Periodic } from '../runtime/periodic.ts';
import { LeaderLabeler, type PodRef } from '../actions/leader-label.action.ts';
import type { Options } from './options.ts';
import { createSources, sourcesHealth, startSources, stopSources, waitForSync, type Sources } from './sources/sources.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { DeviceFaultsController, type FaultPolicy } from './device-faults.controller.ts';
import { CLUSTER_INFO_KEY, CLUSTER_INFO_WRITE_BURST, clusterInfoReconciler, renderClusterInfo } from '../reconcilers/cluster-info.reconciler.ts';
import { CLUSTER_INFO_NAMESPACE } from '../schemas/cluster-info/cluster-info.ts';
import { LeaderElector } from '../runtime/leader-election.ts';
import { JobsController, type JobsControllerDeps } from './jobs.controller.ts';
import { RecoveryController } from './recovery.controller.ts';
import { GrpcController } from './grpc.controller.ts';
import { FaultPolicyController } from './fault-policy.controller.ts';
import { ESCALATION_STATE_CM_NAME } from '../schemas/escalation-state/escalation-state.ts';
import { MANUAL_INFO_CM_NAME } from '../schemas/manual-info/manual-info.ts';
import { ESCALATION_STATE_RECONCILE_KEY, escalationStateReconciler } from '../reconcilers/escalation-state.reconciler.ts';
import { MANUAL_INFO_RECONCILE_KEY, manualInfoReconciler } from '../reconcilers/manual-info.reconciler.ts';
import { STATISTIC_FAULT_RECONCILE_KEY, statisticFaultReconciler } from '../reconcilers/statistic-fault.reconciler.ts';
import { STATISTIC_FAULT_CM_NAME } from '../schemas/statistic-fault/statistic-fault.ts';
import { SCHEDULING_EXCEPTION_RECONCILE_KEY, schedulingExceptionReconciler } from '../reconcilers/scheduling-exception.reconciler.ts';
import { SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME } from '../schemas/scheduling-exception/scheduling-exception.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { JobSummaryController } from './job-summary.controller.ts';
import { JobStatisticController } from './job-statistic.controller.ts';
import { RelationFaultsController } from './relation-faults.controller.ts';
import { recoverInPlacePeers } from '../policy/filters/fault-filters-peers.ts';
import { LAST_GOOD_CM_NAME, parseLastGood } from '../state/device-info-last-good.ts';
import { LAST_GOOD_RECONCILE_KEY, lastGoodReconciler } from '../reconcilers/device-info-last-good.reconciler.ts';
import { BreakerController, breakerConfigOf } from './breaker.controller.ts';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

/** An informer that has not heard from the apiserver for this long while disconnected is stuck. */
const STALL_LIMIT_MS = 5 * 60_000;
/** How often the watch-health gauges are refreshed between scrapes. */
const WATCH_HEALTH_PERIOD_MS = 5_000;

export interface ManagerDeps {
  readonly client: KubeClient;
  readonly options: Options;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly now?: () => number;
  readonly policy?: FaultPolicy;
  /** Called when this replica loses the lease: it must stop acting at once (main.ts exits). */
  readonly onLostLeadership?: () => void;
  /**
   * Fault injection around the jobs flow's actions (make one fail or hang: "killed between decision
   * and deletion"). It cannot change the wiring: timings and limits are flags (options.ts).
   */
  readonly jobs?: Pick<JobsControllerDeps, 'hooks'>;
  /**
   * This replica's pod (default: env POD_NAME / POD_NAMESPACE from the downward API). With leader
   * election, the leader labels it so the gRPC Service routes to it (actions/leader-label.action.ts);
   * without a pod the label is not managed. Its name is also the leader-election identity.
   */
  readonly pod?: PodRef;
}

/** The Lease replicas compete for (in --leader-election-namespace). */
export const LEADER_LEASE_NAME = 'clusterd-ts-leader';

export class Manager implements HealthSource {
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly deviceFaults: DeviceFaultsController;
  readonly clusterInfo: ControllerLoop;
  readonly jobs: JobsController;
  /** Process-level recovery and hot switch (one FSM pair per registered job) and the gRPC server. */
  readonly recovery: RecoveryController;
  readonly grpc: GrpcController;
  /** Levels, escalation, manual separation, pre-separate (the intake flow's FaultPolicy unless deps.policy is given). */
  readonly faultPolicy: FaultPolicyController;
  readonly escalationState: ControllerLoop;
  readonly manualInfo: ControllerLoop;
  /** Persists the last good device-info of nodes whose current one is rejected (survives restarts). */
  readonly lastGood: ControllerLoop;
  /** ClusterD's cluster-system/statistic-fault-info (public faults in force). */
  readonly statisticFault: ControllerLoop;
  /** ClusterD's cluster-system/scheduling-exception-report (every 10 s from start, per-job entries). */
  readonly schedulingException: ControllerLoop;
  /** ClusterD's <ns>/job-summary-<job> ConfigMaps (one per job with a PodGroup). */
  readonly jobSummary: JobSummaryController;
  /** ClusterD's mindx-dl/current-job-statistic (one entry per Volcano Job / AscendJob, 3 s tick). */
  readonly jobStatistic: JobStatisticController;
  /** Scheduler-view filters (custom filter, MindIE hold, UCE-accompany, step retry, recover-in-place). */
  readonly filters: FaultFiltersController;
  /** Relation faults -> pod label fault-type=Separate|SubHealth. */
  readonly relations: RelationFaultsController;
  /** Blast-radius breaker: gates every reschedule and node isolation; state in mindx-dl/clusterd-ts-breaker. */
  readonly breaker: BreakerController;
  private server: Server | undefined;
  private elector: LeaderElector | undefined;
  private leaderLabel: LeaderLabeler | undefined;
  private identity = '';
  private acting = false;
  /** Watch-health metrics between scrapes (every 5 s, through a work queue). */
  private watchHealth: Periodic | undefined;
  private readonly deps: ManagerDeps;
  private readonly now: () => number;

  constructor(deps: ManagerDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    deps.client.onRequest = (method, status) => deps.metrics.apiRequests.inc({ method, code: String(status) });
    this.sources = createSources(deps.client, { log: deps.log.child({ component: 'sources' }), clusterSystemNamespace: deps.options.clusterSystemNamespace });
    const { options, log, metrics } = deps;
    metrics.bounds.setLogger(log.child({ component: 'bounds' }));
    this.writer = new ConfigMapWriter(deps.client, { metrics, dryRun: options.dryRun, log });
    const clusterInfo = clusterInfoReconciler({
      // The scheduler view, minus what its filters withheld from the device plugin's lists (E.6).
      nodes: () => this.deviceFaults.store.nodeNames(),
      renderNode: (node, nowMs) => this.faultPolicy.adjustView(renderClusterInfo(this.deviceFaults.store, (n) => this.deviceFaults.effective(n), nowMs, (n) => this.filters.withheld(n), [node])),
      peers: (nodes) => recoverInPlacePeers(this.filters.index, nodes),
      actual: (name) => this.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${name}`),
      actualNames: () => [...this.sources.mindxDlConfigMaps.store.values()].map((c) => c.metadata?.name ?? ''),
      writer: this.writer,
      refreshMs: options.clusterInfoRefreshSeconds * 1000,
      refreshAnnotation: options.clusterInfoRefreshAnnotation,
      burst: CLUSTER_INFO_WRITE_BURST,
    });
    this.clusterInfo = new ControllerLoop(clusterInfo, { log, metrics, now: this.now });
    const csNs = options.clusterSystemNamespace;
    this.faultPolicy = new FaultPolicyController({
      sources: this.sources, namespace: csNs, log: log.child({ controller: 'fault_policy' }), metrics, now: this.now,
      records: (n) => this.deviceFaults.store.records(n), nodes: () => this.deviceFaults.store.nodeNames(),
      reportedUnhealthy: (n) => this.deviceFaults.store.nodeState(n)?.device?.data.lists.unhealthy ?? [],
      onViewChange: (nodes) => this.deviceFaults.notify(nodes),
      deviceRules: options.devicePluginRules,
      persistState: options.persistPolicyState,
      onStateChange: () => { if (options.persistPolicyState) this.escalationState.queue.addAfter(ESCALATION_STATE_RECONCILE_KEY, 200); this.manualInfo.queue.add(MANUAL_INFO_RECONCILE_KEY); },
    });
    this.escalationState = new ControllerLoop(escalationStateReconciler({
      // --persist-policy-state=false: nothing to persist, so the state object is never written.
      desired: (t) => (options.persistPolicyState ? this.faultPolicy.persistedState(t) : undefined), writer: this.writer, namespace: csNs,
      actual: () => this.sources.clusterSystemConfigMaps.get(`${csNs}/${ESCALATION_STATE_CM_NAME}`),
    }), { log, metrics, now: this.now });
    this.manualInfo = new ControllerLoop(manualInfoReconciler({
      desired: () => this.faultPolicy.manualInfo(), writer: this.writer, namespace: csNs,
      actual: () => this.sources.clusterSystemConfigMaps.get(`${csNs}/${MANUAL_INFO_CM_NAME}`),
    }), { log, metrics, now: this.now });
    this.statisticFault = new ControllerLoop(statisticFaultReconciler({
      faults: () => this.deviceFaults.store.publicFaultStatistics(), writer: this.writer, namespace: csNs,
      actual: () => this.sources.clusterSystemConfigMaps.get(`${csNs}/${STATISTIC_FAULT_CM_NAME}`),
    }), { log, metrics, now: this.now });
    this.jobSummary = new JobSummaryController({ sources: this.sources, writer: this.writer, log, metrics, now: this.now });
    this.jobStatistic = new JobStatisticController({ sources: this.sources, summaries: this.jobSummary.store, writer: this.writer, log, metrics, now: this.now });
    this.schedulingException = new ControllerLoop(schedulingExceptionReconciler({
      writer: this.writer, namespace: csNs, actual: () => this.sources.clusterSystemConfigMaps.get(`${csNs}/${SCHEDULING_EXCEPTION_CM_NAME}`),
      inputs: () => this.jobSummary.exceptionInputs(),
    }), { log, metrics, now: this.now });
    // The rescheduler's view hides filtered faults (fault-filters.controller.ts, with the step-retry
    // stage of recovery-step-retry.ts in its place in the chain); the FSMs and gRPC see the job view.
    const basePolicy = deps.policy ?? this.faultPolicy;
    const persistSide = (): void => this.faultPolicy.engine.setSideState({ filters: this.filters.state(), relation: this.relations.state() });
    this.filters = new FaultFiltersController({
      sources: this.sources, log: log.child({ controller: 'fault_filters' }), metrics, now: this.now,
      jobView: (n) => basePolicy.effective(n, this.deviceFaults.store.records(n), this.now()),
      stepRetry: (n, r, t) => this.recovery.schedulerView(n, r, t),
      faultSubscribed: (uid) => this.grpc.faults.subscribed(uid),
      businessUce: (n) => this.recovery.businessUce(n),
      mustExitReportedMs: (uid, podRank) => this.recovery.mustExitReportedMs(uid, podRank),
      notify: (nodes) => this.deviceFaults.notify(nodes),
      onStateChange: () => persistSide(),
    });
    this.deviceFaults = new DeviceFaultsController({
      sources: this.sources, log: log.child({ controller: 'device_faults' }), metrics, now: this.now, maxPublicFaults: options.maxPublicFaults,
      onLastGoodChange: () => this.lastGood.queue.add(LAST_GOOD_RECONCILE_KEY),
      policy: { effective: (n, r, t) => this.filters.schedulerView(n, basePolicy.effective(n, r, t), t) },
      onChange: (c) => { this.faultPolicy.observe(c.nodes); clusterInfo.markDirty(c.nodes); this.clusterInfo.queue.add(CLUSTER_INFO_KEY); },
      // ClusterD rewrites statistic-fault-info after each public-fault message or delete, 1 s apart.
      onPublicFaultMessage: () => { if (this.acting) this.statisticFault.queue.add(STATISTIC_FAULT_RECONCILE_KEY); },
    });
    this.lastGood = new ControllerLoop(lastGoodReconciler({
      desired: () => this.deviceFaults.lastGood.desired(), writer: this.writer, namespace: CLUSTER_INFO_NAMESPACE,
      actual: () => this.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${LAST_GOOD_CM_NAME}`),
    }), { log, metrics, now: this.now });
    this.recovery = new RecoveryController({
      client: deps.client, sources: this.sources, deviceFaults: this.deviceFaults, writer: this.writer,
      options, log: log.child({ controller: 'recovery' }), metrics, now: this.now,
      jobView: (n) => basePolicy.effective(n, this.deviceFaults.store.records(n), this.now()),
      // With our jobs pipeline acting, label `pause` makes it re-decide the job (B6 row 9 -> 10/11).
      handover: (key) => { this.jobs.loops?.decisions.queue.add(key); return this.jobs.loops !== undefined; },
    });
    this.grpc = new GrpcController({
      options, sources: this.sources, deviceFaults: this.deviceFaults, recovery: this.recovery,
      log: log.child({ component: 'grpc' }), metrics, now: this.now, limits: { unaryQps: options.grpcUnaryQps },
      onFaultSubscription: (jobId, nodes) => this.filters.jobFactsChanged(jobId, nodes),
    });
    this.relations = new RelationFaultsController({
      sources: this.sources, faultsOf: (n) => this.deviceFaults.effective(n), faultNodes$: this.deviceFaults.changes$.pipe(map((c) => c.nodes)),
      a3Node: (n) => (this.deviceFaults.store.nodeState(n)?.device?.data.cfg.SuperPodID ?? -1) >= 0,
      client: deps.client, log: log.child({ controller: 'relation_faults' }), metrics, now: this.now, dryRun: options.dryRun,
      onStateChange: () => persistSide(),
    });
    this.breaker = new BreakerController({
      sources: this.sources, writer: this.writer, client: deps.client, config: breakerConfigOf(options), domainLabel: options.breakerDomainLabel,
      superPodOf: (n) => this.deviceFaults.store.nodeState(n)?.device?.data.cfg.SuperPodID,
      faultsOf: (n) => this.deviceFaults.effective(n),
      onReset: () => this.jobs.requeueAll(),
      log: log.child({ controller: 'breaker' }), metrics, now: this.now,
    });
    this.jobs = new JobsController({
      breaker: this.breaker,
      registered: (uid) => this.recovery.isRegistered(uid),
      // B6 rows 6/8: the decision's hand-off starts the job's FSM now (preExitProcess before the
      // fault pods are deleted, as ClusterD's order has it); see RecoveryController.handOff.
      handOff: (key, action, signal) => this.recovery.handOff(key, action, signal),
      filtered: (nodes) => this.filters.jobSnapshot(nodes, this.now()),
      ...(deps.jobs?.hooks === undefined ? {} : { hooks: deps.jobs.hooks }), client: deps.client, sources: this.sources, deviceFaults: this.deviceFaults, writer: this.writer,
      options, log: log.child({ controller: 'jobs' }), metrics, now: this.now,
    });
  }

  beforeScrape(): void {
    this.deps.metrics.observeWatchHealth(sourcesHealth(this.sources), this.now());
  }

  liveness(): string[] {
    const now = this.now();
    return sourcesHealth(this.sources)
      .filter((h) => !h.connected && h.lastContactMs > 0 && now - h.lastContactMs > STALL_LIMIT_MS)
      .map((h) => `informer ${h.name}: no contact with the apiserver for ${Math.round((now - h.lastContactMs) / 1000)} s`);
  }

  /**
   * Caches synced, on the standby too: leadership is not a readiness condition (a standby that is
   * never Ready would block the PDB and rolling updates). The gRPC Service follows the leader label.
   */
  readiness(): string[] {
    return sourcesHealth(this.sources).filter((h) => !h.synced).map((h) => `informer ${h.name}: not synced`);
  }

  leadership(): Leadership {
    const pod = this.pod();
    return {
      leaderElection: this.deps.options.leaderElect, leader: this.acting, identity: this.identity,
      holder: this.elector?.leader ?? (this.acting ? this.identity : ''),
      ...(pod === undefined ? {} : { pod: `${pod.namespace}/${pod.name}` }),
      podLabel: this.leaderLabel?.ownLabel ?? 'unmanaged',
    };
  }

  private pod(): PodRef | undefined {
    if (this.deps.pod !== undefined) return this.deps.pod;
    const name = process.env.POD_NAME;
    const namespace = process.env.POD_NAMESPACE;
    return name && namespace ? { name, namespace } : undefined;
  }

  async start(): Promise<void> {
    const { options, log, metrics } = this.deps;
    this.server = await startHttpServer(options.httpPort, options.httpHost, metrics, this, log.child({ component: 'http' }));
    log.info('http server listening', { port: options.httpPort, paths: ['/healthz', '/readyz', '/metrics', '/leaderz'] });
    this.deviceFaults.start();
    this.filters.start();
    this.relations.start();
    this.jobs.start();
    this.breaker.start(this.deviceFaults.changes$.pipe(map((c) => c.nodes)));
    this.jobSummary.start();
    this.jobStatistic.start();
    this.recovery.start();
    startSources(this.sources);
    this.watchHealth = new Periodic('watch_health', WATCH_HEALTH_PERIOD_MS, () => metrics.observeWatchHealth(sourcesHealth(this.sources), this.now()), { log });
    this.watchHealth.start();
    await waitForSync(this.sources);
    metrics.observeWatchHealth(sourcesHealth(this.sources), this.now());
    log.info('caches synced', { objects: Object.fromEntries(sourcesHealth(this.sources).map((h) => [h.name, h.objects])) });
    // Before any decision: nodes whose device-info is still invalid get the last good one persisted before the restart.
    this.deviceFaults.restoreLastGood(parseLastGood(this.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${LAST_GOOD_CM_NAME}`)));
    // The public faults the last process listed (ClusterD reloads them at start), on top of the replayed CMs.
    this.deviceFaults.loadPublicFaults(this.sources.clusterSystemConfigMaps.get(`${options.clusterSystemNamespace}/${STATISTIC_FAULT_CM_NAME}`));
    this.faultPolicy.start(); // restores the persisted escalation state before any decision is published
    this.filters.restore(this.faultPolicy.engine.sideState.filters);
    this.relations.restore(this.faultPolicy.engine.sideState.relation);
    // Reconcilers start only on synced caches, so a restart never acts on a partial view, and only
    // on the leader: a standby keeps its caches warm and takes over within one lease duration.
    const pod = this.pod();
    // POD_NAME without POD_NAMESPACE still names the replica; an empty one does not.
    this.identity = pod?.name || process.env.POD_NAME || `${hostname()}-${randomBytes(3).toString('hex')}`;
    if (!options.leaderElect) {
      this.startActing();
      return;
    }
    metrics.leader.set(0);
    if (pod !== undefined) {
      this.leaderLabel = new LeaderLabeler({
        client: this.deps.client, pod, log: log.child({ component: 'leader_label' }), metrics,
        resyncMs: options.leaseDurationSeconds * 1000,
      });
      // A container restarted in place keeps its pod's labels: a standby must not carry it.
      this.leaderLabel.release();
    } else {
      log.info('no POD_NAME / POD_NAMESPACE: the leader pod label (gRPC Service routing) is not managed');
    }
    this.elector = new LeaderElector(this.deps.client, {
      namespace: options.leaderElectionNamespace, name: LEADER_LEASE_NAME,
      identity: this.identity,
      leaseDurationMs: options.leaseDurationSeconds * 1000,
      renewDeadlineMs: Math.floor(options.leaseDurationSeconds * 1000 * 2 / 3),
      retryPeriodMs: Math.max(500, Math.floor(options.leaseDurationSeconds * 1000 / 7.5)),
      log: log.child({ component: 'leader_election' }),
      onNewLeader: (id) => log.info('leader observed', { leader: id }),
      onStartedLeading: () => this.startActing(),
      onStoppedLeading: () => {
        metrics.leader.set(0);
        void this.stopActing();
        this.deps.onLostLeadership?.();
      },
    });
    this.elector.start();
  }

  get isLeader(): boolean { return this.acting; }

  /** The port /healthz, /readyz, /leaderz and /metrics listen on (after start). */
  get httpPort(): number | undefined {
    const a = this.server?.address();
    return a !== null && typeof a === 'object' ? a.port : undefined;
  }

  /** Starts every reconciler and action loop (leader only). */
  private startActing(): void {
    if (this.acting) return;
    this.acting = true;
    this.deps.metrics.leader.set(1);
    this.clusterInfo.start();
    this.clusterInfo.queue.add(CLUSTER_INFO_KEY);
    for (const [loop, key] of [[this.escalationState, ESCALATION_STATE_RECONCILE_KEY], [this.manualInfo, MANUAL_INFO_RECONCILE_KEY], [this.lastGood, LAST_GOOD_RECONCILE_KEY]] as const) { loop.start(); loop.queue.add(key); }
    // statistic-fault-info is written only after public-fault messages and deletes, never at start (as ClusterD).
    this.statisticFault.start();
    // ClusterD's collector first looks (and creates the report) one check interval after start.
    this.schedulingException.start();
    this.schedulingException.queue.addAfter(SCHEDULING_EXCEPTION_RECONCILE_KEY, SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS);
    // The breaker's state is restored before the first decision can ask it (rescheduling only: in
    // the ClusterD role nothing is rescheduled or isolated, so there is nothing to hold).
    if (this.jobs.loops !== undefined && !this.deps.options.dryRun) this.breaker.startActing();
    this.jobs.startLoops();
    // Before the job summary acts: its first changes are events of the statistic (ClusterD loads the
    // statistic ConfigMap first, then handles the informers' adds).
    this.jobStatistic.startActing();
    this.jobSummary.startActing();
    this.relations.startActing();
    // gRPC (Recover, Fault, PubFault) runs on the leader only: see controllers/grpc.controller.ts.
    this.recovery.startActing();
    // The gRPC Service selects the leader label: claim it once the server has tried to listen.
    void this.grpc.start().finally(() => { if (this.acting) this.leaderLabel?.claim(); });
  }

  private async stopActing(): Promise<void> {
    if (!this.acting) return;
    this.acting = false;
    this.deps.metrics.leader.set(0);
    // First, so the gRPC Service stops routing here while the loops drain (not awaited: a leader
    // cut off from the apiserver must stand down without waiting for it).
    this.leaderLabel?.release();
    await this.clusterInfo.stop();
    await Promise.all([this.escalationState.stop(), this.manualInfo.stop(), this.lastGood.stop(), this.statisticFault.stop(), this.schedulingException.stop()]);
    await this.jobs.stopLoops();
    await this.breaker.stop();
    await this.jobSummary.stopActing();
    await this.jobStatistic.stopActing();
    await this.relations.stopActing();
    await this.grpc.stop();
    await this.recovery.stopActing();
  }

  async stop(): Promise<void> {
    await this.watchHealth?.stop();
    this.deviceFaults.stop();
    this.jobSummary.stop();
    this.jobStatistic.stop();
    this.filters.stop();
    this.faultPolicy.stop();
    await this.stopActing();
    await this.breaker.stop();
    await this.jobs.stop();
    await this.relations.stop();
    await this.recovery.stop();
    // The label goes before the Lease: the next leader finds no stale label of ours to clear.
    await this.leaderLabel?.stop();
    await this.elector?.stop();
    stopSources(this.sources);
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}
