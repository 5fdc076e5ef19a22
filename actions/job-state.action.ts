/**
 * The persisted per-job decision state (schemas/job-state): read from the informer cache of mindx-dl
 * ConfigMaps (or our own newer write), written through the ConfigMapWriter (create / update with
 * resourceVersion, nothing when the bytes are equal), deleted when the job is gone.
 *
 * A pristine state (nothing started, nothing acted, budget untouched) of a job that has no ConfigMap
 * yet is not written: most jobs never see a fault and get no ConfigMap.
 *
 * An action of the job_decisions reconciler (reconcilers/job-decisions.reconciler.ts), which persists a decision
 * here BEFORE carrying it out: a failed write throws back to that reconcile, and its work queue retries
 * the job with backoff (nothing is retried or dropped here).
 *
 * Dry run: the ConfigMapWriter writes nothing, so states live in memory here (decisions are still
 * made once per fault, not once per event); they are lost on restart, which in dry run acts on nothing.
 */
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Parsed } from '../schemas/parsed.ts';
import { ok } from '../schemas/parsed.ts';
import {
  JOB_STATE_KEY, JOB_STATE_LABELS, JOB_STATE_NAMESPACE, JOB_STATE_VERSION, encodeJobState, jobStateCmName, jobUidOfStateCm, parseJobState,
  type JobStateRecord, type PendingDecision,
} from '../schemas/job-state/job-state.ts';
import type { JobRescheduleState } from '../vocabulary/job-decision-state.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

export interface JobStateStoreDeps {
  /** The cached mindx-dl ConfigMap `name`, if any. */
  readonly cached: (name: string) => ConfigMap | undefined;
  /** Names of the cached mindx-dl ConfigMaps. */
  readonly cachedNames: () => Iterable<string>;
  readonly writer: ConfigMapWriter;
  readonly client: KubeClient;
  readonly dryRun: boolean;
}

const pristine = (s: JobRescheduleState): boolean =>
  s.generation === 0 && s.active === undefined && s.acted.length === 0 && s.hotSwitchDowngraded !== true;

export class JobStateStore {
  private readonly d: JobStateStoreDeps;
  private readonly memory = new Map<string, JobStateRecord>();

  constructor(d: JobStateStoreDeps) {
    this.d = d;
  }

  private cm(uid: string): ConfigMap | undefined {
    const name = jobStateCmName(uid);
    return this.d.writer.fresher(JOB_STATE_NAMESPACE, name, this.d.cached(name));
  }

  /** The job's record; undefined when it has none; a rejection when the stored text is unusable. */
  get(uid: string): Parsed<JobStateRecord> | undefined {
    const mem = this.memory.get(uid);
    if (mem !== undefined) return ok(mem);
    const cm = this.cm(uid);
    if (cm === undefined) return undefined;
    return parseJobState(cm.data?.[JOB_STATE_KEY]);
  }

  /** Stores the state (and the pending decision, if any); answers whether anything was written. */
  async put(jobKey: string, state: JobRescheduleState, pending?: PendingDecision): Promise<boolean> {
    const uid = state.jobUid;
    const record: JobStateRecord = { version: JOB_STATE_VERSION, jobKey, jobUid: uid, state, ...(pending === undefined ? {} : { pending }) };
    const cm = this.cm(uid);
    if (this.d.dryRun) {
      const before = this.memory.get(uid);
      this.memory.set(uid, record);
      return before === undefined || encodeJobState(before) !== encodeJobState(record);
    }
    if (cm === undefined && pending === undefined && pristine(state)) return false;
    const data = { [JOB_STATE_KEY]: encodeJobState(record) };
    // The informer's copy, not `cm`: the writer picks the newer of it and its own last write itself.
    const res = await this.d.writer.ensure('job_state', { namespace: JOB_STATE_NAMESPACE, name: jobStateCmName(uid), labels: { ...JOB_STATE_LABELS }, data }, this.d.cached(jobStateCmName(uid)));
    return res.written;
  }

  /** Deletes the job's state (the job is gone); a missing ConfigMap is fine. */
  async remove(uid: string): Promise<void> {
    this.memory.delete(uid);
    const cm = this.cm(uid);
    if (cm === undefined || this.d.dryRun) return;
    try {
      await this.d.client.delete(paths.configMap(JOB_STATE_NAMESPACE, jobStateCmName(uid)), { preconditions: { uid: cm.metadata?.uid } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /** Every readable record (cache + memory). */
  all(): JobStateRecord[] {
    const out = new Map<string, JobStateRecord>();
    for (const name of this.d.cachedNames()) {
      const uid = jobUidOfStateCm(name);
      if (uid === undefined) continue;
      const r = this.get(uid);
      if (r?.ok === true) out.set(uid, r.value);
    }
    for (const [uid, r] of this.memory) out.set(uid, r);
    return [...out.values()];
  }
}
