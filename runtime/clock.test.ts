import { auditTime, debounceTime, Subject, take, timer, VirtualTimeScheduler } from 'rxjs';
import { clockScheduler, realClock, schedulerClock } from './clock.ts';
import { WorkQueue } from './work-queue.ts';
import { ManualClock } from '../test/support/manual-clock.ts';

/** The one clock's RxJS side (runtime/clock.ts): the FSM drivers' timers on the queues' timers. */
describe('clockScheduler: RxJS on a QueueClock', () => {
  it('fires one-shot and periodic timers at their own instants, interleaved with the work queue on the same clock', () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    timer(300, clock.scheduler).subscribe(() => seen.push(`once@${clock.now()}`));
    timer(100, 250, clock.scheduler).pipe(take(3)).subscribe((n) => seen.push(`tick${n}@${clock.now()}`));
    const queue = new WorkQueue({ clock });
    queue.addAfter('key', 200);
    // The queue's delay fires on the same timers: its key is ready at 200, between the ticks.
    clock.advance(199);
    expect(queue.length).toBe(0);
    clock.advance(1);
    expect(queue.length).toBe(1);
    clock.advance(1_000);
    expect(seen).toEqual(['tick0@100', 'once@300', 'tick1@350', 'tick2@600']);
    expect(clock.pending).toBe(0); // a finished periodic timer leaves nothing armed
  });

  it('debounceTime and auditTime read the clock and re-arm on it', () => {
    const clock = new ManualClock(0);
    const input = new Subject<number>();
    const debounced: string[] = [];
    const audited: string[] = [];
    input.pipe(debounceTime(100, clock.scheduler)).subscribe((v) => debounced.push(`${v}@${clock.now()}`));
    input.pipe(auditTime(100, clock.scheduler)).subscribe((v) => audited.push(`${v}@${clock.now()}`));
    input.next(1);
    clock.advance(60);
    input.next(2);
    clock.advance(60);
    input.next(3);
    clock.advance(500);
    expect(debounced).toEqual(['3@220']);
    expect(audited).toEqual(['2@100', '3@220']);
  });

  it('an unsubscribed action never fires', () => {
    const clock = new ManualClock(0);
    let fired = 0;
    const sub = timer(100, clock.scheduler).subscribe(() => fired++);
    sub.unsubscribe();
    clock.advance(1_000);
    expect(fired).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('realClock and schedulerClock carry their scheduler', () => {
    expect(realClock.scheduler.now()).toBeGreaterThan(0);
    const vts = new VirtualTimeScheduler();
    const c = schedulerClock(vts);
    expect(c.scheduler).toBe(vts);
    let at = -1;
    c.setTimeout(() => { at = vts.now(); }, 40);
    vts.flush();
    expect(at).toBe(40);
    expect(clockScheduler(c).now()).toBe(vts.now());
  });
});
