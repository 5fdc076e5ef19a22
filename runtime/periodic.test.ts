import { silentLogger } from '../telemetry/logger.ts';
import { Periodic } from './periodic.ts';
import { ManualClock } from '../test/support/manual-clock.ts';

describe('Periodic', () => {
  it('runs every period through its work queue, first one period after start, never after stop', async () => {
    const clock = new ManualClock(0);
    const at: number[] = [];
    const p = new Periodic('tick', 5_000, () => void at.push(clock.now()), { log: silentLogger, clock });
    p.start();
    await clock.run(4_999);
    expect(at).toEqual([]);
    await clock.run(10_001);
    expect(at).toEqual([5_000, 10_000, 15_000]);
    await p.stop();
    await clock.run(20_000);
    expect(at).toEqual([5_000, 10_000, 15_000]);
  });

  it('a failing pass is retried with the queue backoff, then the period resumes', async () => {
    const clock = new ManualClock(0);
    const at: number[] = [];
    let fail = 2;
    const p = new Periodic('tick', 1_000, () => {
      at.push(clock.now());
      if (fail-- > 0) throw new Error('boom');
    }, { log: silentLogger, clock });
    p.start();
    await clock.run(3_000);
    // 1 000 fails, retried after 5 ms, fails, after 10 ms succeeds; then every second.
    expect(at).toEqual([1_000, 1_005, 1_015, 2_015]);
    await p.stop();
  });
});
