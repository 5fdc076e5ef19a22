/**
 * Persisted state of the per-job recovery and hot-switch FSMs: one ConfigMap per registered job,
 * `mindx-dl/clusterd-ts-recovery-<jobUid>` (key `state.json`), owned by this controller. A restart or
 * a failover reloads it, so FSM timers (absolute due times) resume where they were, and a hot-switch
 * downgrade is never forgotten (ClusterD keeps it in memory only, behavior.md F).
 *
 * Pod lists are not stored (they come back from the informer cache at load). Writes are coalesced
 * per job (the newest state wins) and serialised; the ConfigMapWriter writes only on a byte
 * difference, with the cached resourceVersion. A ConfigMap that does not parse is ignored (logged):
 * the job starts from INIT, as ClusterD after a restart.
 *
 * This is our own bookkeeping, not a wire format read by anyone else, so it is plain JSON.
 */
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { HotSwitchState } from '../policy/hot-switch-types.ts';
import type { RecoveryState } from '../policy/recovery-types.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

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
  readonly savedAtMs: number;
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
  return { ok: true, value: { ...(r as RecoveryRecord), recovery: { ...r.recovery, pods: [], mustExitAtMs }, hotSwitch: { ...r.hotSwitch, pods: [] } } };
}

/** The stored text: states without pod lists (restored from the cache). */
export function encodeRecoveryRecord(r: RecoveryRecord): string {
  return JSON.stringify({ ...r, recovery: { ...r.recovery, pods: [] }, hotSwitch: { ...r.hotSwitch, pods: [] } });
}

export interface RecoveryStateStoreDeps {
  readonly cached: (name: string) => ConfigMap | undefined;
  readonly cachedNames: () => Iterable<string>;
  readonly writer: ConfigMapWriter;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly dryRun: boolean;
}

export class RecoveryStateStore {
  private readonly d: RecoveryStateStoreDeps;
  private readonly pending = new Map<string, RecoveryRecord>();
  private readonly writing = new Map<string, Promise<void>>();
  /** Dry run keeps states here only. */
  private readonly memory = new Map<string, RecoveryRecord>();

  constructor(d: RecoveryStateStoreDeps) {
    this.d = d;
  }

  private cm(uid: string): ConfigMap | undefined {
    const name = recoveryStateCmName(uid);
    return this.d.writer.fresher(RECOVERY_STATE_NAMESPACE, name, this.d.cached(name));
  }

  /** The stored record of a job (newest pending write first). */
  get(uid: string): RecoveryRecord | undefined {
    const p = this.pending.get(uid) ?? this.memory.get(uid);
    if (p !== undefined) return p;
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

  /** Queues a write of the job's newest state; resolves when it (or a newer one) is stored. */
  save(record: RecoveryRecord): Promise<void> {
    if (this.d.dryRun) {
      this.memory.set(record.jobId, record);
      return Promise.resolve();
    }
    this.pending.set(record.jobId, record);
    const running = this.writing.get(record.jobId);
    if (running !== undefined) return running;
    const run = this.drain(record.jobId).finally(() => this.writing.delete(record.jobId));
    this.writing.set(record.jobId, run);
    return run;
  }

  private async drain(uid: string): Promise<void> {
    for (let failures = 0; ;) {
      const record = this.pending.get(uid);
      if (record === undefined) return;
      this.pending.delete(uid);
      try {
        await this.d.writer.ensure('recovery_state', {
          namespace: RECOVERY_STATE_NAMESPACE, name: recoveryStateCmName(uid), labels: { ...RECOVERY_STATE_LABELS },
          data: { [RECOVERY_STATE_KEY]: encodeRecoveryRecord(record) },
        }, this.cm(uid));
        failures = 0;
      } catch (e) {
        // 409 (stale cache) or a transient error: keep the newest state queued and try again.
        if (!this.pending.has(uid)) this.pending.set(uid, record);
        if (++failures > 5) {
          this.d.log.error('recovery state not persisted', { jobId: uid, err: String(e) });
          this.pending.delete(uid);
          return;
        }
        await new Promise((r) => setTimeout(r, 100 * 2 ** failures).unref());
      }
    }
  }

  /** The job is gone: drop its state. */
  async remove(uid: string): Promise<void> {
    this.pending.delete(uid);
    this.memory.delete(uid);
    await this.writing.get(uid);
    const cm = this.cm(uid);
    if (cm === undefined || this.d.dryRun) return;
    try {
      await this.d.client.delete(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(uid)), { preconditions: { uid: cm.metadata?.uid } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /** Resolves once every queued write is done (shutdown, tests). */
  async flush(): Promise<void> {
    while (this.writing.size > 0) await Promise.all([...this.writing.values()]);
  }
}
