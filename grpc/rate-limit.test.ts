import { KeyedBuckets, QueuedLimiter, TokenBucket } from './rate-limit.ts';
import { realClock } from '../runtime/clock.ts';

describe('TokenBucket', () => {
  it('allows a burst, then refills continuously at the rate', () => {
    let now = 0;
    const b = new TokenBucket(10, 3, () => now);
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false]);
    expect(b.msUntilToken()).toBe(100);
    now = 99;
    expect(b.tryTake()).toBe(false);
    now = 100;
    expect(b.tryTake()).toBe(true);
    now = 10_000; // never above the burst
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false]);
  });

  it('ignores a clock that goes backwards', () => {
    let now = 1_000;
    const b = new TokenBucket(1, 1, () => now);
    expect(b.tryTake()).toBe(true);
    now = 0;
    expect(b.tryTake()).toBe(false);
  });
});

describe('QueuedLimiter (fault query: 10/s, burst 10, queue 50)', () => {
  it('serves the burst at once, queues up to the queue size, rejects the rest, then drains in order', async () => {
    const l = new QueuedLimiter(100, 2, 3, realClock);
    const order: number[] = [];
    const all = Array.from({ length: 7 }, (_, i) => l.acquire().then((ok) => (ok && order.push(i), ok)));
    expect(l.queued).toBe(3);
    expect(await Promise.all(all)).toEqual([true, true, true, true, true, false, false]);
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('close() rejects the waiters', async () => {
    const l = new QueuedLimiter(0.001, 1, 5, realClock);
    expect(await l.acquire()).toBe(true);
    const waiting = l.acquire();
    l.close();
    expect(await waiting).toBe(false);
  });
});

describe('KeyedBuckets (public faults: per resource)', () => {
  it('keeps one bucket per key and refuses keys beyond the cap', () => {
    const k = new KeyedBuckets(1, 2, 2, () => 0);
    expect([k.tryTake('CCAE'), k.tryTake('CCAE'), k.tryTake('CCAE')]).toEqual([true, true, false]);
    expect(k.tryTake('pingmesh')).toBe(true);
    expect(k.tryTake('third')).toBe(false);
  });
});
