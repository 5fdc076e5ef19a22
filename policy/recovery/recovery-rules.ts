/**
 * The rule table of the process-level recovery FSM: (state, event) -> (next state, handler), one
 * entry per row of docs/rules.md#recover.fsm (row numbers kept). Events not listed for a state are refused
 * ("order mixed", code 401), as ClusterD refuses them at enqueue time.
 *
 * Rows 3 and 16 are the AI platform mode's timeouts (docs/rules.md#recover.platform-mode). Left out: row 24 (HCCL
 * routing convergence failure: no input reports it) and ClusterD's WaitRankTableReadyTimeoutEvent (no
 * handler returns it: a RankTableReady timeout falls back to dump/exit inside row 17). Rows 53-69 are the O&M operations (online stress test, NIC switch; policy/recovery/om-handlers.ts).
 */
import type { OmHandler } from './om-handlers.ts';
import type { RecoveryFsmEvent, RecoveryPhase } from './recovery-types.ts';

export type RecoveryHandler =
  | 'faultOccur'
  | 'stopTrain'
  | 'dumpForFault'
  | 'killJob'
  | 'waitReport'
  | 'clearConfig'
  | 'flushWait'
  | 'globalFault'
  | 'waitStrategy'
  | 'decide'
  | 'waitRecoverStatus'
  | 'evaluate'
  | 'retryToNormal'
  | 'killPods'
  | 'listenSchedule'
  | 'restartAll'
  | 'waitRestartAll'
  | 'faultRetry'
  | 'finish'
  | 'scaleIn'
  | 'checkIsolate'
  | 'scaleRunning'
  | OmHandler;

export interface RecoveryRule {
  readonly to: RecoveryPhase;
  readonly run: RecoveryHandler;
  /** docs/rules.md#recover.fsm table row. */
  readonly row: string;
}

const r = (to: RecoveryPhase, run: RecoveryHandler, row: string): RecoveryRule => ({ to, run, row });

type Table = Readonly<Partial<Record<RecoveryPhase, Readonly<Partial<Record<RecoveryFsmEvent, RecoveryRule>>>>>>;

export const RECOVERY_RULES: Table = {
  INIT: {
    faultOccur: r('NotifyWaitFaultFlushingState', 'faultOccur', '1'),
    startStressTest: r('NotifyPauseTrainState', 'pauseTrain', '53'),
    startSwitchNic: r('NotifyPauseTrainState', 'pauseTrain', '54'),
  },
  NotifyWaitFaultFlushingState: {
    notifyFinish: r('NotifyStopTrainState', 'stopTrain', '2'),
    waitPlatStrategyTimeout: r('FaultRetryState', 'faultRetry', '3'),
    dumpForFault: r('NotifyDumpState', 'dumpForFault', '4'),
    notifyFail: r('NotifyKillJobState', 'killJob', '5'),
  },
  NotifyStopTrainState: {
    notifySuccess: r('WaitReportStopCompleteState', 'waitReport', '6'),
    notifyFail: r('FaultClearState', 'clearConfig', '7'),
  },
  NotifyDumpState: {
    notifySuccess: r('WaitReportDumpStatusState', 'waitReport', '8'),
    notifyFail: r('FaultClearState', 'clearConfig', '9'),
  },
  WaitReportStopCompleteState: {
    receiveReport: r('WaitFaultFlushFinishedState', 'flushWait', '10'),
    receiveTimeout: r('FaultClearState', 'clearConfig', '11'),
    processNotReadyEvent: r('NotifyKillJobState', 'killJob', '12'),
  },
  WaitFaultFlushFinishedState: {
    flushFinished: r('NotifyGlobalFaultState', 'globalFault', '13'),
  },
  NotifyGlobalFaultState: {
    notifySuccess: r('WaitReportRecoverStrategyState', 'waitStrategy', '14'),
    notifyFail: r('NotifyKillJobState', 'killJob', '15'),
    writeConfirmFaultOrWaitResultFaultTimeout: r('FaultRetryState', 'faultRetry', '16'),
  },
  WaitReportRecoverStrategyState: {
    receiveReport: r('NotifyDecidedStrategyState', 'decide', '17'),
    receiveTimeout: r('FaultClearState', 'clearConfig', '18'),
  },
  NotifyDecidedStrategyState: {
    notifyRetryStrategySuccess: r('WaitReportStepRetryStatusState', 'waitReport', '19'),
    notifyRecoverStrategySuccess: r('WaitReportProcessRecoverStatusState', 'waitRecoverStatus', '20'),
    notifyDumpStrategySuccess: r('WaitReportDumpStatusState', 'waitReport', '21'),
    notifyExitStrategySuccess: r('CheckRecoverResultState', 'evaluate', '22'),
    notifyFail: r('FaultClearState', 'clearConfig', '23'),
    notifyScaleInStrategySuccessEvent: r('WaitReportScaleInIsolateRanksState', 'waitReport', '25'),
  },
  WaitReportStepRetryStatusState: {
    receiveReport: r('CheckRecoverResultState', 'evaluate', '26'),
    receiveTimeout: r('FaultRetryState', 'faultRetry', '27'),
  },
  WaitReportProcessRecoverStatusState: {
    receiveReport: r('CheckRecoverResultState', 'evaluate', '28'),
    scheduleTimeout: r('FaultClearState', 'clearConfig', '28'),
    receiveTimeout: r('FaultClearState', 'clearConfig', '28'),
    // docs/rules.md#recover.fsm-clear-fail: ClusterD runs the clear handler here, whose follow-up event (clearSuccess) is
    // refused in FaultRetryState, so the job parks until the next stream reset. We run the intended
    // fault-retry handler (label pause, exit + dump_exit, wait for Running, label on).
    clearFail: r('FaultRetryState', 'faultRetry', '28'),
    needTryScaleStrategyInEvent: r('NotifyScaleInStrategyState', 'scaleIn', '28'),
  },
  CheckRecoverResultState: {
    recoverSuccess: r('INIT', 'finish', '30'),
    recoverFail: r('NotifyDecidedStrategyState', 'decide', '31'),
    recoverableRetryError: r('WaitFaultFlushFinishedState', 'retryToNormal', '32'),
    unRecoverableRetryError: r('KillPodForUnrecoverableRetryState', 'killPods', '33'),
    checkFinish: r('ListenScheduleResultState', 'listenSchedule', '35'),
    scaleInSuccessEvent: r('ScaleRunningState', 'scaleRunning', '49'),
    scaleOutSuccessEvent: r('INIT', 'finish', '49'),
  },
  KillPodForUnrecoverableRetryState: {
    finishKillPod: r('NotifyDecidedStrategyState', 'decide', '34'),
  },
  ListenScheduleResultState: {
    scheduleSuccess: r('NotifyRestartAllProcessState', 'restartAll', '36'),
    scheduleTimeout: r('FaultClearState', 'clearConfig', '36'),
  },
  NotifyRestartAllProcessState: {
    notifySuccess: r('WaitRestartAllProcessState', 'waitRestartAll', '37'),
    notifyFail: r('FaultClearState', 'clearConfig', '37'),
  },
  WaitRestartAllProcessState: {
    restartFinish: r('FaultClearState', 'clearConfig', '38'),
  },
  FaultClearState: {
    clearSuccess: r('FaultRetryState', 'faultRetry', '39'),
    clearFail: r('NotifyKillJobState', 'killJob', '40'),
  },
  FaultRetryState: {
    finish: r('INIT', 'finish', '41'),
    changeSwitchPauseError: r('NotifyKillJobState', 'killJob', '42'),
    changeSwitchEnableError: r('NotifyKillJobState', 'killJob', '42'),
    scheduleTimeout: r('NotifyKillJobState', 'killJob', '42'),
  },
  NotifyKillJobState: {
    finish: r('INIT', 'finish', '43'),
  },
  WaitReportDumpStatusState: {
    receiveReport: r('CheckRecoverResultState', 'evaluate', '44'),
    receiveTimeout: r('FaultClearState', 'clearConfig', '44'),
  },
  NotifyScaleInStrategyState: {
    notifyScaleInStrategySuccessEvent: r('WaitReportScaleInIsolateRanksState', 'waitReport', '45'),
    notifyFail: r('FaultClearState', 'clearConfig', '45'),
  },
  WaitReportScaleInIsolateRanksState: {
    receiveReport: r('CheckReportScaleInIsolateRanksState', 'checkIsolate', '46'),
    receiveTimeout: r('NotifyDecidedStrategyState', 'decide', '46'),
  },
  CheckReportScaleInIsolateRanksState: {
    notifyFaultNodesExitSuccessEvent: r('WaitReportScaleInStatusState', 'waitReport', '47'),
    notifyFail: r('NotifyDecidedStrategyState', 'decide', '47'),
    recoverFail: r('NotifyDecidedStrategyState', 'decide', '47'),
  },
  WaitReportScaleInStatusState: {
    receiveReport: r('CheckRecoverResultState', 'evaluate', '48'),
    receiveTimeout: r('FaultClearState', 'clearConfig', '48'),
  },
  ScaleRunningState: {
    notifyScaleOutStrategySuccessEvent: r('WaitReportScaleOutStatusState', 'waitReport', '50'),
    faultOccur: r('NotifyStopTrainState', 'stopTrain', '51'),
    finish: r('INIT', 'finish', '51'),
    notifyFail: r('ScaleRunningState', 'scaleRunning', '51'),
  },
  WaitReportScaleOutStatusState: {
    receiveReport: r('CheckRecoverResultState', 'evaluate', '52'),
    receiveTimeout: r('FaultClearState', 'clearConfig', '52'),
  },
  // O&M (getOMRules, getStressTestRules, getSwitchNicRules).
  NotifyPauseTrainState: {
    notifySuccess: r('WaitReportPauseCompleteState', 'waitPause', '55'),
    notifyFail: r('NotifyKillJobState', 'killJob', '55'),
  },
  WaitReportPauseCompleteState: {
    receiveTimeout: r('NotifyKillJobState', 'killJob', '56'),
    processPauseFail: r('NotifyKillJobState', 'killJob', '56'),
    stressTestRecvPause: r('NotifyStressTestState', 'notifyOm', '57'),
    switchNicRecvPause: r('NotifySwitchNicState', 'notifyOm', '58'),
  },
  NotifyStressTestState: {
    notifySuccess: r('WaitStressTestFinishedState', 'waitStressTest', '59'),
    notifyFail: r('NotifyKillJobState', 'killJob', '59'),
  },
  WaitStressTestFinishedState: {
    receiveReport: r('NotifyContinueTrainState', 'notifyContinue', '60'),
    receiveTimeout: r('NotifyStopTrainState', 'stopTrain', '61'),
    stressTestFail: r('NotifyStopTrainState', 'stressTestFail', '62'),
  },
  NotifySwitchNicState: {
    notifySuccess: r('WaitSwitchNicFinishedState', 'waitSwitchNic', '63'),
    notifyFail: r('NotifyKillJobState', 'killJob', '63'),
  },
  WaitSwitchNicFinishedState: {
    receiveReport: r('NotifyContinueTrainState', 'notifyContinue', '64'),
    waitSwitchNicRecvFault: r('NotifyStopTrainState', 'stopTrain', '65'),
    receiveTimeout: r('NotifyStopTrainState', 'stopTrain', '65'),
    switchNicFail: r('NotifyStopTrainState', 'stopTrain', '65'),
  },
  NotifyContinueTrainState: {
    notifyContinueSuccessEvent: r('WaitContinueTrainState', 'waitContinue', '66'),
    notifyFail: r('NotifyKillJobState', 'killJob', '66'),
  },
  WaitContinueTrainState: {
    receiveTimeout: r('NotifyKillJobState', 'killJob', '67'),
    continueTrainFail: r('NotifyKillJobState', 'killJob', '67'),
    stressTestRecvContinue: r('INIT', 'omFinish', '68'),
    switchNicRecvContinue: r('INIT', 'omFinish', '69'),
  },
};

/** Every (state, event) pair the FSM accepts, for tests and for a path-graph dump. */
export function recoveryEdges(): { from: RecoveryPhase; event: RecoveryFsmEvent; rule: RecoveryRule }[] {
  const out: { from: RecoveryPhase; event: RecoveryFsmEvent; rule: RecoveryRule }[] = [];
  for (const [from, byEvent] of Object.entries(RECOVERY_RULES)) {
    for (const [event, rule] of Object.entries(byEvent ?? {})) {
      out.push({ from: from as RecoveryPhase, event: event as RecoveryFsmEvent, rule: rule as RecoveryRule });
    }
  }
  return out;
}
