/**
 * The job as the rescheduling policy sees it: the PodGroup key, its pods (rank, node, NPUs, phase and
 * the labels/annotations that steer fault handling) and the knobs read from the PodGroup.
 *
 * These are *input* shapes. The controller adapts informer objects and the parsed knobs from
 * `schemas/job-knobs/` into them; nothing here reads the apiserver. The pod-level helpers only split
 * annotation strings (docs/formats.md#job-knobs) and never throw.
 */
import type { PodRef } from '../../vocabulary/job-decision-state.ts';
import type { InferenceCap } from './pod-level-cap.ts';

export type { PodRef };

/** Pod annotation: pod rank; rank 0 is the master (docs/formats.md#pod-contract). */
export const RANK_INDEX_ANNOTATION = 'hccl/rankIndex';
/** Pod annotation: NPUs actually allocated, comma-separated (e.g. `Ascend910-0,Ascend910-1`). */
export const ASCEND_REAL_ANNOTATION = 'huawei.com/AscendReal';
/** Pod label written by ClusterD: software | retry-fault | Separate | SubHealth. */
export const FAULT_TYPE_LABEL = 'fault-type';
/** Pod annotation written in external rescheduling mode; value `Unhealthy-<faultType>` (docs/rules.md#resched.external). */
export const POD_STATUS_ANNOTATION = 'huawei.com/pod-status';
/** Hot-switch pod annotations (docs/rules.md#operator.hot-switch-pods, #hotswitch.fsm). */
export const POD_TYPE_ANNOTATION = 'podType';
export const IN_HOT_SWITCH_FLOW_ANNOTATION = 'inHotSwitchFlow';
export const NEED_VOLCANO_OPE_ANNOTATION = 'needVolcanoOpe';

export type JobKind = 'vcjob' | 'acjob';
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type PodFaultTypeLabel = 'software' | 'retry-fault' | 'Separate' | 'SubHealth';


export interface JobPodView {
  readonly name: string;
  readonly uid: string;
  /** spec.nodeName; undefined while unscheduled. */
  readonly node?: string;
  /** `hccl/rankIndex`; undefined when absent or not an integer. */
  readonly rank?: number;
  /** `huawei.com/AscendReal`, split. */
  readonly npus: readonly string[];
  readonly phase: PodPhase;
  readonly ready: boolean;
  /** Any container last terminated with a non-zero exit code (docs/rules.md#resched.fault-tasks counts this as Failed). */
  readonly containerFailed?: boolean;
  /** metadata.deletionTimestamp is set. */
  readonly terminating?: boolean;
  readonly faultTypeLabel?: PodFaultTypeLabel;
  /** `podType=backup`: a hot-switch backup pod; it owns no rank of its own. */
  readonly backup?: boolean;
  readonly inHotSwitchFlow?: boolean;
  /** `needVolcanoOpe=delete` set by the hot-switch FSM. */
  readonly needVolcanoDelete?: boolean;
  /** Pod labelled as a worker replica: exempt from the rank-0 master rule (docs/rules.md#resched.master-rank). */
  readonly workerReplica?: boolean;
}

export interface JobView {
  /** `<ns>/<jobName>-<uid>` = `<ns>/<podGroupName>`; the Volcano JobID and our queue key. */
  readonly key: string;
  readonly namespace: string;
  /** The job's own name (vcjob/acjob metadata.name), used for `reset-config-<jobName>`. */
  readonly name: string;
  readonly uid: string;
  readonly kind: JobKind;
  readonly pods: readonly JobPodView[];
  /** PodGroup spec.minMember; defaults to the number of non-backup pods. */
  readonly minAvailable?: number;
}

export type FaultScheduling = 'grace' | 'force' | 'off' | 'external-grace' | 'external-force';
export type SubHealthyStrategy = 'ignore' | 'graceExit' | 'forceExit' | 'hotSwitch';
export type ProcessRecoverEnable = 'on' | 'pause' | 'off';

/**
 * The knobs this policy needs, a subset of `schemas/job-knobs/` JobKnobs (read from the PodGroup,
 * docs/formats.md#job-knobs). Absent values take the spec defaults noted on each field.
 */
export interface JobKnobsInput {
  /** `fault-scheduling`; absent = off (never reschedule, docs/rules.md#decision.rescheduling-off). */
  readonly faultScheduling?: FaultScheduling;
  /** `pod-rescheduling=on`. */
  readonly podRescheduling?: boolean;
  /** `fault-retry-times` 0-100; 0/absent disables unconditional retry. */
  readonly faultRetryTimes?: number;
  /** `subHealthyStrategy`; absent or unknown = ignore. */
  readonly subHealthyStrategy?: SubHealthyStrategy;
  /** `huawei.com/recover_policy_path`; `pod` = never escalate beyond pod level. */
  readonly recoverPolicyPath?: string;
  /** An OME or MindIE controller/coordinator job: never beyond pod level (docs/rules.md#resched.pod-level-cap). */
  readonly inferenceCap?: InferenceCap;
  /** `process-recover-enable`; absent = off. */
  readonly processRecoverEnable?: ProcessRecoverEnable;
  /** `recover-strategy` CSV, parsed. */
  readonly recoverStrategies?: readonly string[];
  /** PG annotation `ProcessRecoverStrategy` is present (AI platform mode, docs/rules.md#resched.platform-mode). */
  readonly platformMode?: boolean;
  /** `framework` label: pytorch | mindspore | tensorflow. */
  readonly framework?: string;
  /** Placement annotations that add widening steps before job level (docs/rules.md#resched.block-escalation). */
  readonly blocks?: BlockKnobs;
}

/** `huawei.com/schedule_policy`, `sp-block`, `ra-block` (NPUs) and the `level1` of `huawei.com/affinity-config` (pods). */
export interface BlockKnobs {
  readonly schedulePolicy?: string;
  readonly spBlockNpus?: number;
  readonly raBlockNpus?: number;
  readonly affinityLevel1?: number;
}

/** `ns/<jobName>-<uid>`, the key of vcjob-fault-npu-cm / job-reschedule-reason (docs/formats.md#vcjob-fault-npu-cm, #job-id). */
export const jobKeyOf = (namespace: string, jobName: string, uid: string): string => `${namespace}/${jobName}-${uid}`;

export const podRefOf = (p: JobPodView): PodRef =>
  p.node === undefined ? { name: p.name, uid: p.uid } : { name: p.name, uid: p.uid, node: p.node };

/** `hccl/rankIndex` -> integer rank, or undefined for absent/garbage values. */
export function parseRankIndex(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d{1,9}\s*$/.test(value)) return undefined;
  return Number.parseInt(value, 10);
}

/** `huawei.com/AscendReal` CSV -> trimmed, non-empty NPU names. */
export function parseAscendReal(value: string | undefined): readonly string[] {
  if (value === undefined) return [];
  return value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

const FAULT_TYPE_LABELS: readonly string[] = ['software', 'retry-fault', 'Separate', 'SubHealth'];

/** Raw pod metadata as the controller has it; adapted into a JobPodView. */
export interface PodMetaInput {
  readonly name: string;
  readonly uid: string;
  readonly nodeName?: string;
  readonly phase?: string;
  readonly ready?: boolean;
  readonly containerFailed?: boolean;
  readonly terminating?: boolean;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly workerReplica?: boolean;
  /** The NPUs the pod counts as holding, when judged already (policy/jobs/npu-claims.ts); else AscendReal. */
  readonly npus?: readonly string[];
}

const PHASES: readonly string[] = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'];

export function podViewFromMeta(m: PodMetaInput): JobPodView {
  const a = m.annotations ?? {};
  const l = m.labels ?? {};
  const label = l[FAULT_TYPE_LABEL];
  const rank = parseRankIndex(a[RANK_INDEX_ANNOTATION]);
  return {
    name: m.name,
    uid: m.uid,
    ...(m.nodeName ? { node: m.nodeName } : {}),
    ...(rank === undefined ? {} : { rank }),
    npus: m.npus ?? parseAscendReal(a[ASCEND_REAL_ANNOTATION]),
    phase: (PHASES.includes(m.phase ?? '') ? m.phase : 'Unknown') as PodPhase,
    ready: m.ready ?? false,
    containerFailed: m.containerFailed ?? false,
    terminating: m.terminating ?? false,
    ...(label !== undefined && FAULT_TYPE_LABELS.includes(label) ? { faultTypeLabel: label as PodFaultTypeLabel } : {}),
    backup: (a[POD_TYPE_ANNOTATION] ?? l[POD_TYPE_ANNOTATION]) === 'backup',
    inHotSwitchFlow: a[IN_HOT_SWITCH_FLOW_ANNOTATION] === 'true',
    needVolcanoDelete: a[NEED_VOLCANO_OPE_ANNOTATION] === 'delete',
    workerReplica: m.workerReplica ?? false,
  };
}

/** Pods that hold ranks: not hot-switch backups. */
export const rankPods = (job: JobView): readonly JobPodView[] => job.pods.filter((p) => p.backup !== true);

/** The nodes the job's pods run on, each once (backups included: their node's faults are the job's too). */
export const jobNodes = (job: Pick<JobView, 'pods'>): string[] => [...new Set(job.pods.flatMap((p) => (p.node === undefined ? [] : [p.node])))];

/** The job uses NPUs (the rank-0 rule only applies to NPU jobs, docs/rules.md#resched.master-rank). */
export const jobUsesNpu = (job: JobView): boolean => job.pods.some((p) => p.npus.length > 0);

/** docs/rules.md#resched.fault-tasks: Failed phase or a container that last terminated non-zero. */
export const podFailed = (p: JobPodView): boolean => p.phase === 'Failed' || p.containerFailed === true;

/**
 * NPU name -> comparable id. Names from device-info and AscendReal share a prefix per node
 * (`Ascend910-3`, or `npu-3` on newer chips); compare by the trailing index when both have one.
 */
export function npuId(name: string): string {
  const m = /-(\d+)$/.exec(name);
  return m?.[1] ?? name;
}
