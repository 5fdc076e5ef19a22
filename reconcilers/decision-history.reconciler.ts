/**
 * Keeps the decision history bounded (it must not grow without end in etcd): the first pass lists every DecisionRecord
 * (paged) into the index the recording action keeps current; each pass deletes what
 * policy/jobs/decision-history-bounds.ts names (TTL, per-job count, total count) and comes back when the
 * oldest record expires (at most every 10 minutes). Records are never deleted with their job: the
 * history of a job that is gone stays readable until the TTL, for the post-mortem.
 *
 * The CRD missing (an apiserver without the chart's CRDs) or forbidden is logged once per pass and
 * retried later; it never stops the controller.
 */
import { isNotFound, type KubeClient } from '../runtime/kube-client.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { decisionRecordPath, decisionRecordsPath, parseDecisionRecord } from '../schemas/decision-record/decision-record.ts';
import { historyVictims, nextExpiryMs, type HistoryBounds } from '../policy/jobs/decision-history-bounds.ts';
import type { DecisionHistoryIndex } from '../actions/decision-history.action.ts';

export const DECISION_HISTORY_KEY = 'decision-history';
const MAX_REQUEUE_MS = 10 * 60_000;
const RETRY_MS = 60_000;
const PAGE = 500;

export interface DecisionHistoryReconcilerDeps {
  readonly client: KubeClient;
  readonly index: DecisionHistoryIndex;
  readonly bounds: HistoryBounds;
  readonly metrics: Metrics;
}

async function load(d: DecisionHistoryReconcilerDeps, signal: AbortSignal): Promise<void> {
  let cont: string | undefined;
  do {
    const page = await d.client.list<unknown>(decisionRecordsPath(), { limit: PAGE, ...(cont ? { continue: cont } : {}) }, { signal });
    for (const item of page.items) {
      const p = parseDecisionRecord(item);
      if (p.ok) d.index.put({ namespace: p.value.namespace, name: p.value.name, jobUid: p.value.spec.job.uid, atMs: p.value.atMs });
    }
    cont = page.metadata?.continue || undefined;
  } while (cont !== undefined);
  d.index.loaded = true;
}

export function decisionHistoryReconciler(d: DecisionHistoryReconcilerDeps): Reconciler {
  return {
    name: 'decision_history',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      try {
        if (!d.index.loaded) await load(d, ctx.signal);
      } catch (e) {
        ctx.log.warn('decision history: cannot list DecisionRecords (CRD installed? RBAC?); retrying', { err: String(e) });
        return { requeueAfterMs: RETRY_MS };
      }
      const now = ctx.now();
      const victims = historyVictims(d.index.values(), d.bounds, now);
      for (const v of victims) {
        try {
          await d.client.delete(decisionRecordPath(v.namespace, v.name));
        } catch (e) {
          if (!isNotFound(e)) throw e; // back to the queue, rate-limited
        }
        d.index.remove(v.namespace, v.name);
        d.metrics.decisionRecords.inc({ result: 'pruned' });
      }
      if (victims.length > 0) ctx.log.info('decision history pruned', { deleted: victims.length, kept: d.index.size });
      const expiry = nextExpiryMs(d.index.values(), d.bounds.ttlMs);
      return { requeueAfterMs: Math.max(1_000, Math.min(MAX_REQUEUE_MS, expiry === undefined ? MAX_REQUEUE_MS : expiry - now + 1)) };
    },
  };
}
