/**
 * The process-level recovery flow (docs/rules.md#recover, #hotswitch, #recover.fsm, #hotswitch.fsm, #decision.hot-switch, #decision.process-level, #decision.process-gives-up): one
 * JobFsm (recovery + hot-switch FSMs) per job registered over gRPC, fed from the informer caches and
 * the fault view, executing its commands through actions/. This file holds the flow's only
 * subscribe (docs/CONVENTIONS.md#data-path).
 *
 * Who feeds what:
 * - pods / PodGroups / node faults of a registered job -> (coalesced per job, policy/recovery/recovery-feed.ts)
 *   `podsObserved`, `podGroupObserved`, `configChanged`, `faultObserved` to the recovery FSM;
 *   `podsObserved`, `configChanged`, `subHealthFault` (SubHealthy jobs) to the hot-switch FSM;
 * - gRPC (controllers/grpc-handlers.ts) -> register, subscribe / stream close, the four reports;
 * - FSM timers fire from the state (recovery-job.ts).
 * What it feeds back: the step-retry stage of the scheduler view (`schedulerView`), business-plane
 * UCEs (`businessUce`) and the pods the recover-in-place plan sends away (`mustExitReportedMs`) for
 * the scheduler-view filters; a new must-exit pod re-announces the job's nodes to the intake.
 * Only the leader acts: states are restored from the state store in startActing and every FSM
 * stops in stopActing. A PodGroup that goes away drops its FSMs and stored state.
 */
import { filter, map, merge, type SchedulerLike, type Subscription } from 'rxjs';
import type { SignalStream, StreamCloseReason } from '../grpc/handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import { initialHotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import { initialRecoveryState } from '../policy/recovery/recovery-fsm.ts';
import type { RecoveryEvent } from '../policy/recovery/recovery-types.ts';
import type { HandOffSink } from '../actions/job-action-executor.ts';
import { parseRecoveryTimings } from '../policy/recovery/recovery-timings.ts';
import { platformAnnotationProblems } from '../policy/recovery/platform-mode.ts';
import { objectKey } from '../runtime/reflector.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { WorkQueue } from '../runtime/work-queue.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Outcome } from '../runtime/reconciler.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { ioCommandTries, isIoCommand, RecoveryActions, type RecoveryJobTarget } from '../actions/recovery-commands.action.ts';
import { promoteBackupPod } from '../actions/hot-switch-backup.action.ts';
import { patchPodGroupMeta } from '../actions/recovery-patch.action.ts';
import { HOT_SWITCH_ANNOTATION as A } from '../policy/recovery/hot-switch-types.ts';
import type { FaultView } from './fault-view.ts';
import { jobOwnerOf, type JobEntry, type JobIndex, type JobQuery } from '../state/job-index.ts';
import type { Options } from './options.ts';
import { MemoryCommands } from './recovery-commands.ts';
import { ForceRelease } from './recovery-force-release.ts';
import { OmOperations } from './recovery-om.ts';
import { STRESS_TEST_CODES } from '../policy/filters/stress-test-filter.ts';
import { DEVICE_INFO_CM_PREFIX, parseDeviceInfoCfg } from '../schemas/device-info/device-info.ts';
import { recoveryFeed, retryReportDevices, type RecoveryFeed } from '../policy/recovery/recovery-feed.ts';
import { JobFsm, recoveryCommandLoop, type InputOutcome, type JobInput, type Machine } from './recovery-job.ts';
import { RECOVERY_STATE_NAMESPACE, RECOVERY_STATE_QUEUE, RecoveryStateStore, recoveryStateReconciler, type RecoveryRecord } from '../reconcilers/recovery-state.reconciler.ts';
import type { Pod } from '../runtime/kube-objects.ts';
import type { Sources } from './sources/sources.ts';
import { StepRetryView } from './recovery-step-retry.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { jobNodes } from '../policy/jobs/job-view.ts';
import type { RecoveryStatus, ReschedulingRoleStatus } from './ports.ts';
import { RULE } from '../vocabulary/rule-ids.ts';
import { readPingMeshNode, SERVER_TYPES } from '../schemas/pingmesh/super-pod-device.ts';

/** Recovery FSM edges (policy/recovery/recovery-fsm.ts reason lines `from -(event)-> to [recover.fsm #n]`) for the goodput stages. */
const FAULT_EDGE = /^(INIT|ScaleRunningState) -\(faultOccur\)->/;
const RESUMED_EDGE = /^\S+ -\((recoverSuccess|scaleInSuccessEvent|scaleOutSuccessEvent)\)->|^FaultRetryState -\(finish\)-> INIT/;

export interface RecoveryControllerDeps {
  readonly client: KubeClient;
  readonly sources: Sources;
  /** The fault view: job views, its changes, and where to re-announce nodes whose view a hold changed. */
  readonly faults: Pick<FaultView, 'jobView' | 'changes$'> & { readonly notify: (nodes: readonly string[]) => void };
  readonly writer: ConfigMapWriter;
  readonly options: Options;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Whether we hold Volcano's rescheduling role now (controllers/rescheduling-role.ts). */
  readonly role: ReschedulingRoleStatus;
  /**
   * The controller's clock (runtime/clock.ts): the FSMs run on its scheduler, the queues on its
   * timers (one time for both); timings come from the flags (--recovery-timings).
   */
  readonly clock: Clock;
  /**
   * Hands a job back to the jobs flow, which re-decides it once the label is `pause`
   * (docs/rules.md#decision.process-gives-up, then pod or job level); without it, or without the
   * rescheduling role, we reschedule ourselves.
   */
  readonly redecide?: (jobKey: string) => void;
  /** A registered job's PodGroup went away (the gRPC transport forgets the job). */
  readonly jobGone?: (jobId: string) => void;
}

export const PROCESS_RECOVER_ENABLE_LABEL = 'process-recover-enable';
export const RECOVERY_FEED_CONTROLLER = 'recovery_feed';

/**
 * The recovery flow reads jobs with their last complete placement: faults reach a job through it, as
 * ClusterD's do (policy/jobs/job-placement.ts), so a fault pod the scheduler deletes first still
 * starts the recovery. Claims: the index's default, counted ones unless --trust-pod-npu-annotations
 * (policy/jobs/npu-claims.ts): the step-retry view hides retry faults on the chips a job's pods hold,
 * so a forged AscendReal must not lend it another job's chips.
 */
const PLACED: JobQuery = { placement: true };

/**
 * How long a restored job's signals wait for its TaskD to subscribe again (docs/rules.md#recover.resume):
 * TaskD tries every second, but gRPC's reconnect backoff after a long outage can add tens of seconds.
 */
export const RESUME_WAIT_MS = 60_000;

/** A hand-off waits at most the preExit wait plus this (signal tries: 1 s + 2 s of back-off). */
const PRE_EXIT_SLACK_MS = 5_000;

/** What the gRPC services call (grpc-handlers.ts, grpc.controller.ts). */
export type RecoveryService = Pick<RecoveryController, 'lookup' | 'register' | 'attach' | 'feedReport' | 'registeredJobIds' | 'om'>;

export class RecoveryController implements RecoveryStatus {
  /** The sources' one job index (controllers/sources/job-index-feed.ts), read with PLACED. */
  readonly index: JobIndex;
  readonly store: RecoveryStateStore;
  readonly memory: MemoryCommands;
  readonly stepRetry: StepRetryView;
  /** The O&M operations' streams and requests (controllers/recovery-om.ts): the gRPC `om` handlers. */
  readonly om: OmOperations;
  /** cluster-system/fault-job-info (docs/rules.md#recover.force-release). */
  readonly forceRelease: ForceRelease;
  private readonly jobs = new Map<string, JobFsm>();
  /** `stressTestNodes()` of the FSM states now; undefined once a step may have changed it. */
  private stressNodes: ReadonlySet<string> | undefined;
  /**
   * jobId -> the key `lookup` last resolved it to (a PodGroup whose owner was verified): the PodGroup
   * whose deletion ends the job. Another PodGroup claiming the UID going away ends nothing.
   */
  private readonly resolved = new Map<string, string>();
  private readonly gaugeState = new Map<string, string>();
  /** Job -> the platform annotation problems last logged (logged and counted once each time they change). */
  private readonly platformWarned = new Map<string, string>();
  /**
   * Feeds a job's current picture to its FSMs (`recovery_feed`, key: the job key); a key added with
   * `addAfter(recoveryFeedWindowMs)` coalesces the job's changes within the window. One per leadership term.
   */
  private feedLoop: ControllerLoop | undefined;
  /** Runs the jobs' FSM commands with ClusterD's retries (recovery-job.ts). One per leadership term. */
  private commandLoop: ControllerLoop | undefined;
  /** Writes the stored states (reconcilers/recovery-state.reconciler.ts); one per leadership term. */
  private persistLoop: ControllerLoop | undefined;
  private sub: Subscription | undefined;
  private acting = false;
  private readonly actions: RecoveryActions;
  private readonly d: RecoveryControllerDeps;
  private readonly now: () => number;
  private readonly scheduler: SchedulerLike;

  constructor(d: RecoveryControllerDeps) {
    this.d = d;
    this.now = () => d.clock.now();
    this.scheduler = d.clock.scheduler;
    const s = d.sources;
    this.index = s.jobIndex.index;
    const index = this.index;
    // --persist-policy-state=false (ClusterD): the FSM states live in this process only (the store's
    // in-memory mode) and a left-over clusterd-ts-recovery-* object is neither read nor written. A
    // restart then forgets registered jobs (TaskD registers again once its stream breaks), any
    // recovery in flight, hot-switch downgrades and must-exit reports, as ClusterD's does.
    const persisted = d.options.persistPolicyState;
    this.store = new RecoveryStateStore({
      cached: (name) => (persisted ? s.mindxDlConfigMaps.get(`${RECOVERY_STATE_NAMESPACE}/${name}`) : undefined),
      cachedNames: () => (persisted ? [...s.mindxDlConfigMaps.store.values()].map((c) => c.metadata?.name ?? '') : []),
      writer: d.writer, log: d.log, dryRun: d.options.dryRun || !persisted,
    });
    this.memory = new MemoryCommands({
      log: d.log, now: this.now, persistNow: (job) => this.persist(job), touch: (job) => this.markDirty(job.target.key),
      holdChanged: (job) => this.stepRetry.holdChanged(job.target.key),
      stored: (jobId) => this.store.get(jobId)?.memory,
    });
    this.stepRetry = new StepRetryView({
      index: { jobKeysOnNodes: (nodes) => index.jobKeysOnNodes(nodes), job: (key) => index.job(key, PLACED) },
      stepRetry: (jobId, enabled) => this.memory.stepRetryJob(jobId, enabled), jobView: (n) => this.jobView(n),
      notify: (nodes) => d.faults.notify(nodes), scheduler: this.scheduler, now: this.now, log: d.log,
      openClaims: d.options.trustPodNpuAnnotations,
    });
    this.forceRelease = new ForceRelease({
      sources: s, writer: d.writer, namespace: d.options.clusterSystemNamespace, known: (jobId) => index.jobKeyOfUid(jobId) !== undefined,
      log: d.log, metrics: d.metrics, clock: d.clock,
    });
    this.om = new OmOperations({
      job: (jobId) => this.jobs.get(jobId), lookup: (jobId) => this.lookup(jobId), log: d.log, scheduler: this.scheduler,
      superPodId: (node) => {
        const cm = s.deviceInfo.get(`kube-system/${DEVICE_INFO_CM_PREFIX}${node}`);
        const text = cm?.data?.['DeviceInfoCfg'];
        if (text === undefined) return undefined;
        const cfg = parseDeviceInfoCfg(text);
        return cfg.ok ? cfg.value.SuperPodID : undefined;
      },
      notifyNodes: (nodes) => d.faults.notify(nodes),
    });
    this.actions = new RecoveryActions({
      client: d.client, writer: d.writer, metrics: d.metrics, log: d.log, now: this.now,
      resetConfig: (ns, name) => s.resetConfigs.get(`${ns}/${name}`),
      jobPods: (job) => this.rawPods(job.key),
      stream: (jobId) => this.jobs.get(jobId)?.stream,
      rescheduling: () => d.role.holds, dryRun: d.options.dryRun, backupPods: d.options.hotSwitchBackupPods,
      handover: (job) => {
        if (d.redecide === undefined) return false;
        d.redecide(job.key);
        return d.role.holds;
      },
    });
  }

  // ---- lookups (gRPC handlers, jobs controller, tests) ----

  /**
   * The job of a jobId (the job UID): the cached PodGroup claiming that UID whose owner (Volcano Job
   * or AscendJob) exists with its namespace, name and UID (state/job-index.ts jobKeyOfUid). A
   * PodGroup elsewhere naming the UID is never the job, so it never gets the job's FSMs, streams or
   * stored state.
   */
  lookup(jobId: string): { key: string; entry: JobEntry } | undefined {
    // The claims index is kept from every PodGroup event (the sources' feed applies them from the initial list on).
    const key = this.index.jobKeyOfUid(jobId);
    const entry = key === undefined ? undefined : this.index.job(key, PLACED);
    if (key === undefined || entry === undefined) return undefined;
    this.resolved.set(jobId, key);
    return { key, entry };
  }

  /** The job view of a node's faults (hidden ones included). */
  jobView(node: string): readonly FaultRecord[] {
    return this.d.faults.jobView(node);
  }

  /** UCEs the agents reported (ReportProcessFault, retry-only) on a node's chips: the business-plane input of docs/rules.md#filter.uce-accompany. */
  businessUce(node: string): Array<{ device: string; atMs: number }> {
    return [...this.jobs.values()].flatMap((j) => {
      const reports = this.memory.retryReports(j.jobId).filter((r) => r.faultType === '0');
      const found = reports.length === 0 ? undefined : this.lookup(j.jobId);
      if (found === undefined) return [];
      return retryReportDevices(found.entry, (name) => this.d.sources.pods.get(`${found.entry.view.namespace}/${name}`), reports)
        .filter((x) => x.node === node).map(({ device, atMs }) => ({ device, atMs }));
    });
  }

  /**
   * When the job's recovery FSM reported the pod at `podRank` as must exit (its recover-in-place plan
   * sends the pod away instead of restarting it in place): the recover-in-place filter's input
   * (docs/rules.md#filter.recover-in-place), so the pod's L2/L3 faults reach the scheduler from then on.
   */
  mustExitReportedMs(jobId: string, podRank: number): number | undefined {
    return this.jobs.get(jobId)?.mustExitReportedMs(podRank);
  }

  readonly isRegistered = (jobId: string): boolean => this.jobs.has(jobId);
  /** Nodes under an online stress test (docs/rules.md#filter.stress-test): their stress-test codes are hidden. */
  stressTestNodes(): ReadonlySet<string> {
    // Asked on every node evaluation of the scheduler view: kept until a recovery step or a job
    // coming or going can change it.
    this.stressNodes ??= this.om.stressTestNodes(this.jobs.values());
    return this.stressNodes;
  }
  job(jobId: string): JobFsm | undefined { return this.jobs.get(jobId); }
  registeredJobIds(): string[] { return [...this.jobs.keys()]; }
  hotSwitchDowngraded(jobId: string): boolean {
    return this.jobs.get(jobId)?.hotSwitch.downgraded ?? this.store.get(jobId)?.hotSwitch.downgraded ?? false;
  }

  // ---- flow ----

  /** Subscribes the inputs (pods and PodGroups after the index applied them); call before the sources start. */
  start(): void {
    const feed = this.d.sources.jobIndex;
    const keys$ = merge(
      feed.pods$.pipe(map(({ ev, keys }) => {
        this.forceRelease.podEvent(ev);
        return keys;
      })),
      feed.podGroups$.pipe(map((ev) => {
        const uid = jobOwnerOf(ev.obj)?.uid;
        const key = objectKey(ev.obj);
        if (ev.type === 'delete') {
          // ClusterD clears fault-job-info of every PodGroup that goes, registered or not.
          if (uid !== undefined) this.forceRelease.clear(uid, 'podgroup-deleted');
          // Only the job's own PodGroup ends it: the one its UID resolved to, or its FSM or stored
          // state names (after a restart, or once its owner went first), never another claimant.
          if (uid !== undefined && this.ownsJob(uid, key)) void this.dropJob(uid);
          return [];
        }
        return [key];
      })),
      this.d.faults.changes$.pipe(map((c) => {
        const keys = [...this.index.jobKeysOnNodes(c.nodes, true)];
        for (const k of keys) this.stepRetry.watch(k);
        return keys;
      })),
    ).pipe(filter((keys) => keys.length > 0));
    this.sub = keys$.subscribe({
      next: (keys) => { for (const k of keys) this.markDirty(k); },
      error: (err: unknown) => this.d.log.error('recovery flow failed', { err: String(err) }),
    });
  }

  async stop(): Promise<void> {
    this.sub?.unsubscribe();
    this.stepRetry.stop();
    await this.stopActing();
  }

  /** Leader only: restore stored FSMs and start acting. */
  startActing(): void {
    if (this.acting) return;
    this.acting = true;
    const loop = new ControllerLoop(recoveryStateReconciler({ store: this.store, writer: this.d.writer, client: this.d.client }), {
      log: this.d.log, metrics: this.d.metrics, clock: this.d.clock, queue: new WorkQueue({ ...RECOVERY_STATE_QUEUE, clock: this.d.clock }),
    });
    this.persistLoop = loop;
    loop.start();
    this.store.attach((uid) => loop.queue.add(uid));
    this.feedLoop = new ControllerLoop({ name: RECOVERY_FEED_CONTROLLER, reconcile: async (key) => this.feedKey(key) }, {
      log: this.d.log, metrics: this.d.metrics, clock: this.d.clock,
    });
    this.feedLoop.start();
    this.commandLoop = recoveryCommandLoop((jobId) => this.jobs.get(jobId), { log: this.d.log, metrics: this.d.metrics, clock: this.d.clock });
    this.commandLoop.start();
    this.forceRelease.startActing();
    // The index is in step with the caches (the sources feed it every event); the placements are looked at afresh on taking over.
    this.index.recheckPlacements();
    this.memory.reloadStored();
    for (const r of this.store.all()) {
      if (this.lookup(r.jobId) === undefined) {
        // The job went away while we were not leading: its state goes too.
        void this.store.remove(r.jobId).catch((e: unknown) => this.d.log.warn('recovery state not removed', { jobId: r.jobId, err: String(e) }));
        continue;
      }
      if (!r.registered) continue;
      const job = this.createJob(r.jobId, r);
      job?.markResumed(RESUME_WAIT_MS);
      // A restored step retry: its nodes looked at again now and when its window ends.
      if (job !== undefined && (r.memory?.hold !== undefined || (r.memory?.reports.length ?? 0) > 0)) this.stepRetry.holdChanged(job.target.key);
    }
    const stressed = [...this.stressTestNodes()];
    if (stressed.length > 0) this.d.faults.notify(stressed);
    if (this.jobs.size > 0) this.d.log.info('recovery states restored', { jobs: [...this.jobs.values()].map((j) => ({ job: j.target.key, recovery: j.recovery.phase, hotSwitch: j.hotSwitch.phase, downgraded: j.hotSwitch.downgraded })) });
  }

  async stopActing(): Promise<void> {
    if (!this.acting) return;
    this.acting = false;
    const feedStopped = this.feedLoop?.stop();
    this.feedLoop = undefined;
    for (const j of this.jobs.values()) {
      j.stop();
      this.om.end(j.jobId);
    }
    this.jobs.clear();
    this.stressNodes = undefined;
    // Not awaited: a command in flight may wait on an apiserver that is gone; its job is stopped.
    void this.commandLoop?.stop();
    this.commandLoop = undefined;
    await this.forceRelease.stopActing();
    for (const [, state] of this.gaugeState) this.d.metrics.recoveryJobs.dec({ state });
    this.gaugeState.clear();
    await feedStopped;
    await this.store.flush();
    this.store.attach(undefined);
    await this.persistLoop?.stop();
    this.persistLoop = undefined;
    this.store.abandon();
  }

  /** The rescheduler's view of node faults (cluster-info, jobs pipeline): step-retry faults hidden. */
  schedulerView(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[] {
    return this.stepRetry.schedulerView(node, records, nowMs);
  }

  /** The job's pods, PodGroup or faults changed: feed it within the window (no FSM while not leading). */
  private markDirty(key: string): void {
    this.feedLoop?.queue.addAfter(key, this.d.options.recoveryFeedWindowMs);
  }

  private async feedKey(key: string): Promise<Outcome> {
    const job = [...this.jobs.values()].find((j) => j.target.key === key);
    if (job !== undefined) this.feedJob(job);
    return {};
  }

  /** The nodes the job's pods run on. */
  private nodesOf(key: string): string[] {
    const e = this.index.job(key, PLACED);
    return e === undefined ? [] : jobNodes(e.view);
  }

  private rawPods(key: string): Pod[] {
    const entry = this.index.job(key, PLACED);
    const ns = entry?.view.namespace ?? '';
    return (entry?.view.pods ?? []).flatMap((p): Pod[] => {
      const pod = this.d.sources.pods.get(`${ns}/${p.name}`);
      return pod === undefined ? [] : [pod];
    });
  }

  /**
   * ClusterD's job fault list is built from the device-info its retry processor has already filtered
   * (faultmanager: DeviceCenter processors, then the job center): a retry fault of a step-retry job
   * is not listed while the step-retry filter hides it (its first 10 s, then up to RecoverTime + 30 s);
   * meanwhile the business-plane report stands for it (policy/recovery/recovery-feed.ts, 10 s). So a device-info UCE
   * that lands before MindIO's report is taken in is not a normal fault.
   */
  private feedOf(jobId: string, entry: JobEntry, downgraded: boolean): RecoveryFeed {
    const now = this.now();
    // ClusterD's stress-test processor sits in the device center, before the job center: the FSMs
    // do not see a tested node's stress-test codes either (docs/rules.md#filter.stress-test).
    const stressed = this.stressTestNodes();
    const faultsOf = (n: string): readonly FaultRecord[] => {
      const v = this.stepRetry.schedulerView(n, this.jobView(n), now);
      return stressed.has(n) ? v.filter((r) => !STRESS_TEST_CODES.includes(r.code.toUpperCase())) : v;
    };
    return recoveryFeed({
      entry, pod: (k) => this.d.sources.pods.get(k), faultsOf, nowMs: now,
      retryReports: this.memory.retryReports(jobId), hotSwitchDowngraded: downgraded, holdsReschedulingRole: this.d.role.holds,
      a5Node: (n) => this.a5Node(n),
    });
  }

  /**
   * The node's super-pod device is A5 (`serverType` `npu`), read as ClusterD's node collector reads it
   * (docs/rules.md#recover.force-release-a5); a node pingmesh would not take is not A5 here.
   */
  private a5Node(name: string): boolean {
    const n = this.d.sources.nodes.get(name);
    const r = readPingMeshNode(name, n?.metadata?.annotations, n?.metadata?.labels);
    return r.kind === 'node' && r.node.serverType === SERVER_TYPES.a5;
  }

    /** Feeds the job's current picture to both FSMs (level-triggered: repeats are harmless). */
  private feedJob(job: JobFsm): void {
    const found = this.lookup(job.jobId);
    if (found === undefined) return;
    const f = this.feedOf(job.jobId, found.entry, job.hotSwitch.downgraded);
    const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
    const rec = (event: RecoveryEvent) => void job.feed({ machine: 'recovery', event });
    rec({ type: 'podsObserved', pods: f.pods });
    rec({ type: 'podGroupObserved', exists: f.podGroup.exists, phase: f.podGroup.phase, platform: f.podGroup.platform });
    if (f.config.platformMode === true) this.warnPlatform(job, platformAnnotationProblems(f.podGroup.platform));
    if (!sameJson({ ...job.recovery.config }, f.config)) rec({ type: 'configChanged', config: f.config });
    rec({ type: 'faultObserved', jobHealth: f.jobHealth, ranks: f.ranks });
    void job.feed({ machine: 'hotSwitch', event: { type: 'podsObserved', pods: f.hotSwitchPods } });
    if (!sameJson({ ...job.hotSwitch.config }, f.hotSwitchConfig)) void job.feed({ machine: 'hotSwitch', event: { type: 'configChanged', config: f.hotSwitchConfig } });
    if (f.subHealthPods.length > 0 && f.hotSwitchConfig.subHealthyStrategy === 'hotSwitch') {
      void job.feed({ machine: 'hotSwitch', event: { type: 'subHealthFault', faultyPods: f.subHealthPods, recoveryIdle: job.recoveryIdle } });
    }
    if (this.d.options.hotSwitchBackupPods && !this.d.options.dryRun) this.promoteOrphanBackups(job);
  }

  /** Bad AI platform annotations (docs/rules.md#recover.platform-mode): one log line and metric per new set of problems. */
  private warnPlatform(job: JobFsm, problems: readonly string[]): void {
    const key = problems.join('\n');
    if ((this.platformWarned.get(job.jobId) ?? '') === key) return;
    if (problems.length === 0) {
      this.platformWarned.delete(job.jobId);
      return;
    }
    this.platformWarned.set(job.jobId, key);
    this.d.log.warn('AI platform annotations malformed; the bad parts are ignored', { job: job.target.key, problems });
    this.d.metrics.invalidInput.inc({ format: 'platform-annotations', reason: 'malformed' });
  }

  /** Operator stand-in: a backup whose source pod is gone now holds the rank. */
  private promoteOrphanBackups(job: JobFsm): void {
    const pods = this.rawPods(job.target.key);
    const names = new Set(pods.filter((p) => p.metadata?.deletionTimestamp === undefined).map((p) => p.metadata?.name));
    for (const p of pods) {
      const src = p.metadata?.annotations?.[A.backupSourcePodName];
      if (p.metadata?.annotations?.[A.podType] !== 'backup' || src === undefined || names.has(src)) continue;
      promoteBackupPod({ client: this.d.client, metrics: this.d.metrics }, p).catch((e: unknown) => this.d.log.warn('backup pod not promoted', { pod: p.metadata?.name, err: String(e) }));
    }
  }

  // ---- registration, streams and reports (gRPC) ----

  private target(jobId: string, key: string, entry: JobEntry): RecoveryJobTarget {
    return { jobId, key, namespace: entry.view.namespace, jobName: entry.view.name, podGroupName: entry.podGroup.metadata?.name ?? '' };
  }

  private createJob(jobId: string, stored?: RecoveryRecord): JobFsm | undefined {
    const found = this.lookup(jobId);
    if (found === undefined) return undefined;
    const opts = this.d.options;
    const downgraded = stored?.hotSwitch.downgraded ?? false;
    const f = this.feedOf(jobId, found.entry, downgraded);
    const recoveryTimings = { reportMs: opts.recoveryReportTimeoutSeconds * 1000, ...parseRecoveryTimings(opts.recoveryTimings) };
    const hotSwitchTimings = { reportMs: opts.recoveryReportTimeoutSeconds * 1000, newPodRunningMs: opts.hotSwitchNewPodTimeoutSeconds * 1000 };
    const recovery = stored?.recovery ?? initialRecoveryState({ config: f.config, timings: recoveryTimings, pods: f.pods, podGroup: f.podGroup });
    const hotSwitch = stored?.hotSwitch ?? initialHotSwitchState(f.hotSwitchConfig, { timings: hotSwitchTimings, downgraded });
    const job = new JobFsm(this.target(jobId, found.key, found.entry), { ...recovery, timings: { ...recovery.timings, ...recoveryTimings } },
      { ...hotSwitch, timings: { ...hotSwitch.timings, ...hotSwitchTimings } }, {
        execute: async (j, c, signal) => {
          if (this.om.run(j, c)) return;
          if (c.cmd.type === 'publishFaultJobInfo') return this.forceRelease.publish(j.jobId, j.target.key, this.lookup(j.jobId)?.entry, c.cmd.podRanks, c.cmd.a5 === true);
          if (c.cmd.type === 'clearFaultJobInfo') return this.forceRelease.clear(j.jobId, 'recover-success');
          if (await this.memory.run(j, c)) return;
          if (isIoCommand(c.cmd)) await this.actions.run(j.target, c.cmd, signal, j.recovery.originalPodUids);
        },
        commands: { add: (id) => this.commandLoop?.queue.add(id) },
        tries: (c) => (isIoCommand(c.cmd) ? ioCommandTries(c.cmd) : 1),
        persist: (j) => this.persist(j),
        log: this.d.log,
        scheduler: this.scheduler,
        onStep: (j, machine, r) => {
          if (machine === 'recovery') this.stressNodes = undefined;
          this.observeGauge(j);
          if (machine === 'recovery') this.observeGoodput(j, r.reasons);
          // ClusterD refills a reset controller's fault cache from the fault center's next 1 s tick:
          // feed the job's current picture again so the ranks still listed rejoin the cache.
          if (machine === 'recovery' && r.reasons.some((x) => x.startsWith('reset'))) this.markDirty(j.target.key);
        },
        mustExitChanged: (j, podRanks) => {
          this.d.log.info('recover-in-place: pods reported as must exit; their faults reach the scheduler', { job: j.target.key, podRanks });
          this.d.faults.notify(this.nodesOf(j.target.key));
        },
      }, stored?.outbox ?? []);
    this.jobs.set(jobId, job);
    this.stressNodes = undefined;
    job.start();
    this.observeGauge(job);
    this.feedJob(job);
    // A state restored while its notify message was not out yet: out again once an agent subscribes.
    void this.om.deliver(jobId);
    return job;
  }

  private persist(job: JobFsm): Promise<void> {
    if (!this.acting || job.stopped) return Promise.resolve();
    return this.store.save({
      version: 1, jobId: job.jobId, jobKey: job.target.key, registered: true, recovery: job.recovery, hotSwitch: job.hotSwitch,
      memory: this.memory.snapshot(job.jobId), outbox: job.outbox(), savedAtMs: this.now(),
    });
  }

  /**
   * Goodput stages the recovery FSM observes (telemetry/goodput.ts): a fault taken from INIT opens
   * the job's episode; a success edge (the agents reported their processes recovered, scaled in or
   * out, or restarted by fault retry) is training resumed. The time is the FSM's scheduler clock.
   */
  private observeGoodput(job: JobFsm, reasons: readonly string[]): void {
    const g = this.d.metrics.goodput;
    const t = job.target;
    if (reasons.some((x) => FAULT_EDGE.test(x))) g.faultObserved({ key: t.key, namespace: t.namespace, name: t.jobName }, this.scheduler.now());
    if (reasons.some((x) => RESUMED_EDGE.test(x))) g.resumed(t.key, this.scheduler.now());
  }

  private observeGauge(job: JobFsm): void {
    const state = job.hotSwitch.phase !== 'INIT' ? `HotSwitch:${job.hotSwitch.phase}` : job.recovery.phase;
    const before = this.gaugeState.get(job.jobId);
    if (before === state) return;
    if (before !== undefined) this.d.metrics.recoveryJobs.dec({ state: before });
    this.d.metrics.recoveryJobs.inc({ state });
    this.gaugeState.set(job.jobId, state);
  }

  /** Register (docs/grpc.md#server-behaviour): PodGroup label `process-recover-enable=on`, then the job's FSMs. */
  async register(jobId: string): Promise<'ok' | 'no-job' | 'patch-failed'> {
    const found = this.lookup(jobId);
    if (found === undefined) return 'no-job';
    const pg = found.entry.podGroup;
    if (pg.metadata?.labels?.[PROCESS_RECOVER_ENABLE_LABEL] !== 'on' && !this.d.options.dryRun) {
      try {
        await patchPodGroupMeta({ client: this.d.client, metrics: this.d.metrics }, pg.metadata?.namespace ?? '', pg.metadata?.name ?? '', { labels: { [PROCESS_RECOVER_ENABLE_LABEL]: 'on' } });
      } catch (e) {
        this.d.log.warn('register: PodGroup label patch failed', { job: found.key, err: String(e) });
        return 'patch-failed';
      }
    }
    const job = this.jobs.get(jobId) ?? this.createJob(jobId, this.store.get(jobId));
    if (job === undefined) return 'no-job';
    await this.persist(job);
    this.d.log.info('job registered for process-level recovery', { job: found.key, jobId });
    return 'ok';
  }

  /**
   * A (re)subscription: the job's FSMs reset (ClusterD resets its controller), signals go to `stream`;
   * the first one of a job restored after a restart or failover resumes them instead (docs/rules.md#recover.resume).
   */
  attach(jobId: string, stream: SignalStream<ProcessManageSignal>): { currentUuid(): string; onClose(reason: StreamCloseReason): void } {
    const job = this.jobs.get(jobId);
    if (job === undefined) {
      stream.end();
      return { currentUuid: () => '', onClose: () => undefined };
    }
    job.stream = stream;
    const resumed = job.takeResume();
    if (resumed) this.d.log.info('restored job: its client subscribed again; the FSMs go on', { job: job.target.key, jobId, rule: RULE.recover.resume, recovery: job.recovery.phase, hotSwitch: job.hotSwitch.phase });
    void job.feed({ machine: 'recovery', event: { type: 'clientSubscribed', resumed } });
    void job.feed({ machine: 'hotSwitch', event: { type: 'clientSubscribed', resumed } });
    return {
      currentUuid: () => job.currentUuid(),
      onClose: (reason) => {
        if (job.stream?.id === stream.id) job.stream = undefined;
        // A stream the client lost mid-recovery (or that we dropped because the client stopped reading)
        // resets the controller; one we ended, or one replaced by a new subscriber, does not.
        if (reason !== 'client-cancelled' && reason !== 'write-error' && reason !== 'slow-consumer') return;
        void job.feed({ machine: 'recovery', event: { type: 'streamClosed' } });
        void job.feed({ machine: 'hotSwitch', event: { type: 'streamClosed' } });
      },
    };
  }

  /**
   * The jobs decision's hand-off (docs/rules.md#decision.hot-switch, #decision.process-level). ClusterD's fault handler sends preExitProcess to
   * the fault pods that are still the original ones, after waiting up to 10 s for the FSM to leave
   * INIT (fault_recover_service.go notifyFaultInfoForJob, sleepForStateChange, sendPreExitSignal);
   * the signal lets the training processes exit so MindIO reports the fault (docs/rules.md#recover.software-entry). Deleting the fault
   * pods first would skip it ("no longer the original pods"), so the FSM sees the faults now and the
   * decision's deletions wait until its preExitProcess is sent or skipped. A hot switch needs no wait.
   */
  readonly handOff: HandOffSink = async (jobKey, action, signal) => {
    const job = [...this.jobs.values()].find((j) => j.target.key === jobKey);
    if (job === undefined || !this.acting) {
      this.d.log.info('hand-off: no FSM for the job (not registered, or not leading); pod-level handling only', { job: jobKey, action: action.type });
      return;
    }
    this.feedJob(job);
    if (action.type !== 'handOffProcessRecovery') return;
    const t0 = this.now();
    const sent = await job.preExitSettled(job.recovery.timings.preExitWaitMs + PRE_EXIT_SLACK_MS, signal);
    this.d.log.info('hand-off: preExitProcess settled; the decision goes on', { job: jobKey, waitedMs: this.now() - t0, settled: sent });
  };

  /** A report or fault from the agent; undefined when the job has no FSM (not registered). */
  feedReport(jobId: string, input: JobInput): Promise<InputOutcome> | undefined {
    return this.jobs.get(jobId)?.feed(input);
  }

  /** For tests and introspection. */
  phase(jobId: string, machine: Machine = 'recovery'): string | undefined {
    return this.jobs.get(jobId)?.phase(machine);
  }

  /** The PodGroup `key` is the job `jobId`'s own (see the PodGroup delete above). */
  private ownsJob(jobId: string, key: string): boolean {
    const known = this.resolved.get(jobId) ?? this.jobs.get(jobId)?.target.key ?? this.store.get(jobId)?.jobKey;
    return known === key;
  }

  /** The PodGroup is gone: drop the FSMs and the stored state. */
  private async dropJob(jobId: string): Promise<void> {
    this.resolved.delete(jobId);
    this.platformWarned.delete(jobId);
    const job = this.jobs.get(jobId);
    job?.stop();
    this.jobs.delete(jobId);
    this.stressNodes = undefined;
    this.memory.forget(jobId);
    this.om.end(jobId);
    const g = this.gaugeState.get(jobId);
    if (g !== undefined) this.d.metrics.recoveryJobs.dec({ state: g });
    this.gaugeState.delete(jobId);
    this.d.jobGone?.(jobId);
    if (this.acting) await this.store.remove(jobId).catch((e: unknown) => this.d.log.warn('recovery state not removed', { jobId, err: String(e) }));
  }
}
