/**
 * What a job decision leaves behind, as data (pure): the decision history's record, the reason chain
 * and the fault summary heading the Event (docs/CONVENTIONS.md#logs-and-metrics). Built by the job's
 * step (policy/jobs/job-step.ts) and written by actions/ (job-report, decision-history).
 */
import type { JobFaultAggregate } from './job-aggregation.ts';
import type { JobDecision, ReasonStep } from './job-decision-types.ts';
import type { DecisionRecordInput, DecisionRecordOutcome } from '../../schemas/decision-record/decision-record.ts';

/** `evictPods(p-0,p-1)`: an action as logs and the decision history show it. */
export const actionText = (a: { readonly type: string } & Partial<{ readonly pods: readonly { readonly name: string }[]; readonly pod: { readonly name: string } }>): string =>
  a.pods !== undefined ? `${a.type}(${a.pods.map((p) => p.name).join(',')})` : a.pod !== undefined ? `${a.type}(${a.pod.name})` : a.type;

/** The decision history's record of a decision (actions/decision-history.action.ts): faults with levels and notes, the reason chain, the actions. */
export function decisionRecordInput(
  job: { readonly namespace: string; readonly name: string; readonly podGroup: string; readonly uid: string },
  agg: JobFaultAggregate | undefined,
  d: { readonly decisionId: string; readonly kind: JobDecision['kind']; readonly phase: string; readonly row?: number; readonly actions: readonly { readonly type: string }[] },
  reasons: readonly { readonly stage: string; readonly detail: string }[],
  outcome: DecisionRecordOutcome,
  atMs: number,
): DecisionRecordInput {
  const faults = (agg?.ranks ?? []).flatMap((r) => r.causes.map((c) => ({
    ...(c.node ?? r.node ? { node: (c.node ?? r.node)! } : {}), ...(c.device === undefined ? {} : { device: c.device }),
    code: c.code, ...(c.level === undefined ? {} : { level: c.level }), faultType: c.faultType, ...(c.note === '' ? {} : { note: c.note }),
  })));
  return {
    job, decisionId: d.decisionId, atMs, kind: d.kind, phase: d.phase, ...(d.row === undefined ? {} : { row: d.row }), outcome,
    faults, reasons: reasons.map((r) => ({ stage: r.stage, detail: r.detail })), actions: d.actions.map((a) => actionText(a)),
  };
}

export const chainOf = (reasons: readonly ReasonStep[]): string => reasons.map((r) => r.detail).join(' -> ');

/** `code@node[/npu]` of every fault behind the job's fault ranks (first 10), to head the Event message. */
export function faultSummary(agg: JobFaultAggregate): string {
  const items = [...new Set(agg.ranks.flatMap((r) => r.causes.map((c) => `${c.code}@${c.node ?? r.node ?? '?'}${c.device === undefined ? '' : `/${c.device}`}`)))];
  if (items.length === 0) return '';
  return `faults ${items.slice(0, 10).join(', ')}${items.length > 10 ? ` (+${items.length - 10})` : ''}: `;
}


/** How a decision ended, as logs and decisions_total say it. */
export type DecisionOutcome = 'acted' | 'dry_run' | 'no_action' | 'already_acted' | 'replayed' | 'held' | 'deferred';

/** The decision history's outcome of each (held and deferred decisions were decided, not carried out). */
export const HISTORY_OUTCOME: Readonly<Record<DecisionOutcome, DecisionRecordOutcome>> = {
  acted: 'acted', replayed: 'acted', dry_run: 'dry_run', no_action: 'no_action', already_acted: 'already_acted', held: 'held', deferred: 'held',
};

/**
 * Worth a log line at info, a count and a record: any decision with actions, every lifecycle step
 * (force, escalate, extend, complete, expire), and a fault the job sees that leads to no action. A
 * job merely waiting for its restart is not.
 */
export function notable(d: JobDecision, agg: JobFaultAggregate): boolean {
  if (d.actions.length > 0) return true;
  if (d.phase === 'wait') return false;
  if (d.phase === 'idle') return agg.ranks.length > 0;
  return true;
}

/**
 * Reported now: notable, and not the decision last reported for the job (`lastReported`, the
 * reporter's memory), except that `acted` is reported even after the same decision was reported
 * held or deferred (it acts once only).
 */
export const reportable = (d: JobDecision, agg: JobFaultAggregate, outcome: DecisionOutcome, lastReported: string | undefined): boolean =>
  notable(d, agg) && (lastReported !== d.decisionId || outcome === 'acted');
