import type { JobAction, JobRescheduleState } from './job-decision-types.ts';
import { alreadyActed, markActed } from './job-decision-id.ts';
import { inferenceCapOf } from './pod-level-cap.ts';
import { chipFault, decide, fourPodJob, replaced } from '../../test/support/job-fixtures.ts';
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import type { JobKnobsInput, JobView } from './job-view.ts';

const deleted = (actions: readonly JobAction[]): string[] =>
  actions.flatMap((a) => (a.type === 'evictPods' || a.type === 'forceDeletePods' ? a.pods.map((p) => p.name) : [])).sort();

function run(job: JobView, knobs: JobKnobsInput, state: JobRescheduleState | undefined, nowMs: number, faults: readonly FaultRecord[]) {
  const out = decide({ job, faults, knobs, state, nowMs });
  const act = out.decision.actions.length > 0 && !alreadyActed(out.state, out.decision);
  return { ...out, acted: act ? out.decision.actions : [], state: act ? markActed(out.state, out.decision) : out.state };
}

describe('inference jobs are capped at pod level (docs/rules.md#resched.pod-level-cap)', () => {
  it('reads the labels as the ascend plugin does: the PodGroup first, then the pods', () => {
    expect(inferenceCapOf({ 'ome.io/inferenceservice': '' }, [])).toBe('ome-inference-service');
    expect(inferenceCapOf({}, [{ 'ome.io/inferenceservice': 'llm' }])).toBe('ome-inference-service');
    expect(inferenceCapOf({ app: 'mindie-ms-controller' }, [{ app: 'other' }])).toBe('mindie-ms-controller');
    expect(inferenceCapOf(undefined, [{ app: 'mindie-ms-coordinator' }, { app: 'mindie-ms-coordinator' }])).toBe('mindie-ms-coordinator');
    // Pods that disagree join with '|' in the plugin and match no app type.
    expect(inferenceCapOf({}, [{ app: 'mindie-ms-coordinator' }, { app: 'mindie-ms-controller' }])).toBeUndefined();
    // MindIE servers are not capped by their labels.
    expect(inferenceCapOf({ app: 'mindie-ms-server', jobID: 'm1' }, [])).toBeUndefined();
    expect(inferenceCapOf({}, [{}, undefined])).toBeUndefined();
  });

  const caps: ReadonlyArray<[string, JobKnobsInput]> = [
    ['an OME inference service', { faultScheduling: 'grace', inferenceCap: 'ome-inference-service' }],
    ['a MindIE controller', { faultScheduling: 'force', inferenceCap: 'mindie-ms-controller' }],
    ['recover_policy_path=pod without pod-rescheduling', { faultScheduling: 'grace', recoverPolicyPath: 'pod' }],
  ];

  it.each(caps)('%s: a fault on rank 2 deletes only rank 2, and pending replacements never widen', (_n, knobs) => {
    const sep2 = chipFault('node-2', 'Ascend910-2', 'SeparateNPU');
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    expect(s1.decision).toMatchObject({ kind: 'pod', row: 11 });
    expect(deleted(s1.acted)).toEqual(['llama-worker-2']);
    const pending = replaced(fourPodJob(), ['llama-worker-2'], () => undefined);
    let state = s1.state;
    for (const t of [1_000, 16_000, 600_000]) {
      const s = run(pending, knobs, state, t, [sep2]);
      expect(s.acted).toEqual([]);
      state = s.state;
    }
    expect(state.active?.scope).toBe('pod');
  });

  it.each(caps)('%s: a fault on rank 0 deletes only rank 0', (_n, knobs) => {
    const s = run(fourPodJob(), knobs, undefined, 0, [chipFault('node-0', 'Ascend910-0', 'SeparateNPU')]);
    expect(s.decision.kind).toBe('pod');
    expect(deleted(s.acted)).toEqual(['llama-worker-0']);
  });

  it.each(['graceExit', 'forceExit'] as const)('sub-health with %s deletes only the sub-healthy pod of an inference job', (strategy) => {
    const knobs: JobKnobsInput = { faultScheduling: 'grace', subHealthyStrategy: strategy, inferenceCap: 'ome-inference-service' };
    const s = run(fourPodJob(), knobs, undefined, 0, [chipFault('node-1', 'Ascend910-1', 'SubHealthFault')]);
    expect(s.decision.kind).toBe('subHealthAction');
    expect(deleted(s.acted)).toEqual(['llama-worker-1']);
  });

  it('a job without a cap still goes to job level (the cap is what changes it)', () => {
    const s = run(fourPodJob(), { faultScheduling: 'grace' }, undefined, 0, [chipFault('node-2', 'Ascend910-2', 'SeparateNPU')]);
    expect(s.decision).toMatchObject({ kind: 'job', row: 11 });
    expect(deleted(s.acted)).toHaveLength(4);
  });
});
