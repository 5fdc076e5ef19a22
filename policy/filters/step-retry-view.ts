/**
 * The step-retry filter applied to one node's fault records, as the rescheduler sees them
 * (docs/rules.md#filter.step-retry, #decision.hidden-by-filter, #filter.two-views): a retry fault (80E01801 UCE, 8C1F860B HCCL) on a chip that a
 * step-retry job holds is hidden, dropped or re-levelled as step-retry-filter.ts's verdict says.
 * Pure: the job holding a chip and its step-retry facts come from the caller
 * (controllers/recovery-step-retry.ts, which also re-announces nodes when a window ends).
 */
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { isStepRetryJob, RETRY_FAULT_TYPES, STEP_RETRY_FAULT_WINDOW_MS, stepRetryVerdict, type StepRetryJob } from './step-retry-filter.ts';
import { npuId } from '../jobs/job-view.ts';
import type { JobFacts, JobLookup } from '../jobs/job-facts.ts';

const isRetryCode = (code: string): boolean => RETRY_FAULT_TYPES[code.toUpperCase()] !== undefined;

/**
 * The step-retry job holding `device` on `node`, if any: the job of the index with a live pod on
 * `node` holding the chip; `stepRetry` gives the recovery FSM's facts of a job (by UID). A chip pods
 * of two jobs claim is contested and held by none, so no step retry hides its faults (the rule of
 * policy/filters/fault-filters.ts); `openClaims` (ClusterD, --trust-pod-npu-annotations): the first.
 */
export function stepRetryJobOf(
  index: JobLookup, stepRetry: (jobId: string, retryEnabled: boolean) => StepRetryJob, node: string, device: string, openClaims = false,
): StepRetryJob | undefined {
  const id = npuId(device);
  let holder: JobFacts | undefined;
  for (const key of index.jobKeysOnNodes([node])) {
    const e = index.job(key);
    if (e === undefined) continue;
    const holds = e.view.pods.some((p) => p.node === node && p.terminating !== true && p.npus.some((n) => n === device || npuId(n) === id));
    if (!holds) continue;
    if (holder !== undefined) return undefined;
    holder = e;
    if (openClaims) break;
  }
  if (holder === undefined) return undefined;
  const pg = holder.podGroup.metadata;
  return stepRetry(holder.view.uid, isStepRetryJob(pg?.labels, pg?.annotations));
}

/** `records` as the rescheduler sees them (hidden retry faults dropped, HCCL re-levelled); `jobOf` names the step-retry job holding a chip. */
export function stepRetrySchedulerView(records: readonly FaultRecord[], jobOf: (device: string) => StepRetryJob | undefined, nowMs: number): readonly FaultRecord[] {
  if (!records.some((r) => isRetryCode(r.code) && r.device !== undefined)) return records;
  const out: FaultRecord[] = [];
  for (const r of records) {
    if (!isRetryCode(r.code) || r.device === undefined) {
      out.push(r);
      continue;
    }
    const job = jobOf(r.device);
    if (job === undefined) {
      out.push(r);
      continue;
    }
    const v = stepRetryVerdict({ fault: r, level: r.level, reasons: [] }, job, false, nowMs);
    if (v.action === 'hide' || v.action === 'drop') continue;
    out.push(v.action === 'relevel' ? { ...r, level: v.level } : r);
  }
  return out;
}

/** When the 10 s window of each retry fault in `records` ends (the verdict can change then with time alone). */
export const retryFaultWindowEnds = (records: readonly FaultRecord[]): number[] =>
  records.filter((r) => isRetryCode(r.code)).map((r) => r.firstSeenMs + STEP_RETRY_FAULT_WINDOW_MS);
