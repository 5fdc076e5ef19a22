/**
 * A per-key burst window on a WorkQueue (one change computed once; a burst costs one pass): the first touch of a quiet key
 * queues it at once (leading edge); touches inside the window that follows are coalesced into one
 * `addAfter` at the window's end (trailing edge); a touch inside that trailing window waits for the
 * end of it, and so on. So a key runs at most once per window, and a lone event never waits.
 *
 * Slots are forgotten once a window has passed without a touch, so the map holds only recent keys.
 */
import type { WorkQueue } from './work-queue.ts';

export class BurstGate {
  /** key -> time of the key's last scheduled pass (leading or trailing). */
  private readonly last = new Map<string, number>();
  private readonly queue: WorkQueue;
  private readonly windowMs: number;
  private readonly now: () => number;
  private sweptAt = 0;

  constructor(queue: WorkQueue, windowMs: number, now: () => number) {
    this.queue = queue;
    this.windowMs = windowMs;
    this.now = now;
  }

  /**
   * The key's inputs changed. Answers the delay of the pass it gets: 0 (queued now, leading edge) or
   * the wait until the end of the current window (coalesced).
   */
  touch(key: string): number {
    const now = this.now();
    if (this.windowMs <= 0) { this.queue.add(key); return 0; }
    this.sweep(now);
    const at = this.last.get(key);
    if (at === undefined || now - at >= this.windowMs) {
      this.last.set(key, now);
      this.queue.add(key);
      return 0;
    }
    // Inside a window: one pass at its end. A key already due at that end is not re-added.
    const due = at > now ? at : at + this.windowMs;
    this.last.set(key, due);
    this.queue.addAfter(key, due - now);
    return due - now;
  }

  /** When the key's last pass was scheduled (its leading edge, or the end of its window); latency breakdown. */
  scheduledAt(key: string): number | undefined { return this.last.get(key); }

  /** Slots currently held (tests). */
  get size(): number { return this.last.size; }

  /** Drops slots older than two windows (at most once per window). */
  private sweep(now: number): void {
    if (now - this.sweptAt < this.windowMs) return;
    this.sweptAt = now;
    for (const [k, at] of this.last) if (now - at >= 2 * this.windowMs) this.last.delete(k);
  }
}
