/**
 * The per-job RxJS pipeline: every input that can change a job's fault picture
 * (faults on its nodes, its pods, its PodGroup) becomes the job's key; keys become snapshots (the
 * job view joined with the faults of its nodes); `aggregateJobFaultsWith` groups them by job and
 * coalesces each job's bursts (policy/jobs/job-fault-stream.ts: one aggregate per job per window). So one
 * fault, which reaches us as a device-info rewrite plus a cluster of pod status changes, gives one
 * aggregate and so one decision, never one per event.
 *
 * The scheduler is injected: unit tests run bursts in virtual time.
 */
import { filter, map, merge, mergeMap, type Observable, type SchedulerLike } from 'rxjs';
import { aggregateJobFaultsWith, type JobBurstOptions } from './job-fault-stream.ts';
import type { JobFaultAggregate, JobFaultSnapshot } from './job-aggregation.ts';

export interface JobInputs {
  /** Job keys touched by pod events. */
  readonly podKeys$: Observable<readonly string[]>;
  /** PodGroup keys added or updated (knobs may have changed). */
  readonly podGroupKeys$: Observable<string>;
  /** Nodes whose effective faults changed. */
  readonly faultNodes$: Observable<readonly string[]>;
}

export interface JobPipelineDeps {
  /** Keys of jobs with pods on these nodes. */
  readonly jobKeysOnNodes: (nodes: readonly string[]) => Iterable<string>;
  /** The job's current snapshot, or undefined when the key is not a job (any more). */
  readonly snapshotOf: (key: string) => JobFaultSnapshot | undefined;
}

/**
 * All inputs -> the key of every job they touch, one per event (not coalesced). The jobs flow hands
 * these to its burst gate (runtime/burst-gate.ts), which queues the key at once for a quiet job and
 * coalesces what follows with `addAfter`; the reconcile reads the job from the caches.
 */
export function jobKeys$(inputs: JobInputs, deps: Pick<JobPipelineDeps, 'jobKeysOnNodes'>): Observable<string> {
  return merge(
    inputs.podKeys$.pipe(mergeMap((keys) => keys)),
    inputs.podGroupKeys$,
    inputs.faultNodes$.pipe(mergeMap((nodes) => [...deps.jobKeysOnNodes(nodes)])),
  );
}

/** All inputs -> one aggregate per job per burst (trailing window, in virtual time for tests and tools). */
export function jobAggregates$(inputs: JobInputs, deps: JobPipelineDeps, options: JobBurstOptions, scheduler: SchedulerLike): Observable<JobFaultAggregate> {
  return jobKeys$(inputs, deps).pipe(
    map((key) => deps.snapshotOf(key)),
    filter((s): s is JobFaultSnapshot => s !== undefined),
    aggregateJobFaultsWith(options, scheduler),
  );
}
