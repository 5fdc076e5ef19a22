import { Coalescer, Limiter } from './coalescer.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('Coalescer', () => {
  it('writes a quiet key at once and folds a burst into the write after the interval', async () => {
    const starts: number[] = [];
    const t0 = Date.now();
    const c = new Coalescer(async () => { starts.push(Date.now() - t0); await sleep(5); return starts.length; }, 200);
    const first = c.request('a');
    await sleep(20);
    const burst = [c.request('a'), c.request('a'), c.request('a')];
    expect(await first).toBe(1);
    expect(await Promise.all(burst)).toEqual([2, 2, 2]);
    expect(c.writes.get('a')).toBe(2);
    expect(starts[0]).toBeLessThan(150); // at once: well before the 200 ms interval, with room for a loaded machine
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(195);
  });

  it('keeps keys independent and flush waits for everything', async () => {
    let n = 0;
    const c = new Coalescer(async () => { await sleep(10); return ++n; }, 100);
    void c.request('a');
    void c.request('b');
    void c.request('a'); // same tick: shares the first write
    await sleep(1);
    void c.request('a'); // first write running: one more after 100 ms
    await c.flush();
    expect(c.busy('a') || c.busy('b')).toBe(false);
    expect(c.writes.get('a')).toBe(2);
    expect(c.writes.get('b')).toBe(1);
  });

  it('passes a failed write to every waiter of that write', async () => {
    const c = new Coalescer(async () => { throw new Error('boom'); }, 0);
    await expect(c.request('a')).rejects.toThrow('boom');
  });

  it('rejects writes not started when closed', async () => {
    const c = new Coalescer(async () => 1, 1000);
    await c.request('a');
    const late = c.request('a');
    c.close();
    await expect(late).rejects.toThrow(/closed/);
  });
});

describe('Limiter', () => {
  it('never runs more than max tasks at once', async () => {
    const l = new Limiter(3);
    let active = 0;
    let peak = 0;
    await Promise.all(Array.from({ length: 10 }, () => l.run(async () => { active++; peak = Math.max(peak, active); await sleep(5); active--; })));
    expect(peak).toBe(3);
  });
});
