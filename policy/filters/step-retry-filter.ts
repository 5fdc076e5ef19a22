/**
 * Step-retry filter (docs/rules.md#filter.step-retry, #timing.clusterd): for a job with `process-recover-enable=on` and
 * `retry` in `recover-strategy`, the retry faults 80E01801 (UCE, retry type "0") and 8C1F860B (HCCL
 * retry, type "2") are hidden from the scheduler while
 *   (a) the fault is at most 10 s old, or
 *   (b) the job reported a recovery at most 10 s after the fault (or before it) and either now <= RecoverTime + 30 s
 *       or it reported completion by RecoverTime + 30 s.
 * An HCCL retry fault that cannot be hidden is re-levelled to RestartBusiness unless a link-down is
 * known for the job: a UB switch link-down (`[0x08520003,na,L2,na]`) seen on one of its nodes in the
 * last 180 s (--link-down-memory-seconds). Then the fault keeps its level and the link-down of its
 * node is forced into the scheduler view again (policy/filters/fault-filters.ts), so relation
 * processing (policy/faults/relation-faults.ts) matches it with the HCCL trigger (ClusterD's
 * retry_fault_processor.go addRetryFault).
 * Business-plane reports older than 60 s are ignored.
 */
import type { FilterState } from '../../schemas/escalation-state/escalation-state.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import { NPU_LEVELS_BY_SEVERITY, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { FilterVerdict } from './filters.ts';
import { reason } from '../reasons.ts';

export const RETRY_FAULT_TYPES: Readonly<Record<string, '0' | '2'>> = { '80E01801': '0', '8C1F860B': '2' };
export const HCCL_RETRY_CODE = '8C1F860B';
export const STEP_RETRY_FAULT_WINDOW_MS = 10_000;
export const STEP_RETRY_REPORT_WINDOW_MS = 10_000;
export const STEP_RETRY_COMPLETE_WINDOW_MS = 30_000;
export const LINK_DOWN_MEMORY_MS = 180_000;
export const BUSINESS_REPORT_EXPIRY_MS = 60_000;
export const DEVICE_LINK_DOWN_CODE = '81078603';
export const SWITCH_LINK_DOWN_CODE = '[0x08520003,na,L2,na]';

export const PROCESS_RECOVER_ENABLE_LABEL = 'process-recover-enable';
export const RECOVER_STRATEGY_ANNOTATION = 'recover-strategy';

/** The job side of the decision, from the PodGroup and the agent's reports. */
export interface StepRetryJob {
  readonly retryEnabled: boolean;
  /** RecoverTime the job reported (ms), if any. */
  readonly recoverTimeMs?: number;
  /** When the job reported completion of the step retry (ms), if it did. */
  readonly completeTimeMs?: number;
}

/** process-recover-enable=on and `retry` among the recover strategies. */
export function isStepRetryJob(labels: Readonly<Record<string, string>> | undefined, annotations: Readonly<Record<string, string>> | undefined): boolean {
  const strategies = (annotations?.[RECOVER_STRATEGY_ANNOTATION] ?? '').split(',').map((s) => s.trim());
  return labels?.[PROCESS_RECOVER_ENABLE_LABEL] === 'on' && strategies.includes('retry');
}

/** Drops business-plane reports older than 60 s. */
export const freshBusinessReports = <T extends { readonly atMs: number }>(reports: readonly T[], nowMs: number): T[] =>
  reports.filter((r) => nowMs - r.atMs <= BUSINESS_REPORT_EXPIRY_MS);

export function stepRetryVerdict(f: LeveledFault, job: StepRetryJob, linkDownKnown: boolean, nowMs: number): FilterVerdict {
  const code = f.fault.code.toUpperCase();
  const type = RETRY_FAULT_TYPES[code];
  if (type === undefined || !job.retryEnabled) return { action: 'pass', reasons: [] };
  const t = f.fault.firstSeenMs;
  if (nowMs - t <= STEP_RETRY_FAULT_WINDOW_MS) {
    return { action: 'hide', untilMs: t + STEP_RETRY_FAULT_WINDOW_MS + 1, reasons: [reason('step-retry', `retry fault type ${type} younger than 10 s; waiting for step retry`, { code, level: 'hidden' })] };
  }
  const r = job.recoverTimeMs;
  if (r !== undefined && r - t <= STEP_RETRY_REPORT_WINDOW_MS) { // ClusterD: FaultTime >= RecoverTime - 10 s (an earlier report counts)
    const limit = r + STEP_RETRY_COMPLETE_WINDOW_MS;
    if (job.completeTimeMs !== undefined && job.completeTimeMs <= limit) {
      return { action: 'hide', reasons: [reason('step-retry', `job recovered at ${r} and completed at ${job.completeTimeMs}`, { code, level: 'hidden' })] };
    }
    if (nowMs <= limit) {
      return { action: 'hide', untilMs: limit + 1, reasons: [reason('step-retry', `job recovering since ${r}; waiting up to 30 s for completion`, { code, level: 'hidden' })] };
    }
  }
  if (code === HCCL_RETRY_CODE && !linkDownKnown) {
    return { action: 'relevel', level: 'RestartBusiness', reasons: [reason('step-retry', 'HCCL retry not absorbed by step retry, no link-down known', { code, level: 'RestartBusiness' })] };
  }
  return { action: 'pass', reasons: [reason('step-retry', 'step retry did not absorb the fault; reported', { code, level: f.level })] };
}

export type LinkDownMemory = FilterState['linkDowns'];

const isSwitchLinkDown = (r: FaultRecord): boolean => r.source === 'switch' && r.code.toUpperCase() === SWITCH_LINK_DOWN_CODE.toUpperCase();

/**
 * Remembers the UB switch L2 link-downs currently reported on `node` (with the record, to force it in
 * again) and forgets any older than `windowMs` (--link-down-memory-seconds, ClusterD's 180 s). Only
 * switch link-downs: ClusterD's device link-down memory (retry_fault_processor.go getRetryFaultDevices)
 * is filled from faults already narrowed to UCE and HCCL codes, so it never holds one.
 */
export function rememberLinkDowns(memory: LinkDownMemory, node: string, records: readonly FaultRecord[], nowMs: number, windowMs: number = LINK_DOWN_MEMORY_MS): LinkDownMemory {
  const next: Record<string, LinkDownMemory[string]> = {};
  for (const [k, v] of Object.entries(memory)) if (nowMs - v.lastSeenMs <= windowMs) next[k] = v;
  for (const r of records) {
    if (r.node !== node || !isSwitchLinkDown(r)) continue;
    next[`${r.node}/-/${r.code}`] = {
      node: r.node, device: null, code: r.code, lastSeenMs: nowMs,
      firstSeenMs: r.firstSeenMs, level: r.level, reportedLevel: r.reportedLevel, ...(r.detail === undefined ? {} : { detail: r.detail }),
    };
  }
  return next;
}

/** Link-downs seen in the last `windowMs` on these nodes, oldest key first. */
export function linkDownsToForceAdd(memory: LinkDownMemory, jobNodes: ReadonlySet<string>, nowMs: number, windowMs: number = LINK_DOWN_MEMORY_MS): Array<LinkDownMemory[string]> {
  return Object.values(memory)
    .filter((v) => jobNodes.has(v.node) && nowMs - v.lastSeenMs <= windowMs)
    .sort((a, b) => (`${a.node}/${a.device ?? ''}` < `${b.node}/${b.device ?? ''}` ? -1 : 1));
}

/** The switch record a memory entry stands for (forced into the scheduler view again). */
const npuLevel = (l: string | undefined): NpuFaultLevel => NPU_LEVELS_BY_SEVERITY.find((x) => x === l) ?? 'NotHandleFault';
export const linkDownRecord = (e: LinkDownMemory[string]): FaultRecord => ({
  node: e.node, source: 'switch', code: e.code, level: npuLevel(e.level), reportedLevel: e.reportedLevel ?? e.level ?? 'NotHandleFault',
  firstSeenMs: e.firstSeenMs ?? e.lastSeenMs, ...(e.detail === undefined ? {} : { detail: e.detail }),
});
