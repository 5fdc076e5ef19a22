/**
 * Builds and runs everything the controller does, from injected clients, logger and metrics, so
 * main.ts, the integration tests and the benchmark run the same wiring in or out of process.
 */
import type { Server } from 'node:http';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { startHttpServer, type HealthSource } from '../telemetry/http-server.ts';
import type { Options } from './options.ts';
import { createSources, sourcesHealth, startSources, stopSources, waitForSync, type Sources } from './sources/sources.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { DeviceFaultsController, type FaultPolicy } from './device-faults.controller.ts';
import { CLUSTER_INFO_KEY, clusterInfoReconciler, renderClusterInfo } from '../reconcilers/cluster-info.reconciler.ts';
import { CLUSTER_INFO_NAMESPACE } from '../schemas/cluster-info/cluster-info.ts';
import { LeaderElector } from '../runtime/leader-election.ts';
import { JobsController, type JobsControllerDeps } from './jobs.controller.ts';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

/** An informer that has not heard from the apiserver for this long while disconnected is stuck. */
const STALL_LIMIT_MS = 5 * 60_000;

export interface ManagerDeps {
  readonly client: KubeClient;
  readonly options: Options;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly now?: () => number;
  readonly policy?: FaultPolicy;
  /** Called when this replica loses the lease: it must stop acting at once (main.ts exits). */
  readonly onLostLeadership?: () => void;
  /** Jobs flow extras: test hooks around actions, burst scheduler, FSM hand-off sink. */
  readonly jobs?: Pick<JobsControllerDeps, 'hooks' | 'afterPersist' | 'scheduler' | 'registered' | 'handOff'>;
}

/** The Lease replicas compete for (in --leader-election-namespace). */
export const LEADER_LEASE_NAME = 'clusterd-ts-leader';

export class Manager implements HealthSource {
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly deviceFaults: DeviceFaultsController;
  readonly clusterInfo: ControllerLoop;
  readonly jobs: JobsController;
  private server: Server | undefined;
  private elector: LeaderElector | undefined;
  private acting = false;
  private healthTimer: NodeJS.Timeout | undefined;
  private readonly deps: ManagerDeps;
  private readonly now: () => number;

  constructor(deps: ManagerDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    deps.client.onRequest = (method, status) => deps.metrics.apiRequests.inc({ method, code: String(status) });
    this.sources = createSources(deps.client, { log: deps.log.child({ component: 'sources' }) });
    const { options, log, metrics } = deps;
    this.writer = new ConfigMapWriter(deps.client, { metrics, dryRun: options.dryRun, log });
    this.clusterInfo = new ControllerLoop(clusterInfoReconciler({
      render: () => renderClusterInfo(this.deviceFaults.store, (n) => this.deviceFaults.effective(n), this.now()),
      actual: (name) => this.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${name}`),
      actualNames: () => [...this.sources.mindxDlConfigMaps.store.values()].map((c) => c.metadata?.name ?? ''),
      writer: this.writer,
      refreshMs: options.clusterInfoRefreshSeconds * 1000,
    }), { log, metrics, now: this.now });
    this.deviceFaults = new DeviceFaultsController({
      sources: this.sources, log: log.child({ controller: 'device_faults' }), metrics, policy: deps.policy, now: this.now,
      onChange: () => this.clusterInfo.queue.add(CLUSTER_INFO_KEY),
    });
    this.jobs = new JobsController({
      ...deps.jobs, client: deps.client, sources: this.sources, deviceFaults: this.deviceFaults, writer: this.writer,
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

  readiness(): string[] {
    return sourcesHealth(this.sources).filter((h) => !h.synced).map((h) => `informer ${h.name}: not synced`);
  }

  async start(): Promise<void> {
    const { options, log, metrics } = this.deps;
    this.server = await startHttpServer(options.httpPort, options.httpHost, metrics, this);
    log.info('http server listening', { port: options.httpPort, paths: ['/healthz', '/readyz', '/metrics'] });
    this.deviceFaults.start();
    this.jobs.start();
    startSources(this.sources);
    this.healthTimer = setInterval(() => metrics.observeWatchHealth(sourcesHealth(this.sources), this.now()), 5_000);
    this.healthTimer.unref();
    await waitForSync(this.sources);
    metrics.observeWatchHealth(sourcesHealth(this.sources), this.now());
    log.info('caches synced', { objects: Object.fromEntries(sourcesHealth(this.sources).map((h) => [h.name, h.objects])) });
    // Reconcilers start only on synced caches, so a restart never acts on a partial view, and only
    // on the leader: a standby keeps its caches warm and takes over within one lease duration.
    if (!options.leaderElect) {
      this.startActing();
      return;
    }
    metrics.leader.set(0);
    this.elector = new LeaderElector(this.deps.client, {
      namespace: options.leaderElectionNamespace, name: LEADER_LEASE_NAME,
      identity: process.env.POD_NAME ?? `${hostname()}-${randomBytes(3).toString('hex')}`,
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

  /** Starts every reconciler and action loop (leader only). */
  private startActing(): void {
    if (this.acting) return;
    this.acting = true;
    this.deps.metrics.leader.set(1);
    this.clusterInfo.start();
    this.clusterInfo.queue.add(CLUSTER_INFO_KEY);
    this.jobs.startLoops();
  }

  private async stopActing(): Promise<void> {
    if (!this.acting) return;
    this.acting = false;
    await this.clusterInfo.stop();
    await this.jobs.stopLoops();
  }

  async stop(): Promise<void> {
    if (this.healthTimer !== undefined) clearInterval(this.healthTimer);
    this.deviceFaults.stop();
    await this.stopActing();
    await this.jobs.stop();
    await this.elector?.stop();
    stopSources(this.sources);
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}
