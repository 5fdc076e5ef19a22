/**
 * Inputs of a job-reschedule-reason record (docs/formats.md#job-reschedule-reason, docs/rules.md#resched.reason-history) and of Volcano's
 * eviction reason (docs/rules.md#resched.job-grace). One record per restart (start and escalation); at most 10 tasks per
 * record, in rank order (the 10-record cap and the 950 KB trim belong to schemas/job-reschedule-reason).
 */
import type { EvictionReason, RescheduleTaskReason } from './job-decision-types.ts';
import type { FaultTask } from './job-fault-tasks.ts';

export const MAX_TASKS_PER_RESCHEDULE_RECORD = 10;

const rankText = (t: FaultTask): string => (t.pod.rank === undefined ? '' : String(t.pod.rank));

/** `{RescheduleReason, PodName, NodeName, NodeRankIndex}` for the first 10 fault tasks. */
export function rescheduleTaskReasons(tasks: readonly FaultTask[]): readonly RescheduleTaskReason[] {
  return tasks.slice(0, MAX_TASKS_PER_RESCHEDULE_RECORD).map((t) => ({
    RescheduleReason: t.faultType,
    PodName: t.pod.name,
    NodeName: t.pod.node ?? '',
    NodeRankIndex: rankText(t),
  }));
}

/** One entry per counted cause: what Volcano puts in the eviction message. */
export function evictionReasons(tasks: readonly FaultTask[]): readonly EvictionReason[] {
  return tasks.flatMap((t) =>
    t.causes.map((c) => ({
      podName: t.pod.name,
      nodeName: t.pod.node ?? '',
      rank: rankText(t),
      faultType: c.faultType,
      faultCode: c.reasonCode,
      faultLevel: c.reasonLevel,
    })),
  );
}
