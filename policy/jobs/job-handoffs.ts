/**
 * Eligibility of the two ClusterD-side FSMs this policy only hands work to (both owned elsewhere):
 * the process-level recovery FSM (docs/rules.md#recover.fsm, #recover.register, #recover.hardware-entry, #decision.process-level, #decision.process-gives-up) and the hot-switch FSM
 * (docs/rules.md#hotswitch.fsm, #hotswitch.entry, #decision.hot-switch).
 */
import type { FaultCause, JobFaultAggregate, JobFaultRank } from './job-aggregation.ts';
import type { JobAction, FsmFaultRank } from './job-decision-types.ts';
import { effectiveSubHealthyStrategy } from './job-fault-tasks.ts';
import { mostSerious } from '../../vocabulary/fault-types.ts';
import type { JobKnobsInput, JobPodView } from './job-view.ts';

/** Priority order of recover strategies (docs/rules.md#recover.register); lower index = tried first. */
export const RECOVER_STRATEGY_PRIORITY = ['retry', 'recover-in-place', 'recover', 'elastic-training', 'dump', 'exit'] as const;

/** The highest-priority configured recover strategy (unknown names ignored). */
export function firstRecoverStrategy(knobs: JobKnobsInput): string | undefined {
  const set = new Set(knobs.recoverStrategies ?? []);
  return RECOVER_STRATEGY_PRIORITY.find((s) => set.has(s));
}

/** Row 8's precondition: process-recover-enable=on, recover-strategy set, job registered (docs/rules.md#decision.order). */
export const processRecoveryConfigured = (knobs: JobKnobsInput, registered: boolean): boolean =>
  registered && knobs.processRecoverEnable === 'on' && firstRecoverStrategy(knobs) !== undefined;

const FSM_DROPPED_LEVELS: ReadonlySet<string> = new Set(['NotHandleFault', 'PreSeparateNPU', 'NormalNPU']);

/**
 * Causes the recovery FSM takes (docs/rules.md#recover.hardware-entry, #job.subscriber-levels, #job.node-not-ready): hardware causes only (software faults reach
 * it through ReportProcessFault, not from us); not NotReady nodes; not NotHandle/PreSeparate levels;
 * sub-health only for a SubHealthy job with graceExit whose first strategy is dump. Hidden causes
 * are included: the FSM sees faults hidden from the scheduler (docs/rules.md#filter.two-views).
 */
function fsmCause(c: FaultCause, agg: JobFaultAggregate, knobs: JobKnobsInput): boolean {
  if (c.origin === 'node-ready' || c.faultType === 'pod-failed' || c.faultType === 'process-exception') return false;
  if (c.level === undefined || FSM_DROPPED_LEVELS.has(c.level)) return false;
  if (c.level === 'SubHealthFault') {
    return agg.healthState === 'SubHealthy' && effectiveSubHealthyStrategy(knobs) === 'graceExit' && firstRecoverStrategy(knobs) === 'dump';
  }
  return true;
}

function toProcessRank(r: JobFaultRank, causes: readonly FaultCause[]): FsmFaultRank {
  const level = mostSerious(causes.flatMap((c) => (c.level === undefined ? [] : [c.level])));
  return {
    ...(r.podRank === undefined ? {} : { podRank: r.podRank }),
    pod: r.pod,
    ...(r.node === undefined ? {} : { node: r.node }),
    devices: [...new Set(causes.flatMap((c) => (c.device === undefined ? [] : [c.device])))].sort(),
    codes: [...new Set(causes.map((c) => c.code))].sort(),
    ...(level === undefined ? {} : { level }),
  };
}

/** The hand-off to the recovery FSM, or undefined when the FSM is not configured or nothing is eligible. */
export function processHandOff(agg: JobFaultAggregate, knobs: JobKnobsInput, registered: boolean): Extract<JobAction, { type: 'handOffProcessRecovery' }> | undefined {
  if (!processRecoveryConfigured(knobs, registered)) return undefined;
  const pods = new Map(agg.job.pods.map((p) => [p.uid, p]));
  const faultRanks: FsmFaultRank[] = [];
  for (const r of agg.ranks) {
    if (pods.get(r.pod.uid)?.terminating === true) continue;
    const causes = r.causes.filter((c) => fsmCause(c, agg, knobs));
    if (causes.length > 0) faultRanks.push(toProcessRank(r, causes));
  }
  return faultRanks.length === 0 ? undefined : { type: 'handOffProcessRecovery', faultRanks };
}

export const HOT_SWITCH_FRAMEWORKS: readonly string[] = ['pytorch', 'mindspore'];

export type HotSwitchVerdict =
  | { readonly kind: 'handOff'; readonly pod: JobPodView; readonly detail: string }
  | { readonly kind: 'wait' | 'skip'; readonly detail: string }
  | { readonly kind: 'downgrade'; readonly detail: string };

/**
 * docs/rules.md#hotswitch.entry: a SubHealthy job with hotSwitch, registered, PyTorch/MindSpore, at most `maxPods` faulty
 * pods, no switch running; faults on the rank-0 pod are ignored; one pod per cycle (lowest rank).
 * Non-PyTorch/MindSpore jobs and > maxPods faulty pods are downgraded to `ignore`.
 */
export function hotSwitchVerdict(
  knobs: JobKnobsInput,
  pods: readonly JobPodView[],
  subHealthPods: readonly JobPodView[],
  registered: boolean,
  downgraded: boolean,
  maxPods: number,
): HotSwitchVerdict {
  if (downgraded) return { kind: 'skip', detail: 'hot switch downgraded to ignore for this job' };
  if (!registered) return { kind: 'skip', detail: 'job not registered with the recovery service: hot switch unavailable' };
  if (!HOT_SWITCH_FRAMEWORKS.includes((knobs.framework ?? '').toLowerCase())) {
    return { kind: 'downgrade', detail: `framework ${knobs.framework ?? '(none)'} does not support hot switch: downgrade to ignore` };
  }
  if (pods.some((p) => p.inHotSwitchFlow === true || p.backup === true)) return { kind: 'wait', detail: 'a hot switch is already in progress' };
  const candidates = subHealthPods.filter((p) => p.rank !== 0);
  if (candidates.length > maxPods) {
    return { kind: 'downgrade', detail: `${candidates.length} sub-healthy pods > ${maxPods}: downgrade to ignore` };
  }
  const first = [...candidates].sort((a, b) => (a.rank ?? Number.MAX_SAFE_INTEGER) - (b.rank ?? Number.MAX_SAFE_INTEGER))[0];
  if (first === undefined) return { kind: 'skip', detail: 'only the rank-0 pod is sub-healthy: hot switch ignores it' };
  return { kind: 'handOff', pod: first, detail: `hot switch pod ${first.name} (rank ${first.rank ?? '?'})` };
}
