import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { alreadyActed, markActed } from './job-decision-id.ts';
import type { JobAction, JobRescheduleState } from './job-decision-types.ts';
import { blockStagesOf } from './job-block-escalation.ts';
import { chipFault, decide, jobOf, podOf, replaced } from '../../test/support/job-fixtures.ts';
import type { JobKnobsInput, JobView } from './job-view.ts';

const deleted = (actions: readonly JobAction[]): string[] =>
  actions.flatMap((a) => (a.type === 'evictPods' || a.type === 'forceDeletePods' ? a.pods.map((p) => p.name) : [])).sort();

function run(job: JobView, knobs: JobKnobsInput, state: JobRescheduleState | undefined, nowMs: number, faults: readonly FaultRecord[] = []) {
  const out = decide({ job, faults, knobs, state, nowMs });
  const act = out.decision.actions.length > 0 && !alreadyActed(out.state, out.decision);
  return { ...out, acted: act ? out.decision.actions : [], state: act ? markActed(out.state, out.decision) : out.state };
}

const eightPodJob = (): JobView => jobOf([0, 1, 2, 3, 4, 5, 6, 7].map((i) => podOf(`llama-worker-${i}`, i, `node-${i}`)), 'job-uid-8');
const fault5 = chipFault('node-5', 'Ascend910-2', 'SeparateNPU');

describe('block steps of a job (docs/rules.md#resched.block-escalation)', () => {
  it('A3 sp-block in NPUs -> pods per logical super-pod; policy absent needs sp-block', () => {
    expect(blockStagesOf({ spBlockNpus: 32 }, 8, 64).stages).toEqual([{ step: 'super-pod', podsPerBlock: 4 }]);
    expect(blockStagesOf({ schedulePolicy: 'chip2-node16-sp' }, 16, 64).stages).toEqual([{ step: 'super-pod', podsPerBlock: Infinity }]);
    expect(blockStagesOf({ schedulePolicy: 'chip4-node8' }, 8, 64).stages).toEqual([]);
    expect(blockStagesOf({ spBlockNpus: 12 }, 8, 64)).toMatchObject({ stages: [], notes: [expect.stringContaining('not a multiple')] });
  });
  it('A5: rack (ra-block rounded up to whole pods) then super-pod, each only with its annotation', () => {
    expect(blockStagesOf({ schedulePolicy: 'chip8-node8-ra64-sp', raBlockNpus: 16, spBlockNpus: 32 }, 8, 64).stages)
      .toEqual([{ step: 'rack', podsPerBlock: 2 }, { step: 'super-pod', podsPerBlock: 4 }]);
    expect(blockStagesOf({ schedulePolicy: 'chip8-node8-ra64-sp', raBlockNpus: 8 }, 8, 64).stages).toEqual([]);
  });
  it('A5 without sp-block: no rack step either (the plugin widens an A5 job only with sp-block)', () => {
    expect(blockStagesOf({ schedulePolicy: 'chip8-node8-ra64-sp', raBlockNpus: 16 }, 8, 64)).toMatchObject({ stages: [], notes: [expect.stringContaining('no sp-block')] });
  });
  it('multilevel: level1 group in pods', () => {
    expect(blockStagesOf({ schedulePolicy: 'multilevel', affinityLevel1: 2 }, 8, 64).stages).toEqual([{ step: 'level1', podsPerBlock: 2 }]);
  });
});

describe('pending pod-level restart of a super-pod job', () => {
  const knobs: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true, blocks: { schedulePolicy: 'chip8-node8-ra64-sp', raBlockNpus: 16, spBlockNpus: 32 } };

  it('widens to the rack block at 3.75 s, the super-pod at 7.5 s, the job at 15 s; the count pauses while pods go', () => {
    const job = eightPodJob();
    const s1 = run(job, knobs, undefined, 0, [fault5]);
    expect(deleted(s1.acted)).toEqual(['llama-worker-5']);
    const pending = replaced(job, ['llama-worker-5'], () => undefined);
    const s2 = run(pending, knobs, s1.state, 1_000, [fault5]);
    expect(s2.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 3_750 });
    const s3 = run(pending, knobs, s2.state, 4_750, [fault5]);
    expect(s3.decision).toMatchObject({ phase: 'widen', widening: 'rack', kind: 'pod' });
    expect(deleted(s3.acted)).toEqual(['llama-worker-4']);
    // While rank 4 is being deleted the count stands still.
    const s4 = run(pending, knobs, s3.state, 20_000, [fault5]);
    expect(s4.decision.phase).toBe('wait');
    const both = replaced(pending, ['llama-worker-4'], () => undefined);
    const s5 = run(both, knobs, s4.state, 20_000, [fault5]);
    expect(s5.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 3_750 });
    const s6 = run(both, knobs, s5.state, 23_750, [fault5]);
    expect(s6.decision).toMatchObject({ phase: 'widen', widening: 'super-pod' });
    expect(deleted(s6.acted)).toEqual(['llama-worker-6', 'llama-worker-7']);
    const four = replaced(both, ['llama-worker-6', 'llama-worker-7'], () => undefined);
    const s7 = run(four, knobs, s6.state, 24_000, [fault5]);
    expect(s7.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 7_500 });
    const s8 = run(four, knobs, s7.state, 31_500, [fault5]);
    expect(s8.decision).toMatchObject({ phase: 'escalate', kind: 'job', widening: 'job' });
    expect(deleted(s8.acted)).toEqual(['llama-worker-0', 'llama-worker-1', 'llama-worker-2', 'llama-worker-3', 'llama-worker-4', 'llama-worker-5', 'llama-worker-6', 'llama-worker-7']);
  });

  it('a block holding rank 0 goes job level at once', () => {
    const job = eightPodJob();
    const f1 = chipFault('node-1', 'Ascend910-2', 'SeparateNPU');
    const s1 = run(job, knobs, undefined, 0, [f1]);
    const pending = replaced(job, ['llama-worker-1'], () => undefined);
    const s2 = run(pending, knobs, s1.state, 1_000, [f1]);
    const s3 = run(pending, knobs, s2.state, 4_750, [f1]);
    expect(s3.decision).toMatchObject({ phase: 'escalate', kind: 'job', widening: 'job' });
    expect(s3.state.active?.widened).toEqual(['rack']);
  });

  it('recover_policy_path=pod never widens', () => {
    const capped: JobKnobsInput = { ...knobs, recoverPolicyPath: 'pod' };
    const job = eightPodJob();
    const s1 = run(job, capped, undefined, 0, [fault5]);
    const pending = replaced(job, ['llama-worker-5'], () => undefined);
    const s2 = run(pending, capped, s1.state, 1_000, [fault5]);
    const s3 = run(pending, capped, s2.state, 60_000, [fault5]);
    expect(s3.decision.phase).toBe('wait');
    expect(s3.acted).toEqual([]);
  });

  it('without block annotations: job level at 15 s, no step before', () => {
    const plain: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true };
    const job = eightPodJob();
    const s1 = run(job, plain, undefined, 0, [fault5]);
    const pending = replaced(job, ['llama-worker-5'], () => undefined);
    const s2 = run(pending, plain, s1.state, 1_000, [fault5]);
    expect(s2.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 15_000 });
  });
});
