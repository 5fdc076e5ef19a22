/**
 * Runs everything the controller does: the process's lifecycle (HTTP server, caches, leader
 * election, the leader's pod label) around the flows the one builder (controllers/build.ts) declares
 * and builds, so main.ts, the integration tests and the benchmark run the same wiring in or out of
 * process. This file wires nothing itself: no closure here reaches into a controller.
 */
import type { Server } from 'node:http';
import { startHttpServer, type HealthSource, type Leadership } from '../telemetry/http-server.ts';
import { Periodic } from '../runtime/periodic.ts';
import { LeaderLabeler, type PodRef } from '../actions/leader-label.action.ts';
import { sourcesHealth, startSources, stopSources, waitForSync, type Sources } from './sources/sources.ts';
import type { ControllerLoop } from '../runtime/controller-loop.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { DeviceFaultsController } from './device-faults.controller.ts';
import type { FaultView } from './fault-view.ts';
import type { FaultViewStage } from './fault-view-stage.ts';
import { runBeforeSynced, runStep, runSyncStep, type Flow } from './flows.ts';
import { LeaderElector } from '../runtime/leader-election.ts';
import type { JobsController } from './jobs.controller.ts';
import type { RecoveryController } from './recovery.controller.ts';
import type { GrpcController } from './grpc.controller.ts';
import type { FaultPolicyController } from './fault-policy.controller.ts';
import type { FaultFiltersController } from './fault-filters.controller.ts';
import type { JobSummaryController } from './job-summary.controller.ts';
import type { JobStatisticController } from './job-statistic.controller.ts';
import type { JobIdentityController } from './job-identity.controller.ts';
import type { RelationFaultsController } from './relation-faults.controller.ts';
import type { BreakerController } from './breaker.controller.ts';
import type { ReschedulingRole } from './rescheduling-role.ts';
import type { FlowGraph } from './wiring.ts';
import { buildManager, type BuiltManager, type ManagerDeps } from './build.ts';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

export type { ManagerDeps } from './build.ts';

/** An informer that has not heard from the apiserver for this long while disconnected is stuck. */
const STALL_LIMIT_MS = 5 * 60_000;
/** How often the watch-health gauges are refreshed between scrapes. */
const WATCH_HEALTH_PERIOD_MS = 5_000;

/** The Lease replicas compete for (in --leader-election-namespace). */
export const LEADER_LEASE_NAME = 'clusterd-ts-leader';

export class Manager implements HealthSource {
  readonly sources: Sources;
  /** Each node's job view and scheduler view as last published (controllers/fault-view.ts): pure reads. */
  readonly faults: FaultView;
  /** The one writer of `faults`: a reconcile stage keyed by node (controllers/fault-view-stage.ts). */
  readonly faultStage: FaultViewStage;
  /** Every flow in lifecycle order (controllers/build.ts FLOW_SPECS). */
  private readonly flows: readonly Flow[];
  /** The runtime graph the builder recorded: flows and the ports between them, read, call or event (tools/layering checks it). */
  readonly graph: FlowGraph;
  /** The event subscriptions of every flow and of this process. */
  private readonly built: ReturnType<typeof buildManager>;
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
  /** Pingmesh's super pods and the loop writing cluster-system/super-pod-<id>. */
  readonly pingmesh: BuiltManager['pingmesh'];
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
  private readonly deps: ManagerDeps;
  private readonly now: () => number;

  constructor(deps: ManagerDeps) {
    this.deps = deps;
    this.now = () => deps.clock.now();
    const b = buildManager(deps, () => this.acting);
    this.built = b;
    this.sources = b.sources;
    this.writer = b.writer;
    this.faults = b.faults;
    this.faultStage = b.faultStage;
    this.deviceFaults = b.deviceFaults;
    this.faultPolicy = b.faultPolicy;
    this.filters = b.filters;
    this.relations = b.relations;
    this.clusterInfo = b.clusterInfo;
    this.escalationState = b.escalationState;
    this.manualInfo = b.manualInfo;
    this.lastGood = b.lastGood;
    this.statisticFault = b.statisticFault;
    this.schedulingException = b.schedulingException;
    this.pingmesh = b.pingmesh;
    this.reschedulingRole = b.reschedulingRole;
    this.jobs = b.jobs;
    this.breaker = b.breaker;
    this.jobIdentity = b.jobIdentity;
    this.jobSummary = b.jobSummary;
    this.jobStatistic = b.jobStatistic;
    this.recovery = b.recovery;
    this.grpc = b.grpc;
    this.flows = b.flows;
    // The process's own part: the gRPC Service selects the leader label, claimed once the server has tried to listen.
    b.watch('grpcServing', () => this.onGrpcServing());
    this.graph = b.graph;
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
    this.built.subscribe();
    runSyncStep(this.flows, 'start');
    startSources(this.sources);
    this.watchHealth = new Periodic('watch_health', WATCH_HEALTH_PERIOD_MS, () => metrics.observeWatchHealth(sourcesHealth(this.sources), this.now()), { log, clock: this.deps.clock });
    this.watchHealth.start();
    await waitForSync(this.sources);
    metrics.observeWatchHealth(sourcesHealth(this.sources), this.now());
    log.info('caches synced', { objects: Object.fromEntries(sourcesHealth(this.sources).map((h) => [h.name, h.objects])) });
    await runBeforeSynced(this.flows);
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

  private onGrpcServing(): void {
    if (this.acting) this.leaderLabel?.claim();
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
    // Events first, as their watchers stop (the fault-view stage's inputs were the first flow's).
    this.built.unsubscribe();
    await runStep(this.flows, 'stop');
    // The label goes before the Lease: the next leader finds no stale label of ours to clear.
    await this.leaderLabel?.stop();
    await this.elector?.stop();
    stopSources(this.sources);
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}
