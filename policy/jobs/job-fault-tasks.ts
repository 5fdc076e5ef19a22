/**
 * Which pods of a job are *fault tasks* for rescheduling, given the job's knobs (docs/rules.md#resched.fault-tasks, #resched.job-reason, #resched.sub-health, #resched.retry-budget, #decision.no-effect, #decision.hidden-by-filter, #decision.sub-health, #decision.failed-pod-budget). Input is the knob-independent aggregate.
 *
 * A cause counts against its pod when:
 * - Volcano would count it at all (`affectsTask`; not NotHandle/PreSeparate/network, docs/rules.md#decision.no-effect);
 * - the pod is not already terminating;
 * - failed pods (`pod-failed`/`process-exception`): `fault-retry-times` > 0 (docs/rules.md#resched.fault-tasks), or
 *   `process-recover-enable=on` (docs/rules.md#resched.lifecycle: in process mode a failing surviving pod is a fault task);
 * - sub-health: strategy graceExit/forceExit; hotSwitch only once the hot-switch FSM put
 *   `needVolcanoOpe=delete` on the pod; ignore (default, also unknown values) never (docs/rules.md#resched.sub-health).
 * A counted cause still inside an upstream hide window makes the task *hidden* (docs/rules.md#decision.hidden-by-filter).
 */
import { primaryCause, type FaultCause, type JobFaultAggregate, type JobFaultRank, type RescheduleFaultType } from './job-aggregation.ts';
import { jobUsesNpu, type JobKnobsInput, type JobPodView, type JobView } from './job-view.ts';
import { RULE } from '../../vocabulary/rule-ids.ts';

export interface FaultTask {
  readonly rank: JobFaultRank;
  readonly pod: JobPodView;
  /** Causes that count against the pod. */
  readonly causes: readonly FaultCause[];
  readonly primary: FaultCause;
  readonly faultType: RescheduleFaultType;
  /** Every counted cause is inside a hide window. */
  readonly hidden: boolean;
  /** When the earliest hide window of a hidden task ends. */
  readonly hiddenUntilMs?: number;
}

export interface FaultTaskSelection {
  /** Counted tasks, hidden or not, in rank order. */
  readonly tasks: readonly FaultTask[];
  readonly visible: readonly FaultTask[];
  /** Pods with a visible sub-health cause (whatever the strategy): hot-switch candidates. */
  readonly subHealthPods: readonly JobPodView[];
  /** Why causes did not count (for the reason chain). */
  readonly notes: readonly string[];
}

export const effectiveSubHealthyStrategy = (knobs: JobKnobsInput): 'ignore' | 'graceExit' | 'forceExit' | 'hotSwitch' => {
  const s = knobs.subHealthyStrategy;
  return s === 'graceExit' || s === 'forceExit' || s === 'hotSwitch' ? s : 'ignore';
};

function counts(c: FaultCause, pod: JobPodView, knobs: JobKnobsInput): string | undefined {
  if (!c.affectsTask) return c.note;
  if (c.faultType === 'pod-failed' || c.faultType === 'process-exception') {
    if ((knobs.faultRetryTimes ?? 0) > 0 || knobs.processRecoverEnable === 'on') return undefined;
    return `${c.note}: fault-retry-times is 0, failed pods are left to the operator (${RULE.resched.faultTasks})`;
  }
  if (c.faultType === 'SubHealthFault') {
    const s = effectiveSubHealthyStrategy(knobs);
    if (s === 'graceExit' || s === 'forceExit') return undefined;
    if (s === 'hotSwitch' && pod.needVolcanoDelete === true) return undefined;
    return `${c.note}: subHealthyStrategy=${s}, task stays healthy (${RULE.resched.subHealth})`;
  }
  return undefined;
}

export function selectFaultTasks(agg: JobFaultAggregate, knobs: JobKnobsInput, nowMs: number): FaultTaskSelection {
  const pods = new Map(agg.job.pods.map((p) => [p.uid, p]));
  const tasks: FaultTask[] = [];
  const subHealthPods: JobPodView[] = [];
  const notes: string[] = [];
  for (const rank of agg.ranks) {
    const pod = pods.get(rank.pod.uid);
    if (pod === undefined) continue;
    if (pod.terminating === true) {
      notes.push(`pod ${pod.name} is already terminating`);
      continue;
    }
    const live = (c: FaultCause): boolean => c.hidden === undefined || c.hidden.untilMs <= nowMs;
    if (rank.causes.some((c) => c.faultType === 'SubHealthFault' && c.affectsTask && live(c))) subHealthPods.push(pod);
    const counted: FaultCause[] = [];
    for (const c of rank.causes) {
      const why = counts(c, pod, knobs);
      if (why === undefined) counted.push(c);
      else notes.push(why);
    }
    const primary = primaryCause(counted);
    if (primary === undefined) continue;
    const hidden = counted.every((c) => !live(c));
    const untils = counted.flatMap((c) => (c.hidden === undefined ? [] : [c.hidden.untilMs]));
    tasks.push({
      rank, pod, causes: counted, primary, faultType: primary.faultType, hidden,
      ...(hidden && untils.length > 0 ? { hiddenUntilMs: Math.min(...untils) } : {}),
    });
  }
  return { tasks, visible: tasks.filter((t) => !t.hidden), subHealthPods, notes };
}

/** docs/rules.md#resched.job-reason: first of NodeUnhealthy / CardUnhealthy / SubHealthFault / RelationFaultSeparate, else pod-failed. */
export function jobReasonOf(tasks: readonly FaultTask[]): RescheduleFaultType {
  for (const t of ['NodeUnhealthy', 'CardUnhealthy', 'SubHealthFault', 'RelationFaultSeparate'] as const) {
    if (tasks.some((x) => x.faultType === t)) return t;
  }
  return 'pod-failed';
}

/** docs/rules.md#resched.master-rank: a fault task on rank 0 of an NPU job, not labelled as a worker replica. */
export const masterTask = (tasks: readonly FaultTask[], job: JobView): FaultTask | undefined =>
  jobUsesNpu(job) ? tasks.find((t) => t.pod.rank === 0 && t.pod.workerReplica !== true) : undefined;

/** Only sub-health faults among the tasks (docs/rules.md#decision.hot-switch, #decision.sub-health). */
export const subHealthOnly = (tasks: readonly FaultTask[]): boolean =>
  tasks.length > 0 && tasks.every((t) => t.causes.every((c) => c.faultType === 'SubHealthFault'));
