/**
 * Token buckets for the gRPC transport (docs/grpc.md#transport, docs/rules.md#timing.clusterd): per-method unary QPS buckets,
 * the fault query's 10/s limiter with a 50-deep wait queue, and the public-fault per-resource bucket.
 * Time comes from the controller's clock (runtime/clock.ts), injected, so tests can drive it.
 */
import type { QueueClock } from '../runtime/clock.ts';

export type Now = () => number;

/** A classic token bucket: `burst` tokens, refilled continuously at `ratePerSec`. */
export class TokenBucket {
  private readonly ratePerSec: number;
  private readonly burst: number;
  private readonly now: Now;
  private tokens: number;
  private last: number;

  constructor(ratePerSec: number, burst: number, now: Now) {
    this.ratePerSec = ratePerSec;
    this.burst = burst;
    this.now = now;
    this.tokens = burst;
    this.last = now();
  }

  private refill(): void {
    const t = this.now();
    if (t > this.last) this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.ratePerSec) / 1000);
    this.last = Math.max(this.last, t);
  }

  /** Take one token if there is one. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until one token is available (0 if one is available now). */
  msUntilToken(): number {
    this.refill();
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 1000) / this.ratePerSec);
  }
}

/**
 * A token bucket whose callers wait in a FIFO of at most `queueSize` entries; a caller that finds
 * the queue full is rejected at once (ClusterD's fault query limiter: 10/s, burst 10, queue 50).
 */
export class QueuedLimiter {
  private readonly bucket: TokenBucket;
  private readonly queueSize: number;
  private readonly waiters: Array<(ok: boolean) => void> = [];
  private readonly clock: QueueClock;
  private timer: unknown;

  constructor(ratePerSec: number, burst: number, queueSize: number, clock: QueueClock) {
    this.clock = clock;
    this.bucket = new TokenBucket(ratePerSec, burst, () => clock.now());
    this.queueSize = queueSize;
  }

  /** Resolves true once a token was taken, false if the queue is full or the limiter was closed. */
  acquire(): Promise<boolean> {
    if (this.waiters.length === 0 && this.bucket.tryTake()) return Promise.resolve(true);
    if (this.waiters.length >= this.queueSize) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      this.waiters.push(resolve);
      this.schedule();
    });
  }

  get queued(): number {
    return this.waiters.length;
  }

  /** Reject every waiter (server shutdown). */
  close(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiters.splice(0)) w(false);
  }

  private schedule(): void {
    if (this.timer !== undefined || this.waiters.length === 0) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      while (this.waiters.length > 0 && this.bucket.tryTake()) this.waiters.shift()?.(true);
      this.schedule();
    }, Math.max(1, this.bucket.msUntilToken()));
  }
}

/** One bucket per key (e.g. per public-fault `resource`), created on first use; at most `maxKeys`. */
export class KeyedBuckets {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly ratePerSec: number;
  private readonly burst: number;
  private readonly maxKeys: number;
  private readonly now: Now;

  constructor(ratePerSec: number, burst: number, maxKeys: number, now: Now) {
    this.ratePerSec = ratePerSec;
    this.burst = burst;
    this.maxKeys = maxKeys;
    this.now = now;
  }

  /** False when the key's bucket is empty, or when a new key would exceed `maxKeys`. */
  tryTake(key: string): boolean {
    let b = this.buckets.get(key);
    if (b === undefined) {
      if (this.buckets.size >= this.maxKeys) return false;
      b = new TokenBucket(this.ratePerSec, this.burst, this.now);
      this.buckets.set(key, b);
    }
    return b.tryTake();
  }
}
