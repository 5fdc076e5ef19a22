/**
 * A keyed work queue in the manner of client-go's: it holds keys, never events; a key is queued at
 * most once; a key being processed is not handed out again until `done`, and if it was re-added
 * meanwhile it runs once more afterwards. `addAfter` delays, `addRateLimited` backs off per key
 * (5 ms doubling, capped), a failure streak's first retry also under an overall token bucket.
 */
import type { QueueClock } from './clock.ts';

// The clock's types and constructors, where the queue's users have always found them.
export { realClock, schedulerClock, type QueueClock } from './clock.ts';

export interface WorkQueueOptions {
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Overall bucket: sustained rate (per second) and burst of rate-limited re-adds. */
  readonly qps?: number;
  readonly burst?: number;
  /** The controller's clock (runtime/clock.ts): the queue's delays and its bucket's refill. */
  readonly clock: QueueClock;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { due: number; handle: unknown }>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly clock: QueueClock;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly qps: number;
  private readonly burst: number;
  private tokens: number;
  private lastRefill: number;
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions) {
    this.clock = opts.clock;
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.qps = opts.qps ?? 10;
    this.burst = opts.burst ?? 100;
    this.tokens = this.burst;
    this.lastRefill = this.clock.now();
  }

  get length(): number { return this.queue.length; }
  get pendingDelayed(): number { return this.delayed.size; }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // re-queued by done()
    const waiter = this.waiters.shift();
    if (waiter !== undefined) { this.dirty.delete(key); this.processing.add(key); waiter(key); return; }
    this.queue.push(key);
  }

  /** Adds the key after ms; an earlier pending addAfter for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) { this.add(key); return; }
    const due = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    if (existing !== undefined && existing.due <= due) return;
    if (existing !== undefined) this.clock.clearTimeout(existing.handle);
    const handle = this.clock.setTimeout(() => { this.delayed.delete(key); this.add(key); }, ms);
    this.delayed.set(key, { due, handle });
  }

  /**
   * Re-adds after this key's backoff: per-key exponential, and for the first retry of a failure
   * streak also the overall bucket (a storm of new failures is paced). A key that keeps failing is
   * paced by its own backoff only, so it cannot drain the bucket the other keys' first retries draw
   * from (one key's failing writes never slow another's retry).
   */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const perKey = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(n, 30));
    const delay = Math.max(perKey, n === 0 ? this.bucketDelay() : 0);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the key's failure history (after a successful pass). */
  forget(key: string): void { this.failures.delete(key); }

  retries(key: string): number { return this.failures.get(key) ?? 0; }

  private bucketDelay(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.lastRefill) / 1000) * this.qps);
    this.lastRefill = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  /** Next key to process, waiting for one; undefined once shut down. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; if it was added meanwhile it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const { handle } of this.delayed.values()) this.clock.clearTimeout(handle);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
