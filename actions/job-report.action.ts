/**
 * What every job decision leaves behind (docs/CONVENTIONS.md#logs-and-metrics): one structured log line with the job, the
 * pods, nodes, NPUs, codes and levels involved and the reason chain (code -> level -> rule -> action);
 * the same chain as an Event on the PodGroup (message cut to 1 KB); and `decisions_total`.
 *
 * "Notable" decisions are reported: any decision with actions, every lifecycle step (force, escalate,
 * extend, complete, expire), and a fault the job sees that leads to no action (e.g. fault-scheduling
 * off, retry budget spent). Each distinct decision id is reported once per process; a job merely
 * waiting for its restart logs at debug level only. Dry run: no Events.
 */
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { JobFaultAggregate } from '../policy/jobs/job-aggregation.ts';
import type { JobDecision } from '../policy/jobs/job-decision-types.ts';
import { recordJobEvent } from './job-event.action.ts';
import { actionText, chainOf, notable, reportable, type DecisionOutcome } from '../policy/jobs/job-decision-record.ts';
import { decisionRule } from '../vocabulary/rule-ids.ts';

export type { DecisionOutcome } from '../policy/jobs/job-decision-record.ts';

/** The pure parts moved to policy/ (the decision's step builds its records there). */
export { actionText, chainOf, decisionRecordInput, faultSummary, reportable } from '../policy/jobs/job-decision-record.ts';

/** Pods, nodes, NPUs, codes and levels behind the job's fault ranks, for the log line. */
export function faultFields(agg: JobFaultAggregate): Record<string, string[]> {
  const uniq = (xs: Array<string | undefined>): string[] => [...new Set(xs.filter((x): x is string => x !== undefined && x !== ''))].sort();
  const causes = agg.ranks.flatMap((r) => r.causes);
  return {
    pods: uniq(agg.ranks.map((r) => r.pod.name)),
    ranks: uniq(agg.ranks.map((r) => (r.podRank === undefined ? undefined : String(r.podRank)))),
    nodes: uniq(agg.ranks.map((r) => r.node)),
    npus: uniq(causes.map((c) => c.device)),
    codes: uniq(causes.map((c) => c.code)),
    levels: uniq(causes.map((c) => c.level)),
    faultTypes: uniq(agg.ranks.map((r) => r.faultType)),
  };
}

export function eventKindOf(d: JobDecision): { readonly type: 'Normal' | 'Warning'; readonly reason: string } {
  switch (d.phase) {
    case 'complete': return { type: 'Normal', reason: 'RescheduleSucceeded' };
    case 'expire': return { type: 'Warning', reason: 'RescheduleExpired' };
    default:
      if (d.kind === 'none') return { type: 'Normal', reason: 'FaultNoAction' };
      if (d.kind === 'external') return { type: 'Warning', reason: 'FaultExternalRescheduling' };
      if (d.kind === 'process') return { type: 'Normal', reason: 'FaultProcessRecovery' };
      return { type: 'Warning', reason: 'FaultRescheduling' };
  }
}

export interface ReporterJob {
  readonly key: string;
  readonly namespace: string;
  readonly podGroupName: string;
  readonly podGroupUid?: string;
}

export interface ReporterDeps {
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Undefined = no Events (dry run). */
  readonly events?: KubeClient;
}

export class DecisionReporter {
  private readonly d: ReporterDeps;
  private readonly last = new Map<string, string>();

  constructor(d: ReporterDeps) {
    this.d = d;
  }

  notable(d: JobDecision, agg: JobFaultAggregate): boolean {
    return notable(d, agg);
  }

  /** The decision last reported for the job (the step's input: each decision is reported once). */
  lastReported(key: string): string | undefined {
    return this.last.get(key);
  }

  /**
   * Logs a decision; a notable one not reported yet (`report`, decided by the job's step, policy/jobs/job-step.ts
   * `reportable`) is logged at info and counted once. Answers whether it was reported now.
   */
  decided(job: ReporterJob, agg: JobFaultAggregate, d: JobDecision, outcome: DecisionOutcome, report = reportable(d, agg, outcome, this.last.get(job.key))): boolean {
    const rule = d.row === undefined ? undefined : decisionRule(d.row);
    const fields = { job: job.key, decisionId: d.decisionId, kind: d.kind, phase: d.phase, row: d.row, ...(rule === undefined ? {} : { rule }), ...(d.widening === undefined ? {} : { widening: d.widening }), outcome };
    if (!report) {
      this.d.log.debug('job decision', fields);
      return false;
    }
    this.last.set(job.key, d.decisionId);
    this.d.metrics.decisions.inc({ kind: d.kind, outcome });
    if (d.widening !== undefined) this.d.metrics.podLevelWidenings.inc({ step: d.widening });
    this.d.log.info('job decision', {
      ...fields, ...faultFields(agg),
      actions: d.actions.map((a) => actionText(a)),
      requeueAfterMs: d.requeueAfterMs, reasons: chainOf(d.reasons),
    });
    return true;
  }

  /** The Event for a reported decision (best effort: failures are logged, never thrown). */
  async event(job: ReporterJob, d: JobDecision | { decisionId: string; kind: JobDecision['kind']; phase: JobDecision['phase'] }, chain: string, atMs: number): Promise<void> {
    if (this.d.events === undefined) return;
    const { type, reason } = eventKindOf(d as JobDecision);
    try {
      await recordJobEvent(this.d.events, {
        object: { namespace: job.namespace, name: job.podGroupName, ...(job.podGroupUid ? { uid: job.podGroupUid } : {}) },
        decisionId: d.decisionId, type, reason, message: chain, atMs,
      }, this.d.metrics);
    } catch (e) {
      this.d.log.warn('could not record the decision Event', { job: job.key, decisionId: d.decisionId, err: String(e) });
    }
  }

  /**
   * A decision held by the blast-radius breaker: an Event `FaultRescheduleHeld` on the PodGroup with
   * the reason chain and the breaker's reason. The one place held decisions are recorded (to move to
   * the durable decision history, actions/decision-history.action.ts, when it lands).
   */
  async held(job: ReporterJob, d: Pick<JobDecision, 'decisionId'>, chain: string, atMs: number): Promise<void> {
    if (this.d.events === undefined) return;
    try {
      await recordJobEvent(this.d.events, {
        object: { namespace: job.namespace, name: job.podGroupName, ...(job.podGroupUid ? { uid: job.podGroupUid } : {}) },
        decisionId: d.decisionId, type: 'Warning', reason: 'FaultRescheduleHeld', message: chain, atMs,
      }, this.d.metrics);
    } catch (e) {
      this.d.log.warn('could not record the held decision Event', { job: job.key, decisionId: d.decisionId, err: String(e) });
    }
  }

  /**
   * A job refused before any write (its identity cannot be a key or a name, schemas/kube-names.ts):
   * logged, counted and an Event `JobIdentityRefused` on its PodGroup, once per identity.
   */
  async refused(job: ReporterJob, id: { readonly uid: string; readonly name: string }, problem: { readonly kind: string; readonly reason: string }, atMs: number): Promise<void> {
    const sig = `refused|${id.uid}|${id.name}`;
    if (this.last.get(job.key) === sig) return;
    this.last.set(job.key, sig);
    this.d.metrics.jobsRefused.inc({ reason: problem.kind });
    const message = `job refused, nothing is written or acted on for it: ${problem.reason}`;
    this.d.log.warn('job refused: its identity cannot be used as a key or name', { job: job.key, reason: problem.kind, detail: problem.reason });
    await this.note(job, `refused/${problem.kind}`, 'JobIdentityRefused', message, atMs);
  }

  /**
   * The job's journal record is unreadable: logged, counted and an Event `JobStateUnreadable` on its
   * PodGroup, once per record text (`sig`), with the command that drops that one record.
   */
  async unreadable(job: ReporterJob, sig: string, message: string, fields: Record<string, unknown>, atMs: number): Promise<void> {
    if (this.last.get(job.key) === `unreadable|${sig}`) return;
    this.last.set(job.key, `unreadable|${sig}`);
    this.d.metrics.jobStateUnreadable.inc();
    this.d.log.error('job state unreadable; the job is not decided until its one record is removed', { job: job.key, ...fields });
    await this.note(job, `unreadable/${sig}`, 'JobStateUnreadable', message, atMs);
  }

  private async note(job: ReporterJob, id: string, reason: string, message: string, atMs: number): Promise<void> {
    if (this.d.events === undefined) return;
    try {
      await recordJobEvent(this.d.events, {
        object: { namespace: job.namespace, name: job.podGroupName, ...(job.podGroupUid ? { uid: job.podGroupUid } : {}) },
        decisionId: id, type: 'Warning', reason, message, atMs,
      }, this.d.metrics);
    } catch (e) {
      this.d.log.warn('could not record the job Event', { job: job.key, reason, err: String(e) });
    }
  }

  countReplay(kind: JobDecision['kind']): void {
    this.d.metrics.decisions.inc({ kind, outcome: 'replayed' });
  }

  forget(key: string): void {
    this.last.delete(key);
  }
}
