/**
 * Types of the process-level recovery FSM (docs/rules.md#recover.fsm): persisted state, input events and output
 * commands. Everything is plain serialisable data (the controller persists the state and restores it
 * after a restart or failover).
 */
import type { CD_RESET_OPERATIONS } from '../../schemas/reset-config/reset-config.transitions.ts';
import type { JobHealthState } from '../jobs/job-aggregation.ts';
import type { PodFaultTypeLabel, SubHealthyStrategy } from '../jobs/job-view.ts';
import type { ProcessStrategy } from './recovery-choice.ts';
import type { Awaiting, CommandMeta, EffectResult, FsmTimer, TimerCommandBody, TimerFired } from './recovery-kit.ts';
import type { ProcessManageSignal, WireFaultRank } from '../../vocabulary/process-manage-signal.ts';
import type { FaultType, RankFault } from './recovery-signals.ts';

/** ClusterD state names (CD/application/recover/rules.go), kept for traceability of the path graph. */
export const RECOVERY_PHASES = [
  'INIT',
  'NotifyWaitFaultFlushingState',
  'NotifyStopTrainState',
  'NotifyDumpState',
  'WaitReportStopCompleteState',
  'WaitFaultFlushFinishedState',
  'NotifyGlobalFaultState',
  'WaitReportRecoverStrategyState',
  'NotifyDecidedStrategyState',
  'WaitReportStepRetryStatusState',
  'WaitReportProcessRecoverStatusState',
  'WaitReportDumpStatusState',
  'CheckRecoverResultState',
  'KillPodForUnrecoverableRetryState',
  'ListenScheduleResultState',
  'NotifyRestartAllProcessState',
  'WaitRestartAllProcessState',
  'FaultClearState',
  'FaultRetryState',
  'NotifyKillJobState',
  'NotifyScaleInStrategyState',
  'WaitReportScaleInIsolateRanksState',
  'CheckReportScaleInIsolateRanksState',
  'WaitReportScaleInStatusState',
  'ScaleRunningState',
  'WaitReportScaleOutStatusState',
  // O&M: online stress test and NIC switch (CD/application/recover/rules.go getStressTestRules, getSwitchNicRules, getOMRules)
  'NotifyPauseTrainState',
  'WaitReportPauseCompleteState',
  'NotifyStressTestState',
  'WaitStressTestFinishedState',
  'NotifySwitchNicState',
  'WaitSwitchNicFinishedState',
  'NotifyContinueTrainState',
  'WaitContinueTrainState',
] as const;
export type RecoveryPhase = (typeof RECOVERY_PHASES)[number];

/** ClusterD's internal FSM events (the edges of the docs/rules.md#recover.fsm table). */
export type RecoveryFsmEvent =
  | 'faultOccur'
  | 'notifyFinish'
  | 'notifySuccess'
  | 'notifyFail'
  | 'dumpForFault'
  | 'receiveReport'
  | 'receiveTimeout'
  | 'processNotReadyEvent'
  | 'flushFinished'
  | 'notifyRetryStrategySuccess'
  | 'notifyRecoverStrategySuccess'
  | 'notifyDumpStrategySuccess'
  | 'notifyExitStrategySuccess'
  | 'notifyScaleInStrategySuccessEvent'
  | 'notifyScaleOutStrategySuccessEvent'
  | 'notifyFaultNodesExitSuccessEvent'
  | 'scheduleTimeout'
  | 'scheduleSuccess'
  | 'clearSuccess'
  | 'clearFail'
  | 'needTryScaleStrategyInEvent'
  | 'recoverSuccess'
  | 'recoverFail'
  | 'recoverableRetryError'
  | 'unRecoverableRetryError'
  | 'finishKillPod'
  | 'checkFinish'
  | 'restartFinish'
  | 'finish'
  | 'changeSwitchPauseError'
  | 'changeSwitchEnableError'
  | 'scaleInSuccessEvent'
  | 'scaleOutSuccessEvent'
  | 'startStressTest'
  | 'startSwitchNic'
  | 'processPauseFail'
  | 'stressTestRecvPause'
  | 'switchNicRecvPause'
  | 'stressTestFail'
  | 'switchNicFail'
  | 'waitSwitchNicRecvFault'
  | 'notifyContinueSuccessEvent'
  | 'continueTrainFail'
  | 'stressTestRecvContinue'
  | 'switchNicRecvContinue'
  // AI platform mode (docs/rules.md#recover.platform-mode)
  | 'waitPlatStrategyTimeout'
  | 'writeConfirmFaultOrWaitResultFaultTimeout';

/** Work done inside a state without a transition (a wait finished, an effect acknowledged). */
export type RecoveryContinuation =
  | 'rackWait'
  | 'afterForceRelease'
  | 'afterInPlaceCheck'
  | 'notifyGlobal'
  | 'sendDecided'
  | 'chooseAgain'
  | 'clearAfterReschedule'
  | 'rescheduleCleared'
  | 'retryPaused'
  | 'sendPreExit'
  | 'omSendFailed'
  | 'platConfirmWritten';

export type RecoveryNext = { readonly ev: RecoveryFsmEvent } | { readonly cont: RecoveryContinuation };

/** Timer ids (state.timers[].id). */
export const RECOVERY_TIMER = {
  report: 'report', // 15 min for each awaited report
  flush: 'flush', // 1 s fault flush wait
  preExit: 'preExit', // up to 10 s for the FSM to leave INIT before preExitProcess
  rackWait: 'rackWait', // 3 s per look, at most 4, for an A5 ra-block job's PodGroup to run
  forceRelease: 'forceRelease', // 10 s SuperPod IPC force release
  inPlaceCheck: 'inPlaceCheck', // 5 x 3 s for L2/L3 faults to disappear
  hcclWait: 'hcclWait', // 3 s HCCL routing convergence
  scaleInWait: 'scaleInWait', // MINDIO_WAIT_MINDX_TIME - 10 s before a scale-in decision
  schedule: 'schedule', // wait-reschedule-timeout (30-270 s) for rescheduled pods
  schedulePoll: 'schedulePoll', // 5 s between two looks of the schedule poller
  inPlaceClear: 'inPlaceClear', // 5 s before clearing reset-config after an in-place restart
  scheduleCheck: 'scheduleCheck', // 4 x 5 s after exit/dump
  restartAll: 'restartAll', // 1 min after RetryTime+1
  retryRunning: 'retryRunning', // 27 x 5 s = 135 s back to Running after label pause
  platform: 'platform', // ProcessControlTimeout (300 s) for an AI platform annotation
} as const;
export type RecoveryTimerId = (typeof RECOVERY_TIMER)[keyof typeof RECOVERY_TIMER];

/** Durations (ms). Defaults in recovery-fsm.ts DEFAULT_RECOVERY_TIMINGS (docs/rules.md#timing.clusterd). */
export interface RecoveryTimings {
  reportMs: number;
  flushMs: number;
  preExitWaitMs: number;
  forceReleaseMs: number;
  /** One wait of the A5 rack-rescheduling loop (3 s); absent in states stored before it existed. */
  rackWaitMs?: number;
  inPlaceCheckMs: number;
  hcclConvergeMs: number;
  /** HCCL step-retry timeout sent to the agent, seconds (3 + 30). */
  hcclRetryTimeoutS: number;
  scaleInWaitMs: number;
  inPlaceClearMs: number;
  scheduleCheckMs: number;
  restartAllMs: number;
  retryRunningMs: number;
  /** ClusterD's ProcessControlTimeout: how long the FSM waits for an AI platform annotation (300 s). */
  processControlMs: number;
}

/** Read from the PodGroup at Init/Register (docs/rules.md#recover.register) plus a few job facts. */
export interface RecoveryJobConfig {
  /** ClientInfo.jobId (the job UID); put into every signal. */
  jobId: string;
  strategies: ProcessStrategy[];
  jobRescheduling: boolean;
  podRescheduling: boolean;
  subHealthyStrategy: SubHealthyStrategy;
  /** NPUs (ranks) per pod: rank r lives on pod floor(r / ranksPerPod). */
  ranksPerPod: number;
  /** PG annotation `wait-reschedule-timeout` (30-270 s, default 270). */
  waitRescheduleTimeoutS: number;
  /** PG annotation `ProcessRecoverStrategy` present: AI platform mode (docs/rules.md#recover.platform-mode). */
  platformMode?: boolean;
  /** A pod of the job is on an A5 (`npu`) node (docs/rules.md#recover.force-release-a5). */
  a5?: boolean;
  /** PG annotation `ra-block` present (docs/rules.md#recover.rack-wait). */
  rackBlock?: boolean;
}

/**
 * The AI platform's PodGroup annotations as written (undefined: key absent), docs/rules.md#recover.platform-mode.
 * Kept raw: ClusterD tells an absent key from an empty value and trims them itself.
 */
export interface PlatformAnnotations {
  readonly strategy?: string;
  readonly confirm?: string;
  readonly result?: string;
  readonly rankTableReady?: string;
}

/** One rank of the job's current fault view, from the fault pipeline (every cycle, full snapshot). */
export interface ObservedFaultRank extends RankFault {
  /** SubHealth-level fault: dropped unless the job is SubHealthy (docs/rules.md#recover.hardware-entry). */
  subHealth?: boolean;
  /** Fault pipeline flag DoRestartInPlace (hardware L2/L3, age <= 60 s). */
  restartInPlace?: boolean;
  /** Rank faulty only because its node is NotReady: never drives process recovery (docs/rules.md#job.node-not-ready). */
  nodeNotReadyOnly?: boolean;
}

export interface PodObservation {
  name: string;
  uid: string;
  /** `hccl/rankIndex`. */
  podRank: number;
  phase: string;
  /** `huawei.com/AscendReal` is non-empty. */
  npusAllocated: boolean;
}

export interface CachedFault extends RankFault {
  /** Reported by the agent (ReportProcessFault) rather than seen on a device. */
  software: boolean;
  restartInPlace: boolean;
}

export interface StatusReport {
  code: number;
  strategy: string;
  isolateRankIds: number[];
}

export type OmKind = 'stressTest' | 'switchNic';

/** One op's answer in a stress test result (StressTestOpResult): code "0" ok, "1" exec fail, "2" fault found, "3" timeout, "4" voltage recovery failed. */
export interface StressOpResult {
  code: string;
  result: string;
}

/**
 * The O&M operation in flight (docs/rules.md#recover.stress-test, #recover.switch-nic): ClusterD's stressTestParam,
 * globalSwitchRankIDs / globalOps and isolateNodes, plus the job's rank table taken at the start.
 */
export interface OmState {
  kind: OmKind;
  /** Stress test: node -> global rank -> ops (0 AIC, 1 P2P). */
  stress: Record<string, Record<string, number[]>>;
  /** NIC switch: global ranks and their ops (true: switch to the backup link). */
  switchRanks: string[];
  switchOps: boolean[];
  /** The job's rank table when the operation started: global rank -> node, global rank -> device id. */
  rankNode: Record<string, string>;
  rankDevice: Record<string, string>;
  /** Nodes a stress test found faulty (code "2"). */
  isolateNodes: string[];
  /** The notify message (StressTestRankParams / SwitchRankList) went out on a notify stream. */
  notified: boolean;
}

/** StressTest / SwitchNicTrack accepted: what the controller resolved from the request and the job. */
export type OmStart = Pick<OmState, 'kind' | 'stress' | 'switchRanks' | 'switchOps' | 'rankNode' | 'rankDevice'>;

export interface RecoveryState {
  kind: 'recovery';
  version: 1;
  config: RecoveryJobConfig;
  timings: RecoveryTimings;
  phase: RecoveryPhase;
  /** Sub-step inside the phase ('' when none); e.g. 'forceRelease' in NotifyGlobalFaultState. */
  step: string;
  /** Waits of the A5 rack-rescheduling loop in this global-fault notification (docs/rules.md#recover.rack-wait). */
  rackWaitTries?: number;
  uuid: string;
  uuidSeq: number;
  nextCommandId: number;
  awaiting: Awaiting<RecoveryNext> | null;
  timers: FsmTimer[];
  // --- observations (level-triggered inputs) ---
  pods: PodObservation[];
  podGroup: { exists: boolean; phase: string };
  /** podRank -> UID captured at the last reset ("original pods"). */
  originalPodUids: Record<string, string>;
  jobHealth: JobHealthState;
  lastFeed: ObservedFaultRank[];
  /**
   * podRank -> when a recover-in-place plan last put the pod on its exit list (docs/rules.md#recover.in-place: the pod is
   * "reported as must exit"). Kept across resets: the recover-in-place scheduler-view filter (docs/rules.md#filter.recover-in-place)
   * compares it with the fault time, so an old entry never touches a later fault. Absent in states
   * stored before it existed (reconcilers/recovery-state.reconciler.ts fills it in).
   */
  mustExitAtMs: Record<string, number>;
  // --- the recovery in flight (cleared by reset) ---
  faults: CachedFault[];
  preExitRanks: number[];
  agentStrategies: string[] | null;
  retryPath: boolean;
  retryHeld: number[];
  inPlace: { restartPods: number[]; exitPods: number[] } | null;
  replacementRequested: number[];
  /** Strategy last sent ('' before the first choice); decides the fallback order (docs/rules.md#recover.strategy-choice). */
  current: ProcessStrategy | 'downgrade' | 'upgrade' | '';
  scaleInWaitDone: boolean;
  scaleInRunning: boolean;
  schedule: 'idle' | 'pending' | 'ok' | 'timeout';
  lastStatus: StatusReport | null;
  reports: {
    stopComplete: { code: number } | null;
    recoverStrategy: { strategies: string[] } | null;
    recoverStatus: StatusReport | null;
    /** ReplyStressTestResult: rank -> op -> result (one slot, as ClusterD's channel). */
    stressResult?: Record<string, Record<string, StressOpResult>> | null;
    /** ReplySwitchNicResult. */
    switchResult?: boolean | null;
  };
  /** The O&M operation in flight (null when none; absent in states stored before it existed). */
  om?: OmState | null;
  /** The PodGroup's AI platform annotations (observation; absent in states stored before it existed). */
  platformView?: PlatformAnnotations;
  /** ClusterD's platStrategy: the platform's strategy as last read ('' before one; absent in older states). */
  platStrategy?: string;
  /** The ProcessConfirmFault written in this exchange and the path it was written for (null when none). */
  platExchange?: { written: RankFault[]; path: 'retry' | 'normal' } | null;
}

export type RecoveryEvent =
  | { readonly type: 'faultObserved'; readonly jobHealth: JobHealthState; readonly ranks: readonly ObservedFaultRank[] }
  | { readonly type: 'processFaultReported'; readonly faultRanks: readonly WireFaultRank[] }
  /**
   * A signal-stream subscription. `resumed`: the first one of a job whose state was restored after a
   * restart or a failover (its TaskD reconnecting), which continues the FSM (docs/rules.md#recover.resume).
   */
  | { readonly type: 'clientSubscribed'; readonly resumed?: boolean }
  | { readonly type: 'streamClosed' }
  | { readonly type: 'stopCompleteReported'; readonly code: number; readonly faultRanks?: readonly WireFaultRank[] }
  | { readonly type: 'recoverStrategyReported'; readonly strategies: readonly string[]; readonly faultRanks?: readonly WireFaultRank[] }
  | { readonly type: 'recoverStatusReported'; readonly code: number; readonly strategy: string; readonly isolateRankIds?: readonly string[] }
  | { readonly type: 'podsObserved'; readonly pods: readonly PodObservation[] }
  | { readonly type: 'podGroupObserved'; readonly exists: boolean; readonly phase: string; readonly platform?: PlatformAnnotations }
  | { readonly type: 'configChanged'; readonly config: Partial<RecoveryJobConfig> }
  /** StressTest / SwitchNicTrack passed its checks (the FSM still refuses it outside INIT: 411). */
  | { readonly type: 'omStarted'; readonly om: OmStart }
  /** The notify message was sent on a notify stream (ok) or failed after its tries. */
  | { readonly type: 'omNotified'; readonly ok: boolean }
  | { readonly type: 'stressTestResultReported'; readonly result: Readonly<Record<string, Readonly<Record<string, StressOpResult>>>> }
  | { readonly type: 'switchNicResultReported'; readonly result: boolean }
  | EffectResult
  | TimerFired;

export type ResetConfigOperation = keyof typeof CD_RESET_OPERATIONS;

/** ClusterD's PodGroup annotation values for the AI platform (docs/formats.md#job-knobs). */
export type ProcessRecoverStatus =
  | 'retry-success'
  | 'retry-failed'
  | 'recover-success'
  | 'recover-failed'
  | 'dump-success'
  | 'dump-failed'
  | 'exit-completed';

export type RecoveryCommandBody =
  /** reset-config-<job>: the named ClusterD operation (docs/rules.md#recover.reset-config-writes); the reconciler does read-modify-write. */
  | { readonly type: 'writeResetConfig'; readonly op: ResetConfigOperation; readonly rankIds?: readonly number[]; readonly restartFaultProcess?: boolean }
  | { readonly type: 'sendSignal'; readonly signal: ProcessManageSignal }
  | { readonly type: 'setPodGroupLabel'; readonly key: 'process-recover-enable'; readonly value: 'on' | 'pause' }
  | { readonly type: 'setPodGroupAnnotations'; readonly annotations: Readonly<Record<string, string>> }
  | { readonly type: 'labelPods'; readonly podRanks: readonly number[]; readonly key: 'fault-type'; readonly value: PodFaultTypeLabel }
  /** Delete the fault pods so that they are re-created elsewhere (Volcano's part in process mode, docs/rules.md#decision.process-level). */
  | { readonly type: 'replaceFaultPods'; readonly podRanks: readonly number[]; readonly reason: string }
  /** Recovery gave up: reschedule at pod or job level (docs/rules.md#decision.process-gives-up to #decision.job-level). */
  | { readonly type: 'escalateRescheduling'; readonly level: 'pod' | 'job'; readonly podRanks: readonly number[]; readonly reason: string }
  /**
   * Keep (hold=true) or stop keeping step-retry faults out of the scheduler view (docs/rules.md#decision.hidden-by-filter). For
   * policy/filters/step-retry-filter.ts: hold=true is the job's RecoverTime, a release with completed=true
   * its completion; completed=false (failure, timeout, reset) makes the faults visible again.
   */
  | { readonly type: 'setStepRetryHold'; readonly rankIds: readonly number[]; readonly hold: boolean; readonly completed?: boolean }
  /** Retry-only ReportProcessFault: feed back to the fault center as business-plane reports (docs/rules.md#recover.software-entry). */
  | { readonly type: 'forwardRetryFaults'; readonly faults: readonly { rankId: number; faultType: FaultType }[] }
  /** cluster-system/fault-job-info: the fault pods' SuperPod devices to force-release (docs/rules.md#recover.force-release). */
  | { readonly type: 'publishFaultJobInfo'; readonly podRanks: readonly number[]; readonly a5?: boolean }
  /** The job's fault-job-info entry goes, 10 s later (docs/rules.md#recover.fault-job-info-clear). */
  | { readonly type: 'clearFaultJobInfo' }
  /** End the job's signal stream with status OK (every reset that the client did not cause itself). */
  | { readonly type: 'closeSignalStream' }
  /** Send the O&M notify message on a notify stream (held until one is open); the outcome comes back as `omNotified`. */
  | { readonly type: 'notifyOm'; readonly kind: OmKind }
  /** One message for the O&M result stream (SubscribeStressTestResponse / SubscribeSwitchNicSignal), queued until read. */
  | { readonly type: 'omResponse'; readonly kind: OmKind; readonly msg: string }
  /** docs/rules.md#filter.stress-test: hide the stress-test codes of these nodes (on) or stop (off). */
  | { readonly type: 'setStressTestFilter'; readonly nodes: readonly string[]; readonly on: boolean }
  /** Node annotations (stress test found a fault: NodeHealthyStatus=UnHealthy). */
  | { readonly type: 'annotateNodes'; readonly nodes: readonly string[]; readonly annotations: Readonly<Record<string, string>> }
  /** A reset: ClusterD's controller context ends, and with it the notify and O&M result streams and their queued messages. */
  | { readonly type: 'endOmStreams' }
  | TimerCommandBody;

export type RecoveryCommand = RecoveryCommandBody & CommandMeta;

/** The fields of a recovery with nothing in flight: a new FSM and a reset one both start here. */
export function idleRecoveryFields() {
  return {
    faults: [],
    preExitRanks: [],
    agentStrategies: null,
    retryPath: false,
    retryHeld: [],
    inPlace: null,
    replacementRequested: [],
    current: '',
    scaleInWaitDone: false,
    scaleInRunning: false,
    schedule: 'idle',
    lastStatus: null,
    reports: { stopComplete: null, recoverStrategy: null, recoverStatus: null, stressResult: null, switchResult: null },
    om: null,
    platStrategy: '',
    platExchange: null,
  } satisfies Partial<RecoveryState>;
}
