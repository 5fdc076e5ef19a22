/**
 * RxJS driver for the pure FSMs (recovery docs/rules.md#recover.fsm, hot switch docs/rules.md#hotswitch.fsm, graceful tolerance docs/rules.md#recover.reset-config-writes):
 *
 *   runFsm$(events$, initial, scheduler, { execute }) -> Observable<StepResult>
 *
 * Feeds every input event to the FSM's step function with `scheduler.now()`, and fires the state's
 * timers (`{id, dueAtMs}`) as `timerFired` events on the given SchedulerLike, so a 15 min timeout
 * runs in virtual time under rxjs TestScheduler. Events are processed one at a time, in order; events
 * that arrive while a step runs (e.g. produced synchronously by `execute`) are queued.
 *
 * `execute` (optional) runs each emitted command and may answer with events (effect results,
 * simulated agent reports) that are fed back in. The controller normally executes commands through
 * actions/ and feeds results back through events$ instead.
 *
 * Completes when events$ has completed, no timer is pending and no `execute` is in flight.
 */
import { from, Observable, Subscription, type ObservableInput, type SchedulerLike } from 'rxjs';
import { graceStep, type GraceCommand, type GraceEvent, type GraceState } from './graceful-tolerance.ts';
import { hotSwitchStep, type HotSwitchCommand, type HotSwitchEvent, type HotSwitchState } from './hot-switch-fsm.ts';
import { dueTimers, nextTimerDue, type FsmTimer, type StepResult, type TimerFired } from './recovery-kit.ts';
import { step as recoveryStep } from './recovery-fsm.ts';
import type { RecoveryCommand, RecoveryEvent, RecoveryState } from './recovery-types.ts';

export interface DriverOptions<S, E, C> {
  readonly execute?: (command: C, state: S) => ObservableInput<E>;
}

type StepFn<S, E, C> = (state: S, event: E, nowMs: number) => StepResult<S, C>;

/** Generic driver for any FSM whose state carries `timers` and which accepts `timerFired`. */
export function driveFsm$<S extends { readonly timers: readonly FsmTimer[] }, E, C>(
  stepFn: StepFn<S, E, C>,
  events$: Observable<E>,
  initial: S,
  scheduler: SchedulerLike,
  opts: DriverOptions<S, E, C> = {},
): Observable<StepResult<S, C>> {
  return new Observable<StepResult<S, C>>((out) => {
    let state = initial;
    const queue: E[] = [];
    let busy = false;
    let inputDone = false;
    let inFlight = 0;
    let timer: Subscription | undefined;
    const subs = new Subscription();

    const maybeComplete = (): void => {
      if (inputDone && inFlight === 0 && state.timers.length === 0 && queue.length === 0) out.complete();
    };

    let armedDue: number | undefined;
    const arm = (): void => {
      const due = nextTimerDue(state.timers);
      if (timer !== undefined && armedDue === due) return; // already armed for it
      timer?.unsubscribe();
      timer = undefined;
      armedDue = due;
      if (due === undefined) return;
      const t = scheduler.schedule(() => {
        subs.remove(t);
        timer = undefined;
        fireDue();
      }, Math.max(0, due - scheduler.now()));
      timer = t;
      subs.add(t);
    };

    const execute = (commands: readonly C[]): void => {
      const run = opts.execute;
      if (run === undefined) return;
      for (const c of commands) {
        inFlight += 1;
        subs.add(from(run(c, state)).subscribe({
          next: (e) => feed(e),
          error: (err: unknown) => out.error(err),
          complete: () => {
            inFlight -= 1;
            maybeComplete();
          },
        }));
      }
    };

    function feed(e: E): void {
      queue.push(e);
      if (busy) return;
      busy = true;
      try {
        while (queue.length > 0) {
          const r = stepFn(state, queue.shift()!, scheduler.now());
          state = r.state;
          out.next(r);
          execute(r.commands);
        }
      } catch (err) {
        out.error(err);
        return;
      } finally {
        busy = false;
      }
      arm();
      maybeComplete();
    }

    function fireDue(): void {
      const next = dueTimers(state.timers, scheduler.now())[0];
      if (next === undefined) {
        arm();
        return;
      }
      feed({ type: 'timerFired', id: next.id } satisfies TimerFired as unknown as E);
      if (dueTimers(state.timers, scheduler.now()).length > 0) fireDue();
    }

    subs.add(events$.subscribe({
      next: feed,
      error: (err: unknown) => out.error(err),
      complete: () => {
        inputDone = true;
        maybeComplete();
      },
    }));
    arm();
    return subs;
  });
}

export function runFsm$(
  events$: Observable<RecoveryEvent>,
  initial: RecoveryState,
  scheduler: SchedulerLike,
  opts?: DriverOptions<RecoveryState, RecoveryEvent, RecoveryCommand>,
): Observable<StepResult<RecoveryState, RecoveryCommand>>;
export function runFsm$(
  events$: Observable<HotSwitchEvent>,
  initial: HotSwitchState,
  scheduler: SchedulerLike,
  opts?: DriverOptions<HotSwitchState, HotSwitchEvent, HotSwitchCommand>,
): Observable<StepResult<HotSwitchState, HotSwitchCommand>>;
export function runFsm$(
  events$: Observable<GraceEvent>,
  initial: GraceState,
  scheduler: SchedulerLike,
  opts?: DriverOptions<GraceState, GraceEvent, GraceCommand>,
): Observable<StepResult<GraceState, GraceCommand>>;
/** Picks the machine from `initial.kind`. */
export function runFsm$(
  events$: Observable<RecoveryEvent | HotSwitchEvent | GraceEvent>,
  initial: RecoveryState | HotSwitchState | GraceState,
  scheduler: SchedulerLike,
  opts: object = {},
): Observable<StepResult<RecoveryState | HotSwitchState | GraceState, RecoveryCommand | HotSwitchCommand | GraceCommand>> {
  switch (initial.kind) {
    case 'recovery':
      return driveFsm$(recoveryStep, events$ as Observable<RecoveryEvent>, initial, scheduler, opts);
    case 'hotSwitch':
      return driveFsm$(hotSwitchStep, events$ as Observable<HotSwitchEvent>, initial, scheduler, opts);
    case 'graceTolerance':
      return driveFsm$(graceStep, events$ as Observable<GraceEvent>, initial, scheduler, opts);
  }
}
