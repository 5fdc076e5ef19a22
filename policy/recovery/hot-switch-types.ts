/**
 * Types of the hot-switch FSM (docs/rules.md#hotswitch.fsm, #hotswitch.entry, #hotswitch.failure). Plain serialisable data.
 */
import type { SubHealthyStrategy } from '../jobs/job-view.ts';
import type { Awaiting, CommandMeta, EffectResult, FsmTimer, TimerCommandBody, TimerFired } from './recovery-kit.ts';
import type { ProcessManageSignal } from '../../vocabulary/process-manage-signal.ts';

/** Pod annotations of the hot-switch handshake (docs/formats.md#pod-contract, docs/rules.md#operator.hot-switch-pods). */
export const HOT_SWITCH_ANNOTATION = {
  inHotSwitchFlow: 'inHotSwitchFlow',
  needOperatorOpe: 'needOperatorOpe',
  needVolcanoOpe: 'needVolcanoOpe',
  podType: 'podType',
  backupSourcePodName: 'backupSourcePodName',
  backupNewPodName: 'backupNewPodName',
} as const;

/** ClusterD state names (getHotSwitchRules). */
export const HOT_SWITCH_PHASES = [
  'INIT',
  'notifyPrepareHotSwitchState',
  'WaitNewPodState',
  'WaitNotifyPodRunningResultState',
  'WaitNotifyPodFailedResultState',
  'WaitReportPauseResultState',
  'NotifyStopJobState',
  'WaitOldPodDeletedState',
  'WaitNotifyRestartTrainResultState',
  'WaitReportRestartTrainResultState',
] as const;
export type HotSwitchPhase = (typeof HOT_SWITCH_PHASES)[number];

export type HotSwitchFsmEvent =
  | 'BeginHotSwitchEvent'
  | 'notifySuccess'
  | 'notifyFail'
  | 'NewPodRunningEvent'
  | 'NewPodTimeoutEvent'
  | 'receiveTimeout'
  | 'ExitEvent'
  | 'MigrationEvent'
  | 'OldPodDeletedEvent'
  | 'RestartSuccessEvent'
  | 'RestartFaildEvent';

export const HOT_SWITCH_TIMER = {
  newPod: 'newPod', // 1 min for the backup pod to be Running
  report: 'report', // 15 min for the pause report, 15 min for the restart report
  oldPodDeleted: 'oldPodDeleted', // guard: not in ClusterD, see hot-switch-fsm.ts
} as const;

export interface HotSwitchTimings {
  newPodRunningMs: number;
  reportMs: number;
  oldPodDeleteMs: number;
}

export interface HotSwitchConfig {
  jobId: string;
  /** `framework` label: only pytorch and mindspore can hot switch. */
  framework: string;
  subHealthyStrategy: SubHealthyStrategy;
  /** We are the rescheduler (Volcano's role): delete pods ourselves instead of `needVolcanoOpe=delete`. */
  holdsReschedulingRole: boolean;
  /** More distinct faulty pods than this -> downgrade to ignore (docs/rules.md#hotswitch.entry: 10). */
  maxFaultPods: number;
}

export interface HotSwitchPod {
  name: string;
  uid: string;
  /** `hccl/rankIndex` (a backup pod carries the rank of its source). */
  podRank: number;
  phase: string;
  annotations: Record<string, string>;
}

export interface FaultyPod {
  podName: string;
  podRank: number;
  /** Every rank of the pod (ClusterD marks them all faulty: normalFaultAssociateSameNodeRank). */
  rankIds: number[];
}

export type HotSwitchNext = { readonly ev: HotSwitchFsmEvent };

export interface HotSwitchState {
  kind: 'hotSwitch';
  version: 1;
  config: HotSwitchConfig;
  timings: HotSwitchTimings;
  phase: HotSwitchPhase;
  /** Hot switch disabled for this job (ClusterD keeps this in memory only; we persist it). */
  downgraded: boolean;
  faultPod: (FaultyPod & { uid: string }) | null;
  backupPodName: string;
  uuid: string;
  uuidSeq: number;
  nextCommandId: number;
  awaiting: Awaiting<HotSwitchNext> | null;
  timers: FsmTimer[];
  pods: HotSwitchPod[];
  reports: { pause: string[] | null; restart: { code: number; strategy: string } | null };
}

export type HotSwitchEvent =
  /** The job is SubHealthy: its faulty pods this cycle (docs/rules.md#hotswitch.entry). */
  | { readonly type: 'subHealthFault'; readonly faultyPods: readonly FaultyPod[]; readonly recoveryIdle: boolean }
  | { readonly type: 'podsObserved'; readonly pods: readonly HotSwitchPod[] }
  | { readonly type: 'recoverStrategyReported'; readonly strategies: readonly string[] }
  | { readonly type: 'recoverStatusReported'; readonly code: number; readonly strategy: string }
  /**
   * A signal-stream subscription. `resumed`: the first one of a job whose state was restored after a
   * restart or a failover (its TaskD reconnecting), which continues the FSM (docs/rules.md#recover.resume).
   */
  | { readonly type: 'clientSubscribed'; readonly resumed?: boolean }
  | { readonly type: 'streamClosed' }
  | { readonly type: 'configChanged'; readonly config: Partial<HotSwitchConfig> }
  | EffectResult
  | TimerFired;

export type HotSwitchCommandBody =
  | { readonly type: 'sendSignal'; readonly signal: ProcessManageSignal }
  | { readonly type: 'annotatePod'; readonly podName: string; readonly set: Readonly<Record<string, string>>; readonly remove: readonly string[] }
  | { readonly type: 'labelPod'; readonly podName: string; readonly key: 'fault-type'; readonly value: 'SubHealth' }
  | { readonly type: 'deletePod'; readonly podName: string; readonly uid: string; readonly reason: string }
  | { readonly type: 'escalateRescheduling'; readonly level: 'job'; readonly reason: string }
  /** Persist `subHealthyStrategy` downgraded to ignore (e.g. a PodGroup annotation) so restarts keep it. */
  | { readonly type: 'persistDowngrade'; readonly subHealthyStrategy: 'ignore'; readonly reason: string }
  /** ClusterD's reset at the end of a hot switch: reset-config cleared, the client's stream ended. */
  | { readonly type: 'writeResetConfig'; readonly op: 'clear'; readonly rankIds?: readonly number[]; readonly restartFaultProcess?: boolean }
  | { readonly type: 'closeSignalStream' }
  | TimerCommandBody;

export type HotSwitchCommand = HotSwitchCommandBody & CommandMeta;
