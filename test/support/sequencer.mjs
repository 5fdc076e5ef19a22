// Jest's test sequencer with shards balanced by how long each file ran (test/durations.json,
// seconds) rather than by a hash of its path, and files run longest first. The test command runs
// unit, integration and real-stack in two shards beside each other (test/run-tests.mjs); a hash
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

export default class DurationSequencer extends Sequencer {
  /** Longest first, each onto the shard with the least so far: the same split in every shard's run. */
  shard(tests, { shardIndex, shardCount }) {
    const order = tests.map((t) => ({ t, p: relativePath(t), w: weight(t) }))
      .sort((a, b) => b.w - a.w || (a.p < b.p ? -1 : a.p > b.p ? 1 : 0));
    const loads = new Array(shardCount).fill(0);
    const bins = Array.from({ length: shardCount }, () => []);
    for (const x of order) {
      const i = loads.indexOf(Math.min(...loads));
      loads[i] += x.w;
      bins[i].push(x.t);
    }
    return bins[shardIndex - 1];
  }

  /** Longest first: on several workers the last file to start is a short one (a fresh clone has no jest cache to order by). */
  sort(tests) {
    return [...tests].sort((a, b) => weight(b) - weight(a) || (relativePath(a) < relativePath(b) ? -1 : 1));
  }
}
