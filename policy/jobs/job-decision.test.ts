import { parseJobKnobs } from '../../schemas/job-knobs/job-knobs.ts';
import { faultKey } from '../../vocabulary/fault-types.ts';
import type { JobAction } from './job-decision-types.ts';
import { allNames, chipFault, decide, fourPodJob, mapPods, nodeNotReady } from '../../test/support/job-fixtures.ts';
import type { JobKnobsInput } from './job-view.ts';

const sep2 = chipFault('node-2', 'Ascend910-2', 'SeparateNPU');
const types = (actions: readonly JobAction[]): string[] => actions.map((a) => a.type);
const podsOf = (actions: readonly JobAction[], type: 'evictPods' | 'forceDeletePods'): string[] =>
  actions.flatMap((a) => (a.type === type ? a.pods.map((p) => p.name) : []));
const at = (knobs: JobKnobsInput, faults = [sep2], job = fourPodJob(), registered = false) =>
  decide({ job, faults, knobs, nowMs: 1_000, registered }).decision;

describe('docs/rules.md#decision.order decision table', () => {
  it('accepts the parsed JobKnobs of schemas/job-knobs as input', () => {
    const knobs: JobKnobsInput = parseJobKnobs({ 'fault-scheduling': 'force', 'pod-rescheduling': 'on' }, {}).knobs;
    expect(at(knobs).kind).toBe('pod');
  });

  it('row 1: NotHandleFault, PreSeparateNPU on a used chip and network faults do nothing', () => {
    for (const f of [chipFault('node-2', 'Ascend910-2', 'NotHandleFault'), chipFault('node-2', 'Ascend910-2', 'PreSeparateNPU'),
      chipFault('node-2', 'Ascend910-2', 'SeparateNPU', '81078603', 'network'), chipFault('node-2', undefined, 'PreSeparateNPU', 'x', 'node')]) {
      const d = at({ faultScheduling: 'force' }, [f]);
      expect(d).toMatchObject({ kind: 'none', row: 1, actions: [] });
    }
  });

  it('row 2: a fault inside its hide window waits for the window, then acts', () => {
    const hidden = new Map([[faultKey(sep2), { by: 'step-retry', untilMs: 11_000 }]]);
    const d = decide({ job: fourPodJob(), faults: [sep2], hidden, knobs: { faultScheduling: 'force' }, nowMs: 1_000 }).decision;
    expect(d).toMatchObject({ kind: 'none', row: 2, actions: [], requeueAfterMs: 10_000 });
    expect(d.reasons[0]?.detail).toContain(`[hidden from the scheduler by step-retry until ${new Date(11_000).toISOString()}]`);
    const later = decide({ job: fourPodJob(), faults: [sep2], hidden, knobs: { faultScheduling: 'force' }, nowMs: 11_000 }).decision;
    expect(later).toMatchObject({ kind: 'job', row: 11 });
    expect(later.reasons.map((r) => r.detail).join(' -> ')).not.toContain('hidden from the scheduler');
  });

  it('row 3: fault-scheduling off or absent never deletes', () => {
    for (const knobs of [{}, { faultScheduling: 'off' as const, podRescheduling: true }]) {
      const d = at(knobs);
      expect(d).toMatchObject({ kind: 'none', row: 3, actions: [] });
      expect(d.reasons.some((r) => r.stage === 'rule' && r.detail.includes('never delete'))).toBe(true);
    }
  });

  it('row 3 with a registered process-recovery job: only the FSM hand-off', () => {
    const d = at({ faultScheduling: 'off', processRecoverEnable: 'on', recoverStrategies: ['recover'] }, [sep2], fourPodJob(), true);
    expect(d).toMatchObject({ kind: 'process', row: 3 });
    expect(types(d.actions)).toEqual(['handOffProcessRecovery']);
  });

  it('row 4: external modes annotate the fault pods huawei.com/pod-status=Unhealthy-<faultType>', () => {
    const d = at({ faultScheduling: 'external-force' });
    expect(d.kind).toBe('external');
    expect(d.actions).toEqual([{ type: 'annotatePodStatus', pod: { name: 'llama-worker-2', uid: 'llama-worker-2-uid', node: 'node-2' }, value: 'Unhealthy-CardUnhealthy' }]);
  });

  it('row 5: rank 0 faulty -> job level even with pod rescheduling', () => {
    const d = at({ faultScheduling: 'force', podRescheduling: true }, [chipFault('node-0', 'Ascend910-0', 'SeparateNPU')]);
    expect(d).toMatchObject({ kind: 'job', row: 5 });
    expect(podsOf(d.actions, 'forceDeletePods')).toEqual(allNames(fourPodJob()));
  });

  it('row 5 does not apply to a worker-replica rank 0 or a job without NPUs', () => {
    const worker = mapPods(fourPodJob(), (p) => (p.rank === 0 ? { ...p, workerReplica: true } : p));
    expect(at({ faultScheduling: 'force', podRescheduling: true }, [chipFault('node-0', 'Ascend910-0', 'SeparateNPU')], worker).kind).toBe('pod');
    const cpu = mapPods(fourPodJob(), (p) => ({ ...p, npus: [] }));
    expect(at({ faultScheduling: 'force', podRescheduling: true }, [nodeNotReady('node-0')], cpu).kind).toBe('pod');
  });

  describe('row 6: hot switch', () => {
    const sub3 = chipFault('node-3', 'Ascend910-1', 'SubHealthFault', '80818C06');
    const hs: JobKnobsInput = { faultScheduling: 'grace', subHealthyStrategy: 'hotSwitch', framework: 'pytorch', processRecoverEnable: 'on', recoverStrategies: ['recover'] };
    it('hands the first sub-healthy pod to the hot-switch FSM', () => {
      const d = at(hs, [sub3], fourPodJob(), true);
      expect(d).toMatchObject({ kind: 'hotSwitch', row: 6 });
      expect(d.actions).toEqual([{ type: 'handOffHotSwitch', pod: { name: 'llama-worker-3', uid: 'llama-worker-3-uid', node: 'node-3' }, podRank: 3 }]);
    });
    it('force-deletes only the pod marked needVolcanoOpe=delete; rank 0 stops the job', () => {
      const marked = mapPods(fourPodJob(), (p) => (p.rank === 3 ? { ...p, needVolcanoDelete: true, faultTypeLabel: 'SubHealth' } : p));
      const d = at(hs, [], marked, true);
      expect(d).toMatchObject({ kind: 'hotSwitch', row: 6 });
      expect(podsOf(d.actions, 'forceDeletePods')).toEqual(['llama-worker-3']);
      const stop = mapPods(fourPodJob(), (p) => (p.rank === 0 ? { ...p, needVolcanoDelete: true, faultTypeLabel: 'SubHealth' } : p));
      expect(podsOf(at(hs, [], stop, true).actions, 'forceDeletePods')).toEqual(allNames(fourPodJob()));
    });
    it('downgrades to ignore for frameworks without hot switch, and the state remembers it', () => {
      const out = decide({ job: fourPodJob(), faults: [sub3], knobs: { ...hs, framework: 'tensorflow' }, nowMs: 0, registered: true });
      expect(out.decision).toMatchObject({ kind: 'none', row: 6, actions: [] });
      expect(out.state.hotSwitchDowngraded).toBe(true);
    });
  });

  describe('row 7: sub-health strategies', () => {
    const sub2 = chipFault('node-2', 'Ascend910-2', 'SubHealthFault', '80818C06');
    it('ignore (and the default) does nothing', () => {
      expect(at({ faultScheduling: 'force' }, [sub2])).toMatchObject({ kind: 'none', row: 7 });
      expect(at({ faultScheduling: 'force', subHealthyStrategy: 'ignore' }, [sub2])).toMatchObject({ kind: 'none', row: 7 });
    });
    it('graceExit writes GracefulExit=1 first, then evicts the whole job', () => {
      const d = at({ faultScheduling: 'force', subHealthyStrategy: 'graceExit' }, [sub2]);
      expect(d).toMatchObject({ kind: 'subHealthAction', row: 7 });
      expect(types(d.actions)).toEqual(['setGracefulExit', 'evictPods', 'recordRescheduleReason']);
      expect(d.actions[0]).toEqual({ type: 'setGracefulExit', value: 1 });
      expect(podsOf(d.actions, 'evictPods')).toEqual(allNames(fourPodJob()));
    });
    it('graceExit with dump as the first strategy of a registered job goes to the FSM', () => {
      const d = at({ faultScheduling: 'grace', subHealthyStrategy: 'graceExit', processRecoverEnable: 'on', recoverStrategies: ['dump', 'exit'] }, [sub2], fourPodJob(), true);
      expect(d).toMatchObject({ kind: 'process', row: 7 });
      expect(types(d.actions)).toEqual(['handOffProcessRecovery']);
    });
    it('forceExit force-deletes the whole job', () => {
      const d = at({ faultScheduling: 'grace', subHealthyStrategy: 'forceExit' }, [sub2]);
      expect(d).toMatchObject({ kind: 'subHealthAction', row: 7 });
      expect(podsOf(d.actions, 'forceDeletePods')).toEqual(allNames(fourPodJob()));
    });
  });

  describe('row 8: process level', () => {
    const pk: JobKnobsInput = { faultScheduling: 'force', processRecoverEnable: 'on', recoverStrategies: ['recover', 'dump'] };
    it('hands off to the FSM and deletes only the fault pod', () => {
      const d = at(pk, [sep2], fourPodJob(), true);
      expect(d).toMatchObject({ kind: 'process', row: 8 });
      expect(types(d.actions)).toEqual(['handOffProcessRecovery', 'forceDeletePods', 'recordRescheduleReason']);
      expect(podsOf(d.actions, 'forceDeletePods')).toEqual(['llama-worker-2']);
      const h = d.actions[0];
      expect(h?.type === 'handOffProcessRecovery' && h.faultRanks).toEqual([
        { podRank: 2, pod: { name: 'llama-worker-2', uid: 'llama-worker-2-uid', node: 'node-2' }, node: 'node-2', devices: ['Ascend910-2'], codes: ['80E18005'], level: 'SeparateNPU' },
      ]);
    });
    it('NotReady nodes are not handed to the FSM (docs/rules.md#job.node-not-ready) but the pods are still deleted', () => {
      const d = at(pk, [nodeNotReady('node-2')], fourPodJob(), true);
      expect(d.kind).toBe('pod');
      expect(types(d.actions)).toEqual(['forceDeletePods', 'recordRescheduleReason']);
    });
    it('AI platform mode: hand-off only, nothing deleted', () => {
      const d = at({ ...pk, platformMode: true }, [sep2], fourPodJob(), true);
      expect(d).toMatchObject({ kind: 'process', row: 8 });
      expect(types(d.actions)).toEqual(['handOffProcessRecovery']);
    });
    it('pause (row 9) falls through to job level', () => {
      expect(at({ ...pk, processRecoverEnable: 'pause' }, [sep2], fourPodJob(), true)).toMatchObject({ kind: 'job', row: 11 });
    });
  });

  it('row 10: pod-rescheduling deletes only the fault pod', () => {
    const d = at({ faultScheduling: 'grace', podRescheduling: true });
    expect(d).toMatchObject({ kind: 'pod', row: 10 });
    expect(podsOf(d.actions, 'evictPods')).toEqual(['llama-worker-2']);
  });

  it('row 11: grace evicts every pod of the job and records the reason', () => {
    const d = at({ faultScheduling: 'grace' });
    expect(d).toMatchObject({ kind: 'job', row: 11, phase: 'start', requeueAfterMs: 900_000 });
    expect(podsOf(d.actions, 'evictPods')).toEqual(allNames(fourPodJob()));
    expect(d.actions.at(-1)).toEqual({ type: 'recordRescheduleReason', atMs: 1_000,
      tasks: [{ RescheduleReason: 'CardUnhealthy', PodName: 'llama-worker-2', NodeName: 'node-2', NodeRankIndex: '2' }] });
    expect(d.reasons.map((r) => r.stage)).toEqual(['fault', 'level', 'rule', 'action']);
  });

  describe('row 12: failed pods', () => {
    const failed = mapPods(fourPodJob(), (p) => (p.rank === 1 ? { ...p, phase: 'Failed' } : p));
    it('without fault-retry-times a failed pod is left to the operator', () => {
      expect(at({ faultScheduling: 'force' }, [], failed)).toMatchObject({ kind: 'none', row: 1 });
    });
    it('with budget left the job restarts; without it, not', () => {
      expect(at({ faultScheduling: 'force', faultRetryTimes: 2 }, [], failed)).toMatchObject({ kind: 'job', row: 12 });
      const spent = decide({ job: failed, knobs: { faultScheduling: 'force', faultRetryTimes: 2 }, nowMs: 0,
        state: { jobUid: 'job-uid-1', generation: 2, acted: [], retry: { uid: 'job-uid-1', times: 0 } } }).decision;
      expect(spent).toMatchObject({ kind: 'none', row: 12, actions: [] });
    });
  });
});
