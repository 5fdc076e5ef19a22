/**
 * The in-memory half of the FSM commands (the I/O half is actions/recovery-commands.action.ts):
 * step-retry holds (what the job pipeline reads to keep retry faults from rescheduling, docs/rules.md#decision.hidden-by-filter),
 * retry faults fed back from ReportProcessFault (docs/rules.md#recover.software-entry, kept 60 s like ClusterD's business-plane
 * reports), stream close, and the hot-switch downgrade, which is written to the state store before
 * the FSM moves on.
 */
import type { HotSwitchCommand } from '../policy/recovery/hot-switch-types.ts';
import type { RecoveryCommand } from '../policy/recovery/recovery-types.ts';
import { BUSINESS_REPORT_EXPIRY_MS, type StepRetryJob } from '../policy/filters/step-retry-filter.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { RetryReport } from '../policy/recovery/recovery-feed.ts';
import type { JobCommand, JobFsm } from './recovery-job.ts';
import type { RecoveryMemory } from '../reconcilers/recovery-state.reconciler.ts';

/** Per job: the step retry in flight (ranks held back) and when it was reported done. */
export interface StepRetryHold {
  readonly rankIds: readonly number[];
  readonly recoverTimeMs: number;
  readonly completeTimeMs?: number;
}

export interface MemoryCommandDeps {
  readonly log: Logger;
  readonly now: () => number;
  /** Persist the job's state (this memory with it) now and wait for the write. */
  readonly persistNow: (job: JobFsm) => Promise<void>;
  /** The job's fault picture changed (re-feed it). */
  readonly touch: (job: JobFsm) => void;
  /** A step-retry hold was set or released: the scheduler view of the job's faults changed. */
  readonly holdChanged: (job: JobFsm) => void;
  /**
   * The job's memory in its stored state (a restart or a failover): read the first time the job is
   * asked about, so the scheduler view hides a restored step retry's UCE from the first render on,
   * before this replica acts (docs/rules.md#recover.resume).
   */
  readonly stored?: (jobId: string) => RecoveryMemory | undefined;
}

export class MemoryCommands {
  private readonly d: MemoryCommandDeps;
  private readonly holds = new Map<string, StepRetryHold>();
  private readonly reports = new Map<string, RetryReport[]>();
  /** Jobs whose stored memory was read (once each). */
  private readonly loaded = new Set<string>();

  constructor(d: MemoryCommandDeps) {
    this.d = d;
  }

  /** Step-retry facts of a job for the step-retry filter (policy/filters/step-retry-filter.ts). */
  /**
   * RecoverTime is when the business plane reported the retry fault (ClusterD's ReportRetryInfo from
   * ReportProcessFault), else when our step retry began. No completion time: ClusterD never sets
   * one (CompleteTime stays JobNotRecoverComplete), so a retry fault is hidden at most until
   * RecoverTime + 30 s, however the retry ended.
   */
  stepRetryJob(jobId: string, retryEnabled: boolean): StepRetryJob {
    this.load(jobId);
    const reported = this.retryReports(jobId).reduce<number | undefined>((m, r) => (m === undefined || r.atMs > m ? r.atMs : m), undefined);
    const recoverTimeMs = reported ?? this.holds.get(jobId)?.recoverTimeMs;
    return { retryEnabled, ...(recoverTimeMs !== undefined ? { recoverTimeMs } : {}) };
  }

  hold(jobId: string): StepRetryHold | undefined {
    this.load(jobId);
    return this.holds.get(jobId);
  }

  /** Fresh retry faults reported by the agent (older ones are dropped). */
  retryReports(jobId: string): RetryReport[] {
    this.load(jobId);
    const now = this.d.now();
    const fresh = (this.reports.get(jobId) ?? []).filter((r) => now - r.atMs <= BUSINESS_REPORT_EXPIRY_MS);
    if (fresh.length === 0) this.reports.delete(jobId);
    else this.reports.set(jobId, fresh);
    return fresh;
  }

  /** What a stored state keeps of the job (reconcilers/recovery-state.reconciler.ts `memory`). */
  snapshot(jobId: string): RecoveryMemory {
    const hold = this.holds.get(jobId);
    return { ...(hold === undefined ? {} : { hold }), reports: this.retryReports(jobId) };
  }

  /** The job's stored memory, the first time the job is asked about (a restart or a failover). */
  private load(jobId: string): void {
    if (this.loaded.has(jobId)) return;
    if (this.loaded.size >= 100_000) this.loaded.clear(); // bounded; a job read again only re-reads what it stored
    this.loaded.add(jobId);
    const m = this.d.stored?.(jobId);
    if (m?.hold !== undefined && !this.holds.has(jobId)) this.holds.set(jobId, { ...m.hold, rankIds: [...m.hold.rankIds] });
    if (m !== undefined && m.reports.length > 0 && !this.reports.has(jobId)) this.reports.set(jobId, [...m.reports]);
  }

  /**
   * Taking over: what a standby read of the stored memory may be older than what the last leader
   * stored since (a step-retry hold set after the standby first asked), so every job is read again.
   */
  reloadStored(): void {
    this.loaded.clear();
    this.holds.clear();
    this.reports.clear();
  }

  forget(jobId: string): void {
    this.loaded.add(jobId); // its stored state goes too: never read back
    this.holds.delete(jobId);
    this.reports.delete(jobId);
  }

  /** Runs a command that needs no I/O; false when it is not one of these. */
  async run(job: JobFsm, c: JobCommand): Promise<boolean> {
    const cmd: RecoveryCommand | HotSwitchCommand = c.cmd;
    const id = job.jobId;
    switch (cmd.type) {
      case 'setStepRetryHold': {
        this.load(id);
        const now = this.d.now();
        if (cmd.hold) this.holds.set(id, { rankIds: [...cmd.rankIds], recoverTimeMs: now });
        else if (cmd.completed === true) {
          const h = this.holds.get(id);
          this.holds.set(id, { rankIds: [...cmd.rankIds], recoverTimeMs: h?.recoverTimeMs ?? now, completeTimeMs: now });
        } else this.holds.delete(id);
        this.d.log.info('step-retry hold', { job: job.target.key, ranks: cmd.rankIds, hold: cmd.hold, completed: cmd.completed ?? false });
        this.d.holdChanged(job);
        await this.d.persistNow(job);
        return true;
      }
      case 'forwardRetryFaults': {
        const now = this.d.now();
        const kept = this.retryReports(id).filter((r) => !cmd.faults.some((f) => f.rankId === r.rankId));
        const added = cmd.faults.flatMap((f) => (f.faultType === '0' || f.faultType === '2' ? [{ rankId: f.rankId, faultType: f.faultType, atMs: now }] : []));
        this.reports.set(id, [...kept, ...added]);
        this.d.touch(job);
        // The reports are inputs of the job's scheduler view (step retry's RecoverTime, docs/rules.md#filter.uce-accompany's
        // business UCEs): re-announce its nodes, and again when the step-retry window ends.
        this.d.holdChanged(job);
        await this.d.persistNow(job);
        return true;
      }
      case 'closeSignalStream':
        if (job.stream !== undefined && job.stream.id === c.streamId) job.stream.end();
        return true;
      case 'persistDowngrade':
        this.d.log.warn('hot switch downgraded to ignore (persisted)', { job: job.target.key, reason: cmd.reason });
        await this.d.persistNow(job);
        return true;
      case 'startTimer':
      case 'cancelTimer':
        return true;
      default:
        return false;
    }
  }
}
