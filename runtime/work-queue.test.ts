import { WorkQueue, type QueueClock } from './work-queue.ts';

/** A manual clock: timers fire only when the test advances time. */
function manualClock(): QueueClock & { advance(ms: number): void } {
  let now = 0;
  let timers: Array<{ at: number; fn: () => void; id: number }> = [];
  let seq = 0;
  return {
    now: () => now,
    setTimeout: (fn, ms) => { const id = ++seq; timers.push({ at: now + ms, fn, id }); return id; },
    clearTimeout: (h) => { timers = timers.filter((t) => t.id !== h); },
    advance(ms) {
      now += ms;
      const due = timers.filter((t) => t.at <= now).sort((a, b) => a.at - b.at);
      timers = timers.filter((t) => t.at > now);
      for (const t of due) t.fn();
    },
  };
}

describe('WorkQueue', () => {
  it('de-duplicates keys that are waiting', async () => {
    const q = new WorkQueue();
    q.add('a'); q.add('b'); q.add('a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands out a key in flight; a re-add during the pass runs once more afterwards', async () => {
    const q = new WorkQueue();
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
    const clock = manualClock();
    const q = new WorkQueue({ clock });
    q.addAfter('a', 1000);
    q.addAfter('a', 5000);
    clock.advance(999);
    expect(q.length).toBe(0);
    clock.advance(1);
    expect(q.length).toBe(1);
  });

  it('backs off per key exponentially from 5 ms and forgets on success', () => {
    const q = new WorkQueue({ clock: manualClock(), burst: 1000 });
    expect([q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a')]).toEqual([5, 10, 20, 40]);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(5);
    expect(q.retries('a')).toBe(1);
  });

  it('holds rate-limited re-adds to the overall bucket once the burst is spent', () => {
    const q = new WorkQueue({ clock: manualClock(), qps: 10, burst: 2 });
    expect(q.addRateLimited('a')).toBe(5);
    expect(q.addRateLimited('b')).toBe(5);
    expect(q.addRateLimited('c')).toBe(100); // bucket empty: one token per 100 ms
  });

  it('wakes a waiting get when a key arrives and ends waiters on shutdown', async () => {
    const q = new WorkQueue();
    const p = q.get();
    q.add('x');
    expect(await p).toBe('x');
    const p2 = q.get();
    q.shutDown();
    expect(await p2).toBeUndefined();
  });
});
