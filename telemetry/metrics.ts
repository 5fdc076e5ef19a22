/**
 * Every metric name lives here, under one prefix, with its own Registry (no global default
 * registry), following Prometheus naming: base units, `_total` for counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ReflectorHealth } from '../runtime/reflector.ts';
import { BoundReporter } from './bounds.ts';
import { GoodputTracker } from './goodput.ts';
import { DEFAULT_MAX_SERIES_PER_METRIC, OVERFLOW_LABEL, SeriesCap } from './series-cap.ts';

export const PREFIX = 'clusterd_';

export class Metrics {
  readonly registry = new Registry();

  readonly watchHealthy = new Gauge({ name: `${PREFIX}watch_healthy`, help: '1 when the informer is synced and connected, else 0.', labelNames: ['source'], registers: [this.registry] });
  readonly watchSecondsSinceContact = new Gauge({ name: `${PREFIX}watch_seconds_since_contact`, help: 'Seconds since the apiserver last answered this informer (event, bookmark, list or watch start).', labelNames: ['source'], registers: [this.registry] });
  readonly watchRestarts = new Gauge({ name: `${PREFIX}watch_restarts`, help: 'Watch or list failures retried with backoff since start.', labelNames: ['source'], registers: [this.registry] });
  readonly watchRelists = new Gauge({ name: `${PREFIX}watch_relists`, help: 'Full lists (initial and after 410 Gone) since start.', labelNames: ['source'], registers: [this.registry] });
  readonly watchObjects = new Gauge({ name: `${PREFIX}watch_cached_objects`, help: 'Objects held in the informer cache.', labelNames: ['source'], registers: [this.registry] });

  readonly apiRequests = new Counter({ name: `${PREFIX}api_requests_total`, help: 'Requests to the apiserver by method and HTTP status (0 = no answer).', labelNames: ['method', 'code'], registers: [this.registry] });
  readonly apiWrites = new Counter({ name: `${PREFIX}api_writes_total`, help: 'Writes made by reconcilers and actions, by object kind and result.', labelNames: ['kind', 'result'], registers: [this.registry] });
  readonly apiConflicts = new Counter({ name: `${PREFIX}api_conflicts_total`, help: 'Optimistic-concurrency conflicts (HTTP 409) on writes, by object kind.', labelNames: ['kind'], registers: [this.registry] });

  readonly invalidInput = new Counter({ name: `${PREFIX}invalid_input_total`, help: 'Inputs, or parts of inputs, rejected and quarantined (last good state kept), by format and reason (README: Bad input).', labelNames: ['format', 'reason'], registers: [this.registry] });
  readonly unknownNodeInputs = new Counter({ name: `${PREFIX}unknown_node_inputs_total`, help: 'Device-info and node-info ConfigMaps accepted for a node that has no Node object (ClusterD accepts them too), by format.', labelNames: ['format'], registers: [this.registry] });
  readonly publicFaultsRefused = new Counter({ name: `${PREFIX}public_faults_refused_total`, help: 'Public faults refused by sender check: reason namespace = a public-fault ConfigMap outside --public-fault-namespaces (one per message), unknown_node = a fault for a node name with no Node object (one per fault and node; --public-fault-unknown-nodes takes them); via configmap, grpc or reload (statistic-fault-info at start).', labelNames: ['reason', 'via'], registers: [this.registry] });
  readonly faults = new Gauge({ name: `${PREFIX}faults`, help: 'Active faults by source, level and code.', labelNames: ['source', 'level', 'code'], registers: [this.registry] });
  readonly nodeFaults = new Gauge({ name: `${PREFIX}node_faults`, help: 'Active faults on a node (its chips, the node itself, its switch) by level; only faulty nodes have series, past the series cap node="other".', labelNames: ['node', 'level'], registers: [this.registry] });
  readonly npuFaults = new Gauge({ name: `${PREFIX}npu_faults`, help: 'Active faults on one NPU by level; only faulty chips have series, past the series cap node="other",npu="other".', labelNames: ['node', 'npu', 'level'], registers: [this.registry] });
  readonly escalations = new Counter({ name: `${PREFIX}escalations_total`, help: 'Fault level escalations by rule (frequency, duration, manual_separation, parameter_plane, relation).', labelNames: ['rule', 'level'], registers: [this.registry] });
  readonly filterVerdicts = new Counter({ name: `${PREFIX}fault_filter_verdicts_total`, help: 'Fault filter verdict changes (custom-filter, uce-accompany, step-retry, recover-in-place, stress-test) by verdict (hide, drop, relevel, report).', labelNames: ['filter', 'verdict'], registers: [this.registry] });
  readonly npuClaimsUntrusted = new Counter({ name: `${PREFIX}npu_claims_untrusted_total`, help: 'Pod huawei.com/AscendReal claims that do not count (policy/jobs/npu-claims.ts) by reason: no-npu-request, more-than-requested (the pod requests fewer NPUs than it names; counted when a pod starts to be so), contested (a chip claimed by pods of two jobs: no filter hides its faults; counted when a fault starts to be so).', labelNames: ['reason'], registers: [this.registry] });
  readonly forceRelease = new Counter({ name: `${PREFIX}force_release_total`, help: 'SuperPod IPC force release (cluster-system/fault-job-info) by outcome: written (a job\'s entry), skipped (no entry: not an A3 SuperPod job, no other node, no fault node in a SuperPod), skipped_a5 (an A5 job: no entry and no wait for NodeD), cleared, clear_skipped (nothing to clear, or not a fault node of the entry), pruned (entry of an unknown job).', labelNames: ['outcome'], registers: [this.registry] });
  readonly relationDecisions = new Counter({ name: `${PREFIX}relation_fault_decisions_total`, help: 'Relation-fault decisions by strategy (Separate, SubHealth: pod label fault-type set; none: a relation fault timed out without a trigger).', labelNames: ['strategy'], registers: [this.registry] });
  readonly jobIdentityRefused = new Counter({ name: `${PREFIX}job_identity_refused_total`, help: 'PodGroups refused as jobs because their controller ownerReference names a Volcano Job or AscendJob that does not exist in their namespace with that name and UID (owner_not_found, owner_uid_mismatch, owner_other_namespace, owner_other_name); counted once per PodGroup and claim; README "Threat model".', labelNames: ['reason'], registers: [this.registry] });
  readonly decisionsAwaitingView = new Counter({ name: `${PREFIX}job_decisions_awaiting_view_total`, help: 'Job decision passes put off (about 20 ms) because one of the job\'s nodes had a change the fault view had not evaluated yet (a pod that just arrived, a start): the job is decided on the view after it.', registers: [this.registry] });
  readonly podLevelWidenings = new Counter({ name: `${PREFIX}pod_level_widenings_total`, help: 'Pod-level restarts widened because their replacement pods stayed Pending, by step: rack, super-pod, level1 (a block of the job, docs/rules.md#resched.block-escalation) or job.', labelNames: ['step'], registers: [this.registry] });
  readonly decisions = new Counter({ name: `${PREFIX}decisions_total`, help: 'Job recovery decisions by kind (job, pod, process, hot_switch, none) and outcome.', labelNames: ['kind', 'outcome'], registers: [this.registry] });
  readonly jobsRefused = new Counter({ name: `${PREFIX}jobs_refused_total`, help: 'Jobs refused before any write because their identity (the PodGroup owner\'s uid or name) cannot be a ConfigMap key or name, by reason (uid, name); counted once per job identity.', labelNames: ['reason'], registers: [this.registry] });
  readonly jobStateUnreadable = new Counter({ name: `${PREFIX}job_state_unreadable_total`, help: 'Job journal records found unreadable (kept untouched; the job is not decided until that one record is removed); counted once per record text.', registers: [this.registry] });
  readonly jobJournalKeyFailures = new Counter({ name: `${PREFIX}job_journal_key_failures_total`, help: 'Job journal changes whose write failed on their own (isolated from the rest of a group commit), by outcome: rejected (a put failed), retry (a lazy change backs off), dropped (a lazy change gave up after its retry cap).', labelNames: ['outcome'], registers: [this.registry] });
  readonly lastGoodDamaged = new Counter({ name: `${PREFIX}last_good_damaged_total`, help: 'Persisted last good device-info entries found damaged at start (kept untouched), by what the node got instead: published (its last published cluster-info entry), none.', labelNames: ['fallback'], registers: [this.registry] });
  readonly decisionRecords = new Counter({ name: `${PREFIX}decision_records_total`, help: 'DecisionRecord objects (the durable decision history, kubectl clusterd explain) by result: recorded, duplicate (a replayed decision, already recorded), failed (not written; the decision still stands, its Event and log line remain), pruned (deleted by the per-job, total or TTL bound).', labelNames: ['result'], registers: [this.registry] });
  readonly reschedules = new Counter({ name: `${PREFIX}job_reschedules_total`, help: 'Restarts carried out, by job namespace (job_namespace: `namespace` is the scrape target\'s label) and reason.', labelNames: ['job_namespace', 'reason'], registers: [this.registry] });
  readonly jobRecoveryStages = new Histogram({ name: `${PREFIX}job_recovery_seconds`, help: 'Seconds from the first fault observed in a job\'s recovery episode to each stage (decided, pods_deleted, pods_running, resumed), once per episode; README "Goodput".', labelNames: ['job_namespace', 'job_name', 'stage'], buckets: [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800], registers: [this.registry] });
  readonly jobLostSeconds = new Counter({ name: `${PREFIX}job_lost_seconds_total`, help: 'Seconds of training lost to faults: per episode, first fault observed -> training resumed (process-level recovery) or replacement pods Running (otherwise), counted up stage by stage; README "Goodput".', labelNames: ['job_namespace', 'job_name'], registers: [this.registry] });
  readonly faultToAction = new Histogram({ name: `${PREFIX}fault_to_action_seconds`, help: 'Time from a fault being observed to the action that handles it.', labelNames: ['action'], buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [this.registry] });
  readonly reconciles = new Counter({ name: `${PREFIX}reconcile_total`, help: 'Reconcile passes by controller and result.', labelNames: ['controller', 'result'], registers: [this.registry] });
  readonly reconcileDuration = new Histogram({ name: `${PREFIX}reconcile_duration_seconds`, help: 'Duration of reconcile passes.', labelNames: ['controller'], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5], registers: [this.registry] });
  readonly queueDepth = new Gauge({ name: `${PREFIX}workqueue_depth`, help: 'Keys waiting in a controller work queue.', labelNames: ['controller'], registers: [this.registry] });
  readonly leader = new Gauge({ name: `${PREFIX}leader`, help: '1 while this replica holds the leader lease.', registers: [this.registry] });
  readonly leaderLabelChanges = new Counter({ name: `${PREFIX}leader_label_changes_total`, help: 'Writes of the leader pod label clusterd-ts.io/leader (the gRPC Service selects it), by change (set: own pod, remove: own pod, clear: another pod) and result (success, conflict, gone, error).', labelNames: ['change', 'result'], registers: [this.registry] });
  readonly recoveryJobs = new Gauge({ name: `${PREFIX}recovery_jobs`, help: 'Jobs in the process-recovery state machine, by state.', labelNames: ['state'], registers: [this.registry] });
  readonly invalidHttpRequests = new Counter({ name: `${PREFIX}http_bad_requests_total`, help: 'HTTP requests on the probe/metrics port that were refused (target: not an origin-form path, method: not GET/HEAD, malformed_http: unparsable request, handler_error: an exception inside a handler, answered 500).', labelNames: ['reason'], registers: [this.registry] });
  readonly grpcRequests = new Counter({ name: `${PREFIX}grpc_requests_total`, help: 'gRPC requests by method and ClusterD status code.', labelNames: ['method', 'code'], registers: [this.registry] });
  readonly grpcCallerRefused = new Counter({ name: `${PREFIX}grpc_caller_refused_total`, help: 'gRPC calls refused by --grpc-caller-check=pod-ip (the caller\'s address is no pod of the job, or neither a pod in the namespace the call names nor a system caller), by method.', labelNames: ['method'], registers: [this.registry] });
  readonly reschedulingYielded = new Gauge({ name: `${PREFIX}rescheduling_yielded`, help: '1 while clusterd-ts, asked to reschedule (--rescheduling), leaves it to Huawei\'s ascend plugin because Volcano\'s scheduler configuration enables it (--reschedule-beside-ascend-plugin takes the role anyway); 0 while it holds the role or was not asked to; README "Running beside or instead of ClusterD".', registers: [this.registry] });
  readonly breakerTripped = new Gauge({ name: `${PREFIX}breaker_tripped`, help: 'Blast-radius breaker: 1 while the scope (cluster or a switch domain) is tripped and holds new isolations and reschedules; a domain\'s series is removed when it is reset.', labelNames: ['scope'], registers: [this.registry] });
  readonly breakerHeld = new Counter({ name: `${PREFIX}breaker_held_total`, help: 'Node isolations (nodes) and job reschedules (jobs) held by a tripped breaker scope: decided and explained, not carried out.', labelNames: ['kind'], registers: [this.registry] });
  readonly breakerCounted = new Counter({ name: `${PREFIX}breaker_counted_total`, help: 'Blast-radius breaker: what it counted (each key once per window), by kind (chips, nodes, jobs) and the source the count came from (device-info, public-fault, node-info, node-ready, switch, pod; several joined by +).', labelNames: ['kind', 'source'], registers: [this.registry] });
  readonly flapDamped = new Counter({ name: `${PREFIX}flap_damped_total`, help: 'Flap damping: hold = a flapping chip or node held faulty in cluster-info (the placement view) after it recovered (once per recovery), defer = a job restart for a re-fault of the hardware it was just restarted for, deferred to the end of the damping period.', labelNames: ['rule'], registers: [this.registry] });
  readonly boundHits = new Counter({ name: `${PREFIX}bound_hits_total`, help: 'Inputs refused, dropped or aggregated because a resource bound was reached, by bound (public_faults, metric_series, grpc_connections, grpc_connections_per_ip, grpc_fault_roles_per_job, grpc_fault_publishers_per_client, grpc_fault_publishers, grpc_side_streams_per_job, grpc_config_registrations, grpc_job_clients, grpc_stream_pending_writes, last_good_bytes, job_statistics, job_statistic_bytes, custom_job_id_chars, scheduling_exception_message_chars, scheduling_exception_bytes); README "Reliability and resource bounds".', labelNames: ['bound'], registers: [this.registry] });

  /** Every bound reports through here: counter above plus a rate-limited log line. */
  readonly bounds = new BoundReporter(this.boundHits);
  /** Series caps of the metrics whose label values come from input (fault codes, job namespaces). */
  readonly faultSeries: SeriesCap;
  readonly rescheduleSeries: SeriesCap;
  readonly nodeFaultSeries: SeriesCap;
  readonly npuFaultSeries: SeriesCap;
  /** One series set per job for the goodput metrics (both share the cap: they have the same jobs). */
  readonly jobSeries: SeriesCap;
  /** Per-job recovery episodes behind job_recovery_seconds / job_lost_seconds_total. */
  readonly goodput: GoodputTracker;

  constructor(opts: { processMetrics?: boolean; maxSeriesPerMetric?: number } = {}) {
    const maxSeries = opts.maxSeriesPerMetric ?? DEFAULT_MAX_SERIES_PER_METRIC;
    this.faultSeries = new SeriesCap(`${PREFIX}faults`, maxSeries, this.bounds);
    this.rescheduleSeries = new SeriesCap(`${PREFIX}job_reschedules_total`, maxSeries, this.bounds);
    this.nodeFaultSeries = new SeriesCap(`${PREFIX}node_faults`, maxSeries, this.bounds);
    this.npuFaultSeries = new SeriesCap(`${PREFIX}npu_faults`, maxSeries, this.bounds);
    this.jobSeries = new SeriesCap(`${PREFIX}job_recovery_seconds`, maxSeries, this.bounds);
    this.goodput = new GoodputTracker({ stages: this.jobRecoveryStages, lost: this.jobLostSeconds, cap: this.jobSeries });
    if (opts.processMetrics !== false) {
      collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
      // prom-client names these gauges `_total`, which Prometheus reserves for counters (promtool
      // rejects them); the same facts are in nodejs_active_handles / _requests / _resources.
      for (const n of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
        this.registry.removeSingleMetric(`${PREFIX}${n}`);
      }
    }
  }

  /** `clusterd_job_reschedules_total`, past the series cap under `job_namespace="other"`. */
  countReschedule(namespace: string, reason: string): void {
    const own = this.rescheduleSeries.admit(`${namespace}\u0000${reason}`);
    this.reschedules.inc(own ? { job_namespace: namespace, reason } : { job_namespace: OVERFLOW_LABEL, reason: OVERFLOW_LABEL });
  }

  observeWatchHealth(health: readonly ReflectorHealth[], nowMs: number): void {
    for (const h of health) {
      this.watchHealthy.set({ source: h.name }, h.synced && h.connected ? 1 : 0);
      this.watchSecondsSinceContact.set({ source: h.name }, h.lastContactMs === 0 ? 0 : (nowMs - h.lastContactMs) / 1000);
      this.watchRestarts.set({ source: h.name }, h.restarts);
      this.watchRelists.set({ source: h.name }, h.relists);
      this.watchObjects.set({ source: h.name }, h.objects);
    }
  }
}
