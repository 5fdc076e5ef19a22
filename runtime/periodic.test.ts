import { silentLogger } from '../telemetry/logger.ts';
import { Periodic } from './periodic.ts';
import type { QueueClock } from './work-queue.ts';

/** A manual clock: timers fire only when the test advances time. */
function manualClock(): QueueClock & { advance(ms: number): Promise<void> } {
  let now = 0;
  let timers: Array<{ at: number; fn: () => void; id: number }> = [];
  let seq = 0;
  const settle = async (): Promise<void> => { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); };
  return {
    now: () => now,
    setTimeout: (fn, ms) => { const id = ++seq; timers.push({ at: now + ms, fn, id }); return id; },
    clearTimeout: (h) => { timers = timers.filter((t) => t.id !== h); },
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        const next = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (next === undefined) break;
        now = next.at;
        timers = timers.filter((t) => t !== next);
        next.fn();
        await settle();
      }
      now = end;
      await settle();
    },
  };
}

describe('Periodic', () => {
  it('runs every period through its work queue, first one period after start, never after stop', async () => {
    const clock = manualClock();
    const at: number[] = [];
    const p = new Periodic('tick', 5_000, () => void at.push(clock.now()), { log: silentLogger, clock });
    p.start();
    await clock.advance(4_999);
    expect(at).toEqual([]);
    await clock.advance(10_001);
    expect(at).toEqual([5_000, 10_000, 15_000]);
    await p.stop();
    await clock.advance(20_000);
    expect(at).toEqual([5_000, 10_000, 15_000]);
  });

  it('a failing pass is retried with the queue backoff, then the period resumes', async () => {
    const clock = manualClock();
    const at: number[] = [];
    let fail = 2;
    const p = new Periodic('tick', 1_000, () => {
      at.push(clock.now());
      if (fail-- > 0) throw new Error('boom');
    }, { log: silentLogger, clock });
    p.start();
    await clock.advance(3_000);
    // 1 000 fails, retried after 5 ms, fails, after 10 ms succeeds; then every second.
    expect(at).toEqual([1_000, 1_005, 1_015, 2_015]);
    await p.stop();
  });
});
