/**
 * One registered job's two state machines, run as ClusterD runs its per-job controller: the
 * process-level recovery FSM (policy/recovery/recovery-fsm.ts, B1) and the hot-switch FSM
 * (policy/recovery/hot-switch-fsm.ts, B2), fed one event at a time from a single queue, so that routing
 * decisions see both current states:
 * - ReportRecoverStrategy / ReportRecoverStatus go to the hot-switch FSM while it is not idle, else
 *   to the recovery FSM (hot-switch-fsm.ts wiring rules);
 * - a hot switch starts only while the recovery FSM is idle (`recoveryIdle` in `subHealthFault`);
 * - subscribe / stream close reach both.
 *
 * After each step the state is handed to `persist`, and the commands are executed in order on one
 * chain per job (so two reset-config writes never race); each command the FSM awaits gets its
 * `effectResult` fed back. FSM timers live in the state as absolute due times and are armed here on
 * the injected scheduler, so a restored state resumes its timers.
 */
import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';
import type { SignalStream } from '../grpc/handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import { hotSwitchIdle, hotSwitchStep, type HotSwitchCommand, type HotSwitchEvent, type HotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import { dueTimers, nextTimerDue, type StepResult } from '../policy/recovery/recovery-kit.ts';
import { recoveryIdle, step as recoveryStep } from '../policy/recovery/recovery-fsm.ts';
import type { RecoveryCommand, RecoveryEvent, RecoveryState } from '../policy/recovery/recovery-types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { RecoveryJobTarget } from '../actions/recovery-commands.action.ts';

export type Machine = 'recovery' | 'hotSwitch';
export type JobCommand =
  | { readonly machine: 'recovery'; readonly cmd: RecoveryCommand; readonly streamId: number | undefined }
  | { readonly machine: 'hotSwitch'; readonly cmd: HotSwitchCommand; readonly streamId: number | undefined };

export type JobInput =
  | { readonly machine: 'recovery'; readonly event: RecoveryEvent }
  | { readonly machine: 'hotSwitch'; readonly event: HotSwitchEvent }
  /** A report routed by the current hot-switch phase. */
  | { readonly machine: 'route'; readonly event: Extract<RecoveryEvent, { type: 'recoverStrategyReported' | 'recoverStatusReported' }> };

export interface InputOutcome {
  readonly accepted: boolean;
  /** The machine that took the input and its uuid after the step (report replies carry it). */
  readonly machine: Machine;
  readonly uuid: string;
}

export interface JobFsmDeps {
  /** Runs one command; throws on failure. */
  readonly execute: (job: JobFsm, c: JobCommand, signal: AbortSignal) => Promise<void>;
  readonly persist: (job: JobFsm) => void;
  readonly log: Logger;
  readonly scheduler?: SchedulerLike;
  /** After every step (metrics). */
  readonly onStep?: (job: JobFsm, machine: Machine, r: StepResult<unknown, unknown>) => void;
  /** The recovery FSM reported pods as must exit (recover-in-place): the scheduler view of their faults changed. */
  readonly mustExitChanged?: (job: JobFsm, podRanks: readonly number[]) => void;
}

interface Queued { readonly input: JobInput; readonly resolve: (o: InputOutcome) => void }

export class JobFsm {
  readonly target: RecoveryJobTarget;
  recovery: RecoveryState;
  hotSwitch: HotSwitchState;
  stream: SignalStream<ProcessManageSignal> | undefined;
  private readonly d: JobFsmDeps;
  private readonly scheduler: SchedulerLike;
  private readonly queue: Queued[] = [];
  private busy = false;
  private chain: Promise<void> = Promise.resolve();
  private readonly abort = new AbortController();
  private readonly armed: Record<Machine, { due: number; sub: Subscription } | undefined> = { recovery: undefined, hotSwitch: undefined };
  /** Checked after every drain and at stop (preExitSettled). */
  private readonly waiters = new Set<() => void>();

  constructor(target: RecoveryJobTarget, recovery: RecoveryState, hotSwitch: HotSwitchState, d: JobFsmDeps) {
    this.target = target;
    this.recovery = recovery;
    this.hotSwitch = hotSwitch;
    this.d = d;
    this.scheduler = d.scheduler ?? asyncScheduler;
  }

  get jobId(): string {
    return this.target.jobId;
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** When the recovery FSM last reported the pod at `podRank` as must exit (recover-in-place plan), if ever. */
  mustExitReportedMs(podRank: number): number | undefined {
    return this.recovery.mustExitAtMs[String(podRank)];
  }

  /** The uuid keep-alives carry: the hot switch's while it runs, else the recovery's. */
  currentUuid(): string {
    return hotSwitchIdle(this.hotSwitch) ? this.recovery.uuid : this.hotSwitch.uuid;
  }

  /** Arms the timers of restored states; call once after construction. */
  start(): void {
    this.arm('recovery');
    this.arm('hotSwitch');
  }

  /** Stops timers and drops commands not started yet (leadership lost, job gone, shutdown). */
  stop(): void {
    this.abort.abort();
    for (const m of ['recovery', 'hotSwitch'] as const) this.armed[m]?.sub.unsubscribe();
    this.queue.splice(0).forEach((q) => q.resolve({ accepted: false, machine: 'recovery', uuid: this.recovery.uuid }));
    for (const w of [...this.waiters]) w();
  }

  /**
   * Resolves once no preExitProcess is pending (it was sent: its send command has run; or skipped)
   * — true — or after `capMs`, on abort or stop — false.
   */
  async preExitSettled(capMs: number, signal?: AbortSignal): Promise<boolean> {
    const pending = (): boolean => this.recovery.preExitRanks.length > 0 && !this.stopped;
    if (pending()) {
      await new Promise<void>((resolve) => {
        const finish = (): void => { clearTimeout(timer); signal?.removeEventListener('abort', finish); this.waiters.delete(check); resolve(); };
        const check = (): void => { if (!pending()) finish(); };
        const timer = setTimeout(finish, capMs);
        signal?.addEventListener('abort', finish);
        this.waiters.add(check);
      });
    }
    if (pending() || this.stopped || signal?.aborted === true) return false;
    await this.chain;
    return true;
  }

  /** Resolves after every command queued so far has run (tests, shutdown). */
  settled(): Promise<void> {
    return this.chain;
  }

  feed(input: JobInput): Promise<InputOutcome> {
    if (this.stopped) return Promise.resolve({ accepted: false, machine: 'recovery', uuid: this.recovery.uuid });
    return new Promise<InputOutcome>((resolve) => {
      this.queue.push({ input, resolve });
      this.drain();
    });
  }

  private drain(): void {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const q = this.queue.shift()!;
        try {
          q.resolve(this.apply(q.input));
        } catch (err) {
          // A bug in a transition: keep the last good state, refuse the input, keep the process up.
          this.d.log.error('fsm step failed; input refused', { job: this.target.key, machine: q.input.machine, event: q.input.event.type, err: String(err), stack: (err as Error)?.stack });
          q.resolve({ accepted: false, machine: 'recovery', uuid: this.recovery.uuid });
        }
      }
    } finally {
      this.busy = false;
    }
    this.arm('recovery');
    this.arm('hotSwitch');
    for (const w of [...this.waiters]) w();
  }

  private apply(input: JobInput): InputOutcome {
    let routed: { machine: 'recovery'; event: RecoveryEvent } | { machine: 'hotSwitch'; event: HotSwitchEvent };
    if (input.machine === 'route') {
      routed = hotSwitchIdle(this.hotSwitch) ? { machine: 'recovery', event: input.event } : { machine: 'hotSwitch', event: input.event };
    } else routed = input;
    const now = this.scheduler.now();
    if (routed.machine === 'recovery') {
      const before = this.recovery.mustExitAtMs;
      const r = recoveryStep(this.recovery, routed.event, now);
      this.recovery = r.state;
      this.after('recovery', routed.event.type, r, r.commands.map((cmd) => ({ machine: 'recovery' as const, cmd, streamId: this.stream?.id })));
      const stamped = Object.entries(this.recovery.mustExitAtMs).filter(([k, t]) => before[k] !== t).map(([k]) => Number(k));
      if (stamped.length > 0) this.d.mustExitChanged?.(this, stamped);
      return { accepted: r.accepted, machine: 'recovery', uuid: this.recovery.uuid };
    }
    const r = hotSwitchStep(this.hotSwitch, routed.event, now);
    this.hotSwitch = r.state;
    this.after('hotSwitch', routed.event.type, r, r.commands.map((cmd) => ({ machine: 'hotSwitch' as const, cmd, streamId: this.stream?.id })));
    return { accepted: r.accepted, machine: 'hotSwitch', uuid: this.hotSwitch.uuid };
  }

  private after(machine: Machine, eventType: string, r: StepResult<unknown, RecoveryCommand | HotSwitchCommand>, commands: JobCommand[]): void {
    const io = commands.filter((c) => c.cmd.type !== 'startTimer' && c.cmd.type !== 'cancelTimer');
    const moved = r.reasons.some((x) => x.includes('-(') || x.startsWith('reset'));
    if (moved || io.length > 0) {
      this.d.log.info('fsm step', { job: this.target.key, machine, event: eventType, reasons: r.reasons, commands: io.map((c) => c.cmd.type), phase: this.phase(machine) });
    } else if (r.reasons.length > 0) {
      this.d.log.debug('fsm step', { job: this.target.key, machine, event: eventType, reasons: r.reasons });
    }
    if (r.commands.length > 0 || moved) this.d.persist(this);
    this.d.onStep?.(this, machine, r);
    for (const c of io) this.chain = this.chain.then(() => this.run(c));
  }

  phase(machine: Machine): string {
    return machine === 'recovery' ? this.recovery.phase : this.hotSwitch.phase;
  }

  private async run(c: JobCommand): Promise<void> {
    if (this.stopped) return;
    let ok = true;
    let error: string | undefined;
    try {
      await this.d.execute(this, c, this.abort.signal);
    } catch (e) {
      ok = false;
      error = e instanceof Error ? e.message : String(e);
      this.d.log.warn('fsm command failed', { job: this.target.key, machine: c.machine, command: c.cmd.type, err: error });
    }
    if (!c.cmd.awaitResult || this.stopped) return;
    const result = { type: 'effectResult' as const, commandId: c.cmd.id, ok, ...(error !== undefined ? { error } : {}) };
    void this.feed(c.machine === 'recovery' ? { machine: 'recovery', event: result } : { machine: 'hotSwitch', event: result });
  }

  /** (Re-)arms the machine's earliest timer on the scheduler; due timers fire as `timerFired`. */
  private arm(machine: Machine): void {
    if (this.stopped) return;
    const timers = machine === 'recovery' ? this.recovery.timers : this.hotSwitch.timers;
    const due = nextTimerDue(timers);
    const cur = this.armed[machine];
    if (cur !== undefined && cur.due === due) return;
    cur?.sub.unsubscribe();
    this.armed[machine] = undefined;
    if (due === undefined) return;
    const sub = this.scheduler.schedule(() => {
      this.armed[machine] = undefined;
      this.fire(machine);
    }, Math.max(0, due - this.scheduler.now()));
    this.armed[machine] = { due, sub };
  }

  private fire(machine: Machine): void {
    const timers = machine === 'recovery' ? this.recovery.timers : this.hotSwitch.timers;
    const due = dueTimers(timers, this.scheduler.now());
    if (due.length === 0) {
      this.arm(machine);
      return;
    }
    for (const t of due) {
      const event = { type: 'timerFired' as const, id: t.id };
      void this.feed(machine === 'recovery' ? { machine: 'recovery', event } : { machine: 'hotSwitch', event });
    }
  }

  /** True while the recovery FSM is idle (a hot switch may start). */
  get recoveryIdle(): boolean {
    return recoveryIdle(this.recovery);
  }
}
