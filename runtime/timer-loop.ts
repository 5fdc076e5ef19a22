/**
 * In-process deadlines, batch windows and polls as work-queue keys (one mechanism for time, so
 * tests drive every timer). A flow arms a key for a time with `WorkQueue.addAfter`; a
 * ControllerLoop hands the key to `fire` when it is due. The queue's QueueClock is the only
 * source of timers, so a test passes a manual clock and drives the production path in virtual time.
 *
 * Semantics are the queue's: a key is armed once, and an earlier pending time wins (the handler finds
 * nothing due at a too-early call and arms the later time itself). A time beyond MAX_DELAY_MS is
 * reached by re-arming (setTimeout caps at ~24.8 days). A `fire` that throws is retried with the
 * queue's per-key backoff (`addRateLimited`), never lost.
 */
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { ControllerLoop } from './controller-loop.ts';
import type { QueueClock } from './clock.ts';
import { WorkQueue } from './work-queue.ts';

/** Longest single delay; a later time is reached by re-arming. */
export const MAX_DELAY_MS = 3_600_000;

export interface TimerLoopOptions {
  /** snake_case; the loop's `controller` label. */
  readonly name: string;
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** The controller's clock (runtime/clock.ts); tests pass a manual one. */
  readonly clock: QueueClock;
}

export class TimerLoop {
  readonly queue: WorkQueue;
  private readonly loop: ControllerLoop;
  private readonly clock: QueueClock;
  private started = false;

  constructor(opts: TimerLoopOptions, fire: (key: string, nowMs: number) => void) {
    this.clock = opts.clock;
    this.queue = new WorkQueue({ clock: this.clock });
    const clock = this.clock;
    this.loop = new ControllerLoop({
      name: opts.name,
      reconcile: async (key) => { fire(key, clock.now()); return {}; },
    }, { log: opts.log, queue: this.queue, clock, ...(opts.metrics ? { metrics: opts.metrics } : {}) });
  }

  /** Fires `key` at `atMs` (at least 1 ms from now), unless it is already armed for earlier. */
  at(key: string, atMs: number): void {
    this.queue.addAfter(key, Math.min(MAX_DELAY_MS, Math.max(1, atMs - this.clock.now())));
  }

  /** Fires `key` after `ms` (0: as soon as the loop runs), unless it is already armed for earlier. */
  after(key: string, ms: number): void {
    this.queue.addAfter(key, Math.min(MAX_DELAY_MS, ms));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.loop.start();
  }

  /** Drops every armed key; the loop ends after the key in hand, if any. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
