/**
 * The durable decision history's one entry point (an audit trail that outlives Events and restarts): `recordDecision(history, input)`
 * creates a DecisionRecord (schemas/decision-record) in the job's namespace. Every decision about a
 * job goes through it: the jobs flow's (controllers/jobs.controller.ts) and the breaker's held ones.
 *
 * - Idempotent: the name comes from the decision id, so a replay after a restart answers 409 and is
 *   counted `duplicate`, not recorded twice.
 * - Best effort: a record that cannot be written (apiserver down, CRD not installed, forbidden) is
 *   logged and counted `failed`; it never fails or delays the decision beyond one request. The
 *   decision's Event and log line remain.
 * - Bounded: each record is capped by the schema; the index below feeds the pruning reconciler
 *   (reconcilers/decision-history.reconciler.ts), which deletes by per-job count, total count and TTL.
 * - Dry run writes nothing (as Events: the dry-run ClusterRole has no write verbs).
 */
import { ApiError, isConflict, type KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { buildDecisionRecord, decisionRecordsPath, type DecisionRecordInput } from '../schemas/decision-record/decision-record.ts';
import type { HistoryBounds, HistoryEntry } from '../policy/jobs/decision-history-bounds.ts';

export type RecordResult = 'recorded' | 'duplicate' | 'failed' | 'dry_run';

export interface DecisionHistoryDeps {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly bounds: HistoryBounds;
  readonly dryRun: boolean;
  /** A record was created: the pruning reconciler should look (wired to its queue). */
  readonly onRecorded?: () => void;
}

/** The records the controller knows of (loaded once by the pruning reconciler, then kept current). */
export class DecisionHistoryIndex {
  private readonly entries = new Map<string, HistoryEntry>();
  loaded = false;

  static key(namespace: string, name: string): string { return `${namespace}/${name}`; }
  put(e: HistoryEntry): void { this.entries.set(DecisionHistoryIndex.key(e.namespace, e.name), e); }
  remove(namespace: string, name: string): void { this.entries.delete(DecisionHistoryIndex.key(namespace, name)); }
  values(): IterableIterator<HistoryEntry> { return this.entries.values(); }
  get size(): number { return this.entries.size; }
  jobCount(namespace: string, jobUid: string): number { let n = 0; for (const e of this.entries.values()) if (e.jobUid === jobUid && e.namespace === namespace) n++; return n; }
}

export class DecisionHistory {
  readonly index = new DecisionHistoryIndex();
  readonly deps: DecisionHistoryDeps;
  constructor(deps: DecisionHistoryDeps) { this.deps = deps; }

  /** See recordDecision. */
  async record(input: DecisionRecordInput, signal?: AbortSignal): Promise<RecordResult> {
    const { client, log, metrics, dryRun } = this.deps;
    if (dryRun) return 'dry_run';
    const obj = buildDecisionRecord(input);
    const entry: HistoryEntry = { namespace: obj.metadata.namespace, name: obj.metadata.name, jobUid: input.job.uid, atMs: input.atMs };
    try {
      await client.create(decisionRecordsPath(obj.metadata.namespace), { ...obj }, { ...(signal === undefined ? {} : { signal }), timeoutMs: 10_000 });
      this.index.put(entry);
      metrics.apiWrites.inc({ kind: 'decision_record', result: 'success' });
      metrics.decisionRecords.inc({ result: 'recorded' });
      if (this.index.jobCount(entry.namespace, input.job.uid) > this.deps.bounds.perJob || this.index.size > this.deps.bounds.total) this.deps.onRecorded?.();
      return 'recorded';
    } catch (e) {
      if (isConflict(e)) {
        this.index.put(entry);
        metrics.decisionRecords.inc({ result: 'duplicate' });
        return 'duplicate';
      }
      metrics.apiWrites.inc({ kind: 'decision_record', result: e instanceof ApiError ? String(e.statusCode) : 'error' });
      metrics.decisionRecords.inc({ result: 'failed' });
      log.warn('could not record the decision in the decision history', { job: `${input.job.namespace}/${input.job.name}`, decisionId: input.decisionId, err: String(e) });
      return 'failed';
    }
  }
}

/**
 * Records one decision about a job with its reason chain (the entry point for every decider, the
 * breaker's held decisions included: `outcome: 'held'`, a reason step `{ stage: 'breaker', detail }`).
 * Never throws; answers what happened.
 */
export function recordDecision(history: DecisionHistory, input: DecisionRecordInput, signal?: AbortSignal): Promise<RecordResult> {
  return history.record(input, signal);
}
