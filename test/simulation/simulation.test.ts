/**
 * The deterministic simulation suite (docs/simulation.md): SIM_HISTORIES seeded fault histories of up
 * to SIM_STEPS steps against the assembled controller in virtual time, the invariants checked after
 * every step. SIM_SEED=<n> replays exactly one history (known issue or not).
 */
import { generateHistory, runHistory } from './simulation.ts';
import { KNOWN_ISSUE_SEEDS, KNOWN_ISSUE_STEPS, isKnownIssue } from './known-issues.ts';

const env = (k: string, d: number): number => (process.env[k] === undefined || process.env[k] === '' ? d : Number(process.env[k]));
const HISTORIES = env('SIM_HISTORIES', 1000);
const STEPS = env('SIM_STEPS', 8);
const FIRST = env('SIM_FIRST_SEED', 1);
const ONE = process.env.SIM_SEED;

describe('simulation', () => {
  // Node's default (production's), not jest's 100: every error the controller makes (retries,
  // aborts) captures its stack, and 100 frames made that a visible part of the suite's time.
  const stackTraceLimit = Error.stackTraceLimit;
  beforeAll(() => { Error.stackTraceLimit = 10; });
  afterAll(() => { Error.stackTraceLimit = stackTraceLimit; });

  it('replays a seed exactly: two runs of one history make the same calls', async () => {
    // A history with the steps that involve retries and timers: a crash, an outage, lost watches, failed writes.
    const kinds = ['crash', 'outage', 'lose-watches', 'conflicts'];
    let seed = 1;
    while (!kinds.every((k) => generateHistory(seed, 12).steps.some((s) => s.kind === k))) seed++;
    const a = await runHistory(generateHistory(seed, 12));
    const b = await runHistory(generateHistory(seed, 12));
    expect(b.calls).toEqual(a.calls);
    expect(a.calls.length).toBeGreaterThan(50);
  }, 60_000);

  it(ONE !== undefined ? `history of seed ${ONE}` : `${HISTORIES} seeded histories keep the invariants`, async () => {
    const seeds = ONE !== undefined ? [Number(ONE)] : Array.from({ length: HISTORIES }, (_, i) => FIRST + i);
    let restarts = 0; let onsets = 0; let steps = 0; let known = 0;
    const t0 = Date.now();
    for (const seed of seeds) {
      try {
        const r = await runHistory(generateHistory(seed, STEPS));
        restarts += r.restarts; onsets += r.onsets; steps += r.history.steps.length;
      } catch (e) {
        // Only the listed seeds, and only with the listed violation (docs/simulation.md#known-issues).
        if (ONE === undefined && STEPS === KNOWN_ISSUE_STEPS && KNOWN_ISSUE_SEEDS.has(seed) && isKnownIssue(e)) { known++; continue; }
        throw e;
      }
    }
    process.stdout.write(`simulation: ${seeds.length} histories (${known} known issues), ${steps} steps, ${onsets} fault onsets, ${restarts} pod deletions, ${Date.now() - t0} ms\n`);
  }, 600_000);
});
