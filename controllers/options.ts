/**
 * Every controller flag, its default and its range, in one table: main.ts parses argv/env with it,
 * the Helm chart's values map onto it, and the README's configuration reference lists it.
 * Out-of-range values are rejected at start with a clear message (never silently clamped).
 */
import { parseArgs } from 'node:util';
import { RECOVERY_TIMING_KEYS, RECOVERY_TIMINGS_PATTERN } from '../policy/recovery/recovery-timings.ts';
import { DEFAULT_FLAP_DAMPING, type FlapDampingConfig } from '../policy/faults/flap-damping.ts';

/**
 * Where public-fault senders write by default: the MindCluster namespaces, which only cluster
 * administrators may write (docs/rbac.md). ClusterD reads every namespace.
 */
export const PUBLIC_FAULT_SENDER_NAMESPACES_DEFAULT = 'mindx-dl,kube-system,cluster-system';
/** `*`, or namespace names (RFC 1123 labels) separated by commas. */
const PUBLIC_FAULT_NAMESPACES_PATTERN = /^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(,[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*)$/;
/** Namespace names (RFC 1123 labels) separated by commas. */
const NAMESPACE_LIST_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(,[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

interface FlagSpec {
  readonly type: 'string' | 'boolean' | 'number';
  readonly default: string | boolean | number;
  readonly help: string;
  readonly env?: string;
  readonly min?: number;
  readonly max?: number;
  readonly choices?: readonly string[];
  /** A string value must match this (checked at start, like min/max). */
  readonly pattern?: RegExp;
}

export const FLAGS = {
  kubeconfig: { type: 'string', default: '', env: 'KUBECONFIG', help: 'kubeconfig path; empty = in-cluster service account, else ~/.kube/config' },
  'log-level': { type: 'string', default: 'info', choices: ['debug', 'info', 'warn', 'error'], help: 'log level' },
  'http-port': { type: 'number', default: 11253, min: 0, max: 65535, help: 'port for /healthz, /readyz and /metrics (ClusterD probes 11253)' },
  'http-host': { type: 'string', default: '0.0.0.0', help: 'address for the HTTP server' },
  'grpc-port': { type: 'number', default: 8899, min: 0, max: 65535, help: 'ClusterD gRPC port (Recover, fault.Fault, PubFault)' },
  'grpc-host': { type: 'string', default: '0.0.0.0', env: 'POD_IP', help: 'address for the gRPC server' },
  'grpc-tls-cert': { type: 'string', default: '', help: 'PEM server certificate file; empty = plaintext (ClusterD default)' },
  'grpc-tls-key': { type: 'string', default: '', help: 'PEM private key file for --grpc-tls-cert' },
  'grpc-unary-qps': { type: 'number', default: 1_000, min: 1, max: 100_000, help: 'gRPC: requests per second of every unary method but HealthCheck, shared token bucket (rate = burst)' },
  'max-served-jobs': { type: 'number', default: 10_000, min: 1, max: 100_000, help: 'gRPC: jobs served at once (ClusterD: 10,000)' },
  'grpc-caller-check': { type: 'string', default: 'pod-ip', choices: ['pod-ip', 'off'], help: 'gRPC: pod-ip = a Recover call on a job (Init, Register, subscriptions, reports) is served only from the address (status.podIP/podIPs) of a running pod of that job, fault.Fault Register / SubscribeFaultMsgSignal for a job only from a pod in the job\'s namespace, TrainingDataTrace SubscribeDataTraceSwitch only from a pod of that job, TrainingDataTrace Modify/Get of namespace/name and config.Config for a MindIE job id only from a pod in that job\'s namespace or a system caller (--grpc-system-namespaces), job.Job only from a pod or a system caller, a pod getting only its namespaces\' jobs, else PERMISSION_DENIED (cluster-wide fault.Fault, HealthCheck and GetFaultMsgSignal: open); off = ClusterD: any address may act on and read any job' },
  'grpc-system-namespaces': { type: 'string', default: PUBLIC_FAULT_SENDER_NAMESPACES_DEFAULT, pattern: NAMESPACE_LIST_PATTERN, help: 'gRPC, with --grpc-caller-check=pod-ip: pods of these namespaces (comma-separated) and of the controller\'s own, and loopback addresses no pod has (kubectl port-forward, a sidecar), are system callers: they may switch and read any job\'s TrainingDataTrace, get every job\'s job.Job signals and any MindIE job id\'s config.Config rank table. A hostNetwork pod calls from its node\'s address, so every hostNetwork pod on a node running a system daemonset is a system caller too' },
  'grpc-max-roles-per-job': { type: 'number', default: 16, min: 0, max: 100_000, help: 'gRPC fault.Fault: roles registered for one job, further new roles refused with RESOURCE_EXHAUSTED; 0 = no cap (ClusterD)' },
  'grpc-max-publishers-per-client': { type: 'number', default: 64, min: 0, max: 1_000_000, help: 'gRPC fault.Fault: publishers (job, role) registered from one client address, the cluster-wide ones included, further new ones refused with RESOURCE_EXHAUSTED; 0 = no cap (ClusterD)' },
  'grpc-max-fault-publishers': { type: 'number', default: 10_000, min: 0, max: 1_000_000, help: 'gRPC fault.Fault: publishers (job, role) registered in total, further new ones refused with RESOURCE_EXHAUSTED; 0 = no cap (ClusterD: only the 10,000 jobs are capped)' },
  'grpc-stream-max-pending': { type: 'number', default: 64, min: 1, max: 100_000, help: 'gRPC: messages a server stream may have queued for a client that does not read; at this many its stream is reset (CANCEL) and dropped (ClusterD queues up to 1,000 per fault publisher)' },
  'recovery-report-timeout-seconds': { type: 'number', default: 900, min: 1, max: 3600, help: 'process-level recovery, hot switch and the O&M operations (stress test, NIC switch): wait this long for each agent report and for the message of an O&M result stream (ClusterD: 15 min)' },
  'recovery-timings': { type: 'string', default: '', pattern: RECOVERY_TIMINGS_PATTERN, help: 'process-level recovery: override FSM waits in ms, e.g. preExitWait=1000,forceRelease=0,flush=200 (keys: ' + RECOVERY_TIMING_KEYS.join(', ') + '); empty = ClusterD\'s waits. For tests and tuning' },
  'recovery-feed-window-ms': { type: 'number', default: 100, min: 0, max: 5_000, help: 'process-level recovery: coalesce a job\'s pod/fault changes within this window before feeding its FSMs' },
  'hot-switch-new-pod-timeout-seconds': { type: 'number', default: 60, min: 1, max: 600, help: 'hot switch: the backup pod must be Running within this time (ClusterD: 1 min)' },
  'hot-switch-backup-pods': { type: 'boolean', default: false, help: 'hot switch without the Ascend Operator (Volcano jobs): create and delete backup pods from the faulty pod\'s spec on needOperatorOpe' },
  rescheduling: { type: 'boolean', default: true, help: 'act as the rescheduling half of Volcano\'s ascend plugin (delete pods, write vcjob-fault-npu-cm, job-reschedule-reason, tor-share-cm); false = ClusterD role only, beside the real plugin' },
  'reschedule-beside-ascend-plugin': { type: 'boolean', default: false, help: 'with --rescheduling: keep the rescheduling role even while Huawei\'s ascend plugin (volcano-npu_*) is configured in Volcano\'s scheduler (ConfigMaps of volcano-system with key volcano-scheduler.conf); off (safe): while it is, clusterd-ts steps back to ClusterD\'s role, because that plugin deletes the fault pods and writes the job ConfigMaps itself and two deleters must never run (logged, Event, clusterd_rescheduling_yielded, /readyz?verbose)' },
  'dry-run': { type: 'boolean', default: false, help: 'shadow mode: decide and explain (logs, metrics) but write, act on and post Events for nothing' },
  'leader-elect': { type: 'boolean', default: false, help: 'leader election over a coordination.k8s.io Lease; only the leader writes' },
  'leader-election-namespace': { type: 'string', default: 'mindx-dl', env: 'POD_NAMESPACE', help: 'namespace of the Lease' },
  'lease-duration-seconds': { type: 'number', default: 15, min: 5, max: 300, help: 'Lease duration' },
  'grace-over-time-seconds': { type: 'number', default: 900, min: 2, max: 3600, help: 'job-level grace deletion: force after this many seconds (Volcano grace-over-time)' },
  'pending-escalation-seconds': { type: 'number', default: 15, min: 5, max: 3600, help: 'pod-level rescheduling escalates to job level when a replacement pod stays Pending this long (time-based equivalent of Volcano\'s 12 pending sessions at 1 s, see policy/jobs/job-pending-escalation.ts)' },
  'rack-escalation-ms': { type: 'number', default: 3750, min: 500, max: 3_600_000, help: 'an A5 pod-level restart (huawei.com/schedule_policy=chip8-node8-ra64-sp with ra-block and sp-block) whose replacement stays Pending this long also deletes the pods of the fault pod\'s rack block (Volcano\'s 3 pending sessions, docs/rules.md#resched.block-escalation)' },
  'super-pod-escalation-ms': { type: 'number', default: 7500, min: 500, max: 3_600_000, help: 'a super-pod (sp-block) or multilevel pod-level restart whose replacement stays Pending this long also deletes the pods of the fault pod\'s logical super-pod or level-1 group (Volcano\'s 6 pending sessions, docs/rules.md#resched.block-escalation)' },
  'cluster-info-refresh-seconds': { type: 'number', default: 5, min: 0, max: 55, help: 'write the current cluster-info-* content (newer UpdateTimes included) at least this often, as ClusterD (5 s); unchanged content is not written; 0 = only on change' },
  'cluster-info-refresh-annotation': { type: 'boolean', default: false, help: 'extension: bump annotation clusterd-ts.io/refreshed-at on cluster-info-* every 30 s, so Volcano\'s informers see an event even on an idle cluster (3 watch events per 30 s to every scheduler); off = ClusterD: no annotation (a left-over one is removed)' },
  'refuse-malformed-job-identity': { type: 'boolean', default: true, help: 'refuse, before any write, a job whose PodGroup owner uid is not a DNS-1123 label or whose owner name is not a valid object name (the apiserver validates neither in an ownerReference; the uid keys the shared job journal): logged once, counted in clusterd_jobs_refused_total, an Event on the PodGroup; false = ClusterD: such a job is decided and acted on like any other, its decision state kept in memory only (never in a shared write)' },
  'node-taints': { type: 'boolean', default: false, help: 'extension: taint Nodes with node-wide faults huawei.com/clusterd-fault=<level>:NoSchedule (PreferNoSchedule for sub-health) and lift the taint when they recover; off = ClusterD: no taints (a left-over one of ours is removed)' },
  'node-taint-hold-seconds': { type: 'number', default: 60, min: 0, max: 3600, help: 'with --node-taints: lift the taint after the node has had no node-wide fault for this long (a flapping report does not make it blink)' },
  'breaker-window-seconds': { type: 'number', default: 600, min: 10, max: 86_400, help: 'blast-radius breaker: sliding window over which isolations and reschedules are counted' },
  'breaker-domain-nodes': { type: 'number', default: 8, min: 0, max: 100_000, help: 'blast-radius breaker: nodes isolated (tainted) in one switch domain within the window before the domain trips; 0 = no limit' },
  'breaker-domain-chips': { type: 'number', default: 32, min: 0, max: 1_000_000, help: 'blast-radius breaker: chips taken out of service in one switch domain within the window before the domain trips; 0 = no limit' },
  'breaker-domain-jobs': { type: 'number', default: 16, min: 0, max: 100_000, help: 'blast-radius breaker: job reschedules with faults in one switch domain within the window before the domain trips; 0 = no limit' },
  'breaker-cluster-nodes': { type: 'number', default: 160, min: 0, max: 1_000_000, help: 'blast-radius breaker: nodes isolated cluster-wide within the window before the cluster scope trips; 0 = no limit' },
  'breaker-cluster-chips': { type: 'number', default: 640, min: 0, max: 10_000_000, help: 'blast-radius breaker: chips taken out of service cluster-wide within the window before the cluster scope trips; 0 = no limit' },
  'breaker-cluster-jobs': { type: 'number', default: 200, min: 0, max: 1_000_000, help: 'blast-radius breaker: job reschedules cluster-wide within the window before the cluster scope trips; 0 = no limit' },
  'breaker-auto-reset-seconds': { type: 'number', default: 0, min: 0, max: 604_800, help: 'blast-radius breaker: a tripped scope resets itself after this long; 0 = only by kubectl clusterd breaker reset (annotation clusterd-ts.io/breaker-reset)' },
  'breaker-domain-label': { type: 'string', default: '', help: 'blast-radius breaker: node label whose value names the node\'s switch domain / rack; empty or absent on a node = the device-info SuperPodID (superpod-<id>), else cluster scope only' },
  'flap-damping-seconds': { type: 'number', default: DEFAULT_FLAP_DAMPING.holdMs / 1000, min: 0, max: 3600, help: 'flap damping: a flapping chip or node stays faulty in the scheduler\'s placement view (cluster-info) until healthy this long, and a job is restarted at most once per this period for re-faults of the same hardware; 0 = off' },
  'flap-damping-recoveries': { type: 'number', default: DEFAULT_FLAP_DAMPING.recoveries, min: 1, max: 100, help: 'flap damping: recoveries within --flap-damping-window-seconds that make a chip or node flapping (held faulty)' },
  'flap-damping-window-seconds': { type: 'number', default: DEFAULT_FLAP_DAMPING.windowMs / 1000, min: 1, max: 3600, help: 'flap damping: window in which recoveries are counted' },
  'persist-policy-state': { type: 'boolean', default: true, help: 'extension, on by default: persist the fault policy\'s state (manual-separation counters and pending judgements, --device-plugin-rules escalation timers, relation-fault and filter memories) in ConfigMap clusterd-ts-escalation-state (in --cluster-system-namespace), and each registered job\'s process-recovery and hot-switch FSM state in mindx-dl/clusterd-ts-recovery-<job uid>, so a restart or a new leader continues where the last one stopped; off = ClusterD: that state lives in memory only, a restart starts counting anew (separated NPUs are still kept, read back from clusterd-manual-info-cm) and forgets registered jobs (TaskD registers again once its stream breaks), recoveries in flight and hot-switch downgrades; left-over state objects are then neither read nor written' },
  'decision-history-per-job': { type: 'number', default: 50, min: 1, max: 1_000, help: 'decision history (DecisionRecord objects, kubectl clusterd explain): keep at most this many records per job, newest first' },
  'decision-history-max-records': { type: 'number', default: 5_000, min: 10, max: 100_000, help: 'decision history: keep at most this many records cluster-wide (each under ~8 KiB), newest first' },
  'decision-history-ttl-hours': { type: 'number', default: 168, min: 1, max: 8_760, help: 'decision history: delete records older than this (also of jobs that are gone)' },
  'burst-window-ms': { type: 'number', default: 200, min: 0, max: 10_000, help: 'burst window per job: the first fault event of a quiet job is decided at once; the events that follow within this window are coalesced into one decision at its end' },
  'link-down-memory-seconds': { type: 'number', default: 180, min: 1, max: 3600, help: 'step retry: a UB switch link-down ([0x08520003,na,L2,na]) last reported this long ago still counts for an HCCL retry (8C1F860B) of a job on its node: the retry fault keeps its level (not RestartBusiness) and the link-down is forced into the scheduler view again, so the relation rule separates the node (ClusterD: 180 s)' },
  'relation-fault-config-dir': { type: 'string', default: '', help: 'relation faults: a directory with ClusterD\'s relationFaultCustomization.json (trigger and relation codes -> Separate/SubHealth) and faultDuration.json (how long a relation code waits for its trigger), read at start, as ClusterD reads /home/hwMindX; a file missing or invalid is logged and counted and the shipped one is used; empty = the shipped files (300 s windows)' },
  'device-plugin-rules': { type: 'boolean', default: false, help: 'extension: also apply the device plugin\'s detection rules centrally (re-level codes from kube-system/mindx-dl-fault-config, FaultFrequency/FaultDuration escalation such as 81078603 held > 20 s -> PreSeparateNPU); off = ClusterD: the level the device plugin wrote is kept (it applies these rules itself)' },
  'trust-pod-npu-annotations': { type: 'boolean', default: false, help: 'ClusterD: a pod\'s huawei.com/AscendReal counts as written, so a job\'s PodGroup fault filters (huawei.com/schedule.filter.*) and recover-in-place hide faults on any chip its pods name, and such a pod keeps a chip in use; off (safe): a claim counts only when the pod requests at least that many NPUs, and a job\'s filters hide only faults on chips no other job\'s pod claims (node-wide faults: only when it is the node\'s only NPU job)' },
  pingmesh: { type: 'boolean', default: true, help: 'pingmesh: publish cluster-system/super-pod-<id> (the devices of each A3/A5 super pod, for NodeD) while cluster-system/pingmesh-config (label mx-consumer-cim=true) switches detection on, as ClusterD does when RAS_NET_ROOT_PATH names a directory; false = never written (ClusterD\'s stock Deployment sets no RAS_NET_ROOT_PATH)' },
  'pingmesh-check-interval-ms': { type: 'number', default: 5_000, min: 0, max: 60_000, help: 'pingmesh: a node or pingmesh-config change is published within this time, changes meanwhile in one pass (ClusterD\'s ticker: 5 s)' },
  'cluster-system-namespace': { type: 'string', default: 'cluster-system', help: 'namespace of clusterd-config-cm, clusterd-manual-info-cm and the persisted escalation state (ClusterD: cluster-system)' },
  'max-public-faults': { type: 'number', default: 50_000, min: 1, max: 1_000_000, help: 'public faults held cluster-wide, one per (node, resource + fault id) (ClusterD: 50,000); new ones past it are refused and logged' },
  'public-fault-namespaces': { type: 'string', default: PUBLIC_FAULT_SENDER_NAMESPACES_DEFAULT, pattern: PUBLIC_FAULT_NAMESPACES_PATTERN, help: 'public-fault ConfigMaps (label mc-consumer-publicfault=true) are taken only from these namespaces, comma-separated (the senders\' namespaces: give them write access there, tenants none); other namespaces are refused, logged and counted; `*` = any namespace, as ClusterD' },
  'public-fault-unknown-nodes': { type: 'boolean', default: false, help: 'take public faults (ConfigMap and gRPC PubFault) for node names that have no Node object, as ClusterD; off: such a fault is refused, logged and counted (not held: it does not apply if the Node appears later, the sender sends it again)' },
  'output-limits': { type: 'boolean', default: true, help: 'cluster-wide outputs that copy what tenants write stay writable: in mindx-dl/current-job-statistic a job\'s custom-job-id annotation over 253 characters is left out of its entry, in cluster-system/scheduling-exception-report a condition message (a PodGroup\'s status is its owner\'s to write) is cut to 4096 characters, and both ConfigMaps are kept within their 1 MiB by leaving entries out of a write (statistic: stopped jobs first; report: the largest first); the job and PodGroup caches keep no more of those strings (logged, bound_hits_total{bound="custom_job_id_chars"|"job_statistic_bytes"|"scheduling_exception_message_chars"|"scheduling_exception_bytes"}); off = ClusterD: copied whole and every entry written, so past 1 MiB every write fails and the output stops updating for every job' },
  'max-series-per-metric': { type: 'number', default: 1_000, min: 10, max: 100_000, help: 'series of a metric whose labels come from input (fault codes, job namespaces); later label values are aggregated into "other"' },
  'node-name': { type: 'string', default: '', env: 'NODE_NAME', help: 'node this replica runs on (logs only)' },
} as const satisfies Record<string, FlagSpec>;

export type FlagName = keyof typeof FLAGS;
type ValueOf<S> = S extends { type: 'number' } ? number : S extends { type: 'boolean' } ? boolean : string;
export type Options = { readonly [K in FlagName as CamelCase<K>]: ValueOf<(typeof FLAGS)[K]> };
type CamelCase<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;

const camel = (s: string): string => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

export class OptionsError extends Error {}

/** Parses argv (`--flag=value`, `--flag value`; booleans also `--flag` and `--no-flag`) with env fallbacks. */
export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Options {
  const booleans = Object.entries(FLAGS).filter(([, s]) => s.type === 'boolean').map(([k]) => k);
  const args = argv.flatMap((a) => {
    const m = /^--no-(.+)$/.exec(a);
    if (m !== null && booleans.includes(m[1]!)) return [`--${m[1]}=false`];
    return /^--[a-z-]+$/.test(a) && booleans.includes(a.slice(2)) ? [`${a}=true`] : [a];
  });
  const { values } = parseArgs({
    args,
    options: Object.fromEntries(Object.keys(FLAGS).map((k) => [k, { type: 'string' as const }])),
    strict: true,
    allowPositionals: false,
  });
  const out: Record<string, string | number | boolean> = {};
  for (const [name, spec] of Object.entries(FLAGS) as Array<[string, FlagSpec]>) {
    const raw = (values as Record<string, string | undefined>)[name] ?? (spec.env !== undefined ? env[spec.env] : undefined);
    let v: string | number | boolean = spec.default;
    if (raw !== undefined && raw !== '') {
      if (spec.type === 'number') {
        if (!/^-?\d+$/.test(raw)) throw new OptionsError(`--${name}: "${raw}" is not an integer`);
        v = Number(raw);
        if ((spec.min !== undefined && v < spec.min) || (spec.max !== undefined && v > spec.max)) {
          throw new OptionsError(`--${name}: ${v} is outside [${spec.min}, ${spec.max}]`);
        }
      } else if (spec.type === 'boolean') {
        if (!['true', 'false', '1', '0'].includes(raw)) throw new OptionsError(`--${name}: "${raw}" is not true/false`);
        v = raw === 'true' || raw === '1';
      } else {
        if (spec.choices !== undefined && !spec.choices.includes(raw)) throw new OptionsError(`--${name}: "${raw}" is not one of ${spec.choices.join(', ')}`);
        if (spec.pattern !== undefined && !spec.pattern.test(raw)) throw new OptionsError(`--${name}: "${raw}" is not valid (see --help)`);
        v = raw;
      }
    }
    out[camel(name)] = v;
  }
  return out as unknown as Options;
}

/** `--help` text. */
export function usage(): string {
  return Object.entries(FLAGS as Record<string, FlagSpec>)
    .map(([k, s]) => `  --${k}${s.type === 'boolean' ? '' : '=<' + s.type + '>'}  ${s.help} (default ${JSON.stringify(s.default)}${s.env ? `, env ${s.env}` : ''}${s.min !== undefined ? `, ${s.min}..${s.max}` : ''})`)
    .join('\n');
}

/** The flap damping flags as the policy's config (policy/faults/flap-damping.ts). */
export function flapDampingOf(o: Options): FlapDampingConfig {
  return { holdMs: o.flapDampingSeconds * 1000, recoveries: o.flapDampingRecoveries, windowMs: o.flapDampingWindowSeconds * 1000 };
}

/** `--public-fault-namespaces` as a predicate over a ConfigMap's namespace. */
export function publicFaultNamespacesOf(o: Pick<Options, 'publicFaultNamespaces'>): (namespace: string) => boolean {
  if (o.publicFaultNamespaces === '*') return () => true;
  const allowed = new Set(o.publicFaultNamespaces.split(','));
  return (ns) => allowed.has(ns);
}

/** The namespaces whose pods are system gRPC callers: `--grpc-system-namespaces` and the controller's own. */
export function systemNamespacesOf(o: Pick<Options, 'grpcSystemNamespaces'>, ownNamespace: string | undefined): ReadonlySet<string> {
  const out = new Set(o.grpcSystemNamespaces.split(','));
  if (ownNamespace !== undefined && ownNamespace !== '') out.add(ownNamespace);
  return out;
}
