import { BurstGate } from './burst-gate.ts';
import { WorkQueue } from './work-queue.ts';
import { ManualClock } from '../test/support/manual-clock.ts';

/** Takes every queued key (and marks it done), as a worker would. */
async function drain(q: WorkQueue): Promise<string[]> {
  const out: string[] = [];
  while (q.length > 0) { const k = (await q.get())!; out.push(k); q.done(k); }
  return out;
}

describe('BurstGate', () => {
  it('queues a quiet key at once and coalesces the rest of its burst into one pass at the window end', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue({ clock });
    const gate = new BurstGate(q, 200, clock.now);
    expect(gate.touch('job-a')).toBe(0);
    expect(await drain(q)).toEqual(['job-a']); // leading edge: no wait
    clock.advance(30);
    expect(gate.touch('job-a')).toBe(170);
    clock.advance(50);
    expect(gate.touch('job-a')).toBe(120);
    expect(gate.touch('job-a')).toBe(120);
    expect(await drain(q)).toEqual([]);
    clock.advance(119);
    expect(await drain(q)).toEqual([]);
    clock.advance(1);
    expect(await drain(q)).toEqual(['job-a']); // one trailing pass for the three touches
  });

  it('a storm that never goes quiet gets one pass per window, other keys are not held', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue({ clock });
    const gate = new BurstGate(q, 200, clock.now);
    const passes: number[] = [];
    for (let t = 0; t < 1000; t += 10) {
      gate.touch('job-a');
      for (const k of await drain(q)) if (k === 'job-a') passes.push(clock.now());
      clock.advance(10);
    }
    expect(passes).toEqual([0, 200, 400, 600, 800]);
    expect(gate.touch('job-b')).toBe(0); // another job: its own window
    expect(await drain(q)).toEqual(['job-a', 'job-b']); // job-a's trailing pass for the touch at 990 is due at 1000
  });

  it('after a quiet window the next touch is a leading edge again; old slots are dropped', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue({ clock });
    const gate = new BurstGate(q, 200, clock.now);
    gate.touch('job-a');
    await drain(q);
    clock.advance(200);
    expect(gate.touch('job-a')).toBe(0);
    clock.advance(1000);
    gate.touch('job-b');
    expect(gate.size).toBe(1);
  });

  it('window 0 queues every touch at once', async () => {
    const clock = new ManualClock(0);
    const q = new WorkQueue({ clock });
    const gate = new BurstGate(q, 0, clock.now);
    expect(gate.touch('job-a')).toBe(0);
    expect(gate.touch('job-a')).toBe(0);
    expect(await drain(q)).toEqual(['job-a']);
  });
});
