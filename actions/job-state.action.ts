/**
 * The persisted per-job decision state (schemas/job-state), kept in the shared journal ConfigMaps
 * `mindx-dl/clusterd-ts-job-journal-<n>` (one data key per job UID) and written through the
 * ConfigMapWriter with group commit, so a storm's decisions cost a few writes, not two per job.
 *
 * The guarantee, and all it asks of this store: a restart, a replayed event or a resync never acts
 * on a decision twice, and a decision stopped between its decision and its actions (a crash, a lost
 * leadership, a failed action) is finished or redone exactly once. So: (1) a decision's record (its
 * id marked acted in the state, its resolved actions as `pending`) is durable before any action,
 * and (2) its `pending` mark is dropped only after it was carried out. Nothing else needs to be
 * durable at any particular time: a state that acts on nothing, if lost, is decided again from the
 * facts; a clear, if lost, replays a completed decision, which is idempotent. Nobody waits for a
 * commit: a put is staged (seen by every later read here, `unwritten` until written) and the commit
 * that writes a pending decision queues its job (`onWritten`), whose next pass carries it out.
 *
 * - `put` (a write-ahead, or any state change) goes out with the next commit of the journal loop.
 *   A write-ahead of a decision about to act (a pending decision other than a restart's completion)
 *   is urgent: the first after a quiet spell starts its commit at once (a lone fault waits for
 *   nothing); while a burst is on, the next urgent commit starts when one is no longer in flight and
 *   at least `commitGapMs` after the previous urgent one started, so the write-aheads of a storm's
 *   jobs, decided a few ms apart, share a write. Other puts (a restart's completion, a state change
 *   without a pending decision: nobody's pods wait for them) ride with the next urgent commit or go
 *   `coalesceMs` after the first of them, so a storm's completions share a write instead of one each.
 *   A failed commit forgets the staged records of its puts: a decision not written ahead is never
 *   carried out (`onPutFailed`: the job's next pass fails with `takeFailure`, its queue backs off,
 *   and the job is decided again).
 * - One job's change never fails another's: a UID that cannot be a data key is never staged (its
 *   state stays in memory; the decisions reconciler refuses such jobs before this); a shard write the
 *   apiserver refuses for its content (422, 413, 400) is retried change by change, so only the change
 *   at fault fails (its put rejects; a lazy one backs off on its own key, 0.5 s doubling to 30 s, and
 *   is dropped after 6 tries: a clear not written only replays its decision). A failure that is not
 *   about content (409, 5xx, no answer) still fails the whole commit.
 * - `clear` (the pending mark of a decision that has been carried out) is lazy: staged, visible to
 *   every later read in this process at once, and written with the next commit, or once no lazy
 *   change came for `lazyMs` (at the latest `lazyMaxMs` after the oldest): a clear only stops a
 *   replay, so a storm's clears, released over a second or two as their reason records land, share
 *   one write. A crash before that write replays the completed decision, which is idempotent (deletes carry UID
 *   preconditions, the reschedule reason is not added twice, the history record's name is the
 *   decision id): it never decides the same restart again. A clear may be held (`hold`: the
 *   decision's reason record, written later by its own store): no commit writes it before the hold
 *   resolved; if the hold fails the clear is forgotten (the journal keeps the pending decision, the
 *   job is queued again and replays it); a `put` of that job is staged behind the same hold.
 * - Reads: what is staged, else the highest journal shard holding the UID, else the job's per-job
 *   ConfigMap `clusterd-ts-job-state-<uid>` written by versions before the journal (so a pending
 *   decision left by an old version is finished, not decided again). That ConfigMap is deleted with
 *   the job.
 *
 * A pristine state (nothing started, nothing acted, budget untouched) of a job without a record is not
 * written: most jobs never see a fault.
 *
 * Dry run: nothing is written, so states live in memory here (decisions are still made once per
 * fault, not once per event); they are lost on restart, which in dry run acts on nothing.
 */
import { ApiError, isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import { isJobUid } from '../schemas/kube-names.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Parsed } from '../schemas/parsed.ts';
import { ok } from '../schemas/parsed.ts';
import {
  JOB_JOURNAL_LABELS, JOB_JOURNAL_SHARD_CHARS, JOB_STATE_KEY, JOB_STATE_NAMESPACE, JOB_STATE_VERSION,
  encodeJobState, jobStateCmName, jobUidOfStateCm, journalCmName, journalShardOf, parseJobState,
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
  readonly log?: Logger;
  readonly metrics?: Pick<Metrics, 'jobJournalKeyFailures'>;
  /** Least time between the starts of two commits of urgent puts (default 50 ms). */
  readonly commitGapMs?: number;
  /** Longest a put that is not urgent (see above) waits for a commit to ride with (default 200 ms). */
  readonly coalesceMs?: number;
  /** A lazy change (a clear, a removal) is written once no other came for this long (default 2 s)... */
  readonly lazyMs?: number;
  /** ...or this long after the oldest unwritten one (default 10 s). */
  readonly lazyMaxMs?: number;
  /** The controller's clock's time (runtime/clock.ts). */
  readonly now: () => number;
  /**
   * Arms the next commit in `ms` (0: now): a work-queue key whose pass calls `commitDue()`; an earlier
   * armed time wins (WorkQueue.addAfter). Timers go through the runtime (layering rule).
   */
  readonly wake: (ms: number) => void;
  /** A write-ahead is staged behind a held clear's hold (the job's reason record): ask its writer to write now. */
  readonly expediteHold: () => void;
  /** A held clear's hold failed: the job (its key) must be reconciled again to replay its decision. */
  readonly onHoldFailed?: (jobKey: string) => void;
  /** A put with a pending decision was written (the write-ahead is durable): the job's next pass carries it out. */
  readonly onWritten?: (jobKey: string) => void;
  /** A put was not written (forgotten): the job's next pass fails with its error (`takeFailure`) and decides again after its backoff. */
  readonly onPutFailed?: (jobKey: string) => void;
}

const KIND = 'job_state';
const DEFAULT_COMMIT_GAP_MS = 50;
const DEFAULT_COALESCE_MS = 200;
const DEFAULT_LAZY_MS = 2000;
const DEFAULT_LAZY_MAX_MS = 10_000;
/** A lazy change whose own write failed this many times in a row is dropped (a clear: the decision is replayed). */
const MAX_KEY_RETRIES = 6;
const keyBackoffMs = (n: number): number => Math.min(30_000, 500 * 2 ** (n - 1));

/**
 * The apiserver refused the request for what it carries (422 Invalid, 413 too large, 400): the same
 * bytes fail again, and the cause may be one job's change. Another answer (409, 5xx, no answer) is
 * not about any one job.
 */
const contentError = (e: unknown): boolean => e instanceof ApiError && (e.statusCode === 422 || e.statusCode === 413 || e.statusCode === 400);

/** A write-ahead someone's pods wait for: a pending decision that is not a restart's bookkeeping. */
const urgentPut = (p: PendingDecision | undefined): boolean => p !== undefined && p.phase !== 'complete';

const pristine = (s: JobRescheduleState): boolean =>
  s.generation === 0 && s.active === undefined && s.acted.length === 0 && s.hotSwitchDowngraded !== true;

/** One staged change of one UID in one shard: the record's bytes, or null = remove. */
interface Staged {
  readonly text: string | null;
  readonly lazy: boolean;
  /** The lazy change this eager one replaced: restored if the eager one's commit fails. */
  readonly prev?: Staged;
  /**
   * The shard's text for the UID our change was made against (undefined: none). A commit finding
   * another text there (another writer, e.g. a leader we did not know of) does not overwrite it:
   * a lazy change is dropped, an eager one fails its put (compare-and-swap per job).
   */
  readonly base: string | undefined;
  /** Not written before this settles (a held clear). */
  readonly hold?: Promise<unknown>;
}

/** A put not yet written: `urgent` (a write-ahead before acting) or not, staged at `atMs`. */
interface Waiter { readonly uid: string; readonly urgent: boolean; readonly atMs: number; readonly resolve: () => void; readonly reject: (e: unknown) => void }

export class JobStateStore {
  private readonly d: JobStateStoreDeps;
  private readonly memory = new Map<string, JobStateRecord>();
  /** shard -> uid -> change not yet written. */
  private readonly staged = new Map<number, Map<string, Staged>>();
  /** Shards we wrote that the informer may not list yet. */
  private readonly written = new Set<number>();
  /** uid -> the hold of its held clear (a put of the job waits for it). */
  private readonly holds = new Map<string, Promise<unknown>>();
  private waiters: Waiter[] = [];
  /** uid -> why its last put was not written (its job's next pass fails with it: `takeFailure`). */
  private readonly failedPuts = new Map<string, unknown>();
  /** When the oldest and the newest writable lazy change not yet in a commit were staged (Infinity / -Infinity: none). */
  private lazySinceMs = Infinity;
  private lazyLastMs = -Infinity;
  /** When the armed commit is due (Infinity: none armed). */
  private dueMs = Infinity;
  private inFlight = false;
  private lastStartMs = -Infinity;
  /** When the last commit with an urgent put started. */
  private lastUrgentStartMs = -Infinity;
  private failures = 0;
  /** After a failed commit, lazy changes are not retried before this. */
  private retryAtMs = -Infinity;
  /** uid -> its own consecutive write failures and when its lazy change may be tried again. */
  private readonly keyFails = new Map<string, { readonly n: number; readonly retryAtMs: number }>();
  /** UIDs that cannot be a data key, already logged (kept in memory only). */
  private readonly refusedKeys = new Set<string>();
  /** False between `abandon` (leadership lost, shutdown) and `resume`: nothing is written. */
  private acting = true;
  /**
   * Counts `abandon`s: a decision written ahead in an earlier term and found pending now was left
   * by a lost leadership, so it is carried out as a replay (another leader may have acted on it meanwhile).
   */
  private terms = 0;

  constructor(d: JobStateStoreDeps) {
    this.d = d;
  }

  private now(): number { return this.d.now(); }

  private shardCm(shard: number): ConfigMap | undefined {
    const name = journalCmName(shard);
    return this.d.writer.fresher(JOB_STATE_NAMESPACE, name, this.d.cached(name));
  }

  private legacyCm(uid: string): ConfigMap | undefined {
    const name = jobStateCmName(uid);
    return this.d.writer.fresher(JOB_STATE_NAMESPACE, name, this.d.cached(name));
  }

  /** Journal shards, highest first. */
  private shards(): number[] {
    const out = new Set<number>([...this.written, ...this.staged.keys()]);
    for (const name of this.d.cachedNames()) {
      const s = journalShardOf(name);
      if (s !== undefined) out.add(s);
    }
    return [...out].sort((a, b) => b - a);
  }

  /** Where the UID's record is (staged changes included): the highest shard holding it. */
  private locate(uid: string): { readonly shard: number; readonly text: string } | undefined {
    for (const s of this.shards()) {
      const st = this.staged.get(s)?.get(uid);
      if (st !== undefined) {
        if (st.text !== null) return { shard: s, text: st.text };
        continue;
      }
      const text = this.shardCm(s)?.data?.[uid];
      if (text !== undefined) return { shard: s, text };
    }
    return undefined;
  }

  /** The shard's data size once its staged changes are written. */
  private size(shard: number): number {
    const data: Record<string, string> = { ...this.shardCm(shard)?.data };
    for (const [uid, st] of this.staged.get(shard) ?? []) {
      if (st.text === null) delete data[uid];
      else data[uid] = st.text;
    }
    return Object.entries(data).reduce((n, [k, v]) => n + k.length + v.length, 0);
  }

  private stageOne(shard: number, uid: string, text: string | null, lazy: boolean, hold?: Promise<unknown>): void {
    let m = this.staged.get(shard);
    if (m === undefined) this.staged.set(shard, (m = new Map()));
    const before = m.get(uid);
    const prev = lazy ? undefined : before?.lazy === true ? before : before?.prev;
    const base = before !== undefined ? before.base : this.shardCm(shard)?.data?.[uid];
    m.set(uid, { text, lazy, base, ...(prev === undefined ? {} : { prev }), ...(hold === undefined ? {} : { hold }) });
  }

  /** Stages the UID's record (null: its removal) in its shard, or in a higher one it fits into. */
  private stage(uid: string, text: string | null, lazy: boolean, hold?: Promise<unknown>): void {
    const cur = this.locate(uid);
    if (text === null) {
      for (const s of this.shards()) if (this.staged.get(s)?.get(uid)?.text != null || this.shardCm(s)?.data?.[uid] !== undefined) this.stageOne(s, uid, null, lazy);
      return;
    }
    const need = uid.length + text.length;
    const fits = (s: number, freed: number): boolean => { const n = this.size(s) - freed; return n === 0 || n + need <= JOB_JOURNAL_SHARD_CHARS; };
    if (cur !== undefined && fits(cur.shard, uid.length + cur.text.length)) { this.stageOne(cur.shard, uid, text, lazy, hold); return; }
    // A new record goes to the first shard with room; a grown one moves up (the highest shard wins,
    // and higher shards are written first, so a move never loses the record).
    let s = cur === undefined ? 0 : cur.shard + 1;
    while (!fits(s, 0)) s++;
    this.stageOne(s, uid, text, lazy, hold);
    if (cur !== undefined) this.stageOne(cur.shard, uid, null, lazy, hold);
  }

  /** A writable lazy change was staged (or its hold released) now. */
  private noteLazy(): void {
    const now = this.now();
    this.lazySinceMs = Math.min(this.lazySinceMs, now);
    this.lazyLastMs = now;
  }

  /** When the next commit is due: urgent puts at once (past the gap), other puts and lazy changes later (file comment). */
  private due(): number {
    let urgent = false;
    let eagerSinceMs = Infinity;
    for (const w of this.waiters) {
      if (this.holds.has(w.uid)) continue; // behind a hold: written once it settled
      if (w.urgent) urgent = true;
      else eagerSinceMs = Math.min(eagerSinceMs, w.atMs);
    }
    if (urgent) return Math.max(this.now(), this.lastUrgentStartMs + (this.d.commitGapMs ?? DEFAULT_COMMIT_GAP_MS));
    let at = eagerSinceMs + (this.d.coalesceMs ?? DEFAULT_COALESCE_MS);
    if (this.lazySinceMs !== Infinity) {
      const quiet = Math.min(this.lazyLastMs + (this.d.lazyMs ?? DEFAULT_LAZY_MS), this.lazySinceMs + (this.d.lazyMaxMs ?? DEFAULT_LAZY_MAX_MS));
      at = Math.min(at, Math.max(quiet, this.retryAtMs));
    }
    const keyRetry = this.keyRetryDue();
    if (keyRetry !== Infinity) at = Math.min(at, Math.max(keyRetry, this.retryAtMs));
    return at;
  }

  /**
   * Sets the due time from what is staged; it may move later (a lazy change pushes the lazy commit
   * back). An earlier wake already armed finds the commit not yet due and arms again (`commitDue`).
   */
  private arm(): void {
    if (this.inFlight || !this.acting) return; // the commit in flight schedules the next one when it ends
    const at = this.due();
    const before = this.dueMs;
    this.dueMs = at;
    if (at < before) this.d.wake(Math.max(0, at - this.now()));
  }

  /** The armed commit's pass (the work-queue key): commits when due, else arms the due time again. */
  async commitDue(): Promise<void> {
    if (!this.acting || this.inFlight) return;
    const now = this.now();
    if (now < this.dueMs) { if (this.dueMs !== Infinity) this.d.wake(this.dueMs - now); return; }
    await this.commit();
  }

  /** Writes every staged change: shards highest first, one write each. */
  private async commit(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    this.dueMs = Infinity;
    this.lastStartMs = this.now();
    if (this.waiters.some((w) => w.urgent && !this.holds.has(w.uid))) this.lastUrgentStartMs = this.lastStartMs;
    const waiters = this.waiters;
    this.waiters = [];
    const lazySince = this.lazySinceMs;
    this.lazySinceMs = Infinity;
    this.lazyLastMs = -Infinity;
    const counts = { eager: 0, lazy: 0, held: 0, bytes: 0 };
    /** uid -> why its own change failed (its put rejects; the others' go out). */
    const failed = new Map<string, unknown>();
    const batch = [...this.staged].map(([s, m]) => [s, new Map(m)] as const).sort((a, b) => b[0] - a[0]);
    let done = 0;
    try {
      for (const [s, changes] of batch) {
        await this.commitShard(s, changes, failed, counts);
        done++;
      }
      this.failures = 0;
      this.retryAtMs = -Infinity;
      this.d.log?.debug('job journal commit', { shards: batch.length, ...counts, failedKeys: failed.size, waiters: waiters.length });
      this.settleWaiters(waiters, failed);
    } catch (e) {
      this.failures++;
      this.retryAtMs = this.now() + Math.min(30_000, 500 * 2 ** (this.failures - 1));
      this.lazySinceMs = Math.min(this.lazySinceMs, lazySince); // the lazy changes not written wait on
      this.lazyLastMs = Math.max(this.lazyLastMs, this.lastStartMs);
      // Eager changes not written are forgotten (their put rejects: not written ahead, not carried
      // out); lazy ones stay for the next commit.
      for (const [s, changes] of batch.slice(done)) {
        const m = this.staged.get(s);
        for (const [uid, st] of changes) {
          if (st.lazy || m?.get(uid) !== st) continue;
          if (st.prev !== undefined) m.set(uid, st.prev);
          else m.delete(uid);
        }
        if (m?.size === 0) this.staged.delete(s);
      }
      this.d.log?.warn('job journal write failed', { err: String(e), waiting: waiters.length, failures: this.failures });
      this.settleWaiters(waiters, failed, e);
    } finally {
      this.inFlight = false;
      // Lazy changes staged meanwhile (or released holds) were noted above; a lazy change left staged
      // without a note (its commit skipped it: another writer's record) is not retried on its own.
      this.arm();
    }
  }

  /**
   * After a commit: a put whose change was written resolves, one whose change failed (or, when the
   * commit failed, was not written) rejects; one still staged (behind a hold, or staged again
   * meanwhile) waits for a later commit.
   */
  private settleWaiters(waiters: readonly Waiter[], failed: ReadonlyMap<string, unknown>, commitError?: unknown): void {
    for (const w of waiters) {
      const err = failed.get(w.uid);
      if (err !== undefined) w.reject(err);
      else if (this.unwritten(w.uid)) this.waiters.push(w);
      else if (commitError !== undefined) w.reject(commitError);
      else w.resolve();
    }
  }

  /** A put of the UID is staged or in flight, not yet written (its pending decision is not durable yet). */
  unwritten(uid: string): boolean {
    for (const m of this.staged.values()) if (m.get(uid)?.lazy === false) return true;
    return false;
  }

  /** Why the UID's last put was not written, once (its job's pass fails with it, so its queue backs off). */
  takeFailure(uid: string): unknown {
    const e = this.failedPuts.get(uid);
    this.failedPuts.delete(uid);
    return e;
  }

  /**
   * Writes one shard's staged changes in one write. When the apiserver refuses that write for what it
   * carries (422, 413, 400) and it carries more than one job's change, each change is written alone,
   * so the change at fault fails by itself (its put rejects, a lazy one backs off on its own) and the
   * other jobs' records land. Throws what is not about one change (409, 5xx, no answer).
   */
  private async commitShard(s: number, changes: Map<string, Staged>, failed: Map<string, unknown>, counts: { eager: number; lazy: number; held: number; bytes: number }): Promise<void> {
    const name = journalCmName(s);
    const m0 = this.staged.get(s);
    const now = this.now();
    const data: Record<string, string> = { ...this.shardCm(s)?.data };
    for (const [uid, st] of changes) {
      if (st.hold !== undefined) { changes.delete(uid); continue; } // held: stays staged, not written yet
      if (failed.has(uid)) {
        // Its change in a higher shard failed: the other half of a move (the removal here) must not
        // go alone, or the record would be lost. An eager one is forgotten with it, a lazy one waits.
        changes.delete(uid);
        if (!st.lazy) this.unstage(s, uid, st);
        continue;
      }
      if (st.lazy && (this.keyFails.get(uid)?.retryAtMs ?? -Infinity) > now) { changes.delete(uid); continue; } // its own backoff
      if (data[uid] !== st.base) {
        changes.delete(uid);
        if (!st.lazy) { this.keyFailed(s, uid, st, new Error(`job journal: the record of ${uid} was changed by another writer`), failed); continue; }
        this.d.log?.warn('job journal: record changed by another writer, lazy change dropped', { jobUid: uid });
        if (m0?.get(uid) === st) m0.delete(uid);
        continue;
      }
      if (st.text === null) delete data[uid];
      else data[uid] = st.text;
    }
    for (const st of changes.values()) if (st.lazy) counts.lazy++; else counts.eager++;
    counts.held += (m0?.size ?? 0) - changes.size;
    counts.bytes += Object.entries(data).reduce((n, [k, v]) => n + k.length + v.length, 0);
    try {
      await this.writeShard(s, data);
      this.written.add(s);
      this.settled(s, changes);
      return;
    } catch (e) {
      if (!contentError(e)) throw e;
      if (changes.size <= 1) {
        for (const [uid, st] of changes) this.keyFailed(s, uid, st, e, failed);
        return;
      }
      this.d.log?.warn('job journal: a shard write was refused for its content; writing its changes one by one', { shard: name, changes: changes.size, err: String(e) });
    }
    for (const [uid, st] of changes) {
      const one: Record<string, string> = { ...this.shardCm(s)?.data };
      if (failed.has(uid)) { if (!st.lazy) this.unstage(s, uid, st); continue; }
      if (one[uid] !== st.base) {
        if (!st.lazy) { this.keyFailed(s, uid, st, new Error(`job journal: the record of ${uid} was changed by another writer`), failed); continue; }
        this.d.log?.warn('job journal: record changed by another writer, lazy change dropped', { jobUid: uid });
        const m = this.staged.get(s);
        if (m?.get(uid) === st) m.delete(uid);
        if (m?.size === 0) this.staged.delete(s);
        continue;
      }
      if (st.text === null) delete one[uid];
      else one[uid] = st.text;
      try {
        await this.writeShard(s, one);
        this.written.add(s);
        this.settled(s, new Map([[uid, st]]));
      } catch (e) {
        if (!contentError(e)) throw e;
        this.keyFailed(s, uid, st, e, failed);
      }
    }
  }

  private async writeShard(s: number, data: Record<string, string>): Promise<void> {
    const name = journalCmName(s);
    const cached = this.d.cached(name);
    if (Object.keys(data).length === 0) await this.d.writer.remove(KIND, JOB_STATE_NAMESPACE, name, cached);
    else await this.d.writer.ensure(KIND, { namespace: JOB_STATE_NAMESPACE, name, labels: { ...JOB_JOURNAL_LABELS }, data }, cached);
  }

  /** These changes of shard `s` were written: unstaged (or, staged again meanwhile, based on our write). */
  private settled(s: number, changes: ReadonlyMap<string, Staged>): void {
    const m = this.staged.get(s);
    for (const [uid, st] of changes) {
      this.keyFails.delete(uid);
      const cur = m?.get(uid);
      if (cur === st) m!.delete(uid);
      else if (cur !== undefined) m!.set(uid, { ...cur, base: st.text ?? undefined }); // staged meanwhile: it follows our write
    }
    if (m?.size === 0) this.staged.delete(s);
  }

  /**
   * One job's change failed on its own. An eager one is forgotten (its put rejects, its reconcile
   * retries on its own key's backoff); a lazy one stays staged and is tried again after its own
   * backoff, at most MAX_KEY_RETRIES times, then dropped (a clear not written only makes the
   * decision replay, which is idempotent). Nobody else's change waits or fails for it.
   */
  private keyFailed(s: number, uid: string, st: Staged, err: unknown, failed: Map<string, unknown>): void {
    const n = (this.keyFails.get(uid)?.n ?? 0) + 1;
    const m = this.staged.get(s);
    let outcome: 'rejected' | 'retry' | 'dropped';
    failed.set(uid, err);
    if (!st.lazy) {
      outcome = 'rejected';
      this.unstage(s, uid, st);
    } else if (n > MAX_KEY_RETRIES) {
      outcome = 'dropped';
      // Every lazy change of the UID goes (both halves of a move), so none is written alone.
      for (const [shard, sm] of [...this.staged]) {
        if (sm.get(uid)?.lazy === true) sm.delete(uid);
        if (sm.size === 0) this.staged.delete(shard);
      }
    } else outcome = 'retry';
    if (m?.size === 0) this.staged.delete(s);
    if (outcome === 'dropped') this.keyFails.delete(uid);
    else this.keyFails.set(uid, { n, retryAtMs: this.now() + keyBackoffMs(n) });
    this.d.metrics?.jobJournalKeyFailures.inc({ outcome });
    this.d.log?.warn('job journal: one job\'s change was not written; the other jobs\' changes are', {
      jobUid: uid, shard: journalCmName(s), outcome, failures: n, ...(outcome === 'retry' ? { retryInMs: keyBackoffMs(n) } : {}), err: String(err),
    });
  }

  /** Forgets an eager change that was not written (the lazy one it replaced comes back). */
  private unstage(s: number, uid: string, st: Staged): void {
    const m = this.staged.get(s);
    if (m?.get(uid) !== st) return;
    if (st.prev !== undefined) m.set(uid, st.prev);
    else m.delete(uid);
    if (m.size === 0) this.staged.delete(s);
  }

  /** The earliest retry time of a lazy change in its own backoff (Infinity: none). */
  private keyRetryDue(): number {
    let at = Infinity;
    for (const m of this.staged.values()) {
      for (const [uid, st] of m) {
        const f = this.keyFails.get(uid);
        if (f !== undefined && st.lazy && st.hold === undefined) at = Math.min(at, f.retryAtMs);
      }
    }
    return at;
  }

  /** The job's record; undefined when it has none; a rejection when the stored text is unusable. */
  get(uid: string): Parsed<JobStateRecord> | undefined {
    const mem = this.memory.get(uid);
    if (mem !== undefined) return ok(mem);
    const text = this.locate(uid)?.text ?? this.legacyCm(uid)?.data?.[JOB_STATE_KEY];
    return text === undefined ? undefined : parseJobState(text);
  }

  /** Where the job's stored record is read from: a journal shard's key, or an old per-job ConfigMap. */
  where(uid: string): { readonly name: string; readonly key: string; readonly shared: boolean } | undefined {
    const at = this.locate(uid);
    if (at !== undefined) return { name: journalCmName(at.shard), key: uid, shared: true };
    return this.legacyCm(uid)?.data?.[JOB_STATE_KEY] === undefined ? undefined : { name: jobStateCmName(uid), key: JOB_STATE_KEY, shared: false };
  }

  /** The stored text of the job's record, as `get` reads it. */
  text(uid: string): string | undefined {
    return this.locate(uid)?.text ?? this.legacyCm(uid)?.data?.[JOB_STATE_KEY];
  }

  /**
   * Dry run keeps every state in memory; so does a UID that cannot be a ConfigMap data key (the
   * apiserver does not validate ownerReference uids): its record never enters a shared write, where
   * the 422 it draws would fail the other jobs' records of the same commit. The decisions
   * reconciler refuses such a job before it gets here (unless --refuse-malformed-job-identity=false).
   */
  private memoryOnly(uid: string, jobKey?: string): boolean {
    if (this.d.dryRun) return true;
    if (isJobUid(uid)) return false;
    if (!this.refusedKeys.has(uid)) {
      if (this.refusedKeys.size >= 1024) this.refusedKeys.clear(); // logged once per UID, within a bound
      this.refusedKeys.add(uid);
      this.d.log?.warn('job journal: the job uid cannot be a ConfigMap data key; its state is kept in memory only', { job: jobKey, jobUid: uid.slice(0, 80) });
    }
    return true;
  }

  private record(jobKey: string, state: JobRescheduleState, pending?: PendingDecision): JobStateRecord {
    return { version: JOB_STATE_VERSION, jobKey, jobUid: state.jobUid, state, ...(pending === undefined ? {} : { pending }) };
  }

  /**
   * Stores the state (and the pending decision, if any): staged now (every later read in this process
   * sees it; `unwritten` says it is not durable yet) and written by a commit of the journal loop
   * (group commit, above). Nobody needs to wait: a written put with a pending decision calls
   * `onWritten` (the job's next pass carries the decision out), a put not written calls
   * `onPutFailed` (the job's next pass fails with `takeFailure` and decides again after its backoff).
   * The promise (tests) resolves once written, true when anything was staged; rejects when not written.
   * Behind a held clear (the job's last reason record), the put is not written before that hold
   * settled, and is forgotten with it if it failed (the job then replays its last decision).
   */
  put(jobKey: string, state: JobRescheduleState, pending?: PendingDecision): Promise<boolean> {
    const uid = state.jobUid;
    const record = this.record(jobKey, state, pending);
    if (this.memoryOnly(uid, jobKey)) {
      const before = this.memory.get(uid);
      this.memory.set(uid, record);
      return Promise.resolve(before === undefined || encodeJobState(before) !== encodeJobState(record));
    }
    const cur = this.text(uid);
    const text = encodeJobState(record);
    if (cur === text) return Promise.resolve(false);
    if (cur === undefined && pending === undefined && pristine(state)) return Promise.resolve(false);
    if (!this.acting) return Promise.reject(new Error('job journal: not acting (leadership lost or shutting down)'));
    this.failedPuts.delete(uid);
    const hold = this.holds.get(uid);
    // A decision waits on the held record: ask its writer to write now, not at its own pace.
    if (hold !== undefined && urgentPut(pending)) this.d.expediteHold();
    this.stage(uid, text, false, hold);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ uid, urgent: urgentPut(pending), atMs: this.now(), resolve, reject }));
    this.arm();
    return done.then(() => {
      if (pending !== undefined) this.d.onWritten?.(jobKey);
      return true;
    }, (e: unknown) => {
      if (this.acting) {
        this.failedPuts.set(uid, e);
        this.d.onPutFailed?.(jobKey);
      }
      throw e;
    });
  }

  /**
   * Stores the state of a decision that has been carried out (no pending mark), lazily (above):
   * visible here at once, written with the next commit. Answers whether anything changed.
   */
  clear(jobKey: string, state: JobRescheduleState, hold?: Promise<unknown>): boolean {
    if (this.memoryOnly(state.jobUid, jobKey)) {
      this.memory.set(state.jobUid, this.record(jobKey, state));
      return true;
    }
    const uid = state.jobUid;
    const text = encodeJobState(this.record(jobKey, state));
    if (this.text(uid) === text) return false;
    if (hold === undefined) {
      this.stage(uid, text, true);
      this.noteLazy();
      this.arm();
      return true;
    }
    this.stage(uid, text, true, hold);
    this.holds.set(uid, hold);
    const settle = (ok: boolean, err?: unknown): void => {
      if (this.holds.get(uid) === hold) this.holds.delete(uid);
      for (const m of this.staged.values()) {
        const st = m.get(uid);
        if (st?.hold !== hold) continue; // replaced meanwhile (a put, a removal)
        if (ok) { const { hold: _h, ...rest } = st; m.set(uid, rest); } else m.delete(uid);
      }
      for (const [s, m] of [...this.staged]) if (m.size === 0) this.staged.delete(s);
      if (ok) { this.noteLazy(); this.arm(); return; }
      // A put staged behind it went with it: it was not written.
      const gone = new Error(`job journal: the reason record of the last decision was not written (${String(err)}); it is replayed`);
      this.waiters = this.waiters.filter((w) => { if (w.uid !== uid || this.unwritten(uid)) return true; w.reject(gone); return false; });
      this.d.log?.warn('job journal: the reason record was not written; the decision stays pending and is replayed', { jobUid: uid, err: String(err) });
      this.d.onHoldFailed?.(jobKey);
    };
    hold.then(() => settle(true), (e: unknown) => settle(false, e));
    return true;
  }

  /**
   * Stops writing and forgets lazy changes (the loops have stopped: leadership lost or shutdown). A
   * controller that may no longer lead writes nothing; a clear lost this way makes the next leader
   * replay a completed decision, which is idempotent.
   */
  abandon(): void {
    this.acting = false;
    this.terms++;
    this.dueMs = Infinity;
    this.lazySinceMs = Infinity;
    this.lazyLastMs = -Infinity;
    this.staged.clear();
    this.holds.clear();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(new Error('job journal: not acting'));
  }

  /** The journal's term (see `terms`). */
  get term(): number { return this.terms; }

  /** Writes again (leadership regained). */
  resume(): void { this.acting = true; }

  /** Writes what is staged now (tests). */
  async flush(): Promise<void> {
    if (this.inFlight) return; // tests flush a quiet store
    if (this.staged.size > 0 || this.waiters.length > 0) await this.commit();
  }

  /** Deletes the job's state (the job is gone): its journal entry lazily, an old per-job ConfigMap now. */
  async remove(uid: string): Promise<void> {
    this.memory.delete(uid);
    if (this.memoryOnly(uid)) return;
    if (this.locate(uid) !== undefined) {
      this.stage(uid, null, true);
      this.noteLazy();
      this.arm();
    }
    const cm = this.legacyCm(uid);
    if (cm === undefined) return;
    try {
      await this.d.client.delete(paths.configMap(JOB_STATE_NAMESPACE, jobStateCmName(uid)), { preconditions: { uid: cm.metadata?.uid } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /** Every readable record (journal, older per-job ConfigMaps, memory). */
  all(): JobStateRecord[] {
    const uids = new Set<string>(this.memory.keys());
    for (const s of this.shards()) {
      for (const uid of Object.keys(this.shardCm(s)?.data ?? {})) uids.add(uid);
      for (const uid of this.staged.get(s)?.keys() ?? []) uids.add(uid);
    }
    for (const name of this.d.cachedNames()) {
      const uid = jobUidOfStateCm(name);
      if (uid !== undefined) uids.add(uid);
    }
    const out: JobStateRecord[] = [];
    for (const uid of uids) {
      const r = this.get(uid);
      if (r?.ok === true) out.push(r.value);
    }
    return out;
  }
}
