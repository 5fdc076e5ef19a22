/**
 * The controller's one clock (docs/ARCHITECTURE.md, "Time"). Every time read and every timer of the
 * controller goes through one `Clock`, created once by the process (main.ts: `realClock`) or by a
 * test (test/support/manual-clock.ts: `ManualClock`) and handed by the Manager to every flow,
 * controller, loop, reconciler and action. Its `scheduler` is the same time for RxJS: the recovery
 * FSMs (policy/recovery/recovery-driver.ts) and the work queues fire on one timeline, virtual in tests.
 *
 * This is the only product module that reads the wall clock or arms a timer of its own; the layering
 * test's `one-clock` rule (tools/layering/layering.ts) keeps it so.
 */
import { asyncScheduler, Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';

/** Time and timers: what a work queue needs (runtime/work-queue.ts). */
export interface QueueClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The controller's clock: a QueueClock, and the RxJS scheduler on the same time. */
export interface Clock extends QueueClock {
  readonly scheduler: SchedulerLike;
}

/**
 * Real time. Timers are unref'd: a pending delay never keeps a stopping process alive. RxJS work runs
 * on `asyncScheduler`, which reads the same `Date.now()`.
 */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => { const t = setTimeout(fn, ms); t.unref(); return t; },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  scheduler: asyncScheduler,
};

/**
 * A clock on an RxJS scheduler (a VirtualTimeScheduler or TestScheduler in tests): the queues'
 * delays run on the scheduler's time.
 */
export function schedulerClock(scheduler: SchedulerLike): Clock {
  return {
    now: () => scheduler.now(),
    setTimeout: (fn, ms) => scheduler.schedule(fn, ms),
    clearTimeout: (h) => (h as Subscription).unsubscribe(),
    scheduler,
  };
}

/**
 * An RxJS scheduler on a QueueClock's time and timers (how a ManualClock drives the FSM drivers):
 * `schedule(work, delay)` arms one clock timer; the action re-arms itself when its work calls
 * `this.schedule(state, delay)` (a periodic `timer`), as RxJS's AsyncAction does.
 */
export function clockScheduler(clock: QueueClock): SchedulerLike {
  return {
    now: () => clock.now(),
    schedule<T>(work: (this: SchedulerAction<T>, state: T) => void, delay = 0, state?: T): Subscription {
      let handle: unknown;
      let pending = false;
      const action = new Subscription(() => { if (pending) clock.clearTimeout(handle); pending = false; }) as Subscription & SchedulerAction<T>;
      const arm = (s: T | undefined, ms: number): void => {
        if (action.closed) return;
        if (pending) clock.clearTimeout(handle);
        pending = true;
        handle = clock.setTimeout(() => {
          pending = false;
          try {
            work.call(action, s as T);
          } catch (err) {
            action.unsubscribe();
            throw err;
          }
          // A one-shot action is done once its work ran, unless the work re-armed it (as RxJS's AsyncAction).
          if (!pending) action.unsubscribe();
        }, Math.max(0, ms));
      };
      action.schedule = (s?: T, ms = 0): Subscription => { arm(s, ms); return action; };
      arm(state, delay);
      return action;
    },
  };
}
