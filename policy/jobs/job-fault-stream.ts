/**
 * Burst coalescing for job aggregation: many fault/pod events for one job -> one aggregate per job per
 * window, never one per event.
 *
 * Window choice: `auditTime(200 ms)` per job. The first snapshot of a burst opens a 200 ms window and
 * the *latest* snapshot is aggregated when it closes. Unlike `debounceTime`, a storm that never goes
 * quiet still yields one aggregate per 200 ms, so latency stays bounded. 200 ms is well under
 * ClusterD's 1 s processing cycle and Volcano's 1 s session (docs/rules.md#ingest.update-cadence, #timing.volcano), so we never
 * react later than they would, while a device-info rewrite, the node-info update and the pod status
 * changes a single hardware fault causes (typically within tens of ms of each other) land in one
 * aggregate.
 *
 * A job's group is closed after `idleMs` without snapshots (default 60 s) so finished jobs do not leak
 * groups; `audit` flushes its pending snapshot before a group completes.
 */
import { auditTime, debounceTime, groupBy, map, mergeMap, pipe, type OperatorFunction, type SchedulerLike } from 'rxjs';
import { aggregateJob, type JobFaultAggregate, type JobFaultSnapshot } from './job-aggregation.ts';

export const DEFAULT_JOB_BURST_WINDOW_MS = 200;
export const DEFAULT_JOB_GROUP_IDLE_MS = 60_000;

export interface JobBurstOptions {
  readonly windowMs?: number;
  readonly idleMs?: number;
}

/** Group snapshots by job key, coalesce each job's bursts, aggregate the latest snapshot of each burst. */
export function aggregateJobFaultsWith(
  options: JobBurstOptions,
  scheduler: SchedulerLike,
): OperatorFunction<JobFaultSnapshot, JobFaultAggregate> {
  const windowMs = options.windowMs ?? DEFAULT_JOB_BURST_WINDOW_MS;
  const idleMs = Math.max(options.idleMs ?? DEFAULT_JOB_GROUP_IDLE_MS, windowMs * 2);
  return pipe(
    groupBy((s: JobFaultSnapshot) => s.job.key, { duration: (g) => g.pipe(debounceTime(idleMs, scheduler)) }),
    mergeMap((g) => g.pipe(auditTime(windowMs, scheduler), map(aggregateJob))),
  );
}

/** `aggregateJobFaultsWith` with the default 200 ms window. */
export const aggregateJobFaults = (scheduler: SchedulerLike): OperatorFunction<JobFaultSnapshot, JobFaultAggregate> =>
  aggregateJobFaultsWith({}, scheduler);
