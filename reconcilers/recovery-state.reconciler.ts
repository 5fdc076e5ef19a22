/**
 * Persisted state of the per-job recovery and hot-switch FSMs: one ConfigMap per registered job,
 * `mindx-dl/clusterd-ts-recovery-<jobUid>` (key `state.json`), owned by this controller. A restart or
 * a failover reloads it, so FSM timers (absolute due times) resume where they were, and a hot-switch
 * downgrade is never forgotten (ClusterD keeps it in memory only; docs/rules.md#hotswitch.failure).
 *
 * Level-triggered: `save` / `remove` set the job's desired state (the newest wins) and queue the job
 * UID; the `recovery_state` reconciler makes the ConfigMap match it. The ConfigMapWriter writes only on
 * a byte difference, with the cached resourceVersion; a failed write (409 from a stale cache, apiserver
 * unavailable, ...) throws back to the work queue, which retries with backoff (200 ms doubling, capped
 * at a minute) until it lands: a state is never given up while this replica leads. A caller waiting on
 * `save` goes on after CALLER_WAIT_FAILURES failed writes (the state is still retried).
 *
 * Pod lists are not stored (they come back from the informer cache at load). A ConfigMap that does
 * not parse is ignored (logged): the job starts from INIT, as ClusterD after a restart.
 *
 * This is our own bookkeeping, not a wire format read by anyone else, so it is plain JSON.
 */
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Outcome, Reconciler } from '../runtime/reconciler.ts';
import type { WorkQueueOptions } from '../runtime/work-queue.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { HotSwitchCommand, HotSwitchState } from '../policy/recovery/hot-switch-types.ts';
import type { RecoveryCommand, RecoveryState } from '../policy/recovery/recovery-types.ts';
import type { RetryReport } from '../policy/recovery/recovery-feed.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import { isJobUid } from '../schemas/kube-names.ts';

export const RECOVERY_STATE_NAMESPACE = 'mindx-dl';
export const RECOVERY_STATE_PREFIX = 'clusterd-ts-recovery-';
export const RECOVERY_STATE_KEY = 'state.json';
export const RECOVERY_STATE_LABELS = { 'app.kubernetes.io/managed-by': 'clusterd-ts', 'clusterd-ts/state': 'recovery' } as const;
export const RECOVERY_STATE_VERSION = 1;

export const recoveryStateCmName = (jobUid: string): string => `${RECOVERY_STATE_PREFIX}${jobUid}`;

export interface RecoveryRecord {
  readonly version: number;
  readonly jobId: string;
  readonly jobKey: string;
  /** The job was registered through Recover/Register (its FSMs exist). */
  readonly registered: boolean;
  readonly recovery: RecoveryState;
  readonly hotSwitch: HotSwitchState;
  /**
   * The in-memory half of the FSMs' commands (controllers/recovery-commands.ts): the step retry's
   * hold and the business-plane retry reports, without which a restored step retry would take its
   * hidden UCE for a new normal fault. Absent in states stored before it existed.
   */
  readonly memory?: RecoveryMemory;
  /**
   * The FSM commands issued and not done yet (controllers/recovery-job.ts `outbox`), run by the
   * successor; absent or unreadable: none.
   */
  readonly outbox?: readonly StoredCommand[];
  readonly savedAtMs: number;
}

/** An FSM command as stored in the outbox. */
export type StoredCommand = { readonly machine: 'recovery'; readonly cmd: RecoveryCommand } | { readonly machine: 'hotSwitch'; readonly cmd: HotSwitchCommand };

/** A job's step-retry hold and retry reports (controllers/recovery-commands.ts). */
export interface RecoveryMemory {
  readonly hold?: { readonly rankIds: readonly number[]; readonly recoverTimeMs: number; readonly completeTimeMs?: number };
  readonly reports: readonly RetryReport[];
}

/** The stored memory if it holds together, else none (logged by nobody: it only shortens a hold). */
function parseMemory(raw: unknown): RecoveryMemory | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const m = raw as { hold?: unknown; reports?: unknown };
  const num = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
  const reports = Array.isArray(m.reports)
    ? m.reports.filter((r): r is RetryReport => typeof r === 'object' && r !== null && num((r as RetryReport).rankId) && num((r as RetryReport).atMs) && ['0', '2'].includes((r as RetryReport).faultType))
    : [];
  const h = m.hold as RecoveryMemory['hold'] | undefined;
  const holdOk = typeof h === 'object' && h !== null && Array.isArray(h.rankIds) && h.rankIds.every(num) && num(h.recoverTimeMs) && (h.completeTimeMs === undefined || num(h.completeTimeMs));
  return { ...(holdOk ? { hold: h } : {}), reports };
}

export type RecordParse = { ok: true; value: RecoveryRecord } | { ok: false; reason: string };

/** Parses a stored record; never throws. */
export function parseRecoveryRecord(text: string | undefined): RecordParse {
  if (text === undefined || text === '') return { ok: false, reason: 'empty' };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: `malformed JSON: ${(e as Error).message.slice(0, 120)}` };
  }
  const r = raw as Partial<RecoveryRecord> | null;
  if (r === null || typeof r !== 'object' || r.version !== RECOVERY_STATE_VERSION) return { ok: false, reason: 'unknown version' };
  if (typeof r.jobId !== 'string' || typeof r.jobKey !== 'string') return { ok: false, reason: 'jobId/jobKey missing' };
  if (r.recovery?.kind !== 'recovery' || r.hotSwitch?.kind !== 'hotSwitch') return { ok: false, reason: 'FSM states missing' };
  if (!Array.isArray(r.recovery.timers) || !Array.isArray(r.hotSwitch.timers) || typeof r.recovery.phase !== 'string') return { ok: false, reason: 'FSM states malformed' };
  // States stored before `mustExitAtMs` existed lack it: no pod was reported as must exit then.
  const stored: unknown = (r.recovery as Partial<RecoveryState>).mustExitAtMs;
  const mustExitAtMs = typeof stored === 'object' && stored !== null && !Array.isArray(stored)
    ? Object.fromEntries(Object.entries(stored).filter((e): e is [string, number] => typeof e[1] === 'number'))
    : {};
  // States stored before the O&M operations existed lack `om`: none was running. One whose O&M part
  // does not hold together is taken as none (the operation is dropped, the FSM resets at the next subscription).
  const om: unknown = (r.recovery as Partial<RecoveryState>).om;
  const omOk = typeof om === 'object' && om !== null && ['stressTest', 'switchNic'].includes((om as { kind?: unknown }).kind as string)
    && typeof (om as { stress?: unknown }).stress === 'object' && Array.isArray((om as { switchRanks?: unknown }).switchRanks)
    && Array.isArray((om as { isolateNodes?: unknown }).isolateNodes) && typeof (om as { rankNode?: unknown }).rankNode === 'object';
  const recovery = { ...r.recovery, pods: [], mustExitAtMs, om: omOk ? (om as RecoveryState['om']) : null };
  const memory = parseMemory(r.memory);
  // Commands as this controller wrote them: a machine, a typed command with its id.
  const outbox = Array.isArray(r.outbox) ? r.outbox.filter((o) => typeof o === 'object' && o !== null && ['recovery', 'hotSwitch'].includes(o.machine)
    && typeof o.cmd === 'object' && o.cmd !== null && typeof o.cmd.type === 'string' && typeof o.cmd.id === 'number') : [];
  const { memory: _m, outbox: _o, ...rest } = r as RecoveryRecord;
  return { ok: true, value: { ...rest, recovery, hotSwitch: { ...r.hotSwitch, pods: [] }, outbox, ...(memory === undefined ? {} : { memory }) } };
}

/** The stored text: states without pod lists (restored from the cache). */
export function encodeRecoveryRecord(r: RecoveryRecord): string {
  return JSON.stringify({ ...r, recovery: { ...r.recovery, pods: [] }, hotSwitch: { ...r.hotSwitch, pods: [] } });
}

/** The reconciler's controller label (metrics, logs). */
export const RECOVERY_STATE_CONTROLLER = 'recovery_state';

/**
 * The work queue of the recovery_state loop: a failed write is retried after 200 ms, doubling, capped
 * at a minute (the pace of the store's former private retry, which gave up after 5 failures).
 */
export const RECOVERY_STATE_QUEUE: Omit<WorkQueueOptions, 'clock'> = { baseDelayMs: 200, maxDelayMs: 60_000 };

/** Failed writes a caller of `save` / `remove` (Register, a persisted downgrade, shutdown) waits through. */
export const CALLER_WAIT_FAILURES = 5;

/** The job's desired stored state: a record, or `null` = no ConfigMap (the job is gone). */
type Desired = RecoveryRecord | null;

interface Want {
  desired: Desired;
  /** Failed writes since the newest `save` / `remove` (bounds the callers' wait only). */
  failures: number;
  /** Callers waiting for the desired state to be stored. */
  waiters: Array<() => void>;
}

export interface RecoveryStateStoreDeps {
  readonly cached: (name: string) => ConfigMap | undefined;
  readonly cachedNames: () => Iterable<string>;
  readonly writer: ConfigMapWriter;
  readonly log: Logger;
  readonly dryRun: boolean;
}

/** The desired recovery states, and the stored ones as read from the cache. */
export class RecoveryStateStore {
  private readonly d: RecoveryStateStoreDeps;
  /** Desired states not yet stored, by job UID. */
  private readonly want = new Map<string, Want>();
  /** Dry run keeps states here only (and so does a job id that cannot be in a name). */
  private readonly memory = new Map<string, RecoveryRecord>();
  /** Job ids already logged as kept in memory only. */
  private readonly refused = new Set<string>();
  /** Queues a job UID on the recovery_state loop; undefined while no loop runs (not leading). */
  private enqueue: ((uid: string) => void) | undefined;

  constructor(d: RecoveryStateStoreDeps) {
    this.d = d;
  }

  /** The stored ConfigMap: the newer of the informer's copy and our own last write. */
  cm(uid: string): ConfigMap | undefined {
    const name = recoveryStateCmName(uid);
    return this.d.writer.fresher(RECOVERY_STATE_NAMESPACE, name, this.d.cached(name));
  }

  /** The record of a job (a desired one not yet stored first); undefined once it is being removed. */
  get(uid: string): RecoveryRecord | undefined {
    const w = this.want.get(uid);
    if (w !== undefined) return w.desired ?? undefined;
    const m = this.memory.get(uid);
    if (m !== undefined) return m;
    const parsed = parseRecoveryRecord(this.cm(uid)?.data?.[RECOVERY_STATE_KEY]);
    return parsed.ok ? parsed.value : undefined;
  }

  /** Every readable stored record (unreadable ones are logged and skipped). */
  all(): RecoveryRecord[] {
    const out = new Map<string, RecoveryRecord>();
    for (const name of this.d.cachedNames()) {
      if (!name.startsWith(RECOVERY_STATE_PREFIX)) continue;
      const uid = name.slice(RECOVERY_STATE_PREFIX.length);
      const parsed = parseRecoveryRecord(this.cm(uid)?.data?.[RECOVERY_STATE_KEY]);
      if (parsed.ok) out.set(uid, parsed.value);
      else this.d.log.warn('recovery state unreadable; the job starts from INIT', { name, reason: parsed.reason });
    }
    for (const [uid, r] of this.memory) out.set(uid, r);
    return [...out.values()];
  }

  /** Makes the record the job's desired state; resolves once it (or a newer one) is stored. */
  save(record: RecoveryRecord): Promise<void> {
    if (this.memoryOnly(record.jobId)) {
      this.memory.set(record.jobId, record);
      return Promise.resolve();
    }
    return this.desire(record.jobId, record);
  }

  /** The job is gone: its ConfigMap goes too (resolves once deleted). */
  remove(uid: string): Promise<void> {
    this.memory.delete(uid);
    if (this.memoryOnly(uid) || (this.cm(uid) === undefined && !this.want.has(uid))) return Promise.resolve();
    return this.desire(uid, null);
  }

  /**
   * Dry run keeps states in memory; so does a job id that cannot be part of a ConfigMap name
   * (schemas/kube-names.ts): `clusterd-ts-recovery-<id>` would be refused (422) on every retry.
   */
  private memoryOnly(uid: string): boolean {
    if (this.d.dryRun) return true;
    if (isJobUid(uid)) return false;
    if (!this.refused.has(uid)) {
      if (this.refused.size >= 1024) this.refused.clear(); // logged once per id, within a bound
      this.refused.add(uid);
      this.d.log.warn('recovery state: the job id cannot be part of a ConfigMap name; its state is kept in memory only', { jobId: uid.slice(0, 80) });
    }
    return true;
  }

  private desire(uid: string, desired: Desired): Promise<void> {
    let w = this.want.get(uid);
    if (w === undefined) {
      w = { desired, failures: 0, waiters: [] };
      this.want.set(uid, w);
    } else {
      w.desired = desired;
      w.failures = 0;
    }
    const waiters = w.waiters;
    const done = new Promise<void>((resolve) => waiters.push(resolve));
    this.enqueue?.(uid);
    return done;
  }

  /** Connects the recovery_state loop (leader), or disconnects it; desired states are queued again. */
  attach(enqueue: ((uid: string) => void) | undefined): void {
    this.enqueue = enqueue;
    if (enqueue !== undefined) for (const uid of this.want.keys()) enqueue(uid);
  }

  /** The job's desired state, if it is not stored yet (the reconciler's input). */
  desired(uid: string): { readonly desired: Desired } | undefined {
    const w = this.want.get(uid);
    return w === undefined ? undefined : { desired: w.desired };
  }

  /** The reconciler stored `desired`: done unless a newer state arrived meanwhile (its key is queued again). */
  stored(uid: string, desired: Desired): void {
    const w = this.want.get(uid);
    if (w === undefined || w.desired !== desired) return;
    this.want.delete(uid);
    for (const resolve of w.waiters.splice(0)) resolve();
  }

  /** A write of the desired state failed; the queue retries it. Waiting callers go on after a few. */
  failed(uid: string, err: unknown): void {
    const w = this.want.get(uid);
    if (w === undefined || ++w.failures !== CALLER_WAIT_FAILURES) return;
    this.d.log.error('recovery state not persisted yet; retrying with backoff', { jobId: uid, failures: w.failures, err: String(err) });
    for (const resolve of w.waiters.splice(0)) resolve();
  }

  /** Resolves once every desired state is stored or its callers stopped waiting (shutdown, tests). */
  async flush(): Promise<void> {
    for (;;) {
      const waiting = [...this.want.values()].filter((w) => w.failures < CALLER_WAIT_FAILURES);
      if (waiting.length === 0 || this.enqueue === undefined) return;
      await Promise.all(waiting.map((w) => new Promise<void>((resolve) => w.waiters.push(resolve))));
    }
  }

  /**
   * This replica stopped leading: states it could not store are left to the new leader (writing them
   * now would overwrite the newer states it writes). Logged, one line per job.
   */
  abandon(): void {
    for (const [uid, w] of this.want) {
      this.d.log.error('recovery state not persisted before this replica stopped acting', { jobId: uid, failures: w.failures, removal: w.desired === null });
      for (const resolve of w.waiters.splice(0)) resolve();
    }
    this.want.clear();
  }
}

export interface RecoveryStateReconcilerDeps {
  readonly store: RecoveryStateStore;
  readonly writer: ConfigMapWriter;
  readonly client: KubeClient;
}

/** Key: the job UID. Writes (or deletes) the job's ConfigMap to match its desired state. */
export function recoveryStateReconciler(d: RecoveryStateReconcilerDeps): Reconciler {
  const write = async (uid: string, desired: Desired): Promise<void> => {
    const cm = d.store.cm(uid);
    if (desired !== null) {
      await d.writer.ensure('recovery_state', {
        namespace: RECOVERY_STATE_NAMESPACE, name: recoveryStateCmName(uid), labels: { ...RECOVERY_STATE_LABELS },
        data: { [RECOVERY_STATE_KEY]: encodeRecoveryRecord(desired) },
      }, cm);
      return;
    }
    if (cm === undefined) return;
    try {
      await d.client.delete(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(uid)), { preconditions: { uid: cm.metadata?.uid } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  };
  return {
    name: RECOVERY_STATE_CONTROLLER,
    async reconcile(uid: string): Promise<Outcome> {
      const want = d.store.desired(uid);
      if (want === undefined) return {};
      try {
        await write(uid, want.desired);
      } catch (e) {
        d.store.failed(uid, e);
        throw e; // back to the queue: rate-limited retry, counted in reconcile_total{result="error"}
      }
      d.store.stored(uid, want.desired);
      return {};
    },
  };
}
