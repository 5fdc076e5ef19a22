/**
 * The per-job restart lifecycle (docs/rules.md#resched.lifecycle) around the docs/rules.md#decision.order table: the one entry point
 * `decideJob(input) -> { state, decision }`. Pure; time comes in as `nowMs`, timers go out as
 * `requeueAfterMs` computed from timestamps in the persisted state (docs/CONVENTIONS.md#reconcilers).
 *
 * idle --fault (docs/rules.md#decision.order plan with a restart)--> active(start)
 * active: all targets gone/replaced and >= minAvailable pods allocated --> complete (budget -1 if
 *         pod-failed; GracefulExit back to 0 after pure sub-health; reset-config RetryTime+1 after pod level,
 *         0 after a job-level restart of a pod-rescheduling job)
 *         grace and not restarted after grace-over-time --> force-delete what is left (once)
 *         pod level, targets gone, replacements pending >= pendingEscalationMs --> escalate to job level
 *         new fault pods outside the targets --> extend (same scope) or escalate (plan says job level)
 *         300 s + grace-over-time after start --> dropped (Volcano's fault-job cache lifetime), re-evaluated
 * A different job UID starts from a fresh state (docs/rules.md#resched.fault-job-cache: a job whose owner UID changed is new).
 */
import type { JobFaultAggregate } from './job-aggregation.ts';
import {
  DEFAULT_FAULT_JOB_BASE_LIFETIME_MS, DEFAULT_GRACE_OVER_TIME_MS,
  type ActiveRestart, type JobAction, type JobDecision, type JobDecisionConfig, type JobRescheduleState, type ReasonStep,
} from './job-decision-types.ts';
import { DEFAULT_ACTED_HISTORY_CAP, decisionIdOf } from './job-decision-id.ts';
import { planJobFaults, type FaultPlan, type RestartPlan } from './job-decision.ts';
import { blockStagesOf, blockTargets, dueStage, jobNpuShape, nextStageInMs, STEP_SESSIONS, type BlockStage, type BlockStep } from './job-block-escalation.ts';
import { DEFAULT_POD_ESCALATION_PENDING_MS, DEFAULT_RACK_ESCALATION_MS, DEFAULT_SUPER_POD_ESCALATION_MS, evaluatePending } from './job-pending-escalation.ts';
import { evictionReasons, rescheduleTaskReasons } from './job-reschedule-inputs.ts';
import { consumeRetry, syncRetryBudget } from './job-retry-budget.ts';
import { podRefOf, rankPods, type JobKnobsInput, type JobPodView, type JobView, type PodRef } from './job-view.ts';
import { RULE } from '../../vocabulary/rule-ids.ts';

export const DEFAULT_JOB_DECISION_CONFIG: JobDecisionConfig = {
  graceOverTimeMs: DEFAULT_GRACE_OVER_TIME_MS,
  pendingEscalationMs: DEFAULT_POD_ESCALATION_PENDING_MS,
  rackEscalationMs: DEFAULT_RACK_ESCALATION_MS,
  superPodEscalationMs: DEFAULT_SUPER_POD_ESCALATION_MS,
  faultJobBaseLifetimeMs: DEFAULT_FAULT_JOB_BASE_LIFETIME_MS,
  hotSwitchMaxPods: 10,
  actedHistoryCap: DEFAULT_ACTED_HISTORY_CAP,
};

export interface JobDecisionInput {
  readonly aggregate: JobFaultAggregate;
  readonly knobs: JobKnobsInput;
  /** The persisted state of this job (any UID; a mismatch starts fresh). */
  readonly state: JobRescheduleState | undefined;
  readonly nowMs: number;
  /** TaskD/MindIO registered the job with our Recover service (docs/rules.md#decision.hot-switch, #decision.process-level). */
  readonly registered?: boolean;
  readonly config?: Partial<JobDecisionConfig>;
}

export interface JobDecisionOutput {
  readonly state: JobRescheduleState;
  readonly decision: JobDecision;
}

export const initialJobState = (jobUid: string): JobRescheduleState => ({ jobUid, generation: 0, acted: [] });

/** The hot-switch FSM failed: the job's strategy is `ignore` from now on (docs/rules.md#hotswitch.failure). */
export const downgradeHotSwitch = (state: JobRescheduleState): JobRescheduleState => ({ ...state, hotSwitchDowngraded: true });

const step = (stage: ReasonStep['stage'], detail: string): ReasonStep => ({ stage, detail });
const minDefined = (...xs: (number | undefined)[]): number | undefined => {
  const ds = xs.filter((x): x is number => x !== undefined);
  return ds.length === 0 ? undefined : Math.max(0, Math.min(...ds));
};

/** Nodes whose pods cannot finish a graceful termination (NotReady/missing): force at once (docs/rules.md#resched.job-grace). */
const unreachableNodes = (agg: JobFaultAggregate): ReadonlySet<string> =>
  new Set(agg.ranks.flatMap((r) => r.causes.filter((c) => c.origin === 'node-ready' && c.node !== undefined).map((c) => c.node as string)));

function deleteActions(targets: readonly PodRef[], mode: 'grace' | 'force', unreachable: ReadonlySet<string>, reasons: ActiveRestart['evictionReasons']): JobAction[] {
  const forced = mode === 'force' ? [...targets] : targets.filter((p) => p.node !== undefined && unreachable.has(p.node));
  const evicted = mode === 'force' ? [] : targets.filter((p) => !forced.includes(p));
  const out: JobAction[] = [];
  if (forced.length > 0) out.push({ type: 'forceDeletePods', pods: forced, reasons });
  if (evicted.length > 0) out.push({ type: 'evictPods', pods: evicted, reasons });
  return out;
}

function startActions(r: RestartPlan, plan: FaultPlan, agg: JobFaultAggregate, nowMs: number): JobAction[] {
  const out: JobAction[] = [];
  if (plan.handOff !== undefined) out.push(plan.handOff);
  if (r.gracefulExit) out.push({ type: 'setGracefulExit', value: 1 });
  const targets = r.targets.map(podRefOf);
  if (r.scope === 'external') {
    const typeOf = new Map(r.tasks.map((t) => [t.pod.uid, t.faultType]));
    for (const p of targets) out.push({ type: 'annotatePodStatus', pod: p, value: `Unhealthy-${typeOf.get(p.uid) ?? 'pod-failed'}` });
    return out;
  }
  out.push(...deleteActions(targets, r.mode === 'force' ? 'force' : 'grace', unreachableNodes(agg), evictionReasons(r.tasks)));
  out.push({ type: 'recordRescheduleReason', atMs: nowMs, tasks: rescheduleTaskReasons(r.tasks) });
  return out;
}

interface Ctx {
  readonly input: JobDecisionInput;
  readonly cfg: JobDecisionConfig;
  readonly job: JobView;
  readonly nowMs: number;
}

function decision(ctx: Ctx, d: Omit<JobDecision, 'jobKey' | 'jobUid'>): JobDecision {
  return { jobKey: ctx.job.key, jobUid: ctx.job.uid, ...d };
}

function fresh(ctx: Ctx, state: JobRescheduleState, prefix: readonly ReasonStep[]): JobDecisionOutput {
  const { input, cfg, job, nowMs } = ctx;
  const plan = planJobFaults({
    aggregate: input.aggregate, knobs: input.knobs, nowMs, registered: input.registered ?? false,
    ...(state.retry ? { retry: state.retry } : {}), hotSwitchDowngraded: state.hotSwitchDowngraded === true, hotSwitchMaxPods: cfg.hotSwitchMaxPods,
  });
  const s0 = plan.downgradeHotSwitch === true ? downgradeHotSwitch(state) : state;
  const reasons = [...prefix, ...plan.reasons];
  const r = plan.restart;
  if (r === undefined) {
    const stepName = plan.handOff === undefined ? 'none' : 'handoff';
    return {
      state: s0,
      decision: decision(ctx, {
        decisionId: decisionIdOf(job.uid, s0.generation, stepName, plan.fingerprint), kind: plan.kind,
        phase: prefix.length > 0 ? 'expire' : 'idle', row: plan.row, actions: plan.handOff ? [plan.handOff] : [], reasons,
        ...(plan.requeueAfterMs === undefined ? {} : { requeueAfterMs: plan.requeueAfterMs }),
      }),
    };
  }
  const generation = s0.generation + 1;
  const decisionId = decisionIdOf(job.uid, generation, 'start', plan.fingerprint);
  const active: ActiveRestart = {
    decisionId, kind: plan.kind, row: plan.row, scope: r.scope, mode: r.mode, startedMs: nowMs,
    targets: r.targets.map(podRefOf), minAvailable: job.minAvailable ?? rankPods(job).length,
    jobReason: r.jobReason, countsAgainstBudget: r.countsAgainstBudget,
    resetGracefulExit: r.gracefulExit && r.tasks.every((t) => t.faultType === 'SubHealthFault'),
    bumpRetryTimeOnSuccess: r.bumpRetryTimeOnSuccess,
    ...(r.escalationBlock ? { escalationBlock: r.escalationBlock } : {}),
    reasonTasks: rescheduleTaskReasons(r.tasks), evictionReasons: evictionReasons(r.tasks),
  };
  const expiry = cfg.faultJobBaseLifetimeMs + cfg.graceOverTimeMs;
  return {
    state: { ...s0, generation, active },
    decision: decision(ctx, {
      decisionId, kind: plan.kind, phase: 'start', row: plan.row, actions: startActions(r, plan, input.aggregate, nowMs), reasons,
      requeueAfterMs: r.mode === 'grace' ? cfg.graceOverTimeMs : expiry,
    }),
  };
}

interface Progress {
  /** Targets still present (by UID), terminating or not. */
  readonly remaining: readonly JobPodView[];
  readonly restarted: boolean;
  readonly allocated: number;
  readonly complete: boolean;
}

/** docs/rules.md#resched.restart-success: a target counts as restarted when its UID is gone; success needs minAvailable allocated pods. */
export function restartProgress(active: ActiveRestart, job: JobView): Progress {
  const uids = new Set(active.targets.map((p) => p.uid));
  const remaining = job.pods.filter((p) => uids.has(p.uid));
  const allocated = rankPods(job).filter((p) => !uids.has(p.uid) && p.terminating !== true && p.node !== undefined
    && p.phase !== 'Failed' && p.phase !== 'Succeeded').length;
  const restarted = remaining.length === 0;
  return { remaining, restarted, allocated, complete: restarted && allocated >= active.minAvailable };
}

function complete(ctx: Ctx, state: JobRescheduleState, a: ActiveRestart, p: Progress): JobDecisionOutput {
  const actions: JobAction[] = [];
  if (a.resetGracefulExit) actions.push({ type: 'setGracefulExit', value: 0 });
  if (a.bumpRetryTimeOnSuccess && a.scope === 'pod') actions.push({ type: 'bumpResetConfigRetryTime', podLevel: true });
  // A pod-rescheduling job placed again as a whole (job level: escalated, rank 0, graceExit...): Volcano's plugin
  // counts no pod-level restart and sets RetryTime to 0 (component/ascend-for-volcano/plugin/job.go updateResetCm).
  const { knobs } = ctx.input;
  if (a.scope === 'job' && knobs.podRescheduling === true && knobs.processRecoverEnable !== 'on') actions.push({ type: 'bumpResetConfigRetryTime', podLevel: false });
  const spend = a.countsAgainstBudget && state.retry !== undefined;
  const { active: _done, ...rest } = state;
  const next: JobRescheduleState = { ...rest, ...(spend && state.retry ? { retry: consumeRetry(state.retry) } : {}) };
  return {
    state: next,
    decision: decision(ctx, {
      decisionId: decisionIdOf(ctx.job.uid, state.generation, 'complete', a.decisionId), kind: a.kind, phase: 'complete', row: a.row, actions,
      reasons: [step('rule', `restart succeeded: targets replaced, ${p.allocated} of ${a.minAvailable} pods allocated (${RULE.resched.restartSuccess})`),
        ...(spend ? [step('action', `retry budget ${state.retry?.times ?? 0} -> ${next.retry?.times ?? 0} (pod-failed restart)`)] : [])],
      requeueAfterMs: 0,
    }),
  };
}

/**
 * Widen a running restart: `escalate` re-deletes every live pod at job level (docs/rules.md#resched.pending-escalation, #resched.master-rank);
 * `extend` adds the fault pods of `extra` to a pod-level/external restart (docs/rules.md#resched.lifecycle: later faults join).
 */
function widen(
  ctx: Ctx, state: JobRescheduleState, a: ActiveRestart, why: readonly ReasonStep[], phase: 'escalate' | 'extend',
  extra?: RestartPlan, handOff?: JobAction,
): JobDecisionOutput {
  const { job, nowMs, cfg } = ctx;
  const toJob = phase === 'escalate';
  const targets = (toJob ? job.pods.filter((p) => p.terminating !== true) : (extra?.targets ?? [])).map(podRefOf);
  const decisionId = decisionIdOf(job.uid, state.generation, phase, `${a.decisionId}|${targets.map((t) => t.uid).sort().join(',')}`);
  const mode = a.mode === 'force' ? 'force' : 'grace';
  const tasks = extra?.tasks ?? [];
  const evictions = toJob || extra === undefined ? a.evictionReasons : evictionReasons(tasks);
  const record = toJob || extra === undefined ? a.reasonTasks : rescheduleTaskReasons(tasks);
  const typeOf = new Map(tasks.map((t) => [t.pod.uid, t.faultType]));
  const actions: JobAction[] = [
    ...(handOff === undefined || toJob ? [] : [handOff]),
    ...(a.scope === 'external'
      ? targets.map((pod): JobAction => ({ type: 'annotatePodStatus', pod, value: `Unhealthy-${typeOf.get(pod.uid) ?? a.jobReason}` }))
      : [...deleteActions(targets, mode, unreachableNodes(ctx.input.aggregate), evictions),
        { type: 'recordRescheduleReason', atMs: nowMs, tasks: record } as const]),
  ];
  const { pendingSinceMs: _p, forcedAtMs: _f, ...base } = a;
  const active: ActiveRestart = toJob
    ? { ...base, decisionId, kind: 'job', scope: 'job', startedMs: nowMs, targets, escalationBlock: 'not-pod-level', bumpRetryTimeOnSuccess: false }
    : { ...base, ...(a.forcedAtMs === undefined ? {} : { forcedAtMs: a.forcedAtMs }), decisionId, targets: [...a.targets, ...targets] };
  const expiryIn = Math.max(0, active.startedMs + cfg.faultJobBaseLifetimeMs + cfg.graceOverTimeMs - nowMs);
  const graceIn = active.startedMs + cfg.graceOverTimeMs - nowMs;
  return {
    state: { ...state, active },
    decision: decision(ctx, {
      decisionId, kind: active.kind, phase, row: a.row, actions, reasons: [...why, step('action', `${phase}: ${targets.map((t) => t.name).join(', ')}`)],
      requeueAfterMs: mode === 'grace' && graceIn > 0 ? graceIn : expiryIn,
      ...(toJob && a.scope === 'pod' ? { widening: 'job' as const } : {}),
    }),
  };
}

const stepMsOf = (cfg: JobDecisionConfig): Readonly<Record<BlockStep, number>> =>
  ({ rack: cfg.rackEscalationMs, 'super-pod': cfg.superPodEscalationMs, level1: cfg.superPodEscalationMs });

/** The job's widening steps (docs/rules.md#resched.block-escalation): the one due now, when the next is due, and notes. */
function blockPlan(ctx: Ctx, a: ActiveRestart, waitedMs: number): { due?: BlockStage; nextInMs?: number; notes: readonly string[] } {
  const { podNpus, jobNpus } = jobNpuShape(ctx.job, a.minAvailable);
  const { stages, notes } = blockStagesOf(ctx.input.knobs.blocks, podNpus, jobNpus);
  const taken = a.widened ?? [];
  const stepMs = stepMsOf(ctx.cfg);
  const due = dueStage(stages, taken, waitedMs, stepMs);
  const nextInMs = nextStageInMs(stages, taken, waitedMs, stepMs);
  return { ...(due === undefined ? {} : { due }), ...(nextInMs === undefined ? {} : { nextInMs }), notes };
}

/**
 * A widening step: delete the pods sharing a block with the fault ranks (same mode as the restart),
 * or go job level when the block holds rank 0. The pending count pauses while they go (the plugin
 * counts a session only once the deletions are done) and resumes where it was.
 */
function widenBlock(ctx: Ctx, state: JobRescheduleState, a: ActiveRestart, stage: BlockStage, waitedMs: number): JobDecisionOutput {
  const { job, nowMs, cfg } = ctx;
  const { pods, master } = blockTargets(stage, job, a);
  const rule = step('rule', `${RULE.resched.blockEscalation}: replacements pending ${waitedMs} ms >= ${stepMsOf(cfg)[stage.step]} ms (${STEP_SESSIONS[stage.step]} sessions): widen to the ${stage.step} block of ${stage.podsPerBlock === Infinity ? 'the whole job' : `${stage.podsPerBlock} pods`}`);
  if (master) {
    const marked: ActiveRestart = { ...a, widened: [...(a.widened ?? []), stage.step] };
    return widen(ctx, { ...state, active: marked }, marked, [rule, step('rule', `the block holds rank 0 (${RULE.resched.masterRank})`)], 'escalate');
  }
  const { pendingSinceMs: _p, ...base } = a;
  const targets = pods.map(podRefOf);
  const decisionId = decisionIdOf(job.uid, state.generation, 'widen', `${a.decisionId}|${stage.step}|${targets.map((t) => t.uid).sort().join(',')}`);
  const active: ActiveRestart = { ...base, decisionId, targets: [...a.targets, ...targets], pendingCarryMs: waitedMs, widened: [...(a.widened ?? []), stage.step] };
  const actions: JobAction[] = targets.length === 0 ? [] : [
    ...deleteActions(targets, a.mode === 'force' ? 'force' : 'grace', unreachableNodes(ctx.input.aggregate), a.evictionReasons),
    { type: 'recordRescheduleReason', atMs: nowMs, tasks: a.reasonTasks },
  ];
  const expiryIn = Math.max(0, a.startedMs + cfg.faultJobBaseLifetimeMs + cfg.graceOverTimeMs - nowMs);
  return {
    state: { ...state, active },
    decision: decision(ctx, {
      decisionId, kind: a.kind, phase: 'widen', row: a.row, actions, widening: stage.step,
      reasons: [rule, step('action', targets.length === 0 ? `no other pod in the ${stage.step} block` : `widen: ${targets.map((t) => t.name).join(', ')}`)],
      requeueAfterMs: targets.length === 0 ? 0 : expiryIn,
    }),
  };
}

function advance(ctx: Ctx, state: JobRescheduleState, a: ActiveRestart): JobDecisionOutput {
  const { input, cfg, job, nowMs } = ctx;
  const expiryAt = a.startedMs + cfg.faultJobBaseLifetimeMs + cfg.graceOverTimeMs;
  if (nowMs >= expiryAt) {
    const { active: _gone, ...rest } = state;
    return fresh(ctx, rest, [step('rule', `restart ${a.decisionId} dropped ${nowMs - a.startedMs} ms after it started (fault-job lifetime, ${RULE.resched.faultJobCache})`)]);
  }
  const p = restartProgress(a, job);
  if (p.complete) return complete(ctx, state, a, p);

  if (a.scope !== 'job') {
    const uids = new Set(a.targets.map((t) => t.uid));
    const plan = planJobFaults({
      aggregate: input.aggregate, knobs: input.knobs, nowMs, registered: input.registered ?? false,
      ...(state.retry ? { retry: state.retry } : {}), hotSwitchDowngraded: state.hotSwitchDowngraded === true,
      hotSwitchMaxPods: cfg.hotSwitchMaxPods, consider: (pod) => !uids.has(pod.uid),
    });
    if (plan.restart?.scope === 'job' && a.scope === 'pod') return widen(ctx, state, a, plan.reasons, 'escalate');
    if (plan.restart !== undefined && plan.restart.scope === a.scope && plan.restart.targets.length > 0) {
      return widen(ctx, state, a, plan.reasons, 'extend', plan.restart, plan.handOff);
    }
  }

  const graceAt = a.startedMs + cfg.graceOverTimeMs;
  if (a.mode === 'grace' && !p.restarted && a.forcedAtMs === undefined && nowMs >= graceAt) {
    const pods = p.remaining.map(podRefOf);
    return {
      state: { ...state, active: { ...a, forcedAtMs: nowMs } },
      decision: decision(ctx, {
        decisionId: decisionIdOf(job.uid, state.generation, 'force', a.decisionId), kind: a.kind, phase: 'force', row: a.row,
        actions: [{ type: 'forceDeletePods', pods, reasons: a.evictionReasons }],
        reasons: [step('rule', `grace deletion not finished after grace-over-time ${cfg.graceOverTimeMs} ms (${RULE.resched.jobForce})`), step('action', `force-delete ${pods.map((x) => x.name).join(', ')}`)],
        requeueAfterMs: expiryAt - nowMs,
      }),
    };
  }

  const since = a.pendingSinceMs ?? (a.pendingCarryMs === undefined ? undefined : nowMs - a.pendingCarryMs);
  const pend = a.scope === 'pod'
    ? evaluatePending(since, p.restarted && !p.complete, nowMs, cfg.pendingEscalationMs, a.escalationBlock)
    : undefined;
  if (pend?.escalate === true) return widen(ctx, state, a, [step('rule', `${RULE.decision.podLevel}: ${pend.detail} (${RULE.resched.pendingEscalation})`)], 'escalate');
  const blocks = pend?.pendingSinceMs !== undefined && a.escalationBlock === undefined ? blockPlan(ctx, a, nowMs - pend.pendingSinceMs) : undefined;
  if (blocks?.due !== undefined) return widenBlock(ctx, state, a, blocks.due, nowMs - (pend?.pendingSinceMs ?? nowMs));
  const { pendingSinceMs: _old, ...aBase } = a;
  const nextActive: ActiveRestart = pend?.pendingSinceMs === undefined ? aBase : { ...aBase, pendingSinceMs: pend.pendingSinceMs };
  const graceDue = a.mode === 'grace' && a.forcedAtMs === undefined && !p.restarted ? graceAt - nowMs : undefined;
  return {
    state: { ...state, active: nextActive },
    decision: decision(ctx, {
      decisionId: a.decisionId, kind: a.kind, phase: 'wait', row: a.row, actions: [],
      reasons: [step('rule', `restart in progress: ${p.remaining.length} target pods left, ${p.allocated} of ${a.minAvailable} allocated`),
        ...(pend === undefined ? [] : [step('rule', pend.detail)]), ...(blocks?.notes ?? []).map((n) => step('rule', `${n} (${RULE.resched.blockEscalation})`))],
      ...(() => {
        const q = minDefined(graceDue, pend?.requeueAfterMs, blocks?.nextInMs, expiryAt - nowMs);
        return q === undefined ? {} : { requeueAfterMs: q };
      })(),
    }),
  };
}

/** Decide what to do about a job's faults now. Record `decision.decisionId` before acting (job-decision-id.ts). */
export function decideJob(input: JobDecisionInput): JobDecisionOutput {
  const cfg: JobDecisionConfig = { ...DEFAULT_JOB_DECISION_CONFIG, ...input.config };
  const job = input.aggregate.job;
  const ctx: Ctx = { input, cfg, job, nowMs: input.nowMs };
  const prior = input.state !== undefined && input.state.jobUid === job.uid ? input.state : initialJobState(job.uid);
  const retry = syncRetryBudget(prior.retry, job.uid, input.knobs.faultRetryTimes);
  const { retry: _r, ...noRetry } = prior;
  const state: JobRescheduleState = retry === undefined ? noRetry : { ...noRetry, retry };
  return state.active === undefined ? fresh(ctx, state, []) : advance(ctx, state, state.active);
}
