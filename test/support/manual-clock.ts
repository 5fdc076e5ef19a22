/**
 * A manual clock (the controller's Clock, runtime/clock.ts) whose timers fire only when the test
 * advances time, each at its own instant: `advance` for synchronous code, `run` where the fired work
 * continues asynchronously. Its `scheduler` puts RxJS work (the recovery FSMs' timers) on the same
 * timers, so a Manager built on it runs wholly in virtual time.
 */
import type { SchedulerLike } from 'rxjs';
import { clockScheduler, type Clock } from '../../runtime/clock.ts';

/** Lets queued microtasks and one round of I/O callbacks run. */
export const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.t = startMs;
  }

  readonly scheduler: SchedulerLike = clockScheduler(this);

  /** An arrow property, so `clock.now` can be passed on its own (as a `() => number`). */
  readonly now = (): number => this.t;

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void { this.timers.delete(handle as number); }

  get pending(): number { return this.timers.size; }

  /** Fires the earliest timer due by `end` at its own instant; false when none is. */
  private fireNext(end: number): boolean {
    let next: [number, { at: number; fn: () => void }] | undefined;
    for (const e of this.timers) if (e[1].at <= end && (next === undefined || e[1].at < next[1].at)) next = e;
    if (next === undefined) return false;
    this.timers.delete(next[0]);
    this.t = Math.max(this.t, next[1].at);
    next[1].fn();
    return true;
  }

  /** Moves time forward, firing due timers in order (each at its own instant). */
  advance(ms: number): void {
    const end = this.t + ms;
    while (this.fireNext(end));
    this.t = end;
  }

  /**
   * Moves time forward like `advance`, and lets the controller loops that own the fired keys run at
   * each timer's instant (runtime/timer-loop.ts hands a due key to its handler asynchronously), so a
   * deadline re-armed by its handler fires within the same call at its own time.
   */
  async run(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    while (this.fireNext(end)) await settle();
    this.t = end;
  }
}
