/**
 * `mindx-dl/job-reschedule-reason`, key `recent-reschedule-records` (docs/formats.md#job-reschedule-reason,
 * docs/rules.md#resched.reason-history): one record per restart, newest first, 10 a job, 10 tasks a record; above 950 KB each round
 * drops the oldest record of every job with more than one (up to 10 rounds, never the newest);
 * entries of jobs no longer in the session (no PodGroup) are dropped.
 *
 * Two entry points share one rendering: `add` (a restart's record, called by the action executor)
 * and the reconciler (prune + trim only, on start and when a job goes away). Both start from the newer
 * of the cache and our own last write, write only on a difference, with the resourceVersion (409 ->
 * queue). Writes are serialized in-process, so concurrent job workers do not race each other into
 * 409s, and grouped: the first record after a quiet spell is written at once; later ones go out
 * together no sooner than `gapMs` after the previous write started (so a storm of restarts
 * costs two or three writes of this one ConfigMap, not one per job). Nobody waits for that: the
 * record is part of the decision's write-ahead, and the decision's journal clear is held until the
 * record landed (reconcilers/job-decisions.reconciler.ts), so a crash before replays the decision,
 * which adds the record.
 *
 * Replays: a decision carried out again after a crash passes `replay: true`; its record is added only
 * if the job's newest record is not already that record (same time stamp and tasks).
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { PendingRecord, RescheduleReasonSink } from '../actions/job-action-executor.ts';
import {
  JOB_RESCHEDULE_REASON_CM_NAME, JOB_RESCHEDULE_REASON_NAMESPACE, RECENT_RESCHEDULE_RECORDS_KEY,
  addRecord, newRescheduleRecord, parseRescheduleHistory, retainJobs, trimToSize,
  type RescheduleHistory, type RescheduleRecord,
} from '../schemas/job-reschedule-reason/job-reschedule-reason.ts';

export const JOB_RESCHEDULE_REASON_KEY = 'job-reschedule-reason';
/** The reasons loop's key for a spaced write of queued records (`flushDue`). */
export const JOB_RESCHEDULE_REASON_FLUSH_KEY = 'job-reschedule-reason/flush';

export interface RescheduleReasonDeps {
  readonly cached: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  /** Keys `<ns>/<podGroupName>` of the jobs still in the session. */
  readonly liveJobKeys: () => ReadonlySet<string>;
  readonly log: Logger;
  /** IANA zone of LogFileFormatTime (Volcano uses its local zone). */
  readonly timeZone?: string;
  /** Least time between the starts of two writes of added records (default 0: none). */
  readonly gapMs?: number;
  /** The controller's clock's time (runtime/clock.ts). */
  readonly now: () => number;
  /** Arms `flushDue` in `ms` (the reasons loop's JOB_RESCHEDULE_REASON_FLUSH_KEY; timers go through the runtime). */
  readonly wake?: (ms: number) => void;
}

const sameRecord = (a: RescheduleRecord | undefined, b: RescheduleRecord): boolean =>
  a !== undefined && a.RescheduleTimeStamp === b.RescheduleTimeStamp && JSON.stringify(a.ReasonOfTask ?? []) === JSON.stringify(b.ReasonOfTask ?? []);

interface Queued {
  readonly rec: PendingRecord;
  readonly resolve: (recorded: boolean) => void;
  readonly reject: (e: unknown) => void;
}

export class RescheduleReasonStore implements RescheduleReasonSink {
  private readonly d: RescheduleReasonDeps;
  private chain: Promise<unknown> = Promise.resolve();
  /** Records waiting for the next write; a flush is scheduled whenever this turns non-empty. */
  private queued: Queued[] = [];
  /** A flush is scheduled (serial chain) or armed (wake), so `add` need not start one. */
  private pending = false;
  private acting = true;
  private lastStartMs = -Infinity;

  constructor(d: RescheduleReasonDeps) {
    this.d = d;
  }

  private now(): number { return this.d.now(); }

  /** Starts a flush now if the gap since the last one has passed, else arms one for then. */
  private armFlush(): void {
    if (this.pending || this.queued.length === 0) return;
    const wait = this.lastStartMs + (this.d.gapMs ?? 0) - this.now();
    this.pending = true;
    if (wait <= 0 || this.d.wake === undefined) void this.serial(() => this.flush());
    else this.d.wake(wait);
  }

  /**
   * The loops are stopping (leadership lost, shutdown): queued and later records are not written by
   * this process (their adds reject; their decisions stay pending in the journal and whoever leads
   * next replays them, adding the records), so a later leadership of ours cannot add them a second
   * time, and nothing waits on a flush that the stopped loop would never run. Called before the loops
   * stop; `resume` when they start again.
   */
  abandon(): void {
    this.acting = false;
    const batch = this.queued;
    this.queued = [];
    this.pending = false;
    for (const q of batch) q.reject(new Error('job-reschedule-reason: not acting'));
  }

  resume(): void { this.acting = true; }

  /**
   * A decision waits on a queued record (the job's next journal put holds for its last record):
   * write the queued records now instead of at the end of the gap. A job restarted again within
   * the gap is rare, and its decision otherwise sat in the queue for up to a second.
   */
  expedite(): void {
    if (!this.acting || !this.pending || this.queued.length === 0) return;
    void this.serial(() => this.flush());
  }

  /** The armed flush's pass (reasons loop): writes the queued records when due, else arms again. */
  async flushDue(): Promise<void> {
    if (!this.pending || this.queued.length === 0) return;
    const wait = this.lastStartMs + (this.d.gapMs ?? 0) - this.now();
    if (wait > 0) { this.d.wake?.(wait); return; }
    await this.serial(() => this.flush());
  }

  /**
   * Adds a restart's record (see the file comment for replays and grouping). Resolves true when the
   * record is in a write that landed; false when it was a replay already present (or dry run).
   */
  add(rec: PendingRecord): Promise<boolean> {
    if (!this.acting) return Promise.reject(new Error('job-reschedule-reason: not acting'));
    return new Promise<boolean>((resolve, reject) => {
      this.queued.push({ rec, resolve, reject });
      this.armFlush();
    });
  }

  /** Prune + trim only. */
  sync(): Promise<boolean> {
    return this.serial(async () => (await this.write([])).written);
  }

  private async flush(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    this.pending = false;
    if (batch.length === 0) return;
    this.lastStartMs = this.now();
    try {
      const { written, added } = await this.write(batch.map((q) => q.rec));
      if (batch.length > 1) this.d.log.debug('job-reschedule-reason: records written together', { records: batch.length, written });
      batch.forEach((q, i) => q.resolve(written && added[i] === true));
    } catch (e) {
      for (const q of batch) q.reject(e);
    } finally {
      this.armFlush(); // records queued meanwhile
    }
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.chain.then(f, f);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private current(): { actual: ConfigMap | undefined; history: RescheduleHistory } {
    const actual = this.d.writer.fresher(JOB_RESCHEDULE_REASON_NAMESPACE, JOB_RESCHEDULE_REASON_CM_NAME, this.d.cached());
    const parsed = parseRescheduleHistory(actual?.data?.[RECENT_RESCHEDULE_RECORDS_KEY] ?? '');
    if (parsed.ok) return { actual, history: parsed.value };
    this.d.log.warn('job-reschedule-reason unreadable; starting a new history', { reason: parsed.reason });
    return { actual, history: new Map() };
  }

  /** One write of the history with `recs` added in order; `added[i]`: whether recs[i] was new. */
  private async write(recs: readonly PendingRecord[]): Promise<{ written: boolean; added: boolean[] }> {
    const { actual, history: before } = this.current();
    let history = before;
    const live = new Set(this.d.liveJobKeys());
    const added = recs.map((rec) => {
      live.add(rec.jobKey);
      const record = newRescheduleRecord(rec.tasks, Math.floor(rec.atMs / 1000), this.d.timeZone ?? 'UTC');
      const newest = history.get(rec.jobKey)?.RescheduleRecords?.[0];
      if (rec.replay && sameRecord(newest, record)) return false;
      const jobId = rec.jobKey.endsWith(`-${rec.jobUid}`) ? rec.jobKey.slice(0, -(rec.jobUid.length + 1)) : rec.jobKey;
      history = addRecord(history, jobId, rec.jobUid, record);
      return true;
    });
    history = retainJobs(history, live);
    const t = trimToSize(history);
    if (t.rounds > 0) {
      this.d.log.info('job-reschedule-reason above 950 KB: oldest records dropped', { rounds: t.rounds, dropped: t.dropped.length, bytes: t.bytes, fits: t.fits });
    }
    if (!t.fits) this.d.log.warn('job-reschedule-reason still above 950 KB after trimming', { bytes: t.bytes });
    if (actual === undefined && t.encoded === '') return { written: false, added };
    const data = { ...actual?.data, [RECENT_RESCHEDULE_RECORDS_KEY]: t.encoded };
    const res = await this.d.writer.ensure('job_reschedule_reason', { namespace: JOB_RESCHEDULE_REASON_NAMESPACE, name: JOB_RESCHEDULE_REASON_CM_NAME, data }, this.d.cached());
    return { written: res.written, added };
  }
}

export function rescheduleReasonReconciler(store: RescheduleReasonStore): Reconciler {
  return {
    name: 'job_reschedule_reason',
    async reconcile(key: string, ctx: ReconcileContext): Promise<Outcome> {
      if (key === JOB_RESCHEDULE_REASON_FLUSH_KEY) { await store.flushDue(); return {}; }
      if (await store.sync()) ctx.log.info('job-reschedule-reason pruned');
      return {};
    },
  };
}
