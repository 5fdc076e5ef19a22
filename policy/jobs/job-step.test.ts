import { chipFault, fourPodJob } from '../../test/support/job-fixtures.ts';
import { decideJob } from './job-restart.ts';
import { aggregateJob } from './job-aggregation.ts';
import { markActed } from './job-decision-id.ts';
import { decideJobStep, heldByBreaker, type JobStepInput } from './job-step.ts';
import type { JobRescheduleState } from './job-decision-types.ts';
import type { LastRestart } from '../faults/flap-damping.ts';

const JOB = { namespace: 'team-a', name: 'llama', podGroup: 'llama-job-uid-1', uid: 'job-uid-1' };
const sep2 = chipFault('node-2', 'Ascend910-2', 'SeparateNPU');
const DAMPING = { holdMs: 30_000, recoveries: 2, windowMs: 60_000 };
const NOW = 100_000;

function input(over: Partial<JobStepInput> = {}): JobStepInput {
  return {
    job: JOB, snapshot: { job: fourPodJob(), faults: [sep2] }, knobs: { faultScheduling: 'force' }, state: undefined, nowMs: NOW,
    config: {}, registered: false, dryRun: false, resetRetryTime: undefined,
    damping: { config: DAMPING, last: undefined, recoveredSince: () => false }, lastReported: undefined, ...over,
  };
}

/** The fresh decision on the fault. */
const first = decideJob({ aggregate: aggregateJob({ job: fourPodJob(), faults: [sep2] }), knobs: { faultScheduling: 'force' }, state: undefined, nowMs: NOW });
/** A state whose acted list already holds that decision (the journal's history of what was carried out). */
const actedState = (): JobRescheduleState => markActed({ jobUid: 'job-uid-1', generation: 0, acted: [] }, first.decision);

/** A restart of the job 10 s ago, for the same chip. */
const justRestarted: LastRestart = { atMs: NOW - 10_000, entities: ['node-2/Ascend910-2'], restart: 'job-uid-1/g0' };

describe('decideJobStep: one pass of the per-job reconcile, decided (pure)', () => {
  const cases: Array<{
    readonly name: string;
    readonly in: Partial<JobStepInput>;
    readonly outcome: string;
    readonly writeAhead: boolean;
    readonly admission: boolean;
    readonly report: boolean;
    readonly history?: string;
    readonly deferred?: boolean;
  }> = [
    { name: 'a fresh fault: written ahead, the breaker asked, reported, recorded acted', in: {}, outcome: 'acted', writeAhead: true, admission: true, report: true, history: 'acted' },
    {
      name: 'the journal says already acted (a resync, a replayed event): not again; reported already_acted once', in: { state: actedState() },
      outcome: 'already_acted', writeAhead: false, admission: false, report: true, history: 'already_acted',
    },
    {
      name: 'already acted and already reported: no record either', in: { state: actedState(), lastReported: first.decision.decisionId },
      outcome: 'already_acted', writeAhead: false, admission: false, report: false,
    },
    {
      name: 'after the restart was carried out: waiting for it, nothing to act on or report', in: { state: markActed(first.state, first.decision) },
      outcome: 'no_action', writeAhead: false, admission: false, report: false,
    },
    { name: 'dry run: decided, reported, recorded dry_run, nothing written ahead or admitted', in: { dryRun: true }, outcome: 'dry_run', writeAhead: false, admission: false, report: true, history: 'dry_run' },
    {
      name: 'damping budget spent (the same chip, restarted 10 s ago): deferred to the end of the hold, recorded held', in: { damping: { config: DAMPING, last: justRestarted, recoveredSince: () => false } },
      outcome: 'deferred', writeAhead: false, admission: false, report: true, history: 'held', deferred: true,
    },
    {
      name: 'damping hold over (the restart 40 s ago): acts', in: { damping: { config: DAMPING, last: { ...justRestarted, atMs: NOW - 40_000 }, recoveredSince: () => false } },
      outcome: 'acted', writeAhead: true, admission: true, report: true, history: 'acted',
    },
    { name: 'fault-scheduling off: no action', in: { knobs: {} }, outcome: 'no_action', writeAhead: false, admission: false, report: true, history: 'no_action' },
  ];
  it.each(cases)('$name', (c) => {
    const s = decideJobStep(input(c.in));
    expect(s.outcome).toBe(c.outcome);
    expect(s.writeAhead !== undefined).toBe(c.writeAhead);
    expect(s.admission !== undefined).toBe(c.admission);
    expect(s.records.report).toBe(c.report);
    if (c.history !== undefined) expect(s.records.history?.outcome).toBe(c.history);
    expect(s.deferredUntilMs !== undefined).toBe(c.deferred === true);
  });

  it('a deferral wakes at the end of the hold and names the damping rule last; nothing is stored', () => {
    const s = decideJobStep(input({ damping: { config: DAMPING, last: justRestarted, recoveredSince: () => false } }));
    expect(s.deferredUntilMs).toBe(NOW + 20_000);
    expect(s.requeueAfterMs).toBe(20_000);
    expect(s.records.history?.reasons.at(-1)).toMatchObject({ stage: 'damping' });
    expect(s.restarted).toBeUndefined();
  });

  it('the same decision reported deferred before is not reported again, but acting is', () => {
    const deferred = decideJobStep(input({ damping: { config: DAMPING, last: justRestarted, recoveredSince: () => false } }));
    const again = decideJobStep(input({ damping: { config: DAMPING, last: justRestarted, recoveredSince: () => false }, lastReported: deferred.decision.decisionId }));
    expect(again.records).toEqual({ report: false });
    const acting = decideJobStep(input({ lastReported: deferred.decision.decisionId }));
    expect(acting.records.report).toBe(true);
  });

  it('acting: the state is marked acted, the write-ahead carries the resolved actions, the damper\'s next budget is an output', () => {
    const s = decideJobStep(input({ resetRetryTime: 3 }));
    expect(s.state.acted).toContain(s.decision.decisionId);
    expect(s.writeAhead).toMatchObject({ decisionId: s.decision.decisionId, atMs: NOW, chain: expect.stringContaining('80E18005@node-2/Ascend910-2') });
    expect(s.admission).toMatchObject({ kind: 'jobs', key: expect.stringMatching(/^job-uid-1\/f/), nodes: ['node-2'], source: 'device-info' });
    expect(s.restarted).toEqual({ atMs: NOW, entities: ['node-2/Ascend910-2'], restart: 'job-uid-1/g1' });
    expect(s.records.event).toBe(s.writeAhead?.chain);
  });

  it('the breaker\'s refusal: held, nothing written ahead or admitted, the reason last, a held Event; reported once', () => {
    const s = decideJobStep(input());
    const held = heldByBreaker(s, JOB, 'held by the blast-radius breaker (cluster: 3 jobs)', NOW, undefined);
    expect(held).toMatchObject({ outcome: 'held', budgetChanged: false });
    expect(held.writeAhead).toBeUndefined();
    expect(held.admission).toBeUndefined();
    expect(held.restarted).toBeUndefined();
    expect(held.requeueAfterMs).toBeUndefined();
    expect(held.records.history?.outcome).toBe('held');
    expect(held.records.history?.reasons.at(-1)).toEqual({ stage: 'breaker', detail: 'held by the blast-radius breaker (cluster: 3 jobs)' });
    expect(held.records.heldEvent).toContain('-> held by the blast-radius breaker');
    expect(heldByBreaker(s, JOB, 'x', NOW, s.decision.decisionId).records).toEqual({ report: false });
  });

  it('is pure: the same inputs give the same step, whatever the clock', () => {
    expect(decideJobStep(input())).toEqual(decideJobStep(input()));
  });
});
