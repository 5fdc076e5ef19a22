/**
 * Every flow of the controller, declared as data in one place: its name and layer, the ports it
 * provides and consumes (CallPorts), the events it emits and watches (EventPorts) with how each
 * event maps to its queue keys, and its lifecycle. `buildManager` is the one builder main.ts, the
 * integration tests, the simulation and the benchmark use (through `new Manager`): controllers/wiring.ts
 * builds the specs in dependency order and records the runtime graph (docs/ARCHITECTURE.md#the-flow-graph).
 *
 * A spec sees only the ports it declared and the shared infrastructure (`BuildContext`): no spec
 * reaches into another flow's controller, and nothing is wired after construction.
 */
import { map, Subject } from 'rxjs';
import { paths, type KubeClient } from '../runtime/kube-client.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { PodRef } from '../actions/leader-label.action.ts';
import type { HandOffSink } from '../actions/job-action-executor.ts';
import type { Clock } from '../runtime/clock.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { FaultStore } from '../state/fault-store.ts';
import { LAST_GOOD_CM_NAME, readLastGood, type PersistedLastGood } from '../state/device-info-last-good.ts';
import { recoverInPlacePeers } from '../policy/filters/fault-filters-peers.ts';
import type { ParsedReleaseRequest } from '../schemas/release-request/release-request.ts';
import type { FilterState, RelationState } from '../schemas/escalation-state/escalation-state.ts';
import { ESCALATION_STATE_CM_NAME } from '../schemas/escalation-state/escalation-state.ts';
import { MANUAL_INFO_CM_NAME } from '../schemas/manual-info/manual-info.ts';
import { STATISTIC_FAULT_CM_NAME } from '../schemas/statistic-fault/statistic-fault.ts';
import { MAX_CONFIGMAP_DATA_BYTES, MAX_CUSTOM_JOB_ID_CHARS } from '../schemas/job-statistic/job-statistic.ts';
import { MAX_EXCEPTION_MESSAGE_CHARS, SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME } from '../schemas/scheduling-exception/scheduling-exception.ts';
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_LABEL_KEY, CLUSTER_INFO_NAMESPACE, parseClusterInfo, type DeviceInfoEntry } from '../schemas/cluster-info/cluster-info.ts';
import { CLUSTER_INFO_BURST_QUIET_MS, CLUSTER_INFO_KEY, CLUSTER_INFO_WRITE_BURST, clusterInfoReconciler, renderClusterInfo } from '../reconcilers/cluster-info.reconciler.ts';
import { ESCALATION_STATE_RECONCILE_KEY, escalationStateReconciler } from '../reconcilers/escalation-state.reconciler.ts';
import { MANUAL_INFO_RECONCILE_KEY, manualInfoReconciler } from '../reconcilers/manual-info.reconciler.ts';
import { STATISTIC_FAULT_RECONCILE_KEY, statisticFaultReconciler } from '../reconcilers/statistic-fault.reconciler.ts';
import { SCHEDULING_EXCEPTION_RECONCILE_KEY, schedulingExceptionReconciler } from '../reconcilers/scheduling-exception.reconciler.ts';
import { LAST_GOOD_RECONCILE_KEY, lastGoodReconciler } from '../reconcilers/device-info-last-good.reconciler.ts';
import { SUPER_POD_RECONCILE_KEY, superPodDeviceReconciler } from '../reconcilers/super-pod-device.reconciler.ts';
import { SuperPodDevices } from '../state/super-pod-devices.ts';
import { flapDampingOf, publicFaultNamespacesOf, type Options } from './options.ts';
import { createSources, type Sources } from './sources/sources.ts';
import { DeviceFaultsController, type FaultChange, type FaultPolicy, type PublicFaultIntake } from './device-faults.controller.ts';
import { FaultView, type FaultViewChange } from './fault-view.ts';
import { FaultViewStage, type SchedulerFilters } from './fault-view-stage.ts';
import { keyOn, singleton, type Flow } from './flows.ts';
import { JobsController, type JobsControllerDeps } from './jobs.controller.ts';
import { RecoveryController } from './recovery.controller.ts';
import { GrpcController } from './grpc.controller.ts';
import { FaultPolicyController, type PolicyState } from './fault-policy.controller.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { JobSummaryController } from './job-summary.controller.ts';
import { JobStatisticController } from './job-statistic.controller.ts';
import { JobIdentityController } from './job-identity.controller.ts';
import { loadRelationFaultConfig } from './relation-fault-files.ts';
import { RelationFaultsController } from './relation-faults.controller.ts';
import { PingMeshController } from './pingmesh.controller.ts';
import { BreakerController, breakerConfigOf } from './breaker.controller.ts';
import { ReschedulingRole } from './rescheduling-role.ts';
import type { FaultSubscriptions, JobSummaries, RecoveryStatus, ReschedulingRoleStatus } from './ports.ts';
import { buildFlows, specKit, type FlowGraph, type FlowSpec } from './wiring.ts';

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

/** The calls one flow offers others (each owned by its provider; see `provides` below). */
export interface CallPorts {
  /** The intake's state (state/fault-store.ts). */
  readonly faultStore: FaultStore;
  /** The published per-node views and their changes (controllers/fault-view.ts): pure reads. */
  readonly faultView: FaultView;
  /** The job view of a node, for the fault-view stage's pass. */
  readonly faultPolicy: FaultPolicy;
  readonly policyState: PolicyState;
  readonly schedulerFilters: SchedulerFilters;
  readonly publicFaultIntake: PublicFaultIntake;
  /** The last good device-info to persist. */
  readonly lastGoodState: { desired(): Record<string, string> };
  readonly recoveryStatus: RecoveryStatus;
  /** docs/rules.md#decision.hot-switch, #decision.process-level: the decision's hand-off starts the job's FSM (RecoveryController.handOff). */
  readonly recoveryHandOff: HandOffSink;
  readonly faultSubscriptions: FaultSubscriptions;
  readonly reschedulingRole: ReschedulingRoleStatus;
  /** The per-job inputs of scheduling-exception-report (job-summary.controller.ts). */
  readonly exceptionInputs: Pick<JobSummaryController, 'exceptionInputs'>;
  readonly jobSummaries: JobSummaries;
}

/** What one flow tells others: a Subject per port, owned by the builder. */
export interface EventPorts {
  /** Nodes the intake changed. */
  readonly intake: FaultChange;
  /** Nodes whose view may have changed with no new intake: policy deadlines, filter windows, step-retry holds. */
  readonly reannounce: readonly string[];
  /** `kubectl clusterd release` requests, before the policy applies them: flap holds of the chips end. */
  readonly released: readonly ParsedReleaseRequest[];
  /** The fault policy's persisted state or the desired manual-info changed. */
  readonly policyStateChanged: void;
  /** The filters' or relation faults' memory changed: its owner hands it back (persisted with the escalation state). */
  readonly sideState: { readonly relation?: RelationState; readonly filters?: FilterState };
  /** Nodes held on their last good device-info changed. */
  readonly lastGoodChanged: void;
  /** A public-fault message or delete ran (ClusterD rewrites statistic-fault-info after each). */
  readonly publicFaultMessage: void;
  /** A job's fault gRPC subscription changed: the filters' job facts. */
  readonly jobFacts: { readonly jobId: string; readonly nodes: readonly string[] };
  /** Jobs the recovery hands back to the decisions loop (label `pause`: docs/rules.md#decision.process-gives-up, then pod or job level). */
  readonly redecide: string;
  /** The fault view published a version: its changed nodes. */
  readonly viewChanges: FaultViewChange;
  /** The rescheduling role changed after start (true: clusterd-ts holds it now). */
  readonly reschedulingRoleChanged: boolean;
  /** The gRPC server has tried to listen (the leader's pod label follows). */
  readonly grpcServing: void;
}

/** The infrastructure every spec shares (not a flow: no spec provides it). */
export interface BuildContext {
  readonly deps: ManagerDeps;
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly now: () => number;
  /** Whether this replica acts now (the process's leadership, set before the flows' startActing). */
  readonly acting: () => boolean;
  readonly loop: (r: ConstructorParameters<typeof ControllerLoop>[0]) => ControllerLoop;
}

const spec = specKit<BuildContext, CallPorts, EventPorts>();

/** Which call ports only read their provider's state, and which run its behaviour (tools/layering's graph rules). */
export const PORT_KINDS: { readonly [K in keyof CallPorts]: 'read' | 'call' } = {
  faultStore: 'read', faultView: 'read', faultPolicy: 'call', policyState: 'read', schedulerFilters: 'call',
  publicFaultIntake: 'call', lastGoodState: 'read', recoveryStatus: 'read', recoveryHandOff: 'call',
  faultSubscriptions: 'read', reschedulingRole: 'read', exceptionInputs: 'read', jobSummaries: 'read',
};

/** The intake's state and the fault view's published snapshot: every flow below reads them. */
const faultState = spec({
  name: 'fault-state', layer: 'state',
  consumes: [], provides: ['faultStore', 'faultView'], emits: ['viewChanges'], watches: [],
  build: (_use, emit, x) => {
    const store = new FaultStore({ publicFaults: { maxFaults: x.deps.options.maxPublicFaults, bounds: x.deps.metrics.bounds } });
    const faults = new FaultView(store, x.now);
    // First of the view's subscribers, as cluster-info always was.
    faults.changes$.subscribe(emit.viewChanges);
    return { out: { store, faults }, provide: { faultStore: store, faultView: faults }, on: {} };
  },
});

/**
 * The fault view's one writer (controllers/fault-view-stage.ts): every input only enqueues node keys
 * (the intake's nodes, re-announced nodes, released chips); the stage's pass evaluates policy,
 * filters and damping and publishes the snapshot.
 */
const faultView = spec({
  name: 'fault-view', layer: 'controller',
  consumes: ['faultView', 'faultPolicy', 'schedulerFilters'], provides: [], emits: [], watches: ['intake', 'reannounce', 'released'],
  build: ({ faultView: view, faultPolicy: policy, schedulerFilters: filters }, _emit, x) => {
    const { options, clock, log, metrics } = x.deps;
    const s = x.sources;
    // Its keys run on the queue clock of the other loops; flap damping's holds end on its node keys too.
    const stage = new FaultViewStage({
      view, policy, filters, peers: (nodes) => recoverInPlacePeers(s.jobIndex.index, nodes),
      damping: flapDampingOf(options), clock, log: log.child({ controller: 'fault_view' }), metrics,
    });
    return {
      out: stage,
      provide: {},
      on: { intake: (c) => stage.intake(c), reannounce: (nodes) => stage.notify(nodes), released: (requests) => stage.release(requests) },
      flow: { start: () => stage.start(), stop: () => stage.stop() },
    };
  },
});

/** The published cluster-info device entries (a read): the stand-in for damaged last good entries. */
async function publishedDeviceEntries(client: KubeClient, log: Logger): Promise<Map<string, DeviceInfoEntry>> {
  const out = new Map<string, DeviceInfoEntry>();
  try {
    const list = await client.list<ConfigMap>(paths.configMaps(CLUSTER_INFO_NAMESPACE), { labelSelector: `${CLUSTER_INFO_LABEL_KEY}=true` });
    for (const cm of list.items) {
      const name = cm.metadata?.name ?? '';
      const text = cm.data?.[name];
      if (!name.startsWith(CLUSTER_INFO_DEVICE_PREFIX) || text === undefined || text === '') continue;
      const parsed = parseClusterInfo('device', text);
      if (!parsed.ok) { log.warn('published cluster-info shard does not parse; its nodes have no stand-in for a damaged last good entry', { name, reason: parsed.reason }); continue; }
      for (const [k, e] of Object.entries(parsed.value)) out.set(k, e as DeviceInfoEntry);
    }
  } catch (e) {
    log.warn('could not read the published cluster-info for damaged last good entries', { err: String(e) });
  }
  return out;
}

/** Intake: sources -> FaultStore -> `intake`. */
const intake = spec({
  name: 'intake', layer: 'controller',
  consumes: ['faultStore', 'faultView'], provides: ['publicFaultIntake', 'lastGoodState'], emits: ['intake', 'lastGoodChanged', 'publicFaultMessage'], watches: [],
  build: ({ faultStore: store, faultView: view }, emit, x) => {
    const { options, log, metrics, clock } = x.deps;
    const deviceFaults = new DeviceFaultsController({
      sources: x.sources, log: log.child({ controller: 'device_faults' }), metrics, clock, maxPublicFaults: options.maxPublicFaults,
      publicFaultSenders: { namespaceAllowed: publicFaultNamespacesOf(options), namespaces: options.publicFaultNamespaces, unknownNodes: options.publicFaultUnknownNodes },
      store, view,
      onChange: emit.intake,
      onLastGoodChange: emit.lastGoodChanged,
      onPublicFaultMessage: emit.publicFaultMessage,
    });
    /** The persisted last good device-info read at start, and the published entries its damaged ones need. */
    let atStart: { readonly persisted: PersistedLastGood; readonly published: ReadonlyMap<string, DeviceInfoEntry> } | undefined;
    return {
      out: deviceFaults,
      provide: { publicFaultIntake: deviceFaults, lastGoodState: deviceFaults.lastGood },
      on: {},
      flow: {
        start: () => deviceFaults.start(), stop: () => deviceFaults.stop(),
        beforeSynced: () => {
          const persisted = readLastGood(x.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${LAST_GOOD_CM_NAME}`));
          if (persisted.damaged.size === 0) { atStart = { persisted, published: new Map() }; return undefined; }
          return publishedDeviceEntries(x.deps.client, log).then((published) => { atStart = { persisted, published }; });
        },
        synced: () => {
          // Before any decision: nodes whose device-info is still invalid get the last good one persisted before the restart.
          if (atStart !== undefined) deviceFaults.restoreLastGood(atStart.persisted, atStart.published);
          // The public faults the last process listed (ClusterD reloads them at start), on top of the replayed CMs.
          deviceFaults.loadPublicFaults(x.sources.clusterSystemConfigMaps.get(`${options.clusterSystemNamespace}/${STATISTIC_FAULT_CM_NAME}`));
        },
      },
    };
  },
});

/** Levels, escalation, manual separation, pre-separate: the job view (the stage's FaultPolicy unless deps.policy is given). */
const faultPolicy = spec({
  name: 'fault-policy', layer: 'controller',
  consumes: ['faultStore'], provides: ['faultPolicy', 'policyState'], emits: ['reannounce', 'policyStateChanged', 'released'], watches: ['sideState'],
  build: ({ faultStore: store }, emit, x) => {
    const { options, log, metrics, clock } = x.deps;
    const policy = new FaultPolicyController({
      sources: x.sources, namespace: options.clusterSystemNamespace, log: log.child({ controller: 'fault_policy' }), metrics, clock,
      records: (n) => store.records(n), nodes: () => store.nodeNames(),
      onViewChange: emit.reannounce,
      deviceRules: options.devicePluginRules,
      npuClaims: options.trustPodNpuAnnotations ? 'annotation' : 'verified',
      persistState: options.persistPolicyState,
      onStateChange: emit.policyStateChanged,
      onRelease: emit.released,
    });
    return {
      out: policy,
      provide: { faultPolicy: x.deps.policy ?? policy, policyState: policy },
      // The filters' and relation faults' memories are persisted in the policy's document.
      on: { sideState: (s) => policy.engine.setSideState(s) },
      // Restores the persisted escalation state before any decision is published.
      flow: { synced: () => policy.start(), stop: () => policy.stop() },
    };
  },
});

/** The scheduler view's filters (with the step-retry stage of recovery-step-retry.ts in its place in the chain). */
const filters = spec({
  name: 'filters', layer: 'controller',
  consumes: ['faultView', 'recoveryStatus', 'faultSubscriptions', 'policyState'], provides: ['schedulerFilters'], emits: ['reannounce', 'sideState'], watches: ['jobFacts'],
  build: ({ faultView: view, recoveryStatus, faultSubscriptions, policyState }, { reannounce, sideState }, x) => {
    const { options, log, metrics, clock } = x.deps;
    const filters: FaultFiltersController = new FaultFiltersController({
      sources: x.sources, log: log.child({ controller: 'fault_filters' }), metrics, clock,
      jobView: (n) => view.jobView(n),
      recovery: recoveryStatus,
      subscriptions: faultSubscriptions,
      npuClaims: options.trustPodNpuAnnotations ? 'annotation' : 'verified',
      notify: reannounce,
      // The fault-view stage requeues a node at its windows' ends (one evaluator of the verdict).
      windowKeys: false,
      onStateChange: () => sideState({ filters: filters.state() }),
      linkDownMemoryMs: options.linkDownMemorySeconds * 1000,
    });
    return {
      out: filters,
      provide: { schedulerFilters: filters },
      on: { jobFacts: ({ jobId, nodes }) => filters.jobFactsChanged(jobId, nodes) },
      flow: { start: () => filters.start(), synced: () => filters.restore(policyState.sideState.filters), stop: () => filters.stop() },
    };
  },
});

/** Relation faults -> pod label fault-type=Separate|SubHealth. */
const relationFaults = spec({
  name: 'relation-faults', layer: 'controller',
  consumes: ['faultView', 'faultStore', 'policyState'], provides: [], emits: ['sideState'], watches: [],
  build: ({ faultView: view, faultStore: store, policyState }, { sideState }, x) => {
    const { options, log, metrics, clock } = x.deps;
    const relations: RelationFaultsController = new RelationFaultsController({
      sources: x.sources, faultsOf: (n) => view.effective(n), faultNodes$: view.changes$.pipe(map((c) => c.nodes)),
      a3Node: (n) => (store.nodeState(n)?.device?.data.cfg.SuperPodID ?? -1) >= 0,
      config: loadRelationFaultConfig(options.relationFaultConfigDir, log.child({ controller: 'relation_faults' }), metrics),
      client: x.deps.client, log: log.child({ controller: 'relation_faults' }), metrics, clock, dryRun: options.dryRun,
      onStateChange: () => sideState({ relation: relations.state() }),
    });
    return {
      out: relations,
      provide: {},
      on: {},
      flow: {
        start: () => relations.start(), synced: () => relations.restore(policyState.sideState.relation),
        startActing: () => relations.startActing(), stopActing: () => relations.stopActing(), stop: () => relations.stop(),
      },
    };
  },
});

/** cluster-info: the view's changed nodes are re-rendered (one key for the whole burst). */
const clusterInfo = spec({
  name: 'cluster-info', layer: 'reconciler',
  consumes: ['faultStore', 'faultView', 'policyState'], provides: [], emits: [], watches: ['viewChanges'],
  build: ({ faultStore: store, faultView: view, policyState }, _emit, x) => {
    const { options } = x.deps;
    const s = x.sources;
    const reconciler = clusterInfoReconciler({
      // The scheduler view, minus what its filters withheld from the device plugin's lists (docs/rules.md#filter.two-views).
      nodes: () => store.nodeNames(),
      // The placement view: flapping hardware held faulty (flap damping) keeps new pods off it.
      renderNode: (node, nowMs) => policyState.adjustView(renderClusterInfo(store, (n) => view.placement(n), nowMs, (n) => view.withheld(n), [node]), (n) => view.jobView(n)),
      peers: (nodes) => recoverInPlacePeers(s.jobIndex.index, nodes),
      actual: (name) => s.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${name}`),
      actualNames: () => [...s.mindxDlConfigMaps.store.values()].map((c) => c.metadata?.name ?? ''),
      writer: x.writer,
      refreshMs: options.clusterInfoRefreshSeconds * 1000,
      refreshAnnotation: options.clusterInfoRefreshAnnotation,
      burst: CLUSTER_INFO_WRITE_BURST,
      burstQuietMs: CLUSTER_INFO_BURST_QUIET_MS,
    });
    const loop = x.loop(reconciler);
    return {
      out: loop,
      provide: {},
      on: { viewChanges: (c) => { reconciler.markDirty(c.nodes); loop.queue.add(CLUSTER_INFO_KEY); } },
      flow: singleton(loop, CLUSTER_INFO_KEY, 'now'),
    };
  },
});

const escalationState = spec({
  name: 'escalation-state', layer: 'reconciler',
  consumes: ['policyState'], provides: [], emits: [], watches: ['policyStateChanged'],
  build: ({ policyState }, _emit, x) => {
    const { options } = x.deps;
    const csNs = options.clusterSystemNamespace;
    const loop = x.loop(escalationStateReconciler({
      // --persist-policy-state=false: nothing to persist, so the state object is never written.
      desired: (t) => (options.persistPolicyState ? policyState.persistedState(t) : undefined), writer: x.writer, namespace: csNs,
      actual: () => x.sources.clusterSystemConfigMaps.get(`${csNs}/${ESCALATION_STATE_CM_NAME}`),
    }));
    return {
      out: loop,
      provide: {},
      on: { policyStateChanged: keyOn(loop, ESCALATION_STATE_RECONCILE_KEY, { afterMs: 200, when: () => options.persistPolicyState }) },
      flow: singleton(loop, ESCALATION_STATE_RECONCILE_KEY, 'now'),
    };
  },
});

const manualInfo = spec({
  name: 'manual-info', layer: 'reconciler',
  consumes: ['policyState'], provides: [], emits: [], watches: ['policyStateChanged'],
  build: ({ policyState }, _emit, x) => {
    const csNs = x.deps.options.clusterSystemNamespace;
    const loop = x.loop(manualInfoReconciler({
      desired: () => policyState.manualInfo(), writer: x.writer, namespace: csNs,
      actual: () => x.sources.clusterSystemConfigMaps.get(`${csNs}/${MANUAL_INFO_CM_NAME}`),
    }));
    return { out: loop, provide: {}, on: { policyStateChanged: keyOn(loop, MANUAL_INFO_RECONCILE_KEY) }, flow: singleton(loop, MANUAL_INFO_RECONCILE_KEY, 'now') };
  },
});

/** Persists the last good device-info of nodes whose current one is rejected (survives restarts). */
const lastGood = spec({
  name: 'last-good', layer: 'reconciler',
  consumes: ['lastGoodState'], provides: [], emits: [], watches: ['lastGoodChanged'],
  build: ({ lastGoodState }, _emit, x) => {
    const loop = x.loop(lastGoodReconciler({
      desired: () => lastGoodState.desired(), writer: x.writer, namespace: CLUSTER_INFO_NAMESPACE,
      actual: () => x.sources.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${LAST_GOOD_CM_NAME}`),
    }));
    return { out: loop, provide: {}, on: { lastGoodChanged: keyOn(loop, LAST_GOOD_RECONCILE_KEY) }, flow: singleton(loop, LAST_GOOD_RECONCILE_KEY, 'now') };
  },
});

/** statistic-fault-info is written only after public-fault messages and deletes, never at start (as ClusterD). */
const statisticFault = spec({
  name: 'statistic-fault', layer: 'reconciler',
  consumes: ['faultStore'], provides: [], emits: [], watches: ['publicFaultMessage'],
  build: ({ faultStore: store }, _emit, x) => {
    const csNs = x.deps.options.clusterSystemNamespace;
    const loop = x.loop(statisticFaultReconciler({
      faults: () => store.publicFaultStatistics(), writer: x.writer, namespace: csNs,
      actual: () => x.sources.clusterSystemConfigMaps.get(`${csNs}/${STATISTIC_FAULT_CM_NAME}`),
    }));
    // The intake's messages arrive on standbys too: only the leader writes.
    return { out: loop, provide: {}, on: { publicFaultMessage: keyOn(loop, STATISTIC_FAULT_RECONCILE_KEY, { when: x.acting }) }, flow: singleton(loop, STATISTIC_FAULT_RECONCILE_KEY, 'never') };
  },
});

/** ClusterD's cluster-system/scheduling-exception-report (every 10 s from start, per-job entries). */
const schedulingException = spec({
  name: 'scheduling-exception', layer: 'reconciler',
  consumes: ['exceptionInputs'], provides: [], emits: [], watches: [],
  build: ({ exceptionInputs }, _emit, x) => {
    const { options, metrics } = x.deps;
    const csNs = options.clusterSystemNamespace;
    const loop = x.loop(schedulingExceptionReconciler({
      writer: x.writer, namespace: csNs, actual: () => x.sources.clusterSystemConfigMaps.get(`${csNs}/${SCHEDULING_EXCEPTION_CM_NAME}`),
      inputs: () => exceptionInputs.exceptionInputs(),
      limits: options.outputLimits,
      onLimited: (cut, omitted) => {
        if (cut.length > 0) metrics.bounds.hit('scheduling_exception_message_chars', 'scheduling-exception-report: condition messages cut to their bound', { configMap: SCHEDULING_EXCEPTION_CM_NAME, maxChars: MAX_EXCEPTION_MESSAGE_CHARS, jobs: cut.slice(0, 10) }, cut.length);
        if (omitted.length > 0) metrics.bounds.hit('scheduling_exception_bytes', 'scheduling-exception-report over a ConfigMap\'s size: entries left out of this write', { configMap: SCHEDULING_EXCEPTION_CM_NAME, maxBytes: MAX_CONFIGMAP_DATA_BYTES, jobs: omitted.slice(0, 10) }, omitted.length);
      },
    }));
    // ClusterD's collector first looks (and creates the report) one check interval after start.
    return { out: loop, provide: {}, on: {}, flow: singleton(loop, SCHEDULING_EXCEPTION_RECONCILE_KEY, { afterMs: SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS }) };
  },
});

/**
 * Pingmesh (docs/rules.md#pingmesh.super-pod-devices): Node annotations and pingmesh-config feed the
 * super pods; cluster-system/super-pod-<id> is published at most --pingmesh-check-interval-ms after
 * a change (ClusterD's 5 s ticker), by the leader only.
 */
const pingmesh = spec({
  name: 'pingmesh', layer: 'controller',
  consumes: [], provides: [], emits: [], watches: [],
  build: (_use, _emit, x) => {
    const { options, log, metrics } = x.deps;
    const csNs = options.clusterSystemNamespace;
    const state = new SuperPodDevices();
    const loop = x.loop(superPodDeviceReconciler({
      state, writer: x.writer, namespace: csNs, actual: (name) => x.sources.clusterSystemConfigMaps.get(`${csNs}/${name}`),
    }));
    const intake = new PingMeshController({
      sources: x.sources, state, namespace: csNs, log: log.child({ controller: 'pingmesh' }), metrics,
      onChange: keyOn(loop, SUPER_POD_RECONCILE_KEY, { afterMs: options.pingmeshCheckIntervalMs, when: x.acting }),
    });
    if (!options.pingmesh) return { out: { state, loop }, provide: {}, on: {} };
    return { out: { state, loop }, provide: {}, on: {}, flow: { start: () => intake.start(), stop: () => intake.stop(), ...singleton(loop, SUPER_POD_RECONCILE_KEY, 'now') } };
  },
});

/** Never two deleters: beside a configured ascend plugin the jobs flow does not act. Read on synced caches, before any flow acts. */
const reschedulingRole = spec({
  name: 'rescheduling-role', layer: 'controller',
  consumes: [], provides: ['reschedulingRole'], emits: ['reschedulingRoleChanged'], watches: [],
  build: (_use, emit, x) => {
    const { options, log, metrics, client } = x.deps;
    const role = new ReschedulingRole({
      sources: x.sources, options, log: log.child({ controller: 'rescheduling_role' }), metrics, client, now: x.now,
      onChange: emit.reschedulingRoleChanged,
    });
    return { out: role, provide: { reschedulingRole: role }, on: {}, flow: { synced: () => role.start(), stop: () => role.stop() } };
  },
});

/** Job- and pod-level rescheduling, with the blast-radius breaker that gates every reschedule and node isolation. */
const jobs = spec({
  name: 'jobs', layer: 'controller',
  consumes: ['faultView', 'faultStore', 'recoveryStatus', 'recoveryHandOff', 'reschedulingRole'], provides: [], emits: [], watches: ['redecide', 'reschedulingRoleChanged'],
  build: ({ faultView: view, faultStore: store, recoveryStatus, recoveryHandOff, reschedulingRole: role }, _emit, x) => {
    const { options, log, metrics, clock, client } = x.deps;
    // The breaker was reset: every job is decided again (the breaker is built first: the jobs flow asks it).
    const reset = new Subject<void>();
    const breaker = new BreakerController({
      sources: x.sources, writer: x.writer, client, config: breakerConfigOf(options), domainLabel: options.breakerDomainLabel,
      superPodOf: (n) => store.nodeState(n)?.device?.data.cfg.SuperPodID,
      faultsOf: (n) => view.effective(n),
      onReset: () => reset.next(),
      log: log.child({ controller: 'breaker' }), metrics, clock,
    });
    const jobs = new JobsController({
      breaker,
      registered: recoveryStatus.isRegistered,
      handOff: recoveryHandOff,
      filtered: (nodes) => view.jobSnapshot(nodes, x.now()),
      ...(x.deps.jobs?.hooks === undefined ? {} : { hooks: x.deps.jobs.hooks }), client, sources: x.sources, deviceFaults: view, writer: x.writer,
      options, log: log.child({ controller: 'jobs' }), metrics, clock,
    });
    const resetSub = reset.subscribe(() => jobs.requeueAll());
    return {
      out: { jobs, breaker },
      provide: {},
      on: {
        redecide: (key) => jobs.loops?.decisions.queue.add(key),
        // Losing the role stops the loops at once (the plugin now deletes the fault pods); regaining
        // it needs loops started afresh, in a new process.
        reschedulingRoleChanged: (holds) => {
          if (!holds) {
            if (x.acting()) void Promise.all([jobs.stopLoops(), breaker.stop()]);
            return;
          }
          log.warn('rescheduling role regained: the jobs flow starts with the next process', { restart: x.deps.onReschedulingRoleRegained !== undefined });
          x.deps.onReschedulingRoleRegained?.();
        },
      },
      flow: {
        start: () => { jobs.start(); breaker.start(view.changes$.pipe(map((c) => c.nodes))); },
        startActing: () => {
          // Beside the ascend plugin it deletes the fault pods itself: never two deleters.
          if (!role.holds) return;
          // The breaker's state is restored before the first decision can ask it (rescheduling only: in
          // the ClusterD role nothing is rescheduled or isolated, so there is nothing to hold).
          if (jobs.loops !== undefined && !options.dryRun) breaker.startActing();
          jobs.startLoops();
        },
        stopActing: async () => { await jobs.stopLoops(); await breaker.stop(); },
        stop: async () => { resetSub.unsubscribe(); await breaker.stop(); await jobs.stop(); },
      },
    };
  },
});

/** Reports PodGroups refused as jobs (their owner claim not verified; state/job-index.ts refuses them). */
const jobIdentity = spec({
  name: 'job-identity', layer: 'controller',
  consumes: [], provides: [], emits: [], watches: [],
  build: (_use, _emit, x) => {
    const { options, log, metrics, clock, client } = x.deps;
    const c = new JobIdentityController({ sources: x.sources, client, log: log.child({ controller: 'job_identity' }), metrics, clock, dryRun: options.dryRun });
    return { out: c, provide: {}, on: {}, flow: { start: () => c.start(), startActing: () => c.startActing(), stopActing: () => c.stopActing(), stop: () => c.stop() } };
  },
});

/** ClusterD's <ns>/job-summary-<job> ConfigMaps and mindx-dl/current-job-statistic. */
const jobReports = spec({
  name: 'job-reports', layer: 'controller',
  consumes: [], provides: ['exceptionInputs', 'jobSummaries'], emits: [], watches: [],
  build: (_use, _emit, x) => {
    const { options, log, metrics, clock } = x.deps;
    const jobSummary = new JobSummaryController({ sources: x.sources, writer: x.writer, log, metrics, clock });
    const jobStatistic = new JobStatisticController({ sources: x.sources, summaries: jobSummary.store, writer: x.writer, log, metrics, clock, limits: options.outputLimits });
    return {
      out: { jobSummary, jobStatistic },
      provide: { exceptionInputs: jobSummary, jobSummaries: jobSummary },
      on: {},
      flow: {
        start: () => { jobSummary.start(); jobStatistic.start(); },
        // The statistic acts first: the summary's first changes are its events (ClusterD loads the
        // statistic ConfigMap first, then handles the informers' adds).
        startActing: () => { jobStatistic.startActing(); jobSummary.startActing(); },
        stopActing: async () => { await jobSummary.stopActing(); await jobStatistic.stopActing(); },
        stop: () => { jobSummary.stop(); jobStatistic.stop(); },
      },
    };
  },
});

/** Process-level recovery and hot switch (one FSM pair per registered job) and the gRPC server (leader only: controllers/grpc.controller.ts). */
const recoveryGrpc = spec({
  name: 'recovery-grpc', layer: 'controller',
  consumes: ['faultView', 'publicFaultIntake', 'reschedulingRole', 'jobSummaries'], provides: ['recoveryStatus', 'recoveryHandOff', 'faultSubscriptions'],
  emits: ['reannounce', 'redecide', 'jobFacts', 'grpcServing'], watches: [],
  build: ({ faultView: view, publicFaultIntake, reschedulingRole: role, jobSummaries }, { reannounce, redecide, jobFacts, grpcServing }, x) => {
    const { options, log, metrics, clock, client } = x.deps;
    // Registered jobs gone: the transport forgets them (recovery -> gRPC, both of this flow).
    const gone = new Subject<string>();
    const recovery = new RecoveryController({
      client, sources: x.sources, faults: { jobView: (n) => view.jobView(n), changes$: view.changes$, notify: reannounce },
      writer: x.writer, options, log: log.child({ controller: 'recovery' }), metrics, clock,
      // With our jobs pipeline acting, label `pause` makes it re-decide the job (docs/rules.md#decision.process-gives-up, then pod or job level).
      redecide, role,
      jobGone: (jobId) => gone.next(jobId),
    });
    const grpc = new GrpcController({
      options, sources: x.sources, deviceFaults: publicFaultIntake, faults: view, recovery, jobGone$: gone, client, jobSummary: jobSummaries,
      log: log.child({ component: 'grpc' }), metrics, clock, limits: { unaryQps: options.grpcUnaryQps },
      onFaultSubscription: (jobId, nodes) => jobFacts({ jobId, nodes }),
      ownNamespace: x.deps.pod?.namespace ?? process.env.POD_NAMESPACE,
    });
    return {
      out: { recovery, grpc },
      provide: { recoveryStatus: recovery, recoveryHandOff: recovery.handOff, faultSubscriptions: grpc.faults },
      on: {},
      flow: {
        start: () => recovery.start(), stop: () => recovery.stop(),
        // The gRPC Service selects the leader label: claimed once the server has tried to listen.
        startActing: () => { recovery.startActing(); void grpc.start().finally(() => grpcServing()); },
        stopActing: async () => { await grpc.stop(); await recovery.stopActing(); },
      },
    };
  },
});

/**
 * Every flow, in lifecycle order (each step runs down this list; the builder builds them in
 * dependency order). The intake's consumers read the fault view's published snapshot and follow its
 * changes, after the fault-view stage's pass.
 */
export const FLOW_SPECS: readonly FlowSpec<BuildContext, CallPorts, EventPorts>[] = [
  faultState, faultView, intake, faultPolicy, filters, relationFaults,
  clusterInfo, escalationState, manualInfo, lastGood, statisticFault, schedulingException, pingmesh,
  reschedulingRole, jobs, jobIdentity, jobReports, recoveryGrpc,
];

type OutOf<S> = S extends { readonly __out?: infer O } ? O : never;

/** What the builder hands the Manager: the parts (tests and operators read them), the flows, the graph. */
export interface BuiltManager {
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly store: FaultStore;
  readonly faults: FaultView;
  readonly faultStage: FaultViewStage;
  readonly deviceFaults: DeviceFaultsController;
  readonly faultPolicy: FaultPolicyController;
  readonly filters: FaultFiltersController;
  readonly relations: RelationFaultsController;
  readonly clusterInfo: ControllerLoop;
  readonly escalationState: ControllerLoop;
  readonly manualInfo: ControllerLoop;
  readonly lastGood: ControllerLoop;
  readonly statisticFault: ControllerLoop;
  readonly schedulingException: ControllerLoop;
  /** Pingmesh's super pods and the loop writing super-pod-<id>. */
  readonly pingmesh: { readonly state: SuperPodDevices; readonly loop: ControllerLoop };
  readonly reschedulingRole: ReschedulingRole;
  readonly jobs: JobsController;
  readonly breaker: BreakerController;
  readonly jobIdentity: JobIdentityController;
  readonly jobSummary: JobSummaryController;
  readonly jobStatistic: JobStatisticController;
  readonly recovery: RecoveryController;
  readonly grpc: GrpcController;
  readonly flows: readonly Flow[];
  readonly graph: FlowGraph;
  /** The process (the Manager) watching an event port, recorded in the graph as node `manager`. */
  watch<K extends keyof EventPorts & string>(port: K, handler: (v: EventPorts[K]) => void): void;
  subscribe(): void;
  unsubscribe(): void;
}

/** The one builder: sources, writer and every flow of FLOW_SPECS, from the injected clients, logger, metrics and clock. */
export function buildManager(deps: ManagerDeps, acting: () => boolean): BuiltManager {
  const { options, log, metrics, clock } = deps;
  deps.client.onRequest = (method, status) => metrics.apiRequests.inc({ method, code: String(status) });
  const sources = createSources(deps.client, {
    log: log.child({ component: 'sources' }), clock, clusterSystemNamespace: options.clusterSystemNamespace,
    customJobIdMaxChars: options.outputLimits ? MAX_CUSTOM_JOB_ID_CHARS : undefined,
    conditionMessageMaxChars: options.outputLimits ? MAX_EXCEPTION_MESSAGE_CHARS : undefined,
    // The one job index every reader of jobs shares (sources/job-index-feed.ts): claims as the flag says.
    npuClaims: options.trustPodNpuAnnotations ? 'annotation' : 'verified',
  });
  const now = (): number => clock.now();
  metrics.bounds.setLogger(log.child({ component: 'bounds' }), now);
  const writer = new ConfigMapWriter(deps.client, { metrics, dryRun: options.dryRun, log });
  const x: BuildContext = { deps, sources, writer, now, acting, loop: (r) => new ControllerLoop(r, { log, metrics, clock }) };
  const b = buildFlows(FLOW_SPECS, PORT_KINDS, x);
  const out = <S>(s: S & { readonly name: string }): OutOf<S> => b.outs.get(s.name) as OutOf<S>;
  const state = out(faultState);
  const { jobs: jobsController, breaker } = out(jobs);
  const { jobSummary, jobStatistic } = out(jobReports);
  const { recovery, grpc } = out(recoveryGrpc);
  return {
    sources, writer, store: state.store, faults: state.faults, faultStage: out(faultView), deviceFaults: out(intake),
    faultPolicy: out(faultPolicy), filters: out(filters), relations: out(relationFaults),
    clusterInfo: out(clusterInfo), escalationState: out(escalationState), manualInfo: out(manualInfo), lastGood: out(lastGood),
    statisticFault: out(statisticFault), schedulingException: out(schedulingException), pingmesh: out(pingmesh), reschedulingRole: out(reschedulingRole),
    jobs: jobsController, breaker, jobIdentity: out(jobIdentity), jobSummary, jobStatistic, recovery, grpc,
    flows: b.flows, graph: b.graph,
    watch: (port, handler) => b.watch('manager', port, handler),
    subscribe: () => b.subscribe(), unsubscribe: () => b.unsubscribe(),
  };
}
