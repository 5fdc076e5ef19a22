import { Backoff } from './backoff.ts';

describe('Backoff', () => {
  it('doubles from the initial delay up to the cap, and starts over after reset', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0 });
    expect([b.next(), b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([100, 200, 400, 800, 1000, 1000]);
    b.reset();
    expect(b.next()).toBe(100);
  });

  it('keeps jittered delays within the spread and never above the cap', () => {
    const lo = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.5, random: () => 0 });
    const hi = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.5, random: () => 1 });
    expect(lo.next()).toBe(500);
    expect(hi.next()).toBe(1000);
  });
});
