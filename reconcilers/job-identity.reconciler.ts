/**
 * Says which PodGroups are refused as jobs (policy/jobs/job-identity.ts): a PodGroup whose controller
 * ownerReference names a Volcano Job or AscendJob that does not exist in its namespace with that name
 * and UID. The job index already leaves such a PodGroup out (state/job-index.ts), so nothing keyed by
 * the UID it names is touched; this reconciler makes the refusal visible, once per PodGroup and claim:
 * a warning log line `job identity refused` (with the reason), `clusterd_job_identity_refused_total
 * {reason}` and a Warning Event `JobIdentityRefused` on the PodGroup (not in dry run).
 *
 * Not a refusal: a PodGroup younger than the grace (its Job may not have reached the Job cache yet;
 * it is looked at again when the grace ends), and a PodGroup seen verified before whose owner is now
 * gone (the job is being deleted; the garbage collector removes the PodGroup next).
 * Keyed by the PodGroup key; what it remembers per key is dropped once the PodGroup is gone.
 */
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { PodGroup } from '../runtime/kube-objects.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { identityOf, type JobIndexSources } from '../state/job-index.ts';
import { recordObjectEvent } from '../actions/object-event.action.ts';

export const JOB_IDENTITY_REFUSED_REASON = 'JobIdentityRefused';
/** How long a new PodGroup's owner may take to reach the Job / AscendJob cache. */
export const JOB_IDENTITY_GRACE_MS = 10_000;

export interface JobIdentityReconcilerDeps {
  readonly podGroup: (key: string) => PodGroup | undefined;
  readonly jobs: Pick<JobIndexSources, 'vcJobs' | 'ascendJobs'>;
  readonly client: KubeClient;
  readonly metrics: Metrics;
  /** No Events (the dry-run ClusterRole grants no write verbs); the log line and metric remain. */
  readonly dryRun: boolean;
  readonly graceMs?: number;
}

export function jobIdentityReconciler(d: JobIdentityReconcilerDeps): Reconciler {
  const grace = d.graceMs ?? JOB_IDENTITY_GRACE_MS;
  /** PodGroup key -> the owner UID it was last verified with. */
  const verified = new Map<string, string>();
  /** PodGroup key -> `<uid>|<reason>` of the refusal already reported. */
  const reported = new Map<string, string>();
  return {
    name: 'job_identity',
    async reconcile(key: string, ctx: ReconcileContext): Promise<Outcome> {
      const pg = d.podGroup(key);
      const id = pg === undefined ? undefined : identityOf(pg, d.jobs, true);
      if (pg === undefined || id === undefined) { verified.delete(key); reported.delete(key); return {}; }
      const { claim, verdict } = id;
      if (verdict.ok) { verified.set(key, claim.uid); reported.delete(key); return {}; }
      if (verified.get(key) === claim.uid) return {}; // its owner went first: a job being deleted
      const signature = `${claim.uid}|${verdict.reason}`;
      if (reported.get(key) === signature) return {};
      const created = Date.parse(pg.metadata?.creationTimestamp ?? '');
      const age = Number.isNaN(created) ? Infinity : ctx.now() - created;
      if (age < grace) return { requeueAfterMs: grace - age };
      reported.set(key, signature);
      d.metrics.jobIdentityRefused.inc({ reason: verdict.reason });
      ctx.log.warn('job identity refused: the PodGroup is not handled as the job it names', {
        podGroup: key, claimedKind: claim.kind, claimedName: claim.name, claimedUid: claim.uid, reason: verdict.reason, detail: verdict.detail,
      });
      if (d.dryRun) return {};
      const ns = pg.metadata?.namespace ?? '';
      const name = pg.metadata?.name ?? '';
      try {
        await recordObjectEvent(d.client, {
          namespace: ns, object: { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', name, namespace: ns, ...(pg.metadata?.uid ? { uid: pg.metadata.uid } : {}) },
          type: 'Warning', reason: JOB_IDENTITY_REFUSED_REASON, key: `${key}|${signature}`, atMs: ctx.now(),
          message: `${verdict.detail}: not handled as that job (no fault decisions, recovery or gRPC registration for it)`,
        });
      } catch (e) {
        ctx.log.warn('job identity: Event not posted', { podGroup: key, err: String(e) });
      }
      return {};
    },
  };
}
