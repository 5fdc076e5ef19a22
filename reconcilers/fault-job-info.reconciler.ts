/**
 * Keeps `<cluster-system>/fault-job-info` (docs/formats.md#fault-job-info): the recovery flow hands it
 * operations (publish a job's entry now, clear it later: docs/rules.md#recover.force-release,
 * #recover.fault-job-info-clear) and it applies the due ones, in order, to the ConfigMap as it is
 * (read, change, write: other keys are left as found), then requeues itself for the next one. The
 * `prune` key drops entries of jobs the controller does not know, at start and every hour. The
 * ConfigMap is created by the first publish, without labels; a clear never creates it. Nothing is
 * written when the data would not change. A failed write leaves the operations pending (the queue's
 * backoff retries them).
 */
import { FAULT_JOB_INFO_CM_NAME, parseFaultNodes } from '../schemas/fault-job-info/fault-job-info.ts';
import { applyFaultJobInfoOps, pruneFaultJobInfo, type FaultJobInfoOp } from '../policy/recovery/force-release.ts';
import { RULE } from '../vocabulary/rule-ids.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export const FAULT_JOB_INFO_OPS_KEY = 'ops';
export const FAULT_JOB_INFO_PRUNE_KEY = 'prune';
/** ClusterD's RefreshFaultJobInfo period. */
export const FAULT_JOB_INFO_PRUNE_INTERVAL_MS = 3_600_000;
const KIND = 'fault_job_info';

export interface FaultJobInfoDeps {
  readonly namespace: string;
  /** The cached ConfigMap. */
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  /** The job UID is a job the controller knows (the prune keeps its entry). */
  readonly known: (jobId: string) => boolean;
  readonly metrics: Metrics;
}

export interface FaultJobInfoReconciler extends Reconciler {
  /** Queue an operation (the caller adds the ops key, at once or at its due time). */
  add(op: FaultJobInfoOp): void;
  /** The job's entry was last written into an existing ConfigMap (ClusterD's refreshCMIds). */
  updatedBefore(jobId: string): boolean;
}

const nodesOf = (value: string): ReadonlySet<string> | undefined => {
  const p = parseFaultNodes(value);
  return p.ok ? p.value : undefined;
};

export function faultJobInfoReconciler(deps: FaultJobInfoDeps): FaultJobInfoReconciler {
  let pending: FaultJobInfoOp[] = [];
  let updated: ReadonlySet<string> = new Set();
  const ns = deps.namespace;
  const current = (): ConfigMap | undefined => deps.writer.fresher(ns, FAULT_JOB_INFO_CM_NAME, deps.actual());

  async function prune(ctx: ReconcileContext): Promise<Outcome> {
    const again = { requeueAfterMs: FAULT_JOB_INFO_PRUNE_INTERVAL_MS };
    const cm = current();
    if (cm === undefined) return again;
    const { data, dropped } = pruneFaultJobInfo(cm.data ?? {}, deps.known);
    if (dropped.length === 0) return again;
    await deps.writer.ensure(KIND, { namespace: ns, name: FAULT_JOB_INFO_CM_NAME, data }, cm);
    deps.metrics.forceRelease.inc({ outcome: 'pruned' }, dropped.length);
    ctx.log.info('fault-job-info: entries of unknown jobs pruned', { rule: RULE.recover.faultJobInfoClear, jobs: dropped });
    return again;
  }

  return {
    name: KIND,
    add(op) { pending.push(op); },
    updatedBefore: (jobId) => updated.has(jobId),
    async reconcile(key: string, ctx: ReconcileContext): Promise<Outcome> {
      if (key === FAULT_JOB_INFO_PRUNE_KEY) return prune(ctx);
      const now = ctx.now();
      const due = pending.filter((op) => op.dueMs <= now).sort((a, b) => a.dueMs - b.dueMs);
      if (due.length > 0) {
        const cm = current();
        const step = applyFaultJobInfoOps(cm === undefined ? undefined : (cm.data ?? {}), due, updated, nodesOf);
        if (step.data !== undefined) await deps.writer.ensure(KIND, { namespace: ns, name: FAULT_JOB_INFO_CM_NAME, data: { ...step.data } }, cm);
        pending = pending.filter((op) => !due.includes(op));
        updated = step.updated;
        for (const { op, outcome } of step.outcomes) {
          deps.metrics.forceRelease.inc({ outcome: op.kind === 'publish' ? 'written' : outcome === 'cleared' ? 'cleared' : 'clear_skipped' });
          const rule = op.kind === 'publish' ? RULE.recover.forceRelease : RULE.recover.faultJobInfoClear;
          const fields = { rule, jobId: op.jobId, outcome, ...(op.kind === 'clear' ? { cause: op.cause, node: op.node || undefined } : {}) };
          if (outcome === 'unreadable-entry') {
            deps.metrics.invalidInput.inc({ format: 'fault-job-info', reason: 'schema' });
            ctx.log.warn('fault-job-info: entry unreadable; not cleared for a node', fields);
          } else ctx.log.info(op.kind === 'publish' ? 'fault-job-info: entry written' : 'fault-job-info: clear', fields);
        }
      }
      const next = pending.reduce<number | undefined>((m, op) => (m === undefined || op.dueMs < m ? op.dueMs : m), undefined);
      return next === undefined ? {} : { requeueAfterMs: Math.max(0, next - now) };
    },
  };
}
