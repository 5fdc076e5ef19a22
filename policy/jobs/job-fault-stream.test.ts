import { asyncScheduler, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { JobFaultSnapshot } from './job-aggregation.ts';
import { decideJob } from './job-restart.ts';
import { chipFault, fourPodJob } from '../../test/support/job-fixtures.ts';
import { aggregateJobFaults, aggregateJobFaultsWith } from './job-fault-stream.ts';

const jobA = fourPodJob('uid-a');
const jobB = fourPodJob('uid-b');
const snap = (job = jobA, n = 1): JobFaultSnapshot => ({
  job, faults: Array.from({ length: n }, (_, i) => chipFault(`node-${i}`, 'Ascend910-1', 'SeparateNPU', `code${i}`)),
});
const newScheduler = (): TestScheduler => new TestScheduler((a, b) => expect(a).toEqual(b));

describe('aggregateJobFaults', () => {
  it('coalesces a burst into one aggregate per job (the latest snapshot), 200 ms after its first event', () => {
    newScheduler().run(({ hot, expectObservable }) => {
      // job A: 3 events within 50 ms; job B: one event at 20 ms
      const events = hot('a 9ms b 9ms x 29ms c', { a: snap(jobA, 1), b: snap(jobA, 2), x: snap(jobB, 1), c: snap(jobA, 3) });
      const out = events.pipe(aggregateJobFaults(asyncScheduler), map((g) => `${g.job.key}:${g.ranks.length}`));
      expectObservable(out).toBe('200ms a 19ms b', { a: `${jobA.key}:3`, b: `${jobB.key}:1` });
    });
  });

  it('a storm that never goes quiet still yields one aggregate per window, and one decision per job per burst', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      // an event every 50 ms for 1 s (20 events) on job A
      const marbles = Array.from({ length: 20 }, () => 'a').join(' 49ms ');
      const events = cold(marbles, { a: snap(jobA, 1) });
      const decisions = events.pipe(
        aggregateJobFaultsWith({ windowMs: 500 }, asyncScheduler),
        map((agg) => decideJob({ aggregate: agg, knobs: { faultScheduling: 'force' }, state: undefined, nowMs: 0 }).decision.kind),
      );
      expectObservable(decisions).toBe('500ms a 549ms b', { a: 'job', b: 'job' }) // next window opens with the event at 550 ms;
    });
  });

  it('a later burst of the same job gives a second aggregate', () => {
    newScheduler().run(({ hot, expectObservable }) => {
      const events = hot('a 1s a', { a: snap(jobA, 1) });
      expectObservable(events.pipe(aggregateJobFaults(asyncScheduler), map((g) => g.healthState))).toBe('200ms a 1000ms a', { a: 'UnHealthy' });
    });
  });
});
