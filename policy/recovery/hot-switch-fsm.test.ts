/**
 * Hot-switch FSM (docs/rules.md#hotswitch.fsm, #hotswitch.entry, #hotswitch.failure): transition table and scenarios with
 * explicit time.
 */
import {
  HOT_SWITCH_RULES,
  hotSwitchStep,
  hotSwitchTrigger,
  initialHotSwitchState,
  type HotSwitchCommand,
  type HotSwitchConfig,
  type HotSwitchEvent,
  type HotSwitchFsmEvent,
  type HotSwitchPhase,
  type HotSwitchPod,
  type HotSwitchState,
} from './hot-switch-fsm.ts';
import { Harness } from '../../test/support/recovery-fixtures.ts';
import type { StepResult } from './recovery-kit.ts';

const NOW = 1_700_000_000_000;
const OLD = 'job-worker-1';
const NEW = 'job-worker-1-hot-4821';

const pod = (name: string, podRank: number, annotations: Record<string, string> = {}, phase = 'Running'): HotSwitchPod => ({
  name, uid: `uid-${name}`, podRank, phase, annotations,
});
const basePods = (): HotSwitchPod[] => [pod('job-worker-0', 0), pod(OLD, 1), pod('job-worker-2', 2)];
const backup = (phase: string): HotSwitchPod => pod(NEW, 1, { podType: 'backup', backupSourcePodName: OLD, inHotSwitchFlow: 'true' }, phase);
const faulty = (podName = OLD, podRank = 1) => ({ podName, podRank, rankIds: [podRank * 8, podRank * 8 + 1] });

function harness(config: Partial<HotSwitchConfig> = {}, failWhen?: (c: HotSwitchCommand) => boolean) {
  const h = new Harness<HotSwitchState, HotSwitchEvent, HotSwitchCommand>(initialHotSwitchState({ jobId: 'job-uid-1', ...config }), hotSwitchStep, failWhen ? { failWhen } : {});
  h.feed({ type: 'podsObserved', pods: basePods() });
  return h;
}
type H = ReturnType<typeof harness>;
const actions = (h: H): string[] => h.commands('sendSignal').map((c) => c.signal.changeStrategy || c.signal.actions.join('+'));

/** Up to WaitReportPauseResultState: backup Running after 20 s. */
function toPause(h: H): void {
  h.feed({ type: 'subHealthFault', faultyPods: [faulty()], recoveryIdle: true });
  h.now += 20_000;
  h.feed({ type: 'podsObserved', pods: [...basePods(), backup('Running')] });
}

describe('hot switch: happy path', () => {
  it('backup pod, pause, delete only the old pod, migrate, clean up', () => {
    const h = harness();
    h.feed({ type: 'subHealthFault', faultyPods: [faulty()], recoveryIdle: true });
    // As ClusterD's (scenario hot-switch): empty uuid, the pod's ranks on the first signal only, no node ranks.
    expect(h.commands('sendSignal')[0]!.signal).toMatchObject({
      uuid: '', signalType: 'hot-switch', actions: ['hot switch'], nodeRankIds: [], faultRanks: [{ rankId: '8', faultType: '1' }, { rankId: '9', faultType: '1' }],
    });
    expect(h.commands('annotatePod')).toEqual([expect.objectContaining({ podName: OLD, set: { inHotSwitchFlow: 'true', needOperatorOpe: 'create' } })]);
    expect(h.state.phase).toBe('WaitNewPodState');

    h.now += 10_000;
    h.feed({ type: 'podsObserved', pods: [...basePods(), backup('Pending')] });
    expect(h.state.phase).toBe('WaitNewPodState');
    h.now += 10_000;
    h.feed({ type: 'podsObserved', pods: [...basePods(), backup('Running')] });
    expect(actions(h)).toEqual(['hot switch', 'new pod running']);
    expect(h.commands('sendSignal')[1]!.signal).toMatchObject({ uuid: '', faultRanks: [], nodeRankIds: [] });
    expect(h.state.phase).toBe('WaitReportPauseResultState');

    h.feed({ type: 'recoverStrategyReported', strategies: ['migration'] });
    expect(h.commands('labelPod')).toEqual([expect.objectContaining({ podName: OLD, value: 'SubHealth' })]);
    expect(h.commands('annotatePod').at(-1)).toMatchObject({ podName: OLD, set: { needVolcanoOpe: 'delete' } });
    expect(h.commands('deletePod')).toEqual([]);
    expect(h.state.phase).toBe('WaitOldPodDeletedState');

    h.feed({ type: 'podsObserved', pods: [basePods()[0]!, basePods()[2]!, backup('Running')] });
    expect(actions(h).at(-1)).toBe('migration');
    expect(h.state.phase).toBe('WaitReportRestartTrainResultState');

    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'migration' });
    expect(h.commands('annotatePod').at(-1)).toMatchObject({ podName: NEW, remove: ['inHotSwitchFlow'] });
    expect(h.commands('persistDowngrade')).toEqual([]);
    expect(h.state).toMatchObject({ phase: 'INIT', downgraded: false, faultPod: null });
  });

  it('deletes the old pod directly when we hold the rescheduling role', () => {
    const h = harness({ holdsReschedulingRole: true });
    toPause(h);
    h.feed({ type: 'recoverStrategyReported', strategies: ['retry'] });
    expect(h.commands('deletePod')).toEqual([expect.objectContaining({ podName: OLD, uid: `uid-${OLD}` })]);
    expect(h.commands('annotatePod').some((c) => c.set['needVolcanoOpe'] !== undefined)).toBe(false);
  });
});

describe('hot switch: failures downgrade the job to ignore, persisted', () => {
  it('backup pod never Running within 1 min: stop switch, roll back, persistDowngrade', () => {
    const h = harness();
    h.feed({ type: 'subHealthFault', faultyPods: [faulty()], recoveryIdle: true });
    h.feed({ type: 'podsObserved', pods: [pod('job-worker-0', 0), pod(OLD, 1, { inHotSwitchFlow: 'true', backupNewPodName: NEW }), pod('job-worker-2', 2), backup('Pending')] });
    h.advance(59_999);
    expect(h.state.phase).toBe('WaitNewPodState');
    h.advance(1);
    expect(actions(h).at(-1)).toBe('stop switch');
    expect(h.commands('persistDowngrade')).toEqual([expect.objectContaining({ subHealthyStrategy: 'ignore' })]);
    expect(h.commands('annotatePod').slice(-2)).toEqual([
      expect.objectContaining({ podName: OLD, remove: ['inHotSwitchFlow', 'backupNewPodName', 'needOperatorOpe'] }),
      expect.objectContaining({ podName: NEW, set: { needOperatorOpe: 'delete' } }),
    ]);
    expect(h.state).toMatchObject({ phase: 'INIT', downgraded: true });
    const again = h.feed({ type: 'subHealthFault', faultyPods: [faulty()], recoveryIdle: true });
    expect(again.accepted).toBe(false);
    expect(again.commands).toEqual([]);
  });

  it('pause answered with ["exit"]: rank-0 pod needVolcanoOpe=delete (job-level), downgrade', () => {
    const h = harness();
    toPause(h);
    h.feed({ type: 'recoverStrategyReported', strategies: ['exit'] });
    expect(h.commands('labelPod')).toEqual([expect.objectContaining({ podName: 'job-worker-0', value: 'SubHealth' })]);
    expect(h.commands('annotatePod')).toContainEqual(expect.objectContaining({ podName: 'job-worker-0', set: { needVolcanoOpe: 'delete' } }));
    expect(h.commands('persistDowngrade')).toHaveLength(1);
    expect(h.state.phase).toBe('INIT');
  });

  it('restart answered 406 after the old pod is gone: job-level rescheduling when we hold the role, on the marks ClusterD writes', () => {
    const h = harness({ holdsReschedulingRole: true });
    toPause(h);
    h.feed({ type: 'recoverStrategyReported', strategies: ['migration'] });
    h.feed({ type: 'podsObserved', pods: [basePods()[0]!, backup('Running')] });
    h.feed({ type: 'recoverStatusReported', code: 406, strategy: 'migration' });
    // docs/rules.md#hotswitch.stop-job: the job decisions restart the job from the rank-0 pod's marks.
    expect(h.commands('labelPod')).toContainEqual(expect.objectContaining({ podName: 'job-worker-0', value: 'SubHealth' }));
    expect(h.commands('annotatePod')).toContainEqual(expect.objectContaining({ podName: 'job-worker-0', set: { needVolcanoOpe: 'delete' } }));
    expect(h.commands('escalateRescheduling')).toEqual([expect.objectContaining({ level: 'job' })]);
    expect(h.commands('persistDowngrade')).toHaveLength(1);
  });

  it('a stream reset mid-flow rolls back without downgrading', () => {
    const h = harness();
    toPause(h);
    h.feed({ type: 'streamClosed' });
    expect(h.commands('annotatePod').at(-1)).toMatchObject({ podName: NEW, set: { needOperatorOpe: 'delete' } });
    expect(h.state).toMatchObject({ phase: 'INIT', downgraded: false });
  });

  it('the client subscribing again after a restore (docs/rules.md#recover.resume) goes on; any other subscription rolls back', () => {
    const h = harness();
    toPause(h);
    const before = h.state;
    h.feed({ type: 'clientSubscribed', resumed: true });
    expect(h.state).toEqual(before);
    expect(h.commands('annotatePod').some((c) => c.set.needOperatorOpe === 'delete')).toBe(false);
    h.feed({ type: 'clientSubscribed' });
    expect(h.state).toMatchObject({ phase: 'INIT', downgraded: false });
  });
});

describe('hot switch: restrictions (docs/rules.md#hotswitch.entry)', () => {
  it('refuses the rank-0 pod', () => {
    const h = harness();
    const r = h.feed({ type: 'subHealthFault', faultyPods: [faulty('job-worker-0', 0)], recoveryIdle: true });
    expect(r.commands).toEqual([]);
    expect(r.reasons).toContain('sub-health fault on the rank-0 pod: hot switch refused');
    expect(h.state.phase).toBe('INIT');
  });

  it('skips the rank-0 pod and takes the first other faulty pod', () => {
    const h = harness();
    h.feed({ type: 'subHealthFault', faultyPods: [faulty('job-worker-2', 2), faulty('job-worker-0', 0), faulty()], recoveryIdle: true });
    expect(h.state.faultPod).toMatchObject({ podName: OLD });
  });

  it('more than 10 faulty pods: no hot switch, downgraded to ignore', () => {
    const h = harness();
    const pods = Array.from({ length: 11 }, (_, i) => faulty(`job-worker-${i + 1}`, i + 1));
    const r = h.feed({ type: 'subHealthFault', faultyPods: pods, recoveryIdle: true });
    expect(r.commands).toEqual([expect.objectContaining({ type: 'persistDowngrade', reason: '11 faulty pods (more than 10)' })]);
    expect(h.state).toMatchObject({ phase: 'INIT', downgraded: true });
  });

  it('exactly 10 faulty pods still hot switch', () => {
    const h = harness();
    h.feed({ type: 'subHealthFault', faultyPods: Array.from({ length: 10 }, (_, i) => faulty(`job-worker-${i + 1}`, i + 1)), recoveryIdle: true });
    expect(h.state.phase).toBe('WaitNewPodState');
  });

  it('only PyTorch / MindSpore; only while the recovery FSM is idle', () => {
    const tf = harness({ framework: 'tensorflow' });
    tf.feed({ type: 'subHealthFault', faultyPods: [faulty()], recoveryIdle: true });
    expect(tf.state.downgraded).toBe(true);
    const busy = harness();
    expect(busy.feed({ type: 'subHealthFault', faultyPods: [faulty()], recoveryIdle: false }).accepted).toBe(false);
  });
});

type Row = [from: HotSwitchPhase, event: HotSwitchFsmEvent, to: HotSwitchPhase, check: (r: StepResult<HotSwitchState, HotSwitchCommand>) => void];
const sig = (r: StepResult<HotSwitchState, HotSwitchCommand>) =>
  r.commands.flatMap((c) => (c.type === 'sendSignal' ? [c.signal.changeStrategy || c.signal.actions[0]] : []));
const types = (r: StepResult<HotSwitchState, HotSwitchCommand>) => r.commands.filter((c) => c.type !== 'startTimer' && c.type !== 'cancelTimer').map((c) => c.type);
const timer = (r: StepResult<HotSwitchState, HotSwitchCommand>) => r.commands.flatMap((c) => (c.type === 'startTimer' ? [[c.timer.id, c.timer.dueAtMs - NOW]] : []));

const ROWS: Row[] = [
  ['INIT', 'BeginHotSwitchEvent', 'notifyPrepareHotSwitchState', (r) => expect(sig(r)).toEqual(['hot switch'])],
  ['notifyPrepareHotSwitchState', 'notifySuccess', 'WaitNewPodState', (r) => expect(timer(r)).toEqual([['newPod', 60_000]])],
  ['notifyPrepareHotSwitchState', 'notifyFail', 'INIT', (r) => expect(types(r)).toContain('persistDowngrade')],
  ['WaitNewPodState', 'NewPodRunningEvent', 'WaitNotifyPodRunningResultState', (r) => expect(sig(r)).toEqual(['new pod running'])],
  ['WaitNewPodState', 'NewPodTimeoutEvent', 'WaitNotifyPodFailedResultState', (r) => expect(sig(r)).toEqual(['stop switch'])],
  ['WaitNotifyPodFailedResultState', 'notifySuccess', 'INIT', (r) => expect(types(r)).toContain('persistDowngrade')],
  ['WaitNotifyPodFailedResultState', 'notifyFail', 'INIT', (r) => expect(types(r)).toContain('persistDowngrade')],
  ['WaitNotifyPodRunningResultState', 'notifySuccess', 'WaitReportPauseResultState', (r) => expect(timer(r)).toEqual([['report', 900_000]])],
  ['WaitNotifyPodRunningResultState', 'notifyFail', 'WaitReportPauseResultState', (r) => expect(timer(r)).toEqual([['report', 900_000]])],
  ['WaitReportPauseResultState', 'receiveTimeout', 'NotifyStopJobState', (r) => expect(types(r)).toEqual(['labelPod', 'annotatePod'])],
  ['WaitReportPauseResultState', 'ExitEvent', 'NotifyStopJobState', (r) => expect(types(r)).toEqual(['labelPod', 'annotatePod'])],
  ['WaitReportPauseResultState', 'MigrationEvent', 'WaitOldPodDeletedState', (r) => expect(timer(r)).toEqual([['oldPodDeleted', 900_000]])],
  ['NotifyStopJobState', 'notifySuccess', 'INIT', (r) => expect(types(r)).toContain('persistDowngrade')],
  ['NotifyStopJobState', 'notifyFail', 'INIT', (r) => expect(types(r)).toContain('persistDowngrade')],
  ['WaitOldPodDeletedState', 'OldPodDeletedEvent', 'WaitNotifyRestartTrainResultState', (r) => expect(sig(r)).toEqual(['migration'])],
  ['WaitOldPodDeletedState', 'receiveTimeout', 'NotifyStopJobState', (r) => expect(types(r)).toContain('annotatePod')],
  ['WaitNotifyRestartTrainResultState', 'notifySuccess', 'WaitReportRestartTrainResultState', (r) => expect(timer(r)).toEqual([['report', 900_000]])],
  ['WaitNotifyRestartTrainResultState', 'notifyFail', 'NotifyStopJobState', (r) => expect(types(r)).toContain('annotatePod')],
  // ClusterD's reset(false): reset-config cleared, the client's stream ended.
  ['WaitReportRestartTrainResultState', 'RestartSuccessEvent', 'INIT', (r) => expect(types(r)).toEqual(['annotatePod', 'writeResetConfig', 'closeSignalStream'])],
  ['WaitReportRestartTrainResultState', 'RestartFaildEvent', 'NotifyStopJobState', (r) => expect(types(r)).toContain('annotatePod')],
  ['WaitReportRestartTrainResultState', 'receiveTimeout', 'NotifyStopJobState', (r) => expect(types(r)).toContain('annotatePod')],
];

describe('docs/rules.md#hotswitch.fsm transition table', () => {
  const state = (phase: HotSwitchPhase): HotSwitchState => ({
    ...initialHotSwitchState({ jobId: 'job-uid-1' }),
    phase,
    pods: [...basePods(), backup('Running')],
    faultPod: { ...faulty(), uid: `uid-${OLD}` },
  });

  it.each(ROWS)('%s -(%s)-> %s', (...args) => {
    const [from, event, to, check] = args as Row;
    const r = hotSwitchTrigger(state(from), event, NOW);
    expect(r.reasons[0]).toBe(`${from} -(${event})-> ${to} [B2]`);
    check(r);
  });

  it('covers every rule', () => {
    const all = Object.entries(HOT_SWITCH_RULES).flatMap(([from, evs]) => Object.keys(evs ?? {}).map((e) => `${from}/${e}`));
    const tested = new Set(ROWS.map(([from, event]) => `${from}/${event}`));
    expect(all.filter((k) => !tested.has(k))).toEqual([]);
  });
});
