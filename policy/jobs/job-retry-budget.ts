/**
 * Unconditional retry budget (`fault-retry-times`, docs/rules.md#resched.retry-budget, #decision.failed-pod-budget; docs/formats.md#vcjob-fault-npu-cm).
 *
 * - Initialised to N the first time the job (UID) is seen with N > 0; a different UID re-initialises.
 * - Only restarts whose job reason is `pod-failed` (failed pods, software faults) spend it; hardware
 *   restarts never do.
 * - Spent once per restart, when the restart *succeeds* (Volcano decrements after the successful
 *   restart). Deciding later than the delete matters: the operator reads `remain-retry-times` when a
 *   pod fails to choose Restarting (>= 1) or Failed (0), docs/rules.md#operator.failed-pod-budget, and must still see the budget that
 *   allowed this restart.
 * - Exhausted (0 left) -> a pod-failed-only fault job is not restarted any more.
 */
import type { RetryBudget } from '../../vocabulary/job-decision-state.ts';

export type { RetryBudget };

/** Valid `fault-retry-times` range (docs/rules.md#timing.volcano). */
export const MAX_FAULT_RETRY_TIMES = 100;

/** Bring the stored budget in line with the job: init on first sight / new UID, drop when disabled. */
export function syncRetryBudget(
  budget: RetryBudget | undefined,
  jobUid: string,
  faultRetryTimes: number | undefined,
): RetryBudget | undefined {
  const n = Math.min(Math.max(Math.trunc(faultRetryTimes ?? 0), 0), MAX_FAULT_RETRY_TIMES);
  if (n <= 0) return undefined;
  if (budget !== undefined && budget.uid === jobUid) return budget;
  return { uid: jobUid, times: n };
}

export interface RetryVerdict {
  readonly allowed: boolean;
  readonly detail: string;
}

/** May a pod-failed-only fault job restart now? */
export function retryAllowed(budget: RetryBudget | undefined, faultRetryTimes: number | undefined): RetryVerdict {
  if ((faultRetryTimes ?? 0) <= 0 || budget === undefined) {
    return { allowed: false, detail: 'fault-retry-times is 0 or absent: failed pods are left to the operator' };
  }
  if (budget.times <= 0) return { allowed: false, detail: `retry budget exhausted (0 of ${faultRetryTimes} left)` };
  return { allowed: true, detail: `retry budget ${budget.times} of ${faultRetryTimes} left` };
}

/** One pod-failed restart succeeded. */
export const consumeRetry = (budget: RetryBudget): RetryBudget => ({ uid: budget.uid, times: Math.max(0, budget.times - 1) });

/** The `remain-retry-times` map entry for vcjob-fault-npu-cm (key = JobView.key; encoded by schemas/). */
export const remainRetryTimesEntry = (budget: RetryBudget): { readonly UUID: string; readonly Times: number } => ({
  UUID: budget.uid,
  Times: budget.times,
});
