/**
 * The cross-flow capabilities ("ports") a flow offers others, each owned by its provider (named
 * below) and handed to consumers by the builder (controllers/build.ts) as an interface, never as the
 * provider's controller or a closure over it. Type-only, below every controller, so no import cycle.
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { JobSummaryController } from './job-summary.controller.ts';

/**
 * What the recovery flow (recovery.controller.ts) tells the scheduler-view filters and the jobs
 * flow: the step-retry stage, business-plane UCEs, must-exit reports, registered jobs.
 */
export interface RecoveryStatus {
  /** TaskD/MindIO registered the job with the Recover service (a property: the jobs flow takes it as a function). */
  readonly isRegistered: (jobUid: string) => boolean;
  /** docs/rules.md#filter.step-retry: records in, scheduler view out. */
  schedulerView(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[];
  /** docs/rules.md#filter.uce-accompany: UCEs the business plane reported on a node. */
  businessUce(node: string): ReadonlyArray<{ readonly device: string; readonly atMs: number }>;
  /** docs/rules.md#filter.recover-in-place: when the job reported a pod rank as having to exit. */
  mustExitReportedMs(jobUid: string, podRank: number): number | undefined;
  /** docs/rules.md#filter.stress-test: nodes under an online stress test, whose stress-test codes are hidden. */
  stressTestNodes(): ReadonlySet<string>;
}

/** docs/rules.md#filter.mindie-hold: which jobs' controllers subscribed to the fault gRPC service (grpc-fault.ts). */
export interface FaultSubscriptions {
  /** A client of job id `jobId` (a job UID or a MindIE job id) holds a subscription; with `role`, a client of that role. */
  subscribed(jobId: string, role?: string): boolean;
}

/** Whether clusterd-ts holds Volcano's rescheduling role now (rescheduling-role.ts). */
export interface ReschedulingRoleStatus {
  readonly holds: boolean;
}

/** Every job's summary and its pods (controllers/job-summary.controller.ts): what the gRPC job, config and data-trace services read. */
export type JobSummaries = Pick<JobSummaryController, 'store' | 'podGroupOf' | 'jobPods'>;
