/**
 * What happens when a resource bound bites (README "Reliability and resource bounds"): every bound
 * counts each refusal/drop/aggregation in `clusterd_bound_hits_total{bound}` and logs it, at most one
 * line per bound a minute (a flood of refused input must not become a flood of log lines); the line
 * carries how many hits it stands for.
 */
import type { Counter } from 'prom-client';
import type { Logger } from './logger.ts';

/** Every bound, as it appears in the `bound` label. */
export const BOUNDS = {
  /** Public faults held cluster-wide (ClusterD: 50,000): new ones refused. */
  publicFaults: 'public_faults',
  /** Distinct label sets of one metric: further values aggregated into `other`. */
  metricSeries: 'metric_series',
  /** gRPC connections in total / from one IP: the connection is closed at accept. */
  grpcConnections: 'grpc_connections',
  grpcConnectionsPerIp: 'grpc_connections_per_ip',
  /** Bytes of the persisted last good device-info state: nodes that do not fit are not persisted. */
  lastGoodBytes: 'last_good_bytes',
  /** fault.Fault publishers: roles of one job, registered from one address, in total: a new one is refused. */
  grpcFaultRolesPerJob: 'grpc_fault_roles_per_job',
  grpcFaultPublishersPerClient: 'grpc_fault_publishers_per_client',
  grpcFaultPublishers: 'grpc_fault_publishers',
  /** Idle O&M notify streams of one job: a new one is refused. */
  grpcSideStreamsPerJob: 'grpc_side_streams_per_job',
  /** config.Config registrations: past the cap the oldest idle one is forgotten (the answer stays 0). */
  grpcConfigRegistrations: 'grpc_config_registrations',
  /** job.Job clients: a new registration is refused with 429 (ClusterD's answer at its 100,000). */
  grpcJobClients: 'grpc_job_clients',
  /** Writes queued for a client that does not read: its stream is reset. */
  grpcStreamPendingWrites: 'grpc_stream_pending_writes',
  /** current-job-statistic within a ConfigMap's 1 MiB: entries left out of the write. */
  jobStatisticBytes: 'job_statistic_bytes',
  /** A job's custom-job-id over its bound: left out of its current-job-statistic entry. */
  customJobIdChars: 'custom_job_id_chars',
  /** scheduling-exception-report: messages cut to their bound, entries left out to stay within 1 MiB. */
  schedulingExceptionMessage: 'scheduling_exception_message_chars',
  schedulingExceptionBytes: 'scheduling_exception_bytes',
} as const;
export type Bound = (typeof BOUNDS)[keyof typeof BOUNDS];

const LOG_INTERVAL_MS = 60_000;

export class BoundReporter {
  private log: Logger | undefined;
  private readonly lastLog = new Map<Bound, { atMs: number; suppressed: number }>();
  private readonly counter: Counter<'bound'>;
  /** The controller's clock's time (runtime/clock.ts), wired with the logger. */
  private now: () => number = () => 0;

  constructor(counter: Counter<'bound'>) {
    this.counter = counter;
  }

  /**
   * Where the log lines go, and the time their one-a-minute limit is kept on (the metrics object
   * exists before the logger and the clock are wired); unwired, hits are counted only.
   */
  setLogger(log: Logger, now: () => number): void { this.log = log; this.now = now; }

  /** One hit (or `n`) of `bound`; `fields` say what was refused and the bound's value. */
  hit(bound: Bound, msg: string, fields: object = {}, n = 1): void {
    this.counter.inc({ bound }, n);
    if (this.log === undefined) return;
    const now = this.now();
    const last = this.lastLog.get(bound);
    if (last !== undefined && now - last.atMs < LOG_INTERVAL_MS) { last.suppressed += n; return; }
    this.log?.warn(msg, { bound, ...fields, hits: n, ...(last !== undefined && last.suppressed > 0 ? { suppressedSinceLastLine: last.suppressed } : {}) });
    this.lastLog.set(bound, { atMs: now, suppressed: 0 });
  }
}
