/**
 * Builds and runs everything the controller does, from injected clients, logger and metrics, so
 * main.ts, the integration tests and the benchmark run the same wiring in or out of process.
 */
import type { Server } from 'node:http';
import { Subject, map, type Subscription } from 'rxjs';
import { paths, type KubeClient } from '../runtime/kube-client.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { startHttpServer, type HealthSource, type Leadership } from '../telemetry/http-server.ts';
import { Periodic } from '../runtime/periodic.ts';
import { LeaderLabeler, type PodRef } from '../actions/leader-label.action.ts';
import { flapDampingOf, publicFaultNamespacesOf, type Options } from './options.ts';
import type { Clock } from '../runtime/clock.ts';
import { createSources, sourcesHealth, startSources, stopSources, waitForSync, type Sources } from './sources/sources.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { DeviceFaultsController, type FaultChange, type FaultPolicy } from './device-faults.controller.ts';
import { FaultView } from './fault-view.ts';
import { FaultViewStage } from './fault-view-stage.ts';
import { FaultStore } from '../state/fault-store.ts';
import { runStep, runSyncStep, singleton, type Flow } from './flows.ts';
import { CLUSTER_INFO_KEY, CLUSTER_INFO_WRITE_BURST, clusterInfoReconciler, renderClusterInfo } from '../reconcilers/cluster-info.reconciler.ts';
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_LABEL_KEY, CLUSTER_INFO_NAMESPACE, parseClusterInfo, type DeviceInfoEntry } from '../schemas/cluster-info/cluster-info.ts';
import { LeaderElector } from '../runtime/leader-election.ts';
import { JobsController, type JobsControllerDeps } from './jobs.controller.ts';
import { RecoveryController } from './recovery.controller.ts';
import { GrpcController } from './grpc.controller.ts';
import { FaultPolicyController } from './fault-policy.controller.ts';
import { ESCALATION_STATE_CM_NAME } from '../schemas/escalation-state/escalation-state.ts';
import { MANUAL_INFO_CM_NAME } from '../schemas/manual-info/manual-info.ts';
import type { ParsedReleaseRequest } from '../schemas/release-request/release-request.ts';
import { ESCALATION_STATE_RECONCILE_KEY, escalationStateReconciler } from '../reconcilers/escalation-state.reconciler.ts';
import { MANUAL_INFO_RECONCILE_KEY, manualInfoReconciler } from '../reconcilers/manual-info.reconciler.ts';
import { STATISTIC_FAULT_RECONCILE_KEY, statisticFaultReconciler } from '../reconcilers/statistic-fault.reconciler.ts';
import { STATISTIC_FAULT_CM_NAME } from '../schemas/statistic-fault/statistic-fault.ts';
import { MAX_CONFIGMAP_DATA_BYTES, MAX_CUSTOM_JOB_ID_CHARS } from '../schemas/job-statistic/job-statistic.ts';
import { SCHEDULING_EXCEPTION_RECONCILE_KEY, schedulingExceptionReconciler } from '../reconcilers/scheduling-exception.reconciler.ts';
import { MAX_EXCEPTION_MESSAGE_CHARS, SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME } from '../schemas/scheduling-exception/scheduling-exception.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { JobSummaryController } from './job-summary.controller.ts';
import { JobStatisticController } from './job-statistic.controller.ts';
import { JobIdentityController } from './job-identity.controller.ts';
import { RelationFaultsController } from './relation-faults.controller.ts';
import { recoverInPlacePeers } from '../policy/filters/fault-filters-peers.ts';
import { LAST_GOOD_CM_NAME, readLastGood, type PersistedLastGood } from '../state/device-info-last-good.ts';
import { LAST_GOOD_RECONCILE_KEY, lastGoodReconciler } from '../reconcilers/device-info-last-good.reconciler.ts';
import { BreakerController, breakerConfigOf } from './breaker.controller.ts';
import { ReschedulingRole } from './rescheduling-role.ts';
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
  /**
   * The controller's one clock (runtime/clock.ts): main.ts passes `realClock`, a test a ManualClock.
   * Every flow, loop, informer, timer and the recovery FSMs' scheduler run on it, so the whole
   * controller runs in virtual time when it is virtual.
   */
  readonly clock: Clock;
  readonly policy?: FaultPolicy;
  /** Called when this replica loses the lease: it must stop acting at once (main.ts exits). */
  readonly onLostLeadership?: () => void;
  /**
   * Called when the ascend plugin leaves Volcano's scheduler configuration after start, so that we
   * hold the rescheduling role again: its loops start afresh only in a new process (main.ts exits and
   * is restarted; without it the role is taken at the next start).
   */
  readonly onReschedulingRoleRegained?: () => void;
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

/** What one flow tells others (see the constructor). */
interface Ports {
  readonly intake: Subject<FaultChange>;
  readonly reannounce: Subject<readonly string[]>;
  readonly policyState: Subject<void>;
  readonly sideState: Subject<void>;
  readonly lastGood: Subject<void>;
  readonly publicFaultMessage: Subject<void>;
  readonly jobFacts: Subject<{ readonly jobId: string; readonly nodes: readonly string[] }>;
  readonly redecide: Subject<string>;
  readonly breakerReset: Subject<void>;
  readonly released: Subject<readonly ParsedReleaseRequest[]>;
}

export class Manager implements HealthSource {
  readonly sources: Sources;
  /** Each node's job view and scheduler view as last published (controllers/fault-view.ts): pure reads. */
  readonly faults: FaultView;
  /** The one writer of `faults`: a reconcile stage keyed by node (controllers/fault-view-stage.ts). */
  readonly faultStage: FaultViewStage;
  /** Every flow in lifecycle order (buildFlows). */
  private readonly flows: readonly Flow[];
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
  /** Reports PodGroups refused as jobs (their owner claim not verified; state/job-index.ts refuses them). */
  readonly jobIdentity: JobIdentityController;
  /** Scheduler-view filters (custom filter, MindIE hold, UCE-accompany, step retry, recover-in-place). */
  readonly filters: FaultFiltersController;
  /** Relation faults -> pod label fault-type=Separate|SubHealth. */
  readonly relations: RelationFaultsController;
  /** Blast-radius breaker: gates every reschedule and node isolation; state in mindx-dl/clusterd-ts-breaker. */
  readonly breaker: BreakerController;
  /** Whether we hold Volcano's rescheduling role now: not while Huawei's ascend plugin is configured (rescheduling-role.ts). */
  readonly reschedulingRole: ReschedulingRole;
  private server: Server | undefined;
  private elector: LeaderElector | undefined;
  private leaderLabel: LeaderLabeler | undefined;
  private identity = '';
  private acting = false;
  /** Watch-health metrics between scrapes (every 5 s, through a work queue). */
  private watchHealth: Periodic | undefined;
  /** The persisted last good device-info read at start, and the published entries its damaged ones need. */
  private lastGoodAtStart: { readonly persisted: PersistedLastGood; readonly published: ReadonlyMap<string, DeviceInfoEntry> } | undefined;
  private readonly deps: ManagerDeps;
  private readonly now: () => number;

  constructor(deps: ManagerDeps) {
    this.deps = deps;
    this.now = () => deps.clock.now();
    deps.client.onRequest = (method, status) => deps.metrics.apiRequests.inc({ method, code: String(status) });
    this.sources = createSources(deps.client, {
      log: deps.log.child({ component: 'sources' }), clock: deps.clock, clusterSystemNamespace: deps.options.clusterSystemNamespace,
      customJobIdMaxChars: deps.options.outputLimits ? MAX_CUSTOM_JOB_ID_CHARS : undefined,
      conditionMessageMaxChars: deps.options.outputLimits ? MAX_EXCEPTION_MESSAGE_CHARS : undefined,
      // The one job index every reader of jobs shares (sources/job-index-feed.ts): claims as the flag says.
      npuClaims: deps.options.trustPodNpuAnnotations ? 'annotation' : 'verified',
    });
    const { options, log, metrics, clock } = deps;
    const s = this.sources;
    const now = this.now;
    const csNs = options.clusterSystemNamespace;
    metrics.bounds.setLogger(log.child({ component: 'bounds' }), now);
    this.writer = new ConfigMapWriter(deps.client, { metrics, dryRun: options.dryRun, log });
    const writer = this.writer;
    const loop = (r: ConstructorParameters<typeof ControllerLoop>[0]): ControllerLoop => new ControllerLoop(r, { log, metrics, clock });

    // Ports: what one flow tells others, created first so no flow reaches into one built later.
    const ports = {
      /** Nodes the intake changed. */
      intake: new Subject<FaultChange>(),
      /** Nodes whose view may have changed with no new intake: policy deadlines, filter windows, step-retry holds. */
      reannounce: new Subject<readonly string[]>(),
      /** The fault policy's persisted state or the desired manual-info changed. */
      policyState: new Subject<void>(),
      /** The filters' or relation faults' memory changed (persisted with the escalation state). */
      sideState: new Subject<void>(),
      /** Nodes held on their last good device-info changed. */
      lastGood: new Subject<void>(),
      /** A public-fault message or delete ran (ClusterD rewrites statistic-fault-info after each). */
      publicFaultMessage: new Subject<void>(),
      /** A job's fault gRPC subscription changed: the filters' job facts. */
      jobFacts: new Subject<{ readonly jobId: string; readonly nodes: readonly string[] }>(),
      /** Jobs the recovery hands back to the decisions loop (label `pause`: docs/rules.md#decision.process-gives-up, then pod or job level). */
      redecide: new Subject<string>(),
      /** The breaker was reset: every job is decided again. */
      breakerReset: new Subject<void>(),
      /** `kubectl clusterd release` requests, before the policy applies them: flap holds of the chips end. */
      released: new Subject<readonly ParsedReleaseRequest[]>(),
    };

    // Never two deleters: beside a configured ascend plugin the jobs flow does not act.
    this.reschedulingRole = new ReschedulingRole({
      sources: s, options, log: log.child({ controller: 'rescheduling_role' }), metrics, client: deps.client, now,
      onChange: (holds) => this.onReschedulingRole(holds),
    });
    // The intake's state and the fault view's published snapshot come first: every flow below reads them.
    const store = new FaultStore({ publicFaults: { maxFaults: options.maxPublicFaults, bounds: metrics.bounds } });
    this.faults = new FaultView(store, now);
    const faults = this.faults;
    // Intake: sources -> FaultStore -> ports.intake.
    this.deviceFaults = new DeviceFaultsController({
      sources: s, log: log.child({ controller: 'device_faults' }), metrics, clock, maxPublicFaults: options.maxPublicFaults,
      publicFaultSenders: { namespaceAllowed: publicFaultNamespacesOf(options), namespaces: options.publicFaultNamespaces, unknownNodes: options.publicFaultUnknownNodes },
      store, view: faults,
      onChange: (c) => ports.intake.next(c),
      onLastGoodChange: () => ports.lastGood.next(),
      onPublicFaultMessage: () => ports.publicFaultMessage.next(),
    });
    // Levels, escalation, manual separation: the job view.
    this.faultPolicy = new FaultPolicyController({
      sources: s, namespace: csNs, log: log.child({ controller: 'fault_policy' }), metrics, clock,
      records: (n) => store.records(n), nodes: () => store.nodeNames(),
      reportedUnhealthy: (n) => store.nodeState(n)?.device?.data.lists.unhealthy ?? [],
      onViewChange: (nodes) => ports.reannounce.next(nodes),
      deviceRules: options.devicePluginRules,
      npuClaims: options.trustPodNpuAnnotations ? 'annotation' : 'verified',
      persistState: options.persistPolicyState,
      onStateChange: () => ports.policyState.next(),
      onRelease: (requests) => ports.released.next(requests),
    });
    this.recovery = new RecoveryController({
      client: deps.client, sources: s, faults: { jobView: (n) => faults.jobView(n), changes$: faults.changes$, notify: (n) => ports.reannounce.next(n) },
      writer, options, log: log.child({ controller: 'recovery' }), metrics, clock,
      // With our jobs pipeline acting, label `pause` makes it re-decide the job (docs/rules.md#decision.process-gives-up, then pod or job level).
      handover: (key) => { ports.redecide.next(key); return this.reschedulingRole.holds; },
      holdsRescheduling: () => this.reschedulingRole.holds,
    });
    const recovery = this.recovery;
    this.grpc = new GrpcController({
      options, sources: s, deviceFaults: this.deviceFaults, faults, recovery, client: deps.client, jobSummary: () => this.jobSummary,
      log: log.child({ component: 'grpc' }), metrics, clock, limits: { unaryQps: options.grpcUnaryQps },
      onFaultSubscription: (jobId, nodes) => ports.jobFacts.next({ jobId, nodes }),
    });
    const grpc = this.grpc;
    // The scheduler view's filters (with the step-retry stage of recovery-step-retry.ts in its place in the chain).
    this.filters = new FaultFiltersController({
      sources: s, log: log.child({ controller: 'fault_filters' }), metrics, clock,
      jobView: (n) => faults.jobView(n),
      stepRetry: (n, r, t) => recovery.schedulerView(n, r, t),
      faultSubscribed: (uid) => grpc.faults.subscribed(uid),
      businessUce: (n) => recovery.businessUce(n),
      mustExitReportedMs: (uid, podRank) => recovery.mustExitReportedMs(uid, podRank),
      stressTestNodes: () => recovery.stressTestNodes(),
      npuClaims: options.trustPodNpuAnnotations ? 'annotation' : 'verified',
      notify: (nodes) => ports.reannounce.next(nodes),
      // The fault-view stage requeues a node at its windows' ends (one evaluator of the verdict).
      windowKeys: false,
      onStateChange: () => ports.sideState.next(),
    });
    const filters = this.filters;
    // The fault view's one writer, built once the policy and the filters it runs exist. Its keys run
    // on the queue clock of the other loops; flap damping's holds end on its node keys too.
    this.faultStage = new FaultViewStage({
      view: faults, policy: deps.policy ?? this.faultPolicy, filters, peers: (nodes) => recoverInPlacePeers(s.jobIndex.index, nodes),
      damping: flapDampingOf(options), clock, log: log.child({ controller: 'fault_view' }), metrics,
    });
    this.relations = new RelationFaultsController({
      sources: s, faultsOf: (n) => faults.effective(n), faultNodes$: faults.changes$.pipe(map((c) => c.nodes)),
      a3Node: (n) => (store.nodeState(n)?.device?.data.cfg.SuperPodID ?? -1) >= 0,
      client: deps.client, log: log.child({ controller: 'relation_faults' }), metrics, clock, dryRun: options.dryRun,
      onStateChange: () => ports.sideState.next(),
    });
    this.breaker = new BreakerController({
      sources: s, writer, client: deps.client, config: breakerConfigOf(options), domainLabel: options.breakerDomainLabel,
      superPodOf: (n) => store.nodeState(n)?.device?.data.cfg.SuperPodID,
      faultsOf: (n) => faults.effective(n),
      onReset: () => ports.breakerReset.next(),
      log: log.child({ controller: 'breaker' }), metrics, clock,
    });
    this.jobs = new JobsController({
      breaker: this.breaker,
      registered: (uid) => recovery.isRegistered(uid),
      // docs/rules.md#decision.hot-switch, #decision.process-level: the decision's hand-off starts the job's FSM now (preExitProcess before the
      // fault pods are deleted, as ClusterD's order has it); see RecoveryController.handOff.
      handOff: (key, action, signal) => recovery.handOff(key, action, signal),
      filtered: (nodes) => faults.jobSnapshot(nodes, now()),
      ...(deps.jobs?.hooks === undefined ? {} : { hooks: deps.jobs.hooks }), client: deps.client, sources: s, deviceFaults: faults, writer,
      options, log: log.child({ controller: 'jobs' }), metrics, clock,
    });
    const clusterInfo = clusterInfoReconciler({
      // The scheduler view, minus what its filters withheld from the device plugin's lists (docs/rules.md#filter.two-views).
      nodes: () => store.nodeNames(),
      // The placement view: flapping hardware held faulty (flap damping) keeps new pods off it.
      renderNode: (node, nowMs) => this.faultPolicy.adjustView(renderClusterInfo(store, (n) => faults.placement(n), nowMs, (n) => faults.withheld(n), [node]), (n) => faults.jobView(n)),
      peers: (nodes) => recoverInPlacePeers(s.jobIndex.index, nodes),
      actual: (name) => s.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${name}`),
      actualNames: () => [...s.mindxDlConfigMaps.store.values()].map((c) => c.metadata?.name ?? ''),
      writer,
      refreshMs: options.clusterInfoRefreshSeconds * 1000,
      refreshAnnotation: options.clusterInfoRefreshAnnotation,
      burst: CLUSTER_INFO_WRITE_BURST,
    });
    this.clusterInfo = loop(clusterInfo);
    this.escalationState = loop(escalationStateReconciler({
      // --persist-policy-state=false: nothing to persist, so the state object is never written.
      desired: (t) => (options.persistPolicyState ? this.faultPolicy.persistedState(t) : undefined), writer, namespace: csNs,
      actual: () => s.clusterSystemConfigMaps.get(`${csNs}/${ESCALATION_STATE_CM_NAME}`),
    }));
    this.manualInfo = loop(manualInfoReconciler({
      desired: () => this.faultPolicy.manualInfo(), writer, namespace: csNs,
      actual: () => s.clusterSystemConfigMaps.get(`${csNs}/${MANUAL_INFO_CM_NAME}`),
    }));
    this.statisticFault = loop(statisticFaultReconciler({
      faults: () => store.publicFaultStatistics(), writer, namespace: csNs,
      actual: () => s.clusterSystemConfigMaps.get(`${csNs}/${STATISTIC_FAULT_CM_NAME}`),
    }));
    this.lastGood = loop(lastGoodReconciler({
      desired: () => this.deviceFaults.lastGood.desired(), writer, namespace: CLUSTER_INFO_NAMESPACE,
      actual: () => s.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${LAST_GOOD_CM_NAME}`),
    }));
    this.jobSummary = new JobSummaryController({ sources: s, writer, log, metrics, clock });
    this.jobStatistic = new JobStatisticController({ sources: s, summaries: this.jobSummary.store, writer, log, metrics, clock, limits: options.outputLimits });
    this.jobIdentity = new JobIdentityController({ sources: s, client: deps.client, log: log.child({ controller: 'job_identity' }), metrics, clock, dryRun: options.dryRun });
    this.schedulingException = loop(schedulingExceptionReconciler({
      writer, namespace: csNs, actual: () => s.clusterSystemConfigMaps.get(`${csNs}/${SCHEDULING_EXCEPTION_CM_NAME}`),
      inputs: () => this.jobSummary.exceptionInputs(),
      limits: options.outputLimits,
      onLimited: (cut, omitted) => {
        if (cut.length > 0) metrics.bounds.hit('scheduling_exception_message_chars', 'scheduling-exception-report: condition messages cut to their bound', { configMap: SCHEDULING_EXCEPTION_CM_NAME, maxChars: MAX_EXCEPTION_MESSAGE_CHARS, jobs: cut.slice(0, 10) }, cut.length);
        if (omitted.length > 0) metrics.bounds.hit('scheduling_exception_bytes', 'scheduling-exception-report over a ConfigMap\'s size: entries left out of this write', { configMap: SCHEDULING_EXCEPTION_CM_NAME, maxBytes: MAX_CONFIGMAP_DATA_BYTES, jobs: omitted.slice(0, 10) }, omitted.length);
      },
    }));
    this.flows = this.buildFlows(ports, clusterInfo);
  }

  /**
   * Every flow, in lifecycle order: what it watches (ports, sources), the keys that feeds, the
   * reconciler for the key. Subscriptions of a step run in this order. The intake's consumers read
   * the fault view's published snapshot and follow its changes$, after the fault-view stage's pass.
   */
  private buildFlows(ports: Ports, clusterInfo: ReturnType<typeof clusterInfoReconciler>): Flow[] {
    const { options } = this.deps;
    const { deviceFaults, faultPolicy, faults, faultStage, filters, relations, jobs, breaker, jobSummary, jobStatistic, jobIdentity, recovery, grpc } = this;
    const subs: Subscription[] = [];
    const persistSide = (): void => faultPolicy.engine.setSideState({ filters: filters.state(), relation: relations.state() });
    return [
      {
        name: 'fault-view',
        // Every input only enqueues node keys of the fault-view stage: the intake's nodes (emitted
        // all), re-announced nodes and released chips (emitted when their view changed). The stage's
        // pass evaluates policy, filters and damping and publishes the snapshot (fault-view-stage.ts).
        start: () => {
          subs.push(ports.intake.subscribe((c) => faultStage.intake(c)));
          subs.push(ports.reannounce.subscribe((nodes) => faultStage.notify(nodes)));
          subs.push(ports.released.subscribe((requests) => faultStage.release(requests)));
          faultStage.start();
          subs.push(ports.sideState.subscribe(persistSide));
          subs.push(ports.jobFacts.subscribe(({ jobId, nodes }) => filters.jobFactsChanged(jobId, nodes)));
          subs.push(ports.redecide.subscribe((key) => jobs.loops?.decisions.queue.add(key)));
          subs.push(ports.breakerReset.subscribe(() => jobs.requeueAll()));
          // Cluster-info: the view's changed nodes are re-rendered (one key for the whole burst).
          subs.push(faults.changes$.subscribe((c) => { clusterInfo.markDirty(c.nodes); this.clusterInfo.queue.add(CLUSTER_INFO_KEY); }));
        },
        stop: async () => { for (const x of subs.splice(0)) x.unsubscribe(); await faultStage.stop(); },
      },
      {
        name: 'intake', start: () => deviceFaults.start(), stop: () => deviceFaults.stop(),
        synced: () => {
          // Before any decision: nodes whose device-info is still invalid get the last good one persisted before the restart.
          const lg = this.lastGoodAtStart;
          if (lg !== undefined) deviceFaults.restoreLastGood(lg.persisted, lg.published);
          // The public faults the last process listed (ClusterD reloads them at start), on top of the replayed CMs.
          deviceFaults.loadPublicFaults(this.sources.clusterSystemConfigMaps.get(`${options.clusterSystemNamespace}/${STATISTIC_FAULT_CM_NAME}`));
        },
      },
      // Restores the persisted escalation state before any decision is published.
      { name: 'fault-policy', synced: () => faultPolicy.start(), stop: () => faultPolicy.stop() },
      { name: 'filters', start: () => filters.start(), synced: () => filters.restore(faultPolicy.engine.sideState.filters), stop: () => filters.stop() },
      { name: 'relation-faults', start: () => relations.start(), synced: () => relations.restore(faultPolicy.engine.sideState.relation), startActing: () => relations.startActing(), stopActing: () => relations.stopActing(), stop: () => relations.stop() },
      singleton('cluster-info', this.clusterInfo, CLUSTER_INFO_KEY, { initial: 'now' }),
      singleton('escalation-state', this.escalationState, ESCALATION_STATE_RECONCILE_KEY, { initial: 'now', watches: options.persistPolicyState ? [{ source: ports.policyState, afterMs: 200 }] : [] }),
      singleton('manual-info', this.manualInfo, MANUAL_INFO_RECONCILE_KEY, { initial: 'now', watches: [{ source: ports.policyState }] }),
      singleton('last-good', this.lastGood, LAST_GOOD_RECONCILE_KEY, { initial: 'now', watches: [{ source: ports.lastGood }] }),
      // statistic-fault-info is written only after public-fault messages and deletes, never at start (as ClusterD).
      singleton('statistic-fault', this.statisticFault, STATISTIC_FAULT_RECONCILE_KEY, { initial: 'never', watches: [{ source: ports.publicFaultMessage, whileActing: true }], acting: () => this.acting }),
      // ClusterD's collector first looks (and creates the report) one check interval after start.
      singleton('scheduling-exception', this.schedulingException, SCHEDULING_EXCEPTION_RECONCILE_KEY, { initial: { afterMs: SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS } }),
      // Read on synced caches, before any flow acts: whether the jobs flow may act at all.
      { name: 'rescheduling-role', synced: () => this.reschedulingRole.start(), stop: () => this.reschedulingRole.stop() },
      {
        name: 'jobs', start: () => { jobs.start(); breaker.start(faults.changes$.pipe(map((c) => c.nodes))); },
        startActing: () => {
          // Beside the ascend plugin it deletes the fault pods itself: never two deleters.
          if (!this.reschedulingRole.holds) return;
          // The breaker's state is restored before the first decision can ask it (rescheduling only: in
          // the ClusterD role nothing is rescheduled or isolated, so there is nothing to hold).
          if (jobs.loops !== undefined && !options.dryRun) breaker.startActing();
          jobs.startLoops();
        },
        stopActing: async () => { await jobs.stopLoops(); await breaker.stop(); },
        stop: async () => { await breaker.stop(); await jobs.stop(); },
      },
      { name: 'job-identity', start: () => jobIdentity.start(), startActing: () => jobIdentity.startActing(), stopActing: () => jobIdentity.stopActing(), stop: () => jobIdentity.stop() },
      {
        name: 'job-reports',
        start: () => { jobSummary.start(); jobStatistic.start(); },
        // The statistic acts first: the summary's first changes are its events (ClusterD loads the
        // statistic ConfigMap first, then handles the informers' adds).
        startActing: () => { jobStatistic.startActing(); jobSummary.startActing(); },
        stopActing: async () => { await jobSummary.stopActing(); await jobStatistic.stopActing(); },
        stop: () => { jobSummary.stop(); jobStatistic.stop(); },
      },
      {
        // gRPC (Recover, Fault, PubFault) runs on the leader only: see controllers/grpc.controller.ts.
        name: 'recovery-grpc', start: () => recovery.start(), stop: () => recovery.stop(),
        // The gRPC Service selects the leader label: claim it once the server has tried to listen.
        startActing: () => { recovery.startActing(); void grpc.start().finally(() => { if (this.acting) this.leaderLabel?.claim(); }); },
        stopActing: async () => { await grpc.stop(); await recovery.stopActing(); },
      },
    ];
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

  /** Who reschedules, shown by /readyz?verbose. */
  info(): string[] {
    return [this.reschedulingRole.describe()];
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

  /**
   * The device entries of cluster-info as last published (the informer keeps only a digest of those
   * shards): the stand-in for nodes whose persisted last good entry is damaged. Read once at start,
   * only when there is such an entry; a failed read leaves them without (logged).
   */
  private async publishedDeviceEntries(): Promise<Map<string, DeviceInfoEntry>> {
    const out = new Map<string, DeviceInfoEntry>();
    try {
      const list = await this.deps.client.list<ConfigMap>(paths.configMaps(CLUSTER_INFO_NAMESPACE), { labelSelector: `${CLUSTER_INFO_LABEL_KEY}=true` });
      for (const cm of list.items) {
        const name = cm.metadata?.name ?? '';
        const text = cm.data?.[name];
        if (!name.startsWith(CLUSTER_INFO_DEVICE_PREFIX) || text === undefined || text === '') continue;
        const parsed = parseClusterInfo('device', text);
        if (!parsed.ok) { this.deps.log.warn('published cluster-info shard does not parse; its nodes have no stand-in for a damaged last good entry', { name, reason: parsed.reason }); continue; }
        for (const [k, e] of Object.entries(parsed.value)) out.set(k, e as DeviceInfoEntry);
      }
    } catch (e) {
      this.deps.log.warn('could not read the published cluster-info for damaged last good entries', { err: String(e) });
    }
    return out;
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
    runSyncStep(this.flows, 'start');
    startSources(this.sources);
    this.watchHealth = new Periodic('watch_health', WATCH_HEALTH_PERIOD_MS, () => metrics.observeWatchHealth(sourcesHealth(this.sources), this.now()), { log, clock: this.deps.clock });
    this.watchHealth.start();
    await waitForSync(this.sources);
    metrics.observeWatchHealth(sourcesHealth(this.sources), this.now());
    log.info('caches synced', { objects: Object.fromEntries(sourcesHealth(this.sources).map((h) => [h.name, h.objects])) });
    const persisted = readLastGood(this.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${LAST_GOOD_CM_NAME}`));
    this.lastGoodAtStart = { persisted, published: persisted.damaged.size === 0 ? new Map() : await this.publishedDeviceEntries() };
    runSyncStep(this.flows, 'synced');
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
        resyncMs: options.leaseDurationSeconds * 1000, clock: this.deps.clock,
      });
      // A container restarted in place keeps its pod's labels: a standby must not carry it.
      this.leaderLabel.release();
    } else {
      log.info('no POD_NAME / POD_NAMESPACE: the leader pod label (gRPC Service routing) is not managed');
    }
    this.elector = new LeaderElector(this.deps.client, {
      namespace: options.leaderElectionNamespace, name: LEADER_LEASE_NAME,
      identity: this.identity, clock: this.deps.clock,
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

  /**
   * The rescheduling role changed after start. Losing it stops the jobs flow's loops at once (the
   * plugin now deletes the fault pods); regaining it needs loops started afresh, in a new process.
   */
  private onReschedulingRole(holds: boolean): void {
    if (!holds) {
      if (this.acting) void Promise.all([this.jobs.stopLoops(), this.breaker.stop()]);
      return;
    }
    this.deps.log.warn('rescheduling role regained: the jobs flow starts with the next process', { restart: this.deps.onReschedulingRoleRegained !== undefined });
    this.deps.onReschedulingRoleRegained?.();
  }

  /** Starts every reconciler and action loop (leader only). */
  private startActing(): void {
    if (this.acting) return;
    this.acting = true;
    this.deps.metrics.leader.set(1);
    runSyncStep(this.flows, 'startActing');
  }

  private async stopActing(): Promise<void> {
    if (!this.acting) return;
    this.acting = false;
    this.deps.metrics.leader.set(0);
    // First, so the gRPC Service stops routing here while the loops drain (not awaited: a leader
    // cut off from the apiserver must stand down without waiting for it).
    this.leaderLabel?.release();
    await runStep(this.flows, 'stopActing');
  }

  async stop(): Promise<void> {
    await this.watchHealth?.stop();
    await this.stopActing();
    await runStep(this.flows, 'stop');
    // The label goes before the Lease: the next leader finds no stale label of ours to clear.
    await this.leaderLabel?.stop();
    await this.elector?.stop();
    stopSources(this.sources);
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}
