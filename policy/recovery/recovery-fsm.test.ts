/**
 * docs/rules.md#recover.fsm transition table (docs/rules.md#recover.fsm): one case per rule, from a crafted source state, at an
 * explicit nowMs. Checks the edge taken and what the handler does first.
 */
import { jobConfig, podsOf } from '../../test/support/recovery-fixtures.ts';
import { initialRecoveryState, step, trigger } from './recovery-fsm.ts';
import { recoveryEdges } from './recovery-rules.ts';
import type { OmState, RecoveryCommand, RecoveryFsmEvent, RecoveryPhase, RecoveryState } from './recovery-types.ts';
import type { StepResult } from './recovery-kit.ts';

const NOW = 1_700_000_000_000;
type R = StepResult<RecoveryState, RecoveryCommand>;

function base(over: Partial<RecoveryState> = {}): RecoveryState {
  const s = initialRecoveryState({ config: jobConfig({ ranksPerPod: 2, strategies: ['retry', 'recover', 'elastic-training', 'dump', 'exit'] }), pods: podsOf(4) });
  return { ...s, faults: [{ rankId: 3, faultType: '1', software: false, restartInPlace: false }], agentStrategies: ['retry', 'recover', 'downgrade', 'dump'], jobHealth: 'UnHealthy', ...over };
}

const types = (r: R): string[] => r.commands.filter((c) => c.type !== 'startTimer' && c.type !== 'cancelTimer').map((c) => c.type);
const signals = (r: R): string[] =>
  r.commands.flatMap((c) => (c.type === 'sendSignal' ? [c.signal.changeStrategy ? `${c.signal.signalType}:${c.signal.changeStrategy}` : c.signal.signalType] : []));
const ops = (r: R): string[] => r.commands.flatMap((c) => (c.type === 'writeResetConfig' ? [c.op] : []));
const timers = (r: R): Record<string, number> =>
  Object.fromEntries(r.commands.flatMap((c) => (c.type === 'startTimer' ? [[c.timer.id, c.timer.dueAtMs - NOW]] : [])));
const status = (strategy: string, code = 0) => ({ lastStatus: { strategy, code, isolateRankIds: [] } });
const om = (kind: 'stressTest' | 'switchNic', over: Partial<OmState> = {}): Partial<RecoveryState> => ({
  faults: [],
  om: {
    kind, stress: kind === 'stressTest' ? { 'node-b': { '2': [0], '3': [0] } } : {}, switchRanks: kind === 'switchNic' ? ['2'] : [], switchOps: kind === 'switchNic' ? [true] : [],
    rankNode: { '0': 'node-a', '1': 'node-a', '2': 'node-b', '3': 'node-b' }, rankDevice: { '0': '0', '1': '1', '2': '0', '3': '1' }, isolateNodes: [], notified: true, ...over,
  },
});
const replies = (r: R): string[] => r.commands.flatMap((c) => (c.type === 'omResponse' ? [c.msg] : []));

type Row = [row: string, from: RecoveryPhase, event: RecoveryFsmEvent, to: RecoveryPhase, check: (r: R) => void, over?: Partial<RecoveryState>];

const ROWS: Row[] = [
  ['1', 'INIT', 'faultOccur', 'NotifyWaitFaultFlushingState', (r) => expect(ops(r)).toEqual(['notifyFaultFlushing'])],
  ['2', 'NotifyWaitFaultFlushingState', 'notifyFinish', 'NotifyStopTrainState', (r) => expect(signals(r)).toEqual(['stopTrain'])],
  // docs/rules.md#recover.platform-mode: no platform strategy within ProcessControlTimeout -> fault retry (label pause).
  ['3', 'NotifyWaitFaultFlushingState', 'waitPlatStrategyTimeout', 'FaultRetryState', (r) => expect(types(r)).toEqual(['setPodGroupLabel'])],
  ['4', 'NotifyWaitFaultFlushingState', 'dumpForFault', 'NotifyDumpState', (r) => {
    expect(ops(r)).toEqual(['fault']);
    expect(signals(r)).toEqual(['saveAndExit']);
  }],
  ['5', 'NotifyWaitFaultFlushingState', 'notifyFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['6', 'NotifyStopTrainState', 'notifySuccess', 'WaitReportStopCompleteState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['7', 'NotifyStopTrainState', 'notifyFail', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['8', 'NotifyDumpState', 'notifySuccess', 'WaitReportDumpStatusState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['9', 'NotifyDumpState', 'notifyFail', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['10', 'WaitReportStopCompleteState', 'receiveReport', 'WaitFaultFlushFinishedState', (r) => expect(timers(r)).toEqual({ flush: 1_000 })],
  ['11', 'WaitReportStopCompleteState', 'receiveTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['12', 'WaitReportStopCompleteState', 'processNotReadyEvent', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['13', 'WaitFaultFlushFinishedState', 'flushFinished', 'NotifyGlobalFaultState', (r) => {
    expect(types(r)).toEqual(['publishFaultJobInfo']);
    expect(timers(r)).toEqual({ forceRelease: 10_000 });
  }],
  ['14', 'NotifyGlobalFaultState', 'notifySuccess', 'WaitReportRecoverStrategyState', (r) => expect(timers(r)).toEqual({ schedule: 270_000, schedulePoll: 5_000, report: 900_000 })],
  ['15', 'NotifyGlobalFaultState', 'notifyFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['16', 'NotifyGlobalFaultState', 'writeConfirmFaultOrWaitResultFaultTimeout', 'FaultRetryState', (r) => expect(types(r)).toEqual(['setPodGroupLabel'])],
  ['17', 'WaitReportRecoverStrategyState', 'receiveReport', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:recover'])],
  ['18', 'WaitReportRecoverStrategyState', 'receiveTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['19', 'NotifyDecidedStrategyState', 'notifyRetryStrategySuccess', 'WaitReportStepRetryStatusState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['20', 'NotifyDecidedStrategyState', 'notifyRecoverStrategySuccess', 'WaitReportProcessRecoverStatusState', (r) => expect(timers(r)).toEqual({ report: 900_000, schedule: 270_000, schedulePoll: 5_000 })],
  ['21', 'NotifyDecidedStrategyState', 'notifyDumpStrategySuccess', 'WaitReportDumpStatusState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['22', 'NotifyDecidedStrategyState', 'notifyExitStrategySuccess', 'CheckRecoverResultState', (r) => {
    // handleDecideExitStrategy: straight on, no status report read, no ProcessRecoverStatus written.
    expect(r.commands.find((c) => c.type === 'setPodGroupAnnotations')).toBeUndefined();
    expect(r.state.phase).toBe('ListenScheduleResultState');
  }, { current: 'exit' }],
  ['23', 'NotifyDecidedStrategyState', 'notifyFail', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['25', 'NotifyDecidedStrategyState', 'notifyScaleInStrategySuccessEvent', 'WaitReportScaleInIsolateRanksState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['26', 'WaitReportStepRetryStatusState', 'receiveReport', 'CheckRecoverResultState', (r) => expect(r.state.phase).toBe('INIT'), { ...status('retry'), current: 'retry' }],
  ['27', 'WaitReportStepRetryStatusState', 'receiveTimeout', 'FaultRetryState', (r) => expect(r.commands.find((c) => c.type === 'setPodGroupLabel')).toMatchObject({ value: 'pause' })],
  ['28', 'WaitReportProcessRecoverStatusState', 'receiveReport', 'CheckRecoverResultState', (r) => expect(r.state.phase).toBe('NotifyDecidedStrategyState'), { ...status('recover', 1), current: 'recover' }],
  ['28', 'WaitReportProcessRecoverStatusState', 'scheduleTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['28', 'WaitReportProcessRecoverStatusState', 'receiveTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['28', 'WaitReportProcessRecoverStatusState', 'clearFail', 'FaultRetryState', (r) => expect(types(r)).toEqual(['setPodGroupLabel'])],
  ['28', 'WaitReportProcessRecoverStatusState', 'needTryScaleStrategyInEvent', 'NotifyScaleInStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:downgrade'])],
  ['30', 'CheckRecoverResultState', 'recoverSuccess', 'INIT', (r) => expect(types(r)).toEqual(['writeResetConfig', 'closeSignalStream', 'endOmStreams'])],
  ['31', 'CheckRecoverResultState', 'recoverFail', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:dump']), { ...status('recover', 1), current: 'recover' }],
  ['32', 'CheckRecoverResultState', 'recoverableRetryError', 'WaitFaultFlushFinishedState', (r) => expect(timers(r)).toEqual({ flush: 1_000 }), { current: 'retry' }],
  ['33', 'CheckRecoverResultState', 'unRecoverableRetryError', 'KillPodForUnrecoverableRetryState', (r) => expect(ops(r)).toEqual(['fault']), { current: 'retry' }],
  ['34', 'KillPodForUnrecoverableRetryState', 'finishKillPod', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:recover']), { ...status('retry', 1), current: 'retry' }],
  ['35', 'CheckRecoverResultState', 'checkFinish', 'ListenScheduleResultState', (r) => expect(timers(r)).toEqual({ scheduleCheck: 5_000 })], // the first of 4 looks
  ['36', 'ListenScheduleResultState', 'scheduleSuccess', 'NotifyRestartAllProcessState', (r) => expect(ops(r)).toEqual(['restartAllProcess'])],
  ['36', 'ListenScheduleResultState', 'scheduleTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['37', 'NotifyRestartAllProcessState', 'notifySuccess', 'WaitRestartAllProcessState', (r) => expect(timers(r)).toEqual({ restartAll: 60_000 })],
  ['37', 'NotifyRestartAllProcessState', 'notifyFail', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['38', 'WaitRestartAllProcessState', 'restartFinish', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['39', 'FaultClearState', 'clearSuccess', 'FaultRetryState', (r) => expect(r.commands.find((c) => c.type === 'setPodGroupLabel')).toMatchObject({ value: 'pause' })],
  ['40', 'FaultClearState', 'clearFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['41', 'FaultRetryState', 'finish', 'INIT', (r) => expect(r.state.faults).toEqual([])],
  ['42', 'FaultRetryState', 'changeSwitchPauseError', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['42', 'FaultRetryState', 'changeSwitchEnableError', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['42', 'FaultRetryState', 'scheduleTimeout', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster'])],
  ['43', 'NotifyKillJobState', 'finish', 'INIT', (r) => expect(types(r)).toContain('closeSignalStream')],
  ['44', 'WaitReportDumpStatusState', 'receiveReport', 'CheckRecoverResultState', (r) => {
    expect(signals(r)).toEqual(['changeStrategy:exit']);
    expect(r.state.phase).toBe('ListenScheduleResultState');
  }, { ...status('dump'), current: 'dump' }],
  ['44', 'WaitReportDumpStatusState', 'receiveTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['45', 'NotifyScaleInStrategyState', 'notifyScaleInStrategySuccessEvent', 'WaitReportScaleInIsolateRanksState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['45', 'NotifyScaleInStrategyState', 'notifyFail', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['46', 'WaitReportScaleInIsolateRanksState', 'receiveReport', 'CheckReportScaleInIsolateRanksState', (r) => {
    expect(r.commands.find((c) => c.type === 'sendSignal')).toMatchObject({ signal: { signalType: 'faultNodesExit', nodeRankIds: ['2'] } });
  }, { lastStatus: { strategy: 'downgrade', code: 201, isolateRankIds: [4, 5] }, current: 'elastic-training' }],
  // ClusterD's chooseStrategy reads the status reports received, not the strategy sent: none -> the
  // first choice again (here recover; downgrade again when it is the first, docs/grpc.md#fsm-timeouts).
  ['46', 'WaitReportScaleInIsolateRanksState', 'receiveTimeout', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:recover']), { current: 'elastic-training' }],
  ['46', 'WaitReportScaleInIsolateRanksState', 'receiveTimeout', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:downgrade']), {
    current: 'elastic-training', agentStrategies: ['downgrade', 'dump'], scaleInWaitDone: true,
  }],
  ['47', 'CheckReportScaleInIsolateRanksState', 'notifyFaultNodesExitSuccessEvent', 'WaitReportScaleInStatusState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['47', 'CheckReportScaleInIsolateRanksState', 'notifyFail', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:dump']), { ...status('downgrade', 201), current: 'elastic-training' }],
  ['47', 'CheckReportScaleInIsolateRanksState', 'recoverFail', 'NotifyDecidedStrategyState', (r) => expect(signals(r)).toEqual(['changeStrategy:dump']), { ...status('downgrade', 201), current: 'elastic-training' }],
  ['48', 'WaitReportScaleInStatusState', 'receiveReport', 'CheckRecoverResultState', (r) => expect(r.state.phase).toBe('ScaleRunningState'), status('downgrade')],
  ['48', 'WaitReportScaleInStatusState', 'receiveTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  ['49', 'CheckRecoverResultState', 'scaleInSuccessEvent', 'ScaleRunningState', (r) => expect(r.state.scaleInRunning).toBe(true)],
  ['49', 'CheckRecoverResultState', 'scaleOutSuccessEvent', 'INIT', (r) => expect(types(r)).toContain('closeSignalStream')],
  ['50', 'ScaleRunningState', 'notifyScaleOutStrategySuccessEvent', 'WaitReportScaleOutStatusState', (r) => expect(timers(r)).toEqual({ report: 900_000 })],
  ['51', 'ScaleRunningState', 'faultOccur', 'NotifyStopTrainState', (r) => expect(signals(r)).toEqual(['stopTrain'])],
  ['51', 'ScaleRunningState', 'finish', 'INIT', (r) => expect(r.state.scaleInRunning).toBe(false)],
  ['51', 'ScaleRunningState', 'notifyFail', 'ScaleRunningState', (r) => expect(r.state.step).toBe('watch')],
  ['52', 'WaitReportScaleOutStatusState', 'receiveReport', 'CheckRecoverResultState', (r) => expect(r.state.phase).toBe('INIT'), status('upgrade')],
  ['52', 'WaitReportScaleOutStatusState', 'receiveTimeout', 'FaultClearState', (r) => expect(ops(r)).toEqual(['clear'])],
  // O&M: stress test and NIC switch (docs/rules.md#recover.stress-test, #recover.switch-nic)
  ['53', 'INIT', 'startStressTest', 'NotifyPauseTrainState', (r) => {
    expect(r.commands.find((c) => c.type === 'sendSignal')).toMatchObject({ signal: { signalType: 'stopTrain', actions: ['pause_train'], timeout: 900 } });
  }, om('stressTest')],
  ['54', 'INIT', 'startSwitchNic', 'NotifyPauseTrainState', (r) => {
    expect(r.commands.find((c) => c.type === 'sendSignal')).toMatchObject({ signal: { signalType: 'stopTrain', actions: ['pause_train'], timeout: 0 } });
  }, om('switchNic')],
  ['55', 'NotifyPauseTrainState', 'notifySuccess', 'WaitReportPauseCompleteState', (r) => expect(timers(r)).toEqual({ report: 900_000 }), om('stressTest')],
  ['55', 'NotifyPauseTrainState', 'notifyFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('stressTest')],
  ['56', 'WaitReportPauseCompleteState', 'receiveTimeout', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('stressTest')],
  ['56', 'WaitReportPauseCompleteState', 'processPauseFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('switchNic')],
  ['57', 'WaitReportPauseCompleteState', 'stressTestRecvPause', 'NotifyStressTestState', (r) => {
    expect(types(r)).toEqual(['notifyOm']);
    expect(r.state.om?.notified).toBe(false);
  }, om('stressTest')],
  ['58', 'WaitReportPauseCompleteState', 'switchNicRecvPause', 'NotifySwitchNicState', (r) => expect(types(r)).toEqual(['notifyOm']), om('switchNic')],
  ['59', 'NotifyStressTestState', 'notifySuccess', 'WaitStressTestFinishedState', (r) => {
    expect(types(r)).toEqual(['setStressTestFilter', 'sendSignal', 'writeResetConfig']);
    expect(signals(r)).toEqual(['pauseStartAgent']);
    expect(ops(r)).toEqual(['notifyFaultFlushing']);
    expect(r.commands.find((c) => c.type === 'setStressTestFilter')).toMatchObject({ nodes: ['node-b'], on: true });
  }, om('stressTest')],
  ['59', 'NotifyStressTestState', 'notifyFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('stressTest')],
  ['60', 'WaitStressTestFinishedState', 'receiveReport', 'NotifyContinueTrainState', (r) => {
    expect(r.commands.find((c) => c.type === 'sendSignal')).toMatchObject({ signal: { signalType: 'changeStrategy', changeStrategy: 'continue', faultRanks: [], nodeRankIds: [] } });
  }, om('stressTest')],
  ['61', 'WaitStressTestFinishedState', 'receiveTimeout', 'NotifyStopTrainState', (r) => expect(signals(r)).toEqual(['stopTrain']), om('stressTest')],
  ['62', 'WaitStressTestFinishedState', 'stressTestFail', 'NotifyStopTrainState', (r) => {
    expect(r.commands.find((c) => c.type === 'annotateNodes')).toMatchObject({ nodes: ['node-b'], annotations: { NodeHealthyStatus: 'UnHealthy' } });
    expect(r.commands.find((c) => c.type === 'sendSignal')).toMatchObject({ signal: { signalType: 'stopTrain', actions: ['stop_train'], faultRanks: [{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }] } });
  }, om('stressTest', { isolateNodes: ['node-b'] })],
  ['63', 'NotifySwitchNicState', 'notifySuccess', 'WaitSwitchNicFinishedState', (r) => expect(timers(r)).toEqual({ report: 900_000 }), om('switchNic')],
  ['63', 'NotifySwitchNicState', 'notifyFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('switchNic')],
  ['64', 'WaitSwitchNicFinishedState', 'receiveReport', 'NotifyContinueTrainState', (r) => expect(signals(r)).toEqual(['changeStrategy:continue']), om('switchNic')],
  ['65', 'WaitSwitchNicFinishedState', 'waitSwitchNicRecvFault', 'NotifyStopTrainState', (r) => expect(signals(r)).toEqual(['stopTrain']), om('switchNic')],
  ['65', 'WaitSwitchNicFinishedState', 'receiveTimeout', 'NotifyStopTrainState', (r) => expect(signals(r)).toEqual(['stopTrain']), om('switchNic')],
  ['65', 'WaitSwitchNicFinishedState', 'switchNicFail', 'NotifyStopTrainState', (r) => expect(signals(r)).toEqual(['stopTrain']), om('switchNic')],
  ['66', 'NotifyContinueTrainState', 'notifyContinueSuccessEvent', 'WaitContinueTrainState', (r) => expect(timers(r)).toEqual({ report: 900_000 }), om('switchNic')],
  ['66', 'NotifyContinueTrainState', 'notifyFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('switchNic')],
  ['67', 'WaitContinueTrainState', 'receiveTimeout', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('stressTest')],
  ['67', 'WaitContinueTrainState', 'continueTrainFail', 'NotifyKillJobState', (r) => expect(signals(r)).toEqual(['killMaster']), om('stressTest')],
  ['68', 'WaitContinueTrainState', 'stressTestRecvContinue', 'INIT', (r) => {
    expect(types(r)).toEqual(['writeResetConfig', 'closeSignalStream', 'endOmStreams']);
    expect(r.state.om).toBeNull();
  }, om('stressTest')],
  ['69', 'WaitContinueTrainState', 'switchNicRecvContinue', 'INIT', (r) => {
    expect(replies(r)).toEqual(['switch nic finish']);
    expect(r.state.om).toBeNull();
  }, om('switchNic')],
];

describe('docs/rules.md#recover.fsm transition table', () => {
  it.each(ROWS)('row %s: %s -(%s)-> %s', (...args) => {
    const [row, from, event, to, check, over] = args as Row; // rest args: jest would take a 6th parameter for `done`
    const r = trigger(base({ phase: from, ...over }), event, NOW);
    expect(r.accepted).toBe(true);
    expect(r.reasons[0]).toBe(`${from} -(${event})-> ${to} [recover.fsm #${row}]`);
    check(r);
  });

  it('covers every rule of the table', () => {
    const tested = new Set(ROWS.map(([, from, event]) => `${from}/${event}`));
    expect(recoveryEdges().map((e) => `${e.from}/${e.event}`).filter((k) => !tested.has(k))).toEqual([]);
  });

  it('refuses events the state does not accept (order mixed) and leaves the state alone', () => {
    const s = base();
    const r = trigger(s, 'notifySuccess', NOW);
    expect(r.accepted).toBe(false);
    expect(r.state).toEqual(s);
    expect(r.reasons).toEqual(['refused notifySuccess in INIT (order mixed)']);
  });

  it('ignores a stale timer and effect results nobody waits for', () => {
    const s = base({ phase: 'WaitReportStopCompleteState' });
    expect(step(s, { type: 'timerFired', id: 'report' }, NOW).accepted).toBe(false);
    expect(step(s, { type: 'effectResult', commandId: 99, ok: false }, NOW).accepted).toBe(false);
  });

  it('a failed command with no fail rule is a handler error: reset', () => {
    const r0 = trigger(base({ phase: 'CheckRecoverResultState', current: 'retry' }), 'unRecoverableRetryError', NOW);
    const write = r0.commands.find((c) => c.type === 'writeResetConfig')!;
    const r = step(r0.state, { type: 'effectResult', commandId: write.id, ok: false, error: 'hot reset active' }, NOW);
    expect(r.state.phase).toBe('INIT');
    expect(r.reasons).toContain(`handler error: command ${write.id} failed: hot reset active`);
  });

  it('an unknown strategy in the status report is a handler error (reset)', () => {
    const r = trigger(base({ phase: 'WaitReportStepRetryStatusState', lastStatus: { strategy: 'bogus', code: 0, isolateRankIds: [] } }), 'receiveReport', NOW);
    expect(r.state.phase).toBe('INIT');
  });

  it('a restored job\'s client subscribing again goes on where it was (docs/rules.md#recover.resume); any other subscription resets', () => {
    const s = base({ phase: 'WaitReportProcessRecoverStatusState', uuid: 'U-1', current: 'recover', timers: [{ id: 'report', dueAtMs: NOW + 900_000 }] });
    const resumed = step(s, { type: 'clientSubscribed', resumed: true }, NOW);
    expect(resumed.state).toEqual(s);
    expect(resumed.commands).toEqual([]);
    expect(resumed.reasons).toEqual(['client subscribed again after a restore: WaitReportProcessRecoverStatusState goes on [recover.resume]']);
    const fresh = step(s, { type: 'clientSubscribed' }, NOW);
    expect(fresh.state.phase).toBe('INIT');
  });

  it('state stays plain serialisable data', () => {
    const r = trigger(base({ phase: 'NotifyGlobalFaultState' }), 'notifySuccess', NOW);
    expect(JSON.parse(JSON.stringify(r.state))).toEqual(r.state);
  });
});
