/**
 * The job rescheduling decision's persisted vocabulary: the per-job state the policy decides against
 * (restart in progress, retry budget, acted decision ids) and the actions a decision records before
 * they are carried out. schemas/job-state encodes these, policy/ produces them and actions/ executes
 * them, so they live below all three.
 */
import type { NpuFaultLevel } from './fault-types.ts';

/** The identity of a pod an action targets; deletes carry the UID as a precondition. */
export interface PodRef {
  readonly name: string;
  readonly uid: string;
  readonly node?: string;
}

/** The task fault types Volcano writes into job-reschedule-reason (docs/formats.md#job-reschedule-reason). */
export type RescheduleFaultType =
  | 'NodeUnhealthy'
  | 'CardUnhealthy'
  | 'CardNetworkUnhealthy'
  | 'SubHealthFault'
  | 'RelationFaultSeparate'
  | 'pod-failed'
  | 'process-exception';

/** The unconditional retry budget (`fault-retry-times`; policy/jobs/job-retry-budget.ts spends it). */
export interface RetryBudget {
  /** Job UID the budget belongs to (the `UUID` of the wire entry). */
  readonly uid: string;
  /** Restarts left (`Times`). */
  readonly times: number;
}

export type DecisionKind = 'none' | 'job' | 'pod' | 'process' | 'hotSwitch' | 'subHealthAction' | 'external';

/**
 * Where the job is in its restart lifecycle (docs/rules.md#resched.lifecycle):
 * idle = no restart running; start = a restart begins; wait = restart running, nothing to do now;
 * force = grace period over, force-delete what is left; escalate = pod level widened to job level;
 * extend = more fault pods joined a running pod-level restart; complete = restart succeeded;
 * expire = the restart was dropped after the fault-job lifetime.
 */
export type DecisionPhase = 'idle' | 'start' | 'wait' | 'force' | 'escalate' | 'widen' | 'extend' | 'complete' | 'expire';

/** A widening step of a pod-level restart before job level (docs/rules.md#resched.block-escalation). */
export type BlockStep = 'rack' | 'super-pod' | 'level1';

/** Rows of docs/rules.md#decision.order. */
export type B6Row = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12;

/** One element of Volcano's eviction reason (JSON of fault reasons, docs/rules.md#resched.job-grace); encoded by actions/. */
export interface EvictionReason {
  readonly podName: string;
  readonly nodeName: string;
  readonly rank: string;
  readonly faultType: RescheduleFaultType;
  readonly faultCode: string;
  readonly faultLevel: string;
}

/** One ReasonOfTask entry of job-reschedule-reason (docs/formats.md#job-reschedule-reason); field names as on the wire. */
export interface RescheduleTaskReason {
  readonly RescheduleReason: RescheduleFaultType;
  readonly PodName: string;
  readonly NodeName: string;
  readonly NodeRankIndex: string;
}

/** What the process-level FSM needs per fault rank (JobFaultInfo of docs/rules.md#job.fault-ranks, reduced). */
export interface FsmFaultRank {
  readonly podRank?: number;
  readonly pod: PodRef;
  readonly node?: string;
  readonly devices: readonly string[];
  readonly codes: readonly string[];
  readonly level?: NpuFaultLevel;
}

/**
 * Commands for `actions/`, executed in list order. Every pod deletion carries the pod UID as a
 * precondition, so a replay against a replaced pod is a harmless 409/404.
 */
export type JobAction =
  /** Graceful delete (the pod's own terminationGracePeriodSeconds); Volcano's grace eviction (docs/rules.md#resched.job-grace). */
  | { readonly type: 'evictPods'; readonly pods: readonly PodRef[]; readonly reasons: readonly EvictionReason[] }
  /** Delete with gracePeriodSeconds 0 (docs/rules.md#resched.job-force); batches of 200 are the action's business. */
  | { readonly type: 'forceDeletePods'; readonly pods: readonly PodRef[]; readonly reasons: readonly EvictionReason[] }
  /** Set `huawei.com/pod-status=<value>` (value `Unhealthy-<faultType>`, docs/rules.md#resched.external). */
  | { readonly type: 'annotatePodStatus'; readonly pod: PodRef; readonly value: string }
  /** reset-config-<jobName> `GracefulExit` (docs/rules.md#resched.sub-health, #recover.reset-config-writes). */
  | { readonly type: 'setGracefulExit'; readonly value: 0 | 1 }
  /**
   * reset-config-<jobName>: RankList=[] and RetryTime+1 once a pod-level replacement is placed (`podLevel`), RetryTime 0
   * once the whole job of a pod-rescheduling job is placed again (docs/rules.md#resched.pod-level-reset-config).
   */
  | { readonly type: 'bumpResetConfigRetryTime'; readonly podLevel: boolean }
  /** Prepend a job-reschedule-reason record (encoding, 10-record cap and trim: schemas/job-reschedule-reason). */
  | { readonly type: 'recordRescheduleReason'; readonly atMs: number; readonly tasks: readonly RescheduleTaskReason[] }
  /** Hand the fault ranks to the process-level recovery FSM (docs/rules.md#recover.fsm; owned elsewhere). */
  | { readonly type: 'handOffProcessRecovery'; readonly faultRanks: readonly FsmFaultRank[] }
  /** Hand one sub-healthy pod to the hot-switch FSM (docs/rules.md#hotswitch.fsm; owned elsewhere). */
  | { readonly type: 'handOffHotSwitch'; readonly pod: PodRef; readonly podRank?: number };

export type RestartScope = 'pod' | 'job' | 'external';
export type RestartMode = 'grace' | 'force' | 'annotate';
/** Why a pod-level restart may not widen to job level; undefined = it may. */
export type EscalationBlock = 'recover_policy_path=pod' | 'inference-job' | 'process-recover-enable=on' | 'hot-switch' | 'not-pod-level';

/** A restart in progress (Volcano's FaultJob with DeleteExecutedFlag=true). */
export interface ActiveRestart {
  readonly decisionId: string;
  readonly kind: DecisionKind;
  readonly row: B6Row;
  readonly scope: RestartScope;
  readonly mode: RestartMode;
  readonly startedMs: number;
  /** Pods (by UID) that must be gone or replaced for the restart to count. */
  readonly targets: readonly PodRef[];
  /** Pods needed allocated for success (PodGroup minMember or the job size at start). */
  readonly minAvailable: number;
  /** Job-level reason (docs/rules.md#resched.job-reason); `pod-failed` restarts consume the retry budget. */
  readonly jobReason: RescheduleFaultType;
  /** Consumes the retry budget on success. */
  readonly countsAgainstBudget: boolean;
  /** Only sub-health faults and GracefulExit=1 was written: write 0 back on success. */
  readonly resetGracefulExit: boolean;
  /** Pod-level restart of a non-process job: bump reset-config RetryTime when placed. */
  readonly bumpRetryTimeOnSuccess: boolean;
  readonly escalationBlock?: EscalationBlock;
  readonly pendingSinceMs?: number;
  /** Pending time counted before the last widening step (the count pauses while its pods are deleted). */
  readonly pendingCarryMs?: number;
  /** Widening steps already taken (docs/rules.md#resched.block-escalation). */
  readonly widened?: readonly BlockStep[];
  readonly forcedAtMs?: number;
  readonly reasonTasks: readonly RescheduleTaskReason[];
  readonly evictionReasons: readonly EvictionReason[];
}

/** Per job UID; the controller persists it (e.g. in our own ConfigMap) and passes it back. */
export interface JobRescheduleState {
  readonly jobUid: string;
  /** Restarts started under this UID; part of every decision id. */
  readonly generation: number;
  readonly retry?: RetryBudget;
  readonly active?: ActiveRestart;
  /** Decision ids already acted on, newest last, capped (job-decision-id.ts). */
  readonly acted: readonly string[];
  /** Hot switch downgraded to `ignore` for this job (docs/rules.md#hotswitch.entry, #hotswitch.failure; persisted, unlike ClusterD). */
  readonly hotSwitchDowngraded?: boolean;
}
