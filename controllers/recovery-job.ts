/**
 * One registered job's two state machines, run as ClusterD runs its per-job controller: the
 * process-level recovery FSM (policy/recovery/recovery-fsm.ts, docs/rules.md#recover.fsm) and the hot-switch FSM
 * (policy/recovery/hot-switch-fsm.ts, docs/rules.md#hotswitch.fsm), fed one event at a time from a single queue, so that routing
 * decisions see both current states:
 * - ReportRecoverStrategy / ReportRecoverStatus go to the hot-switch FSM while it is not idle, else
 *   to the recovery FSM (hot-switch-fsm.ts wiring rules);
 * - a hot switch starts only while the recovery FSM is idle (`recoveryIdle` in `subHealthFault`);
 * - subscribe / stream close reach both.
 *
 * After each step the state is handed to `persist`, and the commands are executed in order, one at
 * a time per job (so two reset-config writes never race), by the `recovery_commands` work queue
 * (key: the job id; `recoveryCommandLoop`): a failed try of a command that ClusterD retries throws,
 * and the queue runs it again after its backoff; each command the FSM awaits gets its
 * `effectResult` fed back. Each machine runs under the RxJS driver of policy/recovery/recovery-driver.ts
 * (`driveFsm$`, the one the virtual-time tests exercise): it steps the machine and fires the timers
 * the state holds as absolute due times on the injected scheduler, so a restored state resumes them.
 */
import { filter, firstValueFrom, fromEvent, race, startWith, Subject, Subscription, take, timer, type SchedulerLike } from 'rxjs';
import { driveFsm$ } from '../policy/recovery/recovery-driver.ts';
import type { SignalStream } from '../grpc/handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import { hotSwitchIdle, hotSwitchStep, type HotSwitchCommand, type HotSwitchEvent, type HotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import type { FsmTimer, StepResult } from '../policy/recovery/recovery-kit.ts';
import { recoveryIdle, step as recoveryStep } from '../policy/recovery/recovery-fsm.ts';
import type { RecoveryCommand, RecoveryEvent, RecoveryState } from '../policy/recovery/recovery-types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { RecoveryJobTarget } from '../actions/recovery-commands.action.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { TerminalError, type Outcome } from '../runtime/reconciler.ts';
import { WorkQueue, type QueueClock } from '../runtime/work-queue.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { StoredCommand } from '../reconcilers/recovery-state.reconciler.ts';

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
  /** Runs one try of a command; throws on failure. */
  readonly execute: (job: JobFsm, c: JobCommand, signal: AbortSignal) => Promise<void>;
  /** The work queue that runs the job's commands (`recoveryCommandLoop`): commands are waiting. */
  readonly commands: { add(jobId: string): void };
  /** Tries of a command before its failure reaches the FSM (default 1). */
  readonly tries?: (c: JobCommand) => number;
  /**
   * Stores the job's state; resolves once it is stored (or the store stopped waiting). A command runs
   * only after the state of the step that issued it is stored, so a controller that dies after a
   * signal went out never restores the state from before it (and sends it again).
   */
  readonly persist: (job: JobFsm) => Promise<void> | void;
  readonly log: Logger;
  /** The controller clock's scheduler (runtime/clock.ts): the FSMs' timers. */
  readonly scheduler: SchedulerLike;
  /** After every step (metrics). */
  readonly onStep?: (job: JobFsm, machine: Machine, r: StepResult<unknown, unknown>) => void;
  /** The recovery FSM reported pods as must exit (recover-in-place): the scheduler view of their faults changed. */
  readonly mustExitChanged?: (job: JobFsm, podRanks: readonly number[]) => void;
}

interface Queued { readonly input: JobInput; readonly resolve: (o: InputOutcome) => void }

type Routed = { machine: 'recovery'; event: RecoveryEvent } | { machine: 'hotSwitch'; event: HotSwitchEvent };

export class JobFsm {
  readonly target: RecoveryJobTarget;
  recovery: RecoveryState;
  hotSwitch: HotSwitchState;
  stream: SignalStream<ProcessManageSignal> | undefined;
  private readonly d: JobFsmDeps;
  private readonly scheduler: SchedulerLike;
  private readonly queue: Queued[] = [];
  private busy = false;
  /** Commands not run yet, in order; the head may have failed tries behind it. */
  private readonly pending: Array<{ readonly c: JobCommand; tries: number }> = [];
  private readonly abort = new AbortController();
  /** The drivers' inputs; their subscriptions own the armed timers. */
  private readonly inputs = { recovery: new Subject<RecoveryEvent>(), hotSwitch: new Subject<HotSwitchEvent>() };
  private readonly drivers = new Subscription();
  /** What the step just taken was fed, and whether it threw (set by the guarded step functions). */
  private stepping: { machine: Machine; event: string; threw: boolean } | undefined;
  /** Nexts after every drain, timer step and at stop (preExitSettled). */
  private readonly changed$ = new Subject<void>();
  private started = false;
  /** `accepted` of the last step taken. */
  private lastAccepted = false;
  /** The store's write of the newest state handed to `persist`. */
  private saved: Promise<void> = Promise.resolve();
  /**
   * Restored from the state store (a restart or a failover) and its TaskD not subscribed again yet,
   * until this time (scheduler ms): signals wait for the client (docs/rules.md#recover.resume).
   */
  private resumeUntilMs: number | undefined;

  /** `outbox`: the commands a restored state had not run yet (`outbox()` of the stored job), run first. */
  constructor(target: RecoveryJobTarget, recovery: RecoveryState, hotSwitch: HotSwitchState, d: JobFsmDeps, outbox: readonly StoredCommand[] = []) {
    this.target = target;
    this.recovery = recovery;
    this.hotSwitch = hotSwitch;
    this.d = d;
    this.scheduler = d.scheduler;
    // Their stream died with the process that issued them: none of them closes the next one.
    for (const o of outbox) this.pending.push({ c: { ...o, streamId: undefined } as JobCommand, tries: 0 });
  }

  /**
   * The commands issued and not done yet, stored with the state: a controller that dies between a
   * step and its commands leaves them to its successor instead of losing them (docs/rules.md#recover.resume).
   */
  outbox(): StoredCommand[] {
    return this.pending.map(({ c }) => ({ machine: c.machine, cmd: c.cmd }) as StoredCommand);
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

  /**
   * The state was restored (a restart or a failover): the client's next subscription resumes the
   * FSMs instead of resetting them, and signals wait for it at most `waitMs` (docs/rules.md#recover.resume).
   */
  markResumed(waitMs: number): void {
    this.resumeUntilMs = this.scheduler.now() + waitMs;
  }

  /**
   * A subscription: true when it is the restored job's client coming back (the FSMs go on; held
   * signals go out now), false for any other (ClusterD's reset applies).
   */
  takeResume(): boolean {
    const resumed = this.resumeUntilMs !== undefined;
    this.resumeUntilMs = undefined;
    if (resumed && this.pending.length > 0) this.d.commands.add(this.jobId);
    return resumed;
  }

  /** Starts both drivers (arming the timers of restored states); call once after construction. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    if (this.pending.length > 0) this.d.commands.add(this.jobId);
    this.drivers.add(driveFsm$(this.guard('recovery', recoveryStep), this.inputs.recovery, this.recovery, this.scheduler)
      .subscribe((r) => this.stepped('recovery', r)));
    this.drivers.add(driveFsm$(this.guard('hotSwitch', hotSwitchStep), this.inputs.hotSwitch, this.hotSwitch, this.scheduler)
      .subscribe((r) => this.stepped('hotSwitch', r)));
  }

  /** Stops timers and drops commands not started yet (leadership lost, job gone, shutdown). */
  stop(): void {
    this.abort.abort();
    this.drivers.unsubscribe();
    this.queue.splice(0).forEach((q) => q.resolve({ accepted: false, machine: 'recovery', uuid: this.recovery.uuid }));
    this.pending.splice(0);
    this.changed$.next();
    this.changed$.complete();
  }

  /**
   * Resolves once no preExitProcess is pending (it was sent: its send command has run; or skipped)
   * — true — or after `capMs` (on the scheduler), on abort or stop — false.
   */
  async preExitSettled(capMs: number, signal?: AbortSignal): Promise<boolean> {
    const pending = (): boolean => this.recovery.preExitRanks.length > 0 && !this.stopped;
    if (pending() && signal?.aborted !== true) {
      const settled$ = this.changed$.pipe(startWith(undefined), filter(() => !pending()));
      const aborted$ = signal === undefined ? [] : [fromEvent(signal, 'abort')];
      await firstValueFrom(race(settled$, timer(capMs, this.scheduler), ...aborted$).pipe(take(1)), { defaultValue: undefined });
    }
    if (pending() || this.stopped || signal?.aborted === true) return false;
    await this.settled();
    return true;
  }

  /** Resolves once no command is waiting (or the job stopped): tests, the hand-off. */
  async settled(): Promise<void> {
    await firstValueFrom(this.changed$.pipe(startWith(undefined), filter(() => this.pending.length === 0 || this.stopped)), { defaultValue: undefined });
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
        q.resolve(this.apply(q.input));
      }
    } finally {
      this.busy = false;
    }
    this.changed$.next();
  }

  /** One input through its machine's driver, which steps it synchronously (the driver is idle here). */
  private apply(input: JobInput): InputOutcome {
    let routed: Routed;
    if (input.machine === 'route') {
      routed = hotSwitchIdle(this.hotSwitch) ? { machine: 'recovery', event: input.event } : { machine: 'hotSwitch', event: input.event };
    } else routed = input;
    this.start();
    this.stepping = undefined;
    if (routed.machine === 'recovery') this.inputs.recovery.next(routed.event);
    else this.inputs.hotSwitch.next(routed.event);
    const s = this.stepping as { readonly threw: boolean } | undefined; // set by the driver's synchronous step
    if (s === undefined || s.threw) return { accepted: false, machine: 'recovery', uuid: this.recovery.uuid };
    return { accepted: this.lastAccepted, machine: routed.machine, uuid: routed.machine === 'recovery' ? this.recovery.uuid : this.hotSwitch.uuid };
  }

  /**
   * The step function the driver runs: records what it was fed; a bug in a transition keeps the last
   * good state and refuses the input, keeping the process up.
   */
  private guard<S extends { readonly timers: readonly FsmTimer[] }, E extends { readonly type: string }, C>(
    machine: Machine, step: (state: S, event: E, nowMs: number) => StepResult<S, C>,
  ): (state: S, event: E, nowMs: number) => StepResult<S, C> {
    return (state, event, nowMs) => {
      this.stepping = { machine, event: event.type, threw: false };
      try {
        return step(state, event, nowMs);
      } catch (err) {
        this.stepping.threw = true;
        this.d.log.error('fsm step failed; input refused', { job: this.target.key, machine, event: event.type, err: String(err), stack: (err as Error)?.stack });
        return { state, commands: [], reasons: [], accepted: false };
      }
    };
  }

  /** Every step a driver took: fed inputs (from drain) and fired timers (from the scheduler). */
  private stepped(machine: Machine, r: StepResult<RecoveryState, RecoveryCommand> | StepResult<HotSwitchState, HotSwitchCommand>): void {
    const s = this.stepping;
    if (s === undefined || s.threw) return;
    this.lastAccepted = r.accepted;
    const fromTimer = !this.busy;
    this.busy = true;
    try {
      if (machine === 'recovery') {
        const before = this.recovery.mustExitAtMs;
        const rr = r as StepResult<RecoveryState, RecoveryCommand>;
        this.recovery = rr.state;
        this.after('recovery', s.event, rr, rr.commands.map((cmd) => ({ machine: 'recovery' as const, cmd, streamId: this.stream?.id })));
        const stamped = Object.entries(this.recovery.mustExitAtMs).filter(([k, t]) => before[k] !== t).map(([k]) => Number(k));
        if (stamped.length > 0) this.d.mustExitChanged?.(this, stamped);
      } else {
        const hr = r as StepResult<HotSwitchState, HotSwitchCommand>;
        this.hotSwitch = hr.state;
        this.after('hotSwitch', s.event, hr, hr.commands.map((cmd) => ({ machine: 'hotSwitch' as const, cmd, streamId: this.stream?.id })));
      }
    } finally {
      if (fromTimer) this.busy = false;
    }
    // A timer step outside drain: run what it queued, and tell the waiters.
    if (fromTimer) this.drain();
  }

  private after(machine: Machine, eventType: string, r: StepResult<unknown, RecoveryCommand | HotSwitchCommand>, commands: JobCommand[]): void {
    const io = commands.filter((c) => c.cmd.type !== 'startTimer' && c.cmd.type !== 'cancelTimer');
    const moved = r.reasons.some((x) => x.includes('-(') || x.startsWith('reset'));
    if (moved || io.length > 0) {
      this.d.log.info('fsm step', { job: this.target.key, machine, event: eventType, reasons: r.reasons, commands: io.map((c) => c.cmd.type), phase: this.phase(machine) });
    } else if (r.reasons.length > 0) {
      this.d.log.debug('fsm step', { job: this.target.key, machine, event: eventType, reasons: r.reasons });
    }
    for (const c of io) this.pending.push({ c, tries: 0 });
    // Stored with the commands just issued (the outbox), before any of them runs.
    if (r.commands.length > 0 || moved) this.saved = Promise.resolve(this.d.persist(this));
    this.d.onStep?.(this, machine, r);
    if (io.length > 0) this.d.commands.add(this.jobId);
  }

  phase(machine: Machine): string {
    return machine === 'recovery' ? this.recovery.phase : this.hotSwitch.phase;
  }

  /**
   * One pass of the job's key on the command queue: one try of the oldest command. A failed try
   * with tries left throws (the queue runs the key again after its backoff); otherwise the outcome
   * goes to the FSM and the key is queued again while commands wait.
   */
  async runCommand(): Promise<Outcome> {
    const head = this.pending[0];
    if (head === undefined || this.stopped) return {};
    const c = head.c;
    // A signal of a restored job waits for its client's subscription (takeResume queues the job again).
    if (c.cmd.type === 'sendSignal' && this.resumeUntilMs !== undefined && this.stream === undefined) {
      const left = this.resumeUntilMs - this.scheduler.now();
      if (left > 0) return { requeueAfterMs: left };
      this.resumeUntilMs = undefined;
    }
    await this.saved;
    if (this.stopped || this.pending[0] !== head) return {};
    let ok = true;
    let error: string | undefined;
    try {
      await this.d.execute(this, c, this.abort.signal);
    } catch (e) {
      head.tries += 1;
      error = e instanceof Error ? e.message : String(e);
      const tries = this.d.tries?.(c) ?? 1;
      if (!this.stopped && !(e instanceof TerminalError) && head.tries < tries) {
        this.d.log.info('fsm command failed; tried again after the queue backoff', { job: this.target.key, machine: c.machine, command: c.cmd.type, try: head.tries, of: tries, err: error });
        throw e;
      }
      ok = false;
      this.d.log.warn('fsm command failed', { job: this.target.key, machine: c.machine, command: c.cmd.type, tries: head.tries, err: error });
    }
    if (this.stopped || this.pending[0] !== head) return {};
    this.pending.shift();
    // Done: stored without it, so a successor does not run it again.
    this.saved = Promise.resolve(this.d.persist(this));
    if (c.cmd.awaitResult) {
      const result = { type: 'effectResult' as const, commandId: c.cmd.id, ok, ...(error !== undefined ? { error } : {}) };
      void this.feed(c.machine === 'recovery' ? { machine: 'recovery', event: result } : { machine: 'hotSwitch', event: result });
    }
    this.changed$.next();
    return this.pending.length > 0 ? { requeueAfterMs: 0 } : {};
  }

  /** True while the recovery FSM is idle (a hot switch may start). */
  get recoveryIdle(): boolean {
    return recoveryIdle(this.recovery);
  }
}

/** ClusterD's waits between the tries of a signal or a reset-config write: 1 s, then 2 s. */
export const RECOVERY_COMMAND_BACKOFF_MS = 1_000;
export const RECOVERY_COMMANDS_CONTROLLER = 'recovery_commands';
/** Jobs whose commands run at the same time (one command at a time per job). */
const RECOVERY_COMMAND_WORKERS = 8;

/**
 * The work queue and loop that run the jobs' commands (key: job id; see `JobFsm.runCommand`). Its
 * per-key backoff starts at 1 s and doubles, so a command's second and third tries come 1 s and 2 s
 * after the failed ones, as ClusterD's sleeps.
 */
export function recoveryCommandLoop(job: (jobId: string) => JobFsm | undefined, o: { log: Logger; metrics?: Metrics; clock: QueueClock }): ControllerLoop {
  const queue = new WorkQueue({ baseDelayMs: RECOVERY_COMMAND_BACKOFF_MS, maxDelayMs: 60_000, clock: o.clock });
  return new ControllerLoop({ name: RECOVERY_COMMANDS_CONTROLLER, reconcile: async (jobId) => (await job(jobId)?.runCommand()) ?? {} }, {
    log: o.log, queue, clock: o.clock, workers: RECOVERY_COMMAND_WORKERS, ...(o.metrics === undefined ? {} : { metrics: o.metrics }),
  });
}
