// Jest's test sequencer with shards balanced by how long each file ran (test/durations.json,
// seconds) rather than by a hash of its path, and files run longest first. The test command runs
// four shards beside each other (test/run-tests.mjs), three of one worker and one of two; a hash
// split once put 60 % of the integration time in one. Files the table does not list count as their
// project's typical file. The test command prints where it wrote this run's durations; copy that
// file over test/durations.json when the shards' end times drift apart.
import Sequencer from '@jest/test-sequencer';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const TABLE = JSON.parse(readFileSync(new URL('../durations.json', import.meta.url), 'utf8'));
const TYPICAL_S = { unit: 0.5, integration: 15, conformance: 90, 'real-stack': 30, simulation: 60 };

export const relativePath = (test) => relative(test.context.config.rootDir, test.path).split('\\').join('/');
const weight = (test) => TABLE[relativePath(test)] ?? TYPICAL_S[test.context.config.displayName?.name] ?? 15;

/** Projects whose files must run one at a time in a run of one worker (see test/run-tests.mjs). */
const SERIAL = new Set(['unit', 'integration', 'real-stack']);
/** Real-stack files start Volcano stacks: only the first two one-worker runs take them, so at most two run at once. */
const STACK_RUNS = 2;
const project = (test) => test.context.config.displayName?.name ?? '';

/**
 * Workers of each run, from CLUSTERD_TS_TEST_SLOTS ("1,1,1,2": run k has that many workers); without
 * it every shard is one worker. Each worker is one bin of the split below.
 */
function slots(shardCount) {
  const given = (process.env.CLUSTERD_TS_TEST_SLOTS ?? '').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  return given.length === shardCount ? given : new Array(shardCount).fill(1);
}

export default class DurationSequencer extends Sequencer {
  /**
   * The same split in every run (each run sees every file), longest first onto the least loaded
   * allowed worker: first the real-stack files onto the first two one-worker runs, then the other
   * serial files (unit, integration: they share their run's control plane) onto any one-worker
   * run, then the rest (conformance, simulation: each on control planes of its own) onto any worker.
   */
  shard(tests, { shardIndex, shardCount }) {
    const bins = slots(shardCount).flatMap((n, run) => Array.from({ length: n }, () => ({ run, n, load: 0, tests: [] })));
    const order = (xs) => xs.map((t) => ({ t, p: relativePath(t), w: weight(t) }))
      .sort((a, b) => b.w - a.w || (a.p < b.p ? -1 : a.p > b.p ? 1 : 0));
    const place = (xs, candidates) => {
      const allowed = candidates.length > 0 ? candidates : bins;
      for (const x of order(xs)) {
        const bin = allowed.reduce((best, b) => (b.load < best.load ? b : best));
        bin.load += x.w;
        bin.tests.push(x.t);
      }
    };
    const single = bins.filter((b) => b.n === 1);
    place(tests.filter((t) => project(t) === 'real-stack'), single.slice(0, STACK_RUNS));
    place(tests.filter((t) => SERIAL.has(project(t)) && project(t) !== 'real-stack'), single);
    place(tests.filter((t) => !SERIAL.has(project(t))), bins);
    return bins.filter((b) => b.run === shardIndex - 1).flatMap((b) => b.tests);
  }

  /** Longest first: on several workers the last file to start is a short one (a fresh clone has no jest cache to order by). */
  sort(tests) {
    return [...tests].sort((a, b) => weight(b) - weight(a) || (relativePath(a) < relativePath(b) ? -1 : 1));
  }
}
