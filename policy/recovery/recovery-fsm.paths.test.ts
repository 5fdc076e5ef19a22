/**
 * Further docs/rules.md#recover.fsm paths with explicit time: recover-in-place, dump, elastic training, kill-master paths,
 * and the docs/rules.md#recover.hardware-entry, #recover.software-entry input rules.
 */
import { podsOf, recoveryHarness, resetOps, signalsOf, signalTypes, type RecoveryHarness } from '../../test/support/recovery-fixtures.ts';
import type { ObservedFaultRank } from './recovery-types.ts';

const feed = (h: RecoveryHarness, ranks: ObservedFaultRank[], jobHealth: 'Healthy' | 'SubHealthy' | 'UnHealthy' = 'UnHealthy') =>
  h.feed({ type: 'faultObserved', jobHealth, ranks });
const report = (h: RecoveryHarness, rank = 3) => h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: String(rank), faultType: '1' }] });

describe('recover-in-place (docs/rules.md#recover.in-place)', () => {
  const inPlace = { ranksPerPod: 2, strategies: ['recover-in-place' as const, 'recover' as const, 'exit' as const] };

  it('L2/L3 fault disappears within the check: restart in place, no pod replaced', () => {
    const h = recoveryHarness(inPlace);
    feed(h, [{ rankId: 3, faultType: '1', restartInPlace: true }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    expect(h.state).toMatchObject({ phase: 'NotifyGlobalFaultState', step: 'inPlaceCheck' });
    h.now += 4_000;
    feed(h, []); // the fault cleared
    expect(h.commands('writeResetConfig').at(-1)).toMatchObject({ op: 'fault', rankIds: [3], restartFaultProcess: true });
    expect(h.commands('replaceFaultPods')).toEqual([]);
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    expect(signalsOf(h).at(-1)).toMatchObject({
      changeStrategy: 'recover', extraParams: 'recover-in-place', actions: ['change_strategy', 'fault_nodes_restart'], nodeRankIds: ['1'],
    });
    // PodGroup Running and no exit pods: rescheduled at once; clear after 5 s.
    expect(h.state.step).toBe('inPlaceClear');
    h.advance(5_000);
    expect(resetOps(h).at(-1)).toBe('clear');
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'recover' });
    expect(h.commands('setPodGroupAnnotations').at(-1)).toMatchObject({ annotations: { ProcessRecoverStatus: 'recover-success' } });
    expect(h.state.mustExitAtMs).toEqual({}); // restarted in place: never reported as must exit
  });

  // ClusterD's handleDecideRecoverStrategy takes the schedule result first, sleeps 5 s
  // (WaitAgentGetFaultRank) and clears reset-config before it reads the status report.
  it('recover status reported at once: taken only after the 5 s wait and the clear', () => {
    const h = recoveryHarness(inPlace);
    feed(h, [{ rankId: 3, faultType: '1', restartInPlace: true }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.now += 4_000;
    feed(h, []);
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'recover' });
    expect(h.commands('setPodGroupAnnotations')).toEqual([]);
    expect(resetOps(h).at(-1)).toBe('fault');
    h.advance(5_000);
    expect(resetOps(h).slice(-2)).toEqual(['clear', 'clear']); // the 5 s clear, then the reset after recover-success
    expect(h.commands('setPodGroupAnnotations').at(-1)).toMatchObject({ annotations: { ProcessRecoverStatus: 'recover-success' } });
    expect(h.state.phase).toBe('INIT');
  });

  it('the plan stamps when each pod goes on its exit list: a non-qualifying pod at once, a lingering one after the check', () => {
    const h = recoveryHarness(inPlace);
    // pod 1: L2/L3 (in place); pod 2: a fault that cannot restart in place
    feed(h, [{ rankId: 3, faultType: '1', restartInPlace: true }, { rankId: 5, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    expect(h.state).toMatchObject({ step: 'inPlaceCheck', inPlace: { restartPods: [1], exitPods: [2] } });
    const planned = h.state.mustExitAtMs['2'];
    expect(planned).toBeGreaterThan(0);
    expect(planned).toBeLessThanOrEqual(h.now);
    expect(h.state.mustExitAtMs['1']).toBeUndefined();
    const checkDue = h.state.timers.find((t) => t.id === 'inPlaceCheck')!.dueAtMs;
    h.advance(15_000);
    expect(h.state.inPlace).toEqual({ restartPods: [], exitPods: [1, 2] });
    expect(h.state.mustExitAtMs).toEqual({ 1: checkDue, 2: planned });
    // kept across a reset: the filter compares it with the fault time, so it cannot touch a later fault
    h.feed({ type: 'streamClosed' });
    expect(h.state.phase).toBe('INIT');
    expect(h.state.mustExitAtMs).toEqual({ 1: checkDue, 2: planned });
  });

  it('fault still present after 15 s: that pod exits and is replaced instead', () => {
    const h = recoveryHarness(inPlace);
    feed(h, [{ rankId: 3, faultType: '1', restartInPlace: true }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000 + 15_000);
    expect(h.reasons).toContain('recover-in-place: faults remain on pods 1; they exit instead');
    expect(h.reasons).toContain('recover-in-place: pods 1 must exit');
    expect(h.commands('writeResetConfig').at(-1)).toMatchObject({ rankIds: [2, 3], restartFaultProcess: false });
    expect(h.commands('replaceFaultPods')).toMatchObject([{ podRanks: [1] }]);
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'recover', extraParams: '' });
  });
});

describe('dump', () => {
  it('dump first and job UnHealthy: saveAndExit, dump-success, exit dump_exit, RetryTime+1 after the pods return', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['dump', 'exit'] });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(signalTypes(h)).toEqual(['preExitProcess', 'saveAndExit']);
    expect(resetOps(h)).toEqual(['fault']);
    expect(h.state.phase).toBe('WaitReportDumpStatusState');
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'dump' });
    expect(h.commands('setPodGroupAnnotations')).toMatchObject([{ annotations: { ProcessRecoverStatus: 'dump-success' } }]);
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'exit', extraParams: 'dump_exit', nodeRankIds: ['1'] });
    expect(h.state.phase).toBe('ListenScheduleResultState');
    h.now += 8_000;
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    h.advance(2_000); // the look at 10 s
    expect(resetOps(h).at(-1)).toBe('restartAllProcess');
    h.advance(60_000);
    // restartFinish -> clear -> clearSuccess -> fault retry (rows 38, 39): the job runs, so pause and, at the first look 5 s later, on.
    expect(h.reasons).toContain('FaultClearState -(clearSuccess)-> FaultRetryState [recover.fsm #39]');
    h.advance(5_000);
    expect(h.commands('setPodGroupLabel').map((c) => c.value)).toEqual(['pause', 'on']);
    expect(h.state.phase).toBe('INIT');
  });
  // ClusterD (pkg/application/recover/controller.go): handleNotifyElagantDump and sendDumpExit build
  // their signals without FaultRanks; handleListenScheduleResult takes a job still running after its
  // 4 looks as scheduled; handleFaultRetry looks only at the job running, every 5 s.
  // ClusterD's handleListenScheduleResult sleeps 5 s before each of its 4 looks: a job rescheduled
  // at once still gets RetryTime+1 only at the first look.
  it('fault pod replaced at once after dump_exit: RetryTime+1 at the first look, 5 s later', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['dump', 'exit'] });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'dump' });
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    expect(resetOps(h)).toEqual(['fault']);
    h.advance(4_999);
    expect(resetOps(h)).toEqual(['fault']);
    h.advance(1);
    expect(resetOps(h).at(-1)).toBe('restartAllProcess');
  });

  // ClusterD's nodeRankIds of saveAndExit and dump_exit are the fault ranks' pod ranks
  // (GetNodeRankIdsByRankIds, pkg/domain/common/utils.go), whether or not the pod was replaced meanwhile.
  it('fault pod already replaced when the dump starts: saveAndExit and dump_exit still name it', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['dump', 'exit'] });
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'saveAndExit', nodeRankIds: ['1'] });
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'dump' });
    expect(signalsOf(h).at(-1)).toMatchObject({ extraParams: 'dump_exit', nodeRankIds: ['1'] });
  });

  it('fault pods never replaced, job running: saveAndExit and dump_exit without fault ranks, RetryTime+1 after 20 s, label on after 5 s', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['dump', 'exit'] });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'saveAndExit', nodeRankIds: ['1'], faultRanks: [] });
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'dump' });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'exit', extraParams: 'dump_exit', nodeRankIds: ['1'], faultRanks: [] });
    h.advance(20_000);
    expect(resetOps(h).at(-1)).toBe('restartAllProcess');
    h.advance(60_000);
    expect(h.commands('setPodGroupLabel').map((c) => c.value)).toEqual(['pause']);
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'exit', extraParams: 'dump_exit', faultRanks: [] });
    h.advance(5_000);
    expect(h.commands('setPodGroupLabel').map((c) => c.value)).toEqual(['pause', 'on']);
    expect(signalTypes(h)).not.toContain('killMaster');
    expect(h.state.phase).toBe('INIT');
  });
});

describe('elastic training (docs/rules.md#recover.elastic-training)', () => {
  it('schedule timeout with elastic-training: downgrade, 201 isolate ranks, scale-in, scale-out when pods return', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['recover', 'elastic-training', 'exit'], jobRescheduling: false });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'downgrade'] });
    h.advance(270_000);
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'downgrade', extraParams: '{"scale-in-strategy": "DP"}' });
    h.feed({ type: 'recoverStatusReported', code: 201, strategy: 'downgrade', isolateRankIds: ['2', '3'] });
    // Ranks 2, 3 are pod 1's, already a fault pod: ClusterD names no pod (RemoveDuplicateNodeRanks).
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'faultNodesExit', actions: ['fault_nodes_exit'], nodeRankIds: [] });
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'downgrade' });
    expect(h.state).toMatchObject({ phase: 'ScaleRunningState', scaleInRunning: true });
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'upgrade', extraParams: '{"scale-out-strategy": "DP"}' });
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'upgrade' });
    expect(h.state.phase).toBe('INIT');
  });

  // ClusterD's handleDecidedStrategyAfterChoose filters the pods already replaced out of a
  // changeStrategy's nodeRankIds for `recover` only (filterRecoverPodsNodeRankIds): a downgrade names
  // every fault pod, gone or not.
  it('downgrade names the fault pods even when they are gone (deleted for a replacement that does not come)', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['elastic-training', 'exit'], podRescheduling: true });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.feed({ type: 'podsObserved', pods: podsOf(4).filter((p) => p.podRank !== 1) });
    h.feed({ type: 'recoverStrategyReported', strategies: ['downgrade'] });
    h.advance(20_000);
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'downgrade', nodeRankIds: ['1'] });
  });

  // ClusterD's handleCheckScaleStrategyRecoverResult: a faultNodesExit with no fault ranks, naming the
  // isolated ranks' pods that are not fault pods already (RemoveDuplicateNodeRanks); waitScaleOut's
  // upgrade carries the fault ranks and their pods, as the downgrade did.
  it('faultNodesExit names only isolated pods that are not fault pods, without fault ranks; upgrade carries the fault ranks', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['elastic-training', 'exit'], jobRescheduling: false });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.feed({ type: 'recoverStrategyReported', strategies: ['downgrade'] });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'downgrade' });
    h.feed({ type: 'recoverStatusReported', code: 201, strategy: 'downgrade', isolateRankIds: ['2', '3', '4', '5'] });
    const exit = signalsOf(h).at(-1)!;
    expect(exit).toMatchObject({ signalType: 'faultNodesExit', actions: ['fault_nodes_exit'], nodeRankIds: ['2'] });
    expect(exit.faultRanks).toEqual([]);
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'downgrade' });
    expect(h.state.phase).toBe('ScaleRunningState');
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    expect(signalsOf(h).at(-1)).toMatchObject({
      changeStrategy: 'upgrade', nodeRankIds: ['1'], faultRanks: [{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }],
    });
  });

  // ClusterD's handleDecideRecoverStrategy asks only whether elastic-training is configured and the
  // agent reported downgrade (supportTargetStrategy): unlike the strategy choice
  // (canChooseScaleInStrategy) it does not look at the rank-0 pod.
  it('schedule timeout after recover: scale-in even when the rank-0 pod is faulty', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['recover', 'elastic-training', 'exit'], jobRescheduling: false });
    feed(h, [{ rankId: 1, faultType: '1' }]);
    report(h, 1);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'downgrade'] });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'recover' });
    h.advance(270_000);
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'downgrade', nodeRankIds: ['0'] });
    expect(h.state.phase).toBe('WaitReportScaleInIsolateRanksState');
  });

  // ClusterD's handleCheckScaleStrategyRecoverResult answers a first downgrade status 0 with
  // ScaleInSuccessEvent, which CheckReportScaleInIsolateRanksState has no rule for: addEvent drops
  // it, and the job stays there (stream open, reset-config untouched) until the next reset; no
  // scale-in run, no scale-out (seen in the conformance scenario scale-in-answered-0).
  it('a first downgrade answer of 0 (no ranks to isolate): no rule for it, the job waits for the next reset', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['elastic-training', 'exit'], jobRescheduling: false });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.feed({ type: 'recoverStrategyReported', strategies: ['downgrade'] });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'downgrade' });
    const writes = h.commands('writeResetConfig').length;
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'downgrade' });
    expect(h.state).toMatchObject({ phase: 'CheckReportScaleInIsolateRanksState', scaleInRunning: false });
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    h.advance(60_000);
    expect(h.state.phase).toBe('CheckReportScaleInIsolateRanksState');
    expect(h.commands('closeSignalStream')).toHaveLength(0);
    expect(h.commands('writeResetConfig')).toHaveLength(writes);
    expect(signalTypes(h).slice(-1)).toEqual(['changeStrategy:downgrade']);
    h.feed({ type: 'clientSubscribed' });
    expect(h.state.phase).toBe('INIT');
  });

  it('with rescheduling configured, waits 20 s before choosing scale-in', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['elastic-training', 'exit'], podRescheduling: true });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.feed({ type: 'recoverStrategyReported', strategies: ['downgrade'] });
    expect(h.state.step).toBe('scaleInWait');
    h.advance(20_000);
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'downgrade' });
  });
});

describe('kill master', () => {
  it('globalFault cannot be delivered: killMaster, then reset (stream closed)', () => {
    const h = recoveryHarness({ ranksPerPod: 2 }, { failWhen: (c) => c.type === 'sendSignal' && c.signal.signalType === 'globalFault' });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    expect(signalTypes(h).slice(-2)).toEqual(['globalFault', 'killMaster']);
    expect(h.state.phase).toBe('INIT');
    expect(h.commands('closeSignalStream')).toHaveLength(1);
  });

  it('ReportStopComplete 404 (process not ready): killMaster', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 404 });
    expect(signalTypes(h).at(-1)).toBe('killMaster');
  });

  it('label pause cannot be written: killMaster', () => {
    const h = recoveryHarness({ ranksPerPod: 2 }, { failWhen: (c) => c.type === 'setPodGroupLabel' });
    report(h);
    h.advance(15 * 60_000);
    expect(signalTypes(h).at(-1)).toBe('killMaster');
  });
});

describe('fault entry rules (docs/rules.md#recover.hardware-entry, #recover.software-entry)', () => {
  it('drops NotReady-only ranks and SubHealth ranks of a job that is not SubHealthy', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    const r = feed(h, [{ rankId: 3, faultType: '1', nodeNotReadyOnly: true }, { rankId: 5, faultType: '1', subHealth: true }]);
    expect(r.commands).toEqual([]);
    expect(h.state.faults).toEqual([]);
  });

  it('ignores a SubHealthy job (hotSwitch ones go to the hot-switch FSM)', () => {
    const h = recoveryHarness({ ranksPerPod: 2, subHealthyStrategy: 'hotSwitch' });
    const r = feed(h, [{ rankId: 3, faultType: '1', subHealth: true }], 'SubHealthy');
    expect(r.reasons).toEqual(['sub-healthy hotSwitch job: left to the hot-switch FSM']);
  });

  it('a fault seen again next cycle is not new; preExit only for pods that are still the original ones', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    expect(feed(h, [{ rankId: 3, faultType: '1' }]).reasons).toEqual([]);
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    h.advance(10_000);
    expect(h.commands('sendSignal')).toEqual([]);
    expect(h.reasons).toContain('preExitProcess skipped: the fault pods are no longer the original pods');
  });

  it('retry-only ReportProcessFault: label retry-fault and feed back to the fault center', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '0' }, { rankId: 'x', faultType: '1' }] });
    expect(h.commands('labelPods')).toMatchObject([{ podRanks: [1], value: 'retry-fault' }]);
    expect(h.commands('forwardRetryFaults')).toMatchObject([{ faults: [{ rankId: 3, faultType: '0' }] }]);
    expect(h.state.phase).toBe('INIT');
  });

  it('(re)subscribing resets a recovery in flight without closing the new stream', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    report(h);
    h.clearLog();
    h.feed({ type: 'clientSubscribed' });
    expect(h.state).toMatchObject({ phase: 'INIT', faults: [], timers: [] });
    expect(resetOps(h)).toEqual(['clear']);
    expect(h.commands('closeSignalStream')).toEqual([]);
  });
});

describe('status report naming exit (handleCheckRecoverResult)', () => {
  it('a dump wait answered with strategy exit: exit-completed, then the schedule look', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['dump', 'exit'] });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(h.state.phase).toBe('WaitReportDumpStatusState');
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'exit' });
    expect(h.commands('setPodGroupAnnotations').at(-1)).toMatchObject({ annotations: { ProcessRecoverStatus: 'exit-completed' } });
    expect(h.state.phase).toBe('ListenScheduleResultState');
  });
});
