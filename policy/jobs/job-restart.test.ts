import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { alreadyActed, markActed } from './job-decision-id.ts';
import type { JobAction, JobRescheduleState } from './job-decision-types.ts';
import { allNames, chipFault, decide, fourPodJob, mapPods, nodeNotReady, replaced, terminating } from '../../test/support/job-fixtures.ts';
import type { JobKnobsInput, JobView } from './job-view.ts';

const sep2 = chipFault('node-2', 'Ascend910-2', 'SeparateNPU');
const deleted = (actions: readonly JobAction[]): string[] =>
  actions.flatMap((a) => (a.type === 'evictPods' || a.type === 'forceDeletePods' ? a.pods.map((p) => p.name) : [])).sort();
/** Placement of replacements: a healthy node for every pod. */
const newNode = (p: { name: string }): string => `node-new-${p.name.slice(-1)}`;

/** Run one evaluation the way the controller does: skip recorded decisions, record before acting. */
function run(job: JobView, knobs: JobKnobsInput, state: JobRescheduleState | undefined, nowMs: number, faults: readonly FaultRecord[] = []) {
  const out = decide({ job, faults, knobs, state, nowMs });
  const act = out.decision.actions.length > 0 && !alreadyActed(out.state, out.decision);
  return { ...out, acted: act ? out.decision.actions : [], state: act ? markActed(out.state, out.decision) : out.state };
}

describe('job restart lifecycle', () => {
  it('SeparateNPU on rank 2, fault-scheduling=force: job level, all 4 pods, once', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force' };
    const job = fourPodJob();
    const s1 = run(job, knobs, undefined, 0, [sep2]);
    expect(s1.decision).toMatchObject({ kind: 'job', phase: 'start', row: 11 });
    expect(deleted(s1.acted)).toEqual(allNames(job));
    // Same inputs again (resync / replay): nothing more.
    const s2 = run(job, knobs, s1.state, 200, [sep2]);
    expect(s2.decision.phase).toBe('wait');
    expect(s2.acted).toEqual([]);
    // A replay of the first evaluation against the recorded state is recognised.
    const replay = decide({ job, faults: [sep2], knobs, state: undefined, nowMs: 0 }).decision;
    expect(replay.decisionId).toBe(s1.decision.decisionId);
    expect(alreadyActed(s1.state, replay)).toBe(true);
    // Pods deleted, operator re-creates, Volcano places them elsewhere: complete, and no new restart.
    const placed = replaced(job, allNames(job), newNode);
    const s3 = run(placed, knobs, s2.state, 30_000, [sep2]);
    expect(s3.decision).toMatchObject({ phase: 'complete', requeueAfterMs: 0 });
    expect(s3.state.active).toBeUndefined();
    const s4 = run(placed, knobs, s3.state, 30_001, [sep2]);
    expect(s4.decision).toMatchObject({ kind: 'none', phase: 'idle', actions: [] });
    expect(s4.state.generation).toBe(1);
  });

  it('pod-rescheduling=on: only rank 2, then job level after the pending timeout', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true };
    const job = fourPodJob();
    const s1 = run(job, knobs, undefined, 0, [sep2]);
    expect(s1.decision).toMatchObject({ kind: 'pod', row: 10 });
    expect(deleted(s1.acted)).toEqual(['llama-worker-2']);
    // The replacement exists but stays pending (no node).
    const pending = replaced(job, ['llama-worker-2'], () => undefined);
    const s2 = run(pending, knobs, s1.state, 1_000, [sep2]);
    expect(s2.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 15_000 });
    expect(s2.state.active?.pendingSinceMs).toBe(1_000);
    const s3 = run(pending, knobs, s2.state, 15_999, [sep2]);
    expect(s3.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 1 });
    const s4 = run(pending, knobs, s3.state, 16_000, [sep2]);
    expect(s4.decision).toMatchObject({ kind: 'job', phase: 'escalate' });
    expect(deleted(s4.acted)).toEqual(allNames(job));
    expect(s4.state.active?.scope).toBe('job');
    expect(s4.acted.some((a) => a.type === 'recordRescheduleReason')).toBe(true);
    // Escalation happens once.
    expect(run(pending, knobs, s4.state, 16_100, [sep2]).acted).toEqual([]);
  });

  it('pod-rescheduling=on: a placed replacement completes the restart and bumps reset-config RetryTime', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'grace', podRescheduling: true };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    const placed = replaced(fourPodJob(), ['llama-worker-2'], newNode);
    const s2 = run(placed, knobs, s1.state, 5_000, [sep2]);
    expect(s2.decision.phase).toBe('complete');
    expect(s2.acted).toEqual([{ type: 'bumpResetConfigRetryTime', podLevel: true }]);
  });

  it('pod-rescheduling=on, fault on rank 0: job level; placed as a whole, reset-config RetryTime goes to 0 (not with process recovery)', () => {
    const sep0 = chipFault('node-0', 'Ascend910-0', 'SeparateNPU');
    for (const [knobs, want] of [
      [{ faultScheduling: 'force', podRescheduling: true }, [{ type: 'bumpResetConfigRetryTime', podLevel: false }]],
      [{ faultScheduling: 'force', podRescheduling: true, processRecoverEnable: 'on' }, []],
      [{ faultScheduling: 'force' }, []],
    ] as Array<[JobKnobsInput, JobAction[]]>) {
      const s1 = run(fourPodJob(), knobs, undefined, 0, [sep0]);
      expect(s1.state.active?.scope).toBe('job');
      const s2 = run(replaced(fourPodJob(), allNames(fourPodJob()), newNode), knobs, s1.state, 5_000, [sep0]);
      expect(s2.decision.phase).toBe('complete');
      expect(s2.acted).toEqual(want);
    }
  });

  it('recover_policy_path=pod never goes beyond pod level, not even for rank 0', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true, recoverPolicyPath: 'pod' };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    const pending = replaced(fourPodJob(), ['llama-worker-2'], () => undefined);
    let state = s1.state;
    for (const t of [1_000, 16_000, 60_000, 600_000, 1_199_999]) {
      const s = run(pending, knobs, state, t, [sep2]);
      expect(s.decision.phase).toBe('wait');
      expect(s.acted).toEqual([]);
      state = s.state;
    }
    const rank0 = run(fourPodJob(), knobs, undefined, 0, [chipFault('node-0', 'Ascend910-0', 'SeparateNPU')]);
    expect(rank0.decision.kind).toBe('pod');
    expect(deleted(rank0.acted)).toEqual(['llama-worker-0']);
  });

  it('a new fault on rank 0 during a pod-level restart escalates at once', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    const job = replaced(fourPodJob(), ['llama-worker-2'], () => undefined);
    const s2 = run(job, knobs, s1.state, 500, [sep2, chipFault('node-0', 'Ascend910-3', 'RestartNPU', '40F84E00')]);
    expect(s2.decision).toMatchObject({ kind: 'job', phase: 'escalate' });
    expect(deleted(s2.acted)).toEqual(allNames(job));
  });

  it('another fault pod during a pod-level restart joins it (extend)', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    const job = replaced(fourPodJob(), ['llama-worker-2'], () => undefined);
    const s2 = run(job, knobs, s1.state, 500, [sep2, chipFault('node-3', 'Ascend910-0', 'SeparateNPU')]);
    expect(s2.decision).toMatchObject({ kind: 'pod', phase: 'extend' });
    expect(deleted(s2.acted)).toEqual(['llama-worker-3']);
    expect(s2.state.active?.targets.map((t) => t.name)).toEqual(['llama-worker-2', 'llama-worker-3']);
  });

  it('fault-retry-times=2: two restarts for failed pods, then none', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', faultRetryTimes: 2 };
    const failRank1 = (j: JobView): JobView => mapPods(j, (p) => (p.rank === 1 ? { ...p, phase: 'Failed' } : p));
    let job = fourPodJob();
    let state: JobRescheduleState | undefined;
    let t = 0;
    for (const [gen, left] of [[2, 1], [3, 0]] as const) {
      const start = run(failRank1(job), knobs, state, (t += 1_000));
      expect(start.decision).toMatchObject({ kind: 'job', phase: 'start', row: 12 });
      expect(deleted(start.acted)).toEqual(allNames(job));
      expect(start.state.retry?.times).toBe(left + 1); // spent on success, not on delete (docs/rules.md#operator.failed-pod-budget)
      job = replaced(job, allNames(job), newNode, gen);
      const done = run(job, knobs, start.state, (t += 1_000));
      expect(done.decision.phase).toBe('complete');
      expect(done.state.retry).toEqual({ uid: 'job-uid-1', times: left });
      state = done.state;
    }
    const third = run(failRank1(job), knobs, state, (t += 1_000));
    expect(third.decision).toMatchObject({ kind: 'none', row: 12, actions: [] });
  });

  it('hardware restarts do not spend the retry budget', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', faultRetryTimes: 1 };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    const s2 = run(replaced(fourPodJob(), allNames(fourPodJob()), newNode), knobs, s1.state, 1_000, [sep2]);
    expect(s2.decision.phase).toBe('complete');
    expect(s2.state.retry).toEqual({ uid: 'job-uid-1', times: 1 });
  });

  it('node NotReady: NodeUnhealthy / heartbeatTimeOut, its pods force-deleted even in grace mode', () => {
    const s = run(fourPodJob(), { faultScheduling: 'grace' }, undefined, 0, [nodeNotReady('node-1')]);
    expect(s.decision.kind).toBe('job');
    const force = s.acted.find((a) => a.type === 'forceDeletePods');
    const evict = s.acted.find((a) => a.type === 'evictPods');
    expect(force?.type === 'forceDeletePods' && force.pods.map((p) => p.name)).toEqual(['llama-worker-1']);
    expect(evict?.type === 'evictPods' && evict.pods.map((p) => p.name)).toEqual(['llama-worker-0', 'llama-worker-2', 'llama-worker-3']);
    expect(force?.type === 'forceDeletePods' && force.reasons).toEqual([
      { podName: 'llama-worker-1', nodeName: 'node-1', rank: '1', faultType: 'NodeUnhealthy', faultCode: 'heartbeatTimeOut', faultLevel: 'PreSeparateNPU' },
    ]);
    expect(s.acted.find((a) => a.type === 'recordRescheduleReason')).toMatchObject({
      tasks: [{ RescheduleReason: 'NodeUnhealthy', PodName: 'llama-worker-1', NodeName: 'node-1', NodeRankIndex: '1' }],
    });
  });

  it('grace: pods still terminating after 900 s are force-deleted, once', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'grace' };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    expect(s1.decision.requeueAfterMs).toBe(900_000);
    const stuck = terminating(replaced(fourPodJob(), ['llama-worker-0', 'llama-worker-1'], () => undefined), ['llama-worker-2', 'llama-worker-3']);
    const s2 = run(stuck, knobs, s1.state, 899_000, [sep2]);
    expect(s2.decision).toMatchObject({ phase: 'wait', requeueAfterMs: 1_000 });
    const s3 = run(stuck, knobs, s2.state, 900_000, [sep2]);
    expect(s3.decision).toMatchObject({ phase: 'force', kind: 'job' });
    expect(s3.acted.map((a) => a.type)).toEqual(['forceDeletePods']);
    expect(deleted(s3.acted)).toEqual(['llama-worker-2', 'llama-worker-3']);
    const s4 = run(stuck, knobs, s3.state, 900_500, [sep2]);
    expect(s4.decision.phase).toBe('wait');
    expect(s4.acted).toEqual([]);
  });

  it('graceExit: GracefulExit goes back to 0 after the successful restart', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'grace', subHealthyStrategy: 'graceExit' };
    const sub = chipFault('node-2', 'Ascend910-2', 'SubHealthFault', '80818C06');
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sub]);
    expect(s1.acted[0]).toEqual({ type: 'setGracefulExit', value: 1 });
    const s2 = run(replaced(fourPodJob(), allNames(fourPodJob()), newNode), knobs, s1.state, 60_000, [sub]);
    expect(s2.decision.phase).toBe('complete');
    expect(s2.acted).toEqual([{ type: 'setGracefulExit', value: 0 }]);
  });

  it('a running restart is dropped after 300 s + grace-over-time and the job is looked at afresh', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', podRescheduling: true, recoverPolicyPath: 'pod' };
    const s1 = run(fourPodJob(), knobs, undefined, 0, [sep2]);
    const pending = replaced(fourPodJob(), ['llama-worker-2'], () => undefined);
    const s2 = run(pending, knobs, s1.state, 1_200_000, [sep2]);
    expect(s2.decision).toMatchObject({ kind: 'none', phase: 'expire' });
    expect(s2.state.active).toBeUndefined();
  });

  it('a job re-created with a new UID starts from a fresh state', () => {
    const knobs: JobKnobsInput = { faultScheduling: 'force', faultRetryTimes: 3 };
    const old: JobRescheduleState = { jobUid: 'old', generation: 5, acted: ['x'], retry: { uid: 'old', times: 0 } };
    const s = run(fourPodJob('new'), knobs, old, 0, [sep2]);
    expect(s.state).toMatchObject({ jobUid: 'new', generation: 1, retry: { uid: 'new', times: 3 } });
    expect(s.decision.decisionId.startsWith('new/g1/start/')).toBe(true);
  });
});
