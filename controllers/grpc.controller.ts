/**
 * Runs the ClusterD-compatible gRPC server (grpc/, port 8899) for this controller: Recover wired to
 * the recovery controller's FSMs, fault.Fault to the fault view, PubFault to the intake,
 * TrainingDataTrace to the job summary and the `data-trace-<job>` ConfigMaps (grpc-datatrace.ts),
 * config.Config to the global rank tables of MindIE jobs (grpc-config.ts), job.Job to the job
 * summary's transitions (grpc-job.ts).
 *
 * Leadership: the server listens only while this replica is the leader (started from
 * Manager.startActing, stopped in stopActing). A standby that answered Init/Register would take
 * registrations it cannot act on, and a Go TaskD keeps its HTTP/2 connection to whichever pod
 * answered; with no listener on standbys, its connection attempts fail fast and land on the leader
 * behind the Service. HealthCheck is therefore answered by the leader only.
 *
 * Loading: the transport modules are imported by the first `start`, so a replica that never
 * leads never loads them (the rest of the controller imports only grpc/service-constants.ts and
 * the transport-free grpc/ modules).
 *
 * Metrics: every call is counted in `grpc_requests_total{method, code}` (code = the ClusterD body
 * code when the reply carries one, else the gRPC status name); calls refused by the caller check
 * (`--grpc-caller-check`, grpc-caller.ts) also in `grpc_caller_refused_total{method}`, and
 * registrations or streams refused or dropped at a cap in `bound_hits_total{bound="grpc_..."}`.
 */
import { readFile } from 'node:fs/promises';
import { merge, type Observable, type Subscription } from 'rxjs';
import { TimerLoop } from '../runtime/timer-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { GrpcLimits, GrpcServerHandle } from '../grpc/index.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { PublicFaultIntake } from './device-faults.controller.ts';
import { FaultPublisher } from './grpc-fault.ts';
import { PodAddressIndex, podIpCallerCheck } from './grpc-caller.ts';
import type { Pod } from '../runtime/kube-objects.ts';
import { grpcHandlers } from './grpc-handlers.ts';
import { systemNamespacesOf, type Options } from './options.ts';
import type { RecoveryService } from './recovery.controller.ts';
import type { FaultView } from './fault-view.ts';
import type { Sources } from './sources/sources.ts';
import { jobNodes } from '../policy/jobs/job-view.ts';
import { MINDIE_APP_LABEL, MINDIE_JOB_ID_LABEL } from '../policy/jobs/pod-level-cap.ts';
import { DEVICE_910_ANNOTATION, DEVICE_NPU_ANNOTATION, parsePodDevice } from '../policy/jobs/job-summary.ts';
import { DataTraceConfigMaps } from '../actions/data-trace.action.ts';
import { mindieNamespaces, RankTablePublisher } from './grpc-config.ts';
import { jobBatches, signalOfChange } from './grpc-job.ts';
import { newUuid } from '../grpc/service-constants.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { JobSummaries } from './ports.ts';

const FAULT_PUSH_WINDOW_KEY = 'push';
const FAULT_PUSH_WINDOW_MS = 200;

export interface GrpcControllerDeps {
  readonly options: Options;
  readonly sources: Sources;
  /** The intake (a PubFault is one of its inputs). */
  readonly deviceFaults: PublicFaultIntake;
  /** The fault view: the job view the fault service publishes, and its changes. */
  readonly faults: Pick<FaultView, 'jobView' | 'changes$' | 'store'>;
  readonly recovery: RecoveryService;
  /** Registered jobs whose PodGroup went away (RecoveryControllerDeps.jobGone): the transport forgets them. */
  readonly jobGone$?: Observable<string>;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Transport limit overrides (tests: a small QPS bucket). */
  readonly limits?: Partial<GrpcLimits>;
  /** The controller's clock (runtime/clock.ts): rate limits, keep-alive signals, the publisher's window. */
  readonly clock: QueueClock;
  /** The API client: TrainingDataTrace writes `data-trace-<job>` (actions/data-trace.action.ts). */
  readonly client: KubeClient;
  /** ClusterD's job cache and the PodGroup and pods of a job (read when a call comes). */
  readonly jobSummary: JobSummaries;
  /** A job's fault subscription started or ended (FaultPublisherDeps.subscriptionChanged). */
  readonly onFaultSubscription?: (jobId: string, nodes: readonly string[]) => void;
  /** This replica's namespace (POD_NAMESPACE), when known: its pods are system gRPC callers. */
  readonly ownNamespace?: string;
}

export class GrpcController {
  readonly faults: FaultPublisher;
  private handle: GrpcServerHandle | undefined;
  private starting: Promise<GrpcServerHandle | undefined> | undefined;
  private sub: Subscription | undefined;
  private goneSub: Subscription | undefined;
  private publisher: TimerLoop | undefined;
  private rankTables: RankTablePublisher | undefined;
  private jobSignals: Subscription | undefined;
  private readonly d: GrpcControllerDeps;
  private readonly dataTraceConfigMaps: DataTraceConfigMaps;

  constructor(d: GrpcControllerDeps) {
    this.d = d;
    this.dataTraceConfigMaps = new DataTraceConfigMaps({
      client: d.client, cached: (ns, name) => d.sources.dataTraceConfigMaps.get(`${ns}/${name}`), metrics: d.metrics, now: () => d.clock.now(),
    });
    this.faults = new FaultPublisher({
      sources: d.sources,
      faultsOf: (n) => d.faults.jobView(n),
      faultNodes: () => d.faults.store.nodeNames(),
      jobNodes: (jobId) => {
        const found = d.recovery.lookup(jobId);
        return found === undefined ? undefined : jobNodes(found.entry.view);
      },
      jobIds: () => d.sources.jobIndex.index.jobHeaders().map((h) => h.uid),
      jobHostIps: (jobId) => this.hostIps([jobId]),
      multiInstance: (id) => {
        const uids = this.instanceJobs(id);
        if (uids.length === 0) return undefined;
        return { nodes: uids.flatMap((u) => { const f = d.recovery.lookup(u); return f === undefined ? [] : jobNodes(f.entry.view); }), hostIps: this.hostIps(uids) };
      },
      ...(d.onFaultSubscription === undefined ? {} : { subscriptionChanged: d.onFaultSubscription }),
      log: d.log,
    });
  }

  /** The running server (undefined while not leading). */
  get server(): GrpcServerHandle | undefined {
    return this.handle;
  }

  /** The bound port once started (tests start with `--grpc-port=0`). */
  get port(): number | undefined {
    return this.handle?.port;
  }

  /** Resolves with the server once it listens (undefined if it could not start). */
  ready(): Promise<GrpcServerHandle | undefined> {
    return this.starting ?? Promise.resolve(this.handle);
  }

  start(): Promise<GrpcServerHandle | undefined> {
    this.starting ??= this.listen().catch((err: unknown) => {
      this.d.log.error('grpc server did not start', { err: String(err), port: this.d.options.grpcPort });
      this.starting = undefined;
      return undefined;
    });
    return this.starting;
  }

  private async listen(): Promise<GrpcServerHandle> {
    const { options: o, recovery, log, metrics } = this.d;
    const tls = o.grpcTlsCert !== '' ? { cert: await readFile(o.grpcTlsCert), key: await readFile(o.grpcTlsKey) } : undefined;
    // The transport (@grpc/grpc-js, the protos, Node's http2) is loaded when this replica first
    // serves: a standby never does, and idles without it (docs/benchmarks.md, the runtime floor).
    const { startGrpcServer } = await import('../grpc/server.ts');
    const handle = await startGrpcServer({
      host: o.grpcHost, port: o.grpcPort, ...(tls ? { tls } : {}),
      limits: {
        maxServeJobs: o.maxServedJobs, maxFaultRolesPerJob: o.grpcMaxRolesPerJob, maxFaultPublishersPerClient: o.grpcMaxPublishersPerClient,
        maxFaultPublishers: o.grpcMaxFaultPublishers, maxStreamPendingWrites: o.grpcStreamMaxPending, ...this.d.limits,
      },
      jobExists: (jobId) => recovery.lookup(jobId) !== undefined,
      faultJobExists: (jobId, role) => recovery.lookup(jobId) !== undefined || this.instanceJobs(jobId, role).length > 0,
      ...(o.grpcCallerCheck === 'off' ? {} : {
        callerCheck: podIpCallerCheck({
          job: (jobId) => this.jobPods(jobId),
          addresses: new PodAddressIndex(() => this.d.sources.pods.store.values(), () => this.d.clock.now()),
          systemNamespaces: systemNamespacesOf(o, this.d.ownNamespace),
        }),
      }),
      onCallerRefused: (method) => metrics.grpcCallerRefused.inc({ method }),
      onBoundHit: (bound, message, fields) => metrics.bounds.hit(bound, message, fields),
      logger: log,
      countRequest: (r) => metrics.grpcRequests.inc({ method: r.method, code: r.code !== undefined ? String(r.code) : r.grpcCode }),
      onConnectionRefused: (cap) => metrics.boundHits.inc({ bound: cap }),
      clock: this.d.clock,
    }, grpcHandlers({
      recovery, deviceFaults: this.d.deviceFaults, faults: this.faults, log, now: () => this.d.clock.now(),
      dataTrace: {
        jobs: () => this.d.jobSummary.store.all(),
        podGroup: (key) => this.d.jobSummary.podGroupOf(key),
        pods: (key) => this.d.jobSummary.jobPods(key),
        configMaps: this.dataTraceConfigMaps,
      },
      config: {
        subscribed: (jobId) => this.rankTables?.subscribed(jobId),
        namespacesOf: (jobId) => mindieNamespaces(this.d.jobSummary.store.all(), (k) => this.d.jobSummary.podGroupOf(k), jobId),
      },
      job: {
        allJobs: (sees) => {
          const jobs = [...this.d.jobSummary.store.all().values()].filter((s) => sees(s.namespace));
          const now = this.d.clock.now();
          return { batches: jobBatches(jobs, Math.floor(now / 1000), newUuid), total: jobs.length };
        },
      },
    }));
    this.handle = handle;
    const summary = (): JobSummaries => this.d.jobSummary;
    this.rankTables = new RankTablePublisher({
      sources: this.d.sources, jobs: () => summary().store.all(), podGroup: (k) => summary().podGroupOf(k), pods: (k) => summary().jobPods(k),
      push: (jobId, namespace, table) => handle.configRegistry.push(jobId, namespace, table), clock: this.d.clock, log,
    });
    this.rankTables.start();
    // job.Job: every job summary transition, to every registered client.
    this.jobSignals = summary().store.changes$.subscribe((c) => {
      const now = this.d.clock.now();
      const signal = signalOfChange(c, Math.floor(now / 1000), newUuid());
      if (signal !== undefined) handle.jobRegistry.broadcast(signal);
    });
    this.goneSub = this.d.jobGone$?.subscribe((jobId) => handle.forgetJob(jobId));
    // Jobs restored from the state store were registered before the restart: reports stay accepted.
    for (const jobId of recovery.registeredJobIds()) {
      const c = { jobId, role: 'taskd' };
      await handle.recoverRegistry.init(c, () => ({ code: 0, info: '' }));
      await handle.recoverRegistry.register(c, () => ({ code: 0, info: '' }));
    }
    const s = this.d.sources;
    // Fault subscribers hear at most one push per 200 ms window, opened by the first change in it.
    const push = new TimerLoop({ name: 'fault_publisher', log, clock: this.d.clock }, () => this.faults.changed());
    push.start();
    this.publisher = push;
    this.sub = merge(this.d.faults.changes$, s.pods.events$).subscribe({
      next: () => push.after(FAULT_PUSH_WINDOW_KEY, FAULT_PUSH_WINDOW_MS),
      error: (err: unknown) => log.error('fault publisher flow failed', { err: String(err) }),
    });
    return handle;
  }

  /**
   * The UIDs of the instance jobs a MindIE job id names: PodGroup label `jobID=<id>` (and `app=<role>`
   * when given), as ClusterD's GetNamespaceByJobIdAndAppType (component/clusterd/pkg/domain/job/job_storage.go).
   */
  private instanceJobs(id: string, role?: string): string[] {
    if (id === '') return [];
    return this.d.sources.jobIndex.index.jobHeaders()
      .filter((h) => h.labels[MINDIE_JOB_ID_LABEL] === id && (role === undefined || h.labels[MINDIE_APP_LABEL] === role))
      .map((h) => h.uid).sort();
  }

  /** Node -> the host IP the device plugin's annotation gives the jobs' pod there (first job, first pod wins). */
  private hostIps(jobIds: readonly string[]): Map<string, string> {
    const ips = new Map<string, string>();
    for (const jobId of jobIds) {
      const found = this.d.recovery.lookup(jobId);
      const ns = found?.entry.podGroup.metadata?.namespace ?? '';
      for (const p of found?.entry.view.pods ?? []) {
        const a = this.d.sources.pods.get(`${ns}/${p.name}`)?.metadata?.annotations ?? {};
        const text = a[DEVICE_910_ANNOTATION] ?? a[DEVICE_NPU_ANNOTATION];
        if (p.node !== undefined && text !== undefined && !ips.has(p.node)) ips.set(p.node, parsePodDevice(text).hostIp);
      }
    }
    return ips;
  }

  /**
   * The namespace and pods of a job (its PodGroup's, from the caches), or those of the first instance
   * job a MindIE job id names; undefined when the id names no job.
   */
  private jobPods(jobId: string): { namespace: string; pods: Pod[] } | undefined {
    const found = this.d.recovery.lookup(jobId) ?? this.d.recovery.lookup(this.instanceJobs(jobId)[0] ?? '');
    if (found === undefined) return undefined;
    const namespace = found.entry.view.namespace;
    return { namespace, pods: found.entry.view.pods.flatMap((p) => this.d.sources.pods.get(`${namespace}/${p.name}`) ?? []) };
  }

  async stop(): Promise<void> {
    const h = await this.starting;
    this.starting = undefined;
    this.sub?.unsubscribe();
    this.sub = undefined;
    await this.publisher?.stop();
    this.publisher = undefined;
    await this.rankTables?.stop();
    this.rankTables = undefined;
    this.jobSignals?.unsubscribe();
    this.jobSignals = undefined;
    this.handle = undefined;
    this.goneSub?.unsubscribe();
    this.goneSub = undefined;
    await h?.shutdown(2_000);
  }
}
