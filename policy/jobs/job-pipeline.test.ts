import { TestScheduler } from 'rxjs/testing';
import { asyncScheduler, map, NEVER } from 'rxjs';
import { chipFault, fourPodJob, jobOf, podOf } from '../../test/support/job-fixtures.ts';
import type { JobFaultSnapshot } from './job-aggregation.ts';
import { jobAggregates$ } from './job-pipeline.ts';

const a = fourPodJob('uid-a');
const b = jobOf([podOf('bert-worker-0', 0, 'node-9')], 'uid-b', 'bert');
const snapshots: Record<string, JobFaultSnapshot> = {
  [a.key]: { job: a, faults: [chipFault('node-2', 'Ascend910-0', 'SeparateNPU')] },
  [b.key]: { job: b, faults: [] },
};
const deps = {
  jobKeysOnNodes: (nodes: readonly string[]) => (nodes.includes('node-2') ? [a.key] : nodes.includes('node-9') ? [b.key] : []),
  snapshotOf: (key: string) => snapshots[key],
};

describe('job pipeline', () => {
  it('one aggregate per job per burst, whatever the number of events in it', () => {
    new TestScheduler((x, y) => expect(x).toEqual(y)).run(({ hot, expectObservable }) => {
      // a device-info rewrite and four pod updates of job a within 50 ms, one pod event of job b
      const pods = hot('  -a-a-a-a--b', { a: [a.key], b: [b.key] });
      const faults = hot('f----------', { f: ['node-2'] });
      const out = jobAggregates$({ podKeys$: pods, podGroupKeys$: NEVER, faultNodes$: faults }, deps, { windowMs: 200 }, asyncScheduler)
        .pipe(map((agg) => `${agg.job.key}:${agg.ranks.map((r) => r.faultType).join(',')}`));
      expectObservable(out, '^ 1s !').toBe('200ms x 9ms y', { x: `${a.key}:CardUnhealthy`, y: `${b.key}:` });
    });
  });

  it('a second burst after the window gives a second aggregate', () => {
    new TestScheduler((x, y) => expect(x).toEqual(y)).run(({ hot, expectObservable }) => {
      const faults = hot('f 300ms f', { f: ['node-2'] });
      const out = jobAggregates$({ podKeys$: NEVER, podGroupKeys$: NEVER, faultNodes$: faults }, deps, { windowMs: 200 }, asyncScheduler)
        .pipe(map((agg) => agg.job.key));
      expectObservable(out, '^ 1s !').toBe('200ms x 300ms x', { x: a.key });
    });
  });

  it('keys that are not jobs (any more) are dropped', () => {
    new TestScheduler((x, y) => expect(x).toEqual(y)).run(({ hot, expectObservable }) => {
      const pgs = hot('k', { k: 'team-a/gone-1' });
      const out = jobAggregates$({ podKeys$: NEVER, podGroupKeys$: pgs, faultNodes$: NEVER }, deps, { windowMs: 200 }, asyncScheduler);
      expectObservable(out, '^ 1s !').toBe('');
    });
  });
});
