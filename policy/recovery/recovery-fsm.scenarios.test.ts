/**
 * End-to-end scenarios of the process-level recovery FSM (docs/rules.md#recover.fsm, docs/grpc.md#taskd-sequence) with explicit
 * time: a harness steps the pure transition function and acknowledges awaited commands.
 */
import { podsOf, recoveryHarness, resetOps, signalsOf, signalTypes, type RecoveryHarness } from '../../test/support/recovery-fixtures.ts';
import { keepAliveSignal } from './recovery-fsm.ts';
import type { RecoveryState } from './recovery-types.ts';

const fault = (rankId: number, faultType: '0' | '1' | '2' = '1', jobHealth: RecoveryState['jobHealth'] = 'UnHealthy') =>
  ({ type: 'faultObserved', jobHealth, ranks: [{ rankId, faultType }] }) as const;

/** Fault on rank 3 (pod 1 with 2 ranks per pod), agent reports it, stop completes, global fault sent. */
function toGlobalFault(h: RecoveryHarness, faultType: '0' | '1' = '1'): void {
  h.feed(fault(3, faultType));
  if (faultType === '1') {
    h.advance(10_000); // preExitProcess after 10 s in INIT
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] });
  }
  h.feed({ type: 'stopCompleteReported', code: 0 });
  h.advance(1_000 + 10_000); // flush 1 s (normal faults), SuperPod force release 10 s
}

describe('recover: hardware fault on rank 3', () => {
  it('every preExitProcess carries its own fresh uuid and leaves the recovery uuid alone (TaskD acts only on a new one)', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed(fault(3));
    h.advance(10_000);
    expect(h.state.uuid).toBe(''); // keep-alives in INIT carry "" as ClusterD's do
    h.feed(fault(5));
    h.advance(10_000);
    const [a, b] = signalsOf(h);
    expect([a?.signalType, b?.signalType]).toEqual(['preExitProcess', 'preExitProcess']);
    expect(a!.uuid).not.toBe('');
    expect(b!.uuid).not.toBe('');
    expect(a!.uuid).not.toBe(b!.uuid);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] });
    h.feed({ type: 'stopCompleteReported', code: 0 });
    const stop = signalsOf(h).find((s) => s.signalType === 'stopTrain');
    expect([a!.uuid, b!.uuid]).not.toContain(stop!.uuid);
  });

  it('stopTrain -> globalFault -> changeStrategy recover -> pod replaced -> recover-success', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toGlobalFault(h);
    expect(h.state.phase).toBe('WaitReportRecoverStrategyState');
    expect(signalTypes(h)).toEqual(['preExitProcess', 'stopTrain', 'globalFault']);
    const [preExit, stop, global] = signalsOf(h);
    expect(preExit).toMatchObject({ actions: ['pre exit process'], nodeRankIds: ['1'], faultRanks: [{ rankId: '3', faultType: '1' }] });
    expect(stop).toMatchObject({ actions: ['stop_train'], faultRanks: [{ rankId: '3', faultType: '1' }] });
    expect(global).toMatchObject({
      uuid: stop!.uuid,
      actions: ['on_global_rank', 'fault_nodes_exit'],
      faultRanks: [{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }],
      nodeRankIds: ['1'],
    });
    expect(resetOps(h)).toEqual(['notifyFaultFlushing', 'fault']);
    expect(h.commands('writeResetConfig')[1]).toMatchObject({ rankIds: [2, 3], restartFaultProcess: false });
    // Pod 1 is in the fault set by its device fault already: ClusterD's labelPodFault skips it (labeledMap).
    expect(h.commands('labelPods')).toEqual([]);
    expect(h.commands('replaceFaultPods')).toMatchObject([{ podRanks: [1] }]);

    h.clearLog();
    h.feed({ type: 'recoverStrategyReported', strategies: ['retry', 'recover'] });
    expect(signalsOf(h)).toMatchObject([{ signalType: 'changeStrategy', changeStrategy: 'recover', actions: ['change_strategy'], nodeRankIds: ['1'] }]);
    expect(h.state.phase).toBe('WaitReportProcessRecoverStatusState');

    h.now += 40_000;
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    // Only the poller's looks count (ClusterD: at its start, then every 5 s): the fault list stays up until the next one.
    expect(resetOps(h)).toEqual([]);
    h.advance(5_000);
    expect(resetOps(h)).toEqual(['clear']);
    expect(h.state.step).toBe('cleared');

    h.clearLog();
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'recover' });
    expect(h.state.phase).toBe('INIT');
    expect(h.commands('setPodGroupAnnotations')).toMatchObject([{ annotations: { ProcessRecoverStatus: 'recover-success' } }]);
    expect(h.commands('clearFaultJobInfo')).toHaveLength(1);
    expect(resetOps(h)).toEqual(['clear']);
    expect(h.commands('closeSignalStream')).toHaveLength(1);
    expect(h.state.originalPodUids['1']).toBe('uid-1-g1');
    expect(h.state.timers).toEqual([]);
  });

  it('an early ReportRecoverStrategy is buffered and consumed by the wait (docs/grpc.md#server-behaviour)', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed(fault(3));
    h.advance(10_000);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] });
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    h.advance(11_000);
    expect(h.state.phase).toBe('WaitReportProcessRecoverStatusState');
  });
});

describe('UCE step retry (80E01801, retry configured)', () => {
  function toRetry(h: RecoveryHarness): void {
    h.feed(fault(3, '0'));
    expect(h.commands('setStepRetryHold')).toMatchObject([{ rankIds: [3], hold: true }]);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'globalFault', actions: ['on_global_rank'], faultRanks: [{ rankId: '3', faultType: '0' }], timeout: 0 });
    expect(h.commands('replaceFaultPods')).toEqual([]);
    h.feed({ type: 'recoverStrategyReported', strategies: ['retry', 'recover', 'dump'] });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'retry', faultRanks: [{ rankId: '3', faultType: '0' }] });
    expect(h.state.phase).toBe('WaitReportStepRetryStatusState');
  }

  it('retry-success: no flush wait, hidden from rescheduling until done', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toRetry(h);
    expect(signalTypes(h)).toEqual(['stopTrain', 'globalFault', 'changeStrategy:retry']);
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'retry' });
    expect(h.commands('setPodGroupAnnotations')).toMatchObject([{ annotations: { ProcessRecoverStatus: 'retry-success' } }]);
    expect(h.commands('setStepRetryHold').at(-1)).toMatchObject({ rankIds: [3], hold: false, completed: true });
    expect(h.state.phase).toBe('INIT');
    // ClusterD's reset clears the uuid: keep-alives carry "" again until the next stopTrain.
    expect(keepAliveSignal(h.state).uuid).toBe('');
  });

  it('a rank listed after the retry\'s reset joins the next recovery\'s fault ranks (ClusterD saveCacheFault on every tick)', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toRetry(h);
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'retry' });
    h.feed({ type: 'clientSubscribed' }); // TaskD re-subscribes: another reset
    expect(h.state.phase).toBe('INIT');
    h.feed(fault(3, '0', 'Healthy')); // the business-plane report is still under 10 s old: rank 3 still listed
    h.feed({ type: 'faultObserved', jobHealth: 'Healthy', ranks: [] }); // then it is not
    h.clearLog();
    h.feed(fault(0)); // a chip fault on rank 0 (pod 0)
    h.advance(10_000);
    expect(signalsOf(h)).toMatchObject([{ signalType: 'preExitProcess', faultRanks: [{ rankId: '0', faultType: '1' }], nodeRankIds: ['0'] }]);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '0', faultType: '1' }] });
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'stopTrain', faultRanks: [{ rankId: '0', faultType: '1' }, { rankId: '3', faultType: '0' }] });
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(1_000 + 10_000);
    // Retry faults next to a normal fault become normal; both pods' ranks, both pods told to exit.
    expect(signalsOf(h).at(-1)).toMatchObject({
      signalType: 'globalFault', faultRanks: [0, 1, 2, 3].map((r) => ({ rankId: String(r), faultType: '1' })), nodeRankIds: ['0', '1'],
    });
  });

  it('a rank no feed lists after the reset is forgotten: the next recovery is the new fault\'s alone', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toRetry(h);
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'retry' });
    h.feed({ type: 'clientSubscribed' });
    h.feed({ type: 'faultObserved', jobHealth: 'Healthy', ranks: [] });
    h.clearLog();
    h.feed(fault(0));
    h.advance(10_000);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '0', faultType: '1' }] });
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'stopTrain', faultRanks: [{ rankId: '0', faultType: '1' }] });
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(1_000 + 10_000);
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'globalFault', faultRanks: [{ rankId: '0', faultType: '1' }, { rankId: '1', faultType: '1' }], nodeRankIds: ['0'] });
  });

  it('406 (UnRecoverableRetryError) falls through to recover', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toRetry(h);
    h.clearLog();
    h.feed({ type: 'recoverStatusReported', code: 406, strategy: 'retry' });
    expect(h.commands('setPodGroupAnnotations')).toMatchObject([{ annotations: { ProcessRecoverStatus: 'retry-failed' } }]);
    expect(h.commands('setStepRetryHold')).toMatchObject([{ hold: false, completed: false }]);
    expect(h.commands('writeResetConfig')).toMatchObject([{ op: 'fault', rankIds: [2, 3] }]);
    expect(h.commands('replaceFaultPods')).toMatchObject([{ podRanks: [1] }]);
    expect(signalsOf(h)).toMatchObject([{ changeStrategy: 'recover', faultRanks: [{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }] }]);
    expect(h.state.phase).toBe('WaitReportProcessRecoverStatusState');
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    h.feed({ type: 'recoverStatusReported', code: 0, strategy: 'recover' });
    expect(h.commands('setPodGroupAnnotations').at(-1)).toMatchObject({ annotations: { ProcessRecoverStatus: 'recover-success' } });
    expect(h.state.phase).toBe('INIT');
  });

  it('405 (RecoverableRetryError) goes back to the global fault with normal faults', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toRetry(h);
    h.clearLog();
    h.feed({ type: 'recoverStatusReported', code: 405, strategy: 'retry' });
    expect(h.state.phase).toBe('WaitFaultFlushFinishedState');
    h.advance(11_000);
    expect(signalsOf(h)).toMatchObject([{ signalType: 'globalFault', actions: ['on_global_rank', 'fault_nodes_exit'], nodeRankIds: ['1'] }]);
    expect(h.state.phase).toBe('WaitReportRecoverStrategyState');
  });

  it('other failure codes drop recover from the agent list (499 also dump): exit', () => {
    const h = recoveryHarness({ ranksPerPod: 2, strategies: ['retry', 'recover', 'dump', 'exit'] });
    toRetry(h);
    h.clearLog();
    h.feed({ type: 'recoverStatusReported', code: 499, strategy: 'retry' });
    expect(signalsOf(h)).toMatchObject([{ changeStrategy: 'exit' }]);
    expect(h.state.phase).toBe('ListenScheduleResultState');
  });

  it('retry status never reported: after 15 min the hold is released and fault retry escalates', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    toRetry(h);
    h.clearLog();
    h.advance(15 * 60_000);
    expect(h.commands('setStepRetryHold')).toMatchObject([{ rankIds: [3], hold: false }]);
    expect(h.commands('setPodGroupLabel')).toMatchObject([{ value: 'pause' }]);
    expect(h.commands('escalateRescheduling')).toMatchObject([{ level: 'job', podRanks: [1] }]);
  });

  it('HCCL retry fault: 33 s timeout in globalFault and a 3 s convergence wait before retry', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed(fault(5, '2'));
    h.feed({ type: 'stopCompleteReported', code: 0 });
    expect(signalsOf(h).at(-1)).toMatchObject({ signalType: 'globalFault', timeout: 33 });
    h.feed({ type: 'recoverStrategyReported', strategies: ['retry'] });
    expect(signalTypes(h).at(-1)).toBe('globalFault');
    h.advance(2_999);
    expect(signalTypes(h).at(-1)).toBe('globalFault');
    h.advance(1);
    expect(signalTypes(h).at(-1)).toBe('changeStrategy:retry');
  });

  it('retry path but the agent does not report retry: faults become normal, dump/exit', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed(fault(3, '0'));
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    expect(signalsOf(h).at(-1)).toMatchObject({ changeStrategy: 'exit', faultRanks: [{ rankId: '2' }, { rankId: '3' }] });
    expect(h.commands('setStepRetryHold').at(-1)).toMatchObject({ hold: false });
  });
});

describe('agent never answers', () => {
  it('15 min without ReportStopComplete: clear, label pause, exit+dump_exit, job-level rescheduling, label on', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed(fault(3));
    h.advance(10_000);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] });
    h.clearLog();
    h.advance(15 * 60_000 - 1);
    expect(h.state.phase).toBe('WaitReportStopCompleteState');
    h.advance(1);
    expect(resetOps(h)).toEqual(['clear']);
    expect(h.commands('setPodGroupLabel')).toMatchObject([{ key: 'process-recover-enable', value: 'pause' }]);
    expect(signalsOf(h)).toMatchObject([{ changeStrategy: 'exit', extraParams: 'dump_exit', nodeRankIds: ['1'] }]);
    expect(h.commands('escalateRescheduling')).toMatchObject([{ level: 'job', podRanks: [1] }]);
    expect(h.state).toMatchObject({ phase: 'FaultRetryState', step: 'retryFirstLook' });
    h.feed({ type: 'podGroupObserved', exists: true, phase: 'Pending' }); // Volcano restarts the job

    h.advance(60_000);
    expect(h.state).toMatchObject({ phase: 'FaultRetryState', step: 'waitRunning' });
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1) });
    h.feed({ type: 'podGroupObserved', exists: true, phase: 'Running' });
    expect(h.commands('setPodGroupLabel').at(-1)).toMatchObject({ value: 'on' });
    expect(h.state.phase).toBe('INIT');
  });

  it('pod-level rescheduling when configured and rank 0 is healthy', () => {
    const h = recoveryHarness({ ranksPerPod: 2, podRescheduling: true });
    h.feed(fault(3));
    h.advance(10_000);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] });
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    h.advance(15 * 60_000); // no ReportRecoverStrategy
    expect(h.commands('escalateRescheduling')).toMatchObject([{ level: 'pod' }]);
  });

  it('not Running again within 135 s after pause: killMaster', () => {
    const h = recoveryHarness({ ranksPerPod: 2 });
    h.feed(fault(3));
    h.advance(10_000);
    h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] });
    h.advance(15 * 60_000);
    h.feed({ type: 'podGroupObserved', exists: true, phase: 'Pending' });
    h.clearLog();
    h.advance(135_000);
    expect(signalTypes(h)).toEqual(['killMaster']);
    expect(h.state.phase).toBe('INIT');
    expect(h.commands('closeSignalStream')).toHaveLength(1);
  });
});

describe('clear failure while waiting for the recover status (docs/rules.md#recover.fsm-clear-fail)', () => {
  it('runs the fault-retry handler (ClusterD parks the FSM there until the next stream reset)', () => {
    const h = recoveryHarness({ ranksPerPod: 2 }, { failWhen: (c, s) => c.type === 'writeResetConfig' && s.phase === 'WaitReportProcessRecoverStatusState' });
    toGlobalFault(h);
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    h.clearLog();
    h.feed({ type: 'podsObserved', pods: podsOf(4, 1, [1]) });
    h.advance(5_000); // the poller's next look: rescheduled -> clear -> fails
    expect(h.reasons).toContain('WaitReportProcessRecoverStatusState -(clearFail)-> FaultRetryState [recover.fsm #28]');
    h.advance(5_000); // fault retry's first look: the job runs
    expect(h.commands('setPodGroupLabel')).toMatchObject([{ value: 'pause' }, { value: 'on' }]);
    expect(signalsOf(h)).toMatchObject([{ changeStrategy: 'exit', extraParams: 'dump_exit' }]);
    expect(h.state.phase).toBe('INIT');
  });
});
