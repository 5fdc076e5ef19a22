/**
 * Test support for the recovery FSMs (not used at runtime): builders for a job and its pods, and a
 * harness that steps events with explicit time, executes nothing but acknowledges awaited commands
 * (optionally failing some), and fires due timers when time advances.
 */
import { dueTimers, type CommandMeta, type StepResult } from '../../policy/recovery/recovery-kit.ts';
import { initialRecoveryState, step } from '../../policy/recovery/recovery-fsm.ts';
import type { ProcessManageSignal } from '../../vocabulary/process-manage-signal.ts';
import type { PodObservation, RecoveryCommand, RecoveryEvent, RecoveryJobConfig, RecoveryState, RecoveryTimings } from '../../policy/recovery/recovery-types.ts';

export const JOB_ID = 'job-uid-1';

export function jobConfig(over: Partial<RecoveryJobConfig> = {}): RecoveryJobConfig {
  return {
    jobId: JOB_ID,
    strategies: ['retry', 'recover', 'exit'],
    jobRescheduling: true,
    podRescheduling: false,
    subHealthyStrategy: 'ignore',
    ranksPerPod: 8,
    waitRescheduleTimeoutS: 270,
    ...over,
  };
}

/** `n` Running pods with NPUs, pod i holding ranks 8i..8i+7; `gen` changes the UIDs. */
export function podsOf(n: number, gen = 0, replacedOnly?: readonly number[]): PodObservation[] {
  return Array.from({ length: n }, (_, i) => {
    const g = replacedOnly === undefined || replacedOnly.includes(i) ? gen : 0;
    return { name: `job-worker-${i}`, uid: `uid-${i}-g${g}`, podRank: i, phase: 'Running', npusAllocated: true };
  });
}

export interface HarnessOptions<S, C> {
  /** Which awaited commands fail when acknowledged (default: none). */
  readonly failWhen?: (c: C, s: S) => boolean;
  /** Acknowledge awaited commands automatically after each step (default true). */
  readonly autoAck?: boolean;
}

/** Drives any of the policy FSMs by hand. */
export class Harness<S extends { timers: { id: string; dueAtMs: number }[] }, E, C extends CommandMeta & { type: string }> {
  state: S;
  now = 0;
  readonly log: C[] = [];
  readonly reasons: string[] = [];
  readonly results: StepResult<S, C>[] = [];
  private readonly pending: C[] = [];
  private readonly stepFn: (s: S, e: E, now: number) => StepResult<S, C>;
  private readonly opts: HarnessOptions<S, C>;

  constructor(initial: S, stepFn: (s: S, e: E, now: number) => StepResult<S, C>, opts: HarnessOptions<S, C> = {}) {
    this.state = initial;
    this.stepFn = stepFn;
    this.opts = opts;
  }

  feed(e: E): StepResult<S, C> {
    const r = this.stepFn(this.state, e, this.now);
    this.results.push(r);
    this.state = r.state;
    this.log.push(...r.commands);
    this.reasons.push(...r.reasons);
    this.pending.push(...r.commands.filter((c) => c.awaitResult));
    if (this.opts.autoAck !== false) this.ackAll();
    return r;
  }

  /** Acknowledges outstanding awaited commands in order (including those the acks create). */
  ackAll(): void {
    while (this.pending.length > 0) {
      const c = this.pending.shift()!;
      const ok = !(this.opts.failWhen?.(c, this.state) ?? false);
      this.feed({ type: 'effectResult', commandId: c.id, ok } as E);
    }
  }

  /** Moves the clock forward, firing due timers in order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = dueTimers(this.state.timers, until)[0];
      if (due === undefined) break;
      this.now = Math.max(this.now, due.dueAtMs);
      this.feed({ type: 'timerFired', id: due.id } as E);
    }
    this.now = until;
  }

  commands<T extends C['type']>(type: T): Extract<C, { type: T }>[] {
    return this.log.filter((c) => c.type === type) as Extract<C, { type: T }>[];
  }

  clearLog(): void {
    this.log.length = 0;
    this.reasons.length = 0;
  }
}

export type RecoveryHarness = Harness<RecoveryState, RecoveryEvent, RecoveryCommand>;

export function recoveryHarness(
  config: Partial<RecoveryJobConfig> = {},
  opts: HarnessOptions<RecoveryState, RecoveryCommand> & { pods?: number; timings?: Partial<RecoveryTimings> } = {},
): RecoveryHarness {
  const init = initialRecoveryState({ config: jobConfig(config), pods: podsOf(opts.pods ?? 4), ...(opts.timings ? { timings: opts.timings } : {}) });
  return new Harness(init, step, opts);
}

export function signalsOf(h: RecoveryHarness): ProcessManageSignal[] {
  return h.commands('sendSignal').map((c) => c.signal);
}

export const signalTypes = (h: RecoveryHarness): string[] => signalsOf(h).map((s) => (s.changeStrategy ? `${s.signalType}:${s.changeStrategy}` : s.signalType));

export const resetOps = (h: RecoveryHarness): string[] => h.commands('writeResetConfig').map((c) => c.op);
