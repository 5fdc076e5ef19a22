import { WorkQueue } from './work-queue.ts';
import { ManualClock } from '../test/support/manual-clock.ts';
import { realClock } from './clock.ts';

describe('WorkQueue', () => {
  it('de-duplicates keys that are waiting', async () => {
    const q = new WorkQueue({ clock: realClock });
    q.add('a'); q.add('b'); q.add('a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands out a key in flight; a re-add during the pass runs once more afterwards', async () => {
    const q = new WorkQueue({ clock: realClock });
    q.add('a');
    const k = await q.get();
    q.add('a'); q.add('a');
    expect(q.length).toBe(0);
    q.done(k!);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    expect(q.length).toBe(0);
  });

  it('addAfter keeps the earliest due time and fires on the clock', () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue({ clock });
    q.addAfter('a', 1000);
    q.addAfter('a', 5000);
    clock.advance(999);
    expect(q.length).toBe(0);
    clock.advance(1);
    expect(q.length).toBe(1);
  });

  it('backs off per key exponentially from 5 ms and forgets on success', () => {
    const q = new WorkQueue({ clock: new ManualClock(0), burst: 1000 });
    expect([q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a')]).toEqual([5, 10, 20, 40]);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(5);
    expect(q.retries('a')).toBe(1);
  });

  it('holds rate-limited re-adds to the overall bucket once the burst is spent', () => {
    const q = new WorkQueue({ clock: new ManualClock(0), qps: 10, burst: 2 });
    expect(q.addRateLimited('a')).toBe(5);
    expect(q.addRateLimited('b')).toBe(5);
    expect(q.addRateLimited('c')).toBe(100); // bucket empty: one token per 100 ms
  });

  it('a key that keeps failing is paced by its own backoff only: it does not drain the bucket for the others', () => {
    const q = new WorkQueue({ clock: new ManualClock(0), qps: 10, burst: 2 });
    expect(q.addRateLimited('bad')).toBe(5); // its first retry takes a token
    for (let i = 0; i < 50; i++) q.addRateLimited('bad'); // its later ones take none
    expect(q.addRateLimited('bad')).toBe(60_000); // capped per key
    expect(q.addRateLimited('good')).toBe(5); // the burst's second token is still there
    expect(q.addRateLimited('other')).toBe(100);
  });

  it('wakes a waiting get when a key arrives and ends waiters on shutdown', async () => {
    const q = new WorkQueue({ clock: realClock });
    const p = q.get();
    q.add('x');
    expect(await p).toBe('x');
    const p2 = q.get();
    q.shutDown();
    expect(await p2).toBeUndefined();
  });
});
