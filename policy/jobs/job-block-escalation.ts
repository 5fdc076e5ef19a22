/**
 * The widening steps a pod-level restart takes before job level when its replacements stay pending
 * (docs/rules.md#resched.block-escalation): an A5 rack block (`ra-block`, 3 sessions), a logical
 * super-pod (`sp-block`, 6 sessions) or a multilevel job's level-1 group (`level1`, 6 sessions). Each
 * step deletes the pods that share a block with the fault pods; a block that holds rank 0 makes the
 * restart job level (docs/rules.md#resched.master-rank). Pure.
 *
 * Blocks are consecutive ranks: the plugin lays a job's logical super-pods (and rack blocks) out by
 * rank (`rank / block`, component/ascend-for-volcano/internal/npu/ascend910/ascend910a3/superpod/frame.go
 * getSuperPodRanks; `rank - rank % TpBlock`, component/ascend-for-volcano/internal/rescheduling/job_v2.go
 * inTheSameTpBlock). Block sizes in pods: NPUs of the block / NPUs of one pod (the plugin divides by
 * the node's NPU count; a multi-node super-pod job takes whole nodes, so the two agree).
 */
import type { ActiveRestart, BlockStep } from '../../vocabulary/job-decision-state.ts';
import { jobUsesNpu, rankPods, type BlockKnobs, type JobPodView, type JobView } from './job-view.ts';

export type { BlockStep };

/** The A5 placement policy: rack then super-pod steps, each only when its annotation is set. */
export const A5_SUPER_POD_POLICY = 'chip8-node8-ra64-sp';
/** Placement policies of super-pod jobs (the plugin's IsSuperPodJob); `sp-block` alone also makes one. */
export const SUPER_POD_POLICIES: readonly string[] = ['chip2-node16-sp', 'chip2-node8-sp', 'chip8-node8-sp', A5_SUPER_POD_POLICY];
export const MULTILEVEL_POLICY = 'multilevel';
/** Sessions after which each step runs (component/ascend-for-volcano/internal/rescheduling/type.go tpPendingTimes; common/util/constants.go SpPendingTimes). */
export const STEP_SESSIONS: Readonly<Record<BlockStep, number>> = { rack: 3, 'super-pod': 6, level1: 6 };

export interface BlockStage {
  readonly step: BlockStep;
  /** Pods per block (consecutive ranks); Infinity = the whole job. */
  readonly podsPerBlock: number;
}

export interface BlockStagesResult {
  readonly stages: readonly BlockStage[];
  /** Why a configured step was left out (logged in the decision's reasons). */
  readonly notes: readonly string[];
}

/** Pods per block of `npus` NPUs when a pod holds `podNpus`; undefined when the plugin would refuse the value. */
function podsOf(npus: number, podNpus: number, jobNpus: number): number | undefined {
  if (npus >= jobNpus) return Infinity;
  if (npus < podNpus) return undefined;
  return npus % podNpus === 0 ? npus / podNpus : undefined;
}

/**
 * The steps of a job, in order. `podNpus` = NPUs one pod holds, `jobNpus` = the job's total
 * (an absent `sp-block` on a super-pod job is the whole job, component/ascend-for-volcano/plugin/job.go setSpBlock).
 */
export function blockStagesOf(b: BlockKnobs | undefined, podNpus: number, jobNpus: number): BlockStagesResult {
  if (b === undefined || podNpus <= 0) return { stages: [], notes: [] };
  const notes: string[] = [];
  const stages: BlockStage[] = [];
  const add = (step: BlockStep, npus: number | undefined, what: string): void => {
    if (npus === undefined) return;
    const n = podsOf(npus, podNpus, jobNpus);
    if (n === undefined) notes.push(`${what}=${npus} is not a multiple of ${podNpus} NPUs per pod: no ${step} step`);
    else if (n > 1) stages.push({ step, podsPerBlock: n });
  };
  const policy = b.schedulePolicy;
  if (policy === A5_SUPER_POD_POLICY) {
    if (b.spBlockNpus === undefined) {
      // Without `sp-block` the plugin keeps every pod but the fault pods until job level, rack block or
      // not (component/ascend-for-volcano/internal/rescheduling/job_v2.go podReschedulingSkipTask, isSuperPod).
      if (b.raBlockNpus !== undefined) notes.push('A5 job with ra-block but no sp-block: no rack step (the plugin widens an A5 job only with sp-block)');
    } else {
      // ra-block rounds up to whole nodes (component/ascend-for-volcano/internal/npu/policy/chip8node8ra64sp/job.go calculateTpBlockAndCheck).
      if (b.raBlockNpus !== undefined) add('rack', Math.ceil(b.raBlockNpus / podNpus) * podNpus, 'ra-block');
      add('super-pod', b.spBlockNpus, 'sp-block');
    }
  } else if (policy === MULTILEVEL_POLICY) {
    if (b.affinityLevel1 === undefined) notes.push('multilevel job without a level1 affinity block: no level1 step');
    else if (b.affinityLevel1 > 1) stages.push({ step: 'level1', podsPerBlock: b.affinityLevel1 });
  } else if ((policy !== undefined && SUPER_POD_POLICIES.includes(policy)) || (policy === undefined && b.spBlockNpus !== undefined)) {
    add('super-pod', b.spBlockNpus ?? jobNpus, 'sp-block');
  }
  return { stages, notes };
}

/** The stage due after `waitedMs` pending, if one is due and not taken yet. */
export function dueStage(stages: readonly BlockStage[], taken: readonly BlockStep[], waitedMs: number, stepMs: Readonly<Record<BlockStep, number>>): BlockStage | undefined {
  return stages.find((s) => !taken.includes(s.step) && waitedMs >= stepMs[s.step]);
}

/** ms until the next untaken stage is due; undefined when none is left. */
export function nextStageInMs(stages: readonly BlockStage[], taken: readonly BlockStep[], waitedMs: number, stepMs: Readonly<Record<BlockStep, number>>): number | undefined {
  const left = stages.filter((s) => !taken.includes(s.step)).map((s) => stepMs[s.step] - waitedMs);
  return left.length === 0 ? undefined : Math.max(0, Math.min(...left));
}

export interface BlockTargets {
  /** Placed, live pods sharing a block with a fault rank, not already targets. */
  readonly pods: readonly JobPodView[];
  /** One of them is rank 0 of an NPU job (not a worker replica): the restart goes job level. */
  readonly master: boolean;
}

/** The pods a step deletes: those in the blocks of the restart's fault ranks. */
export function blockTargets(stage: BlockStage, job: JobView, a: Pick<ActiveRestart, 'targets' | 'reasonTasks'>): BlockTargets {
  const blockOf = (rank: number): number => (stage.podsPerBlock === Infinity ? 0 : Math.floor(rank / stage.podsPerBlock));
  const faultBlocks = new Set(a.reasonTasks.map((t) => Number.parseInt(t.NodeRankIndex, 10)).filter((r) => Number.isInteger(r) && r >= 0).map(blockOf));
  const taken = new Set(a.targets.map((t) => t.uid));
  const pods = rankPods(job).filter((p) => p.rank !== undefined && p.node !== undefined && p.terminating !== true
    && !taken.has(p.uid) && faultBlocks.has(blockOf(p.rank)));
  const master = jobUsesNpu(job) && pods.some((p) => p.rank === 0 && p.workerReplica !== true);
  return { pods, master };
}

/** NPUs one pod of the job holds (the largest count among its placed pods) and the job's total. */
export function jobNpuShape(job: JobView, minAvailable: number): { podNpus: number; jobNpus: number } {
  const podNpus = Math.max(0, ...rankPods(job).map((p) => p.npus.length));
  return { podNpus, jobNpus: podNpus * Math.max(minAvailable, rankPods(job).length) };
}
