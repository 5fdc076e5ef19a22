/**
 * The rescheduling decision table (docs/rules.md#decision.order), evaluated top-down, first match wins, for the
 * faults of one job that no running restart covers yet. Pure: the lifecycle around it (grace -> force,
 * pending escalation, success, retry budget) is in job-restart.ts.
 *
 * Row order as implemented (docs/rules.md#decision.order numbering):
 *  1  no counted fault (NotHandle, PreSeparate on a used chip/node, network, sub-health under
 *     `ignore`, failed pods without retry budget) -> none   [7 when it is sub-health under ignore]
 *  2  every counted fault is inside an upstream hide window -> none, requeue at window end
 *  3  fault-scheduling off/absent -> never delete
 *  (the FSM hand-off of row 8 is still made in rows 1-3 when the job is registered: "only the
 *   process-level FSM can act")
 *  12 pod-failed-only: needs fault-retry-times > 0 and budget left (gate before rows 4-11)
 *  4  external-grace/force -> annotate fault pods `huawei.com/pod-status=Unhealthy-<faultType>`
 *  5  a fault task on rank 0 -> job level
 *  (a job capped at pod level, docs/rules.md#resched.pod-level-cap: recover_policy_path=pod or an inference
 *   job, deletes only its fault pods in rows 5, 6, 7 and 11 and never widens)
 *  6  sub-health only + hotSwitch -> hand off to the hot-switch FSM / delete its `needVolcanoOpe` pod
 *  7  sub-health only + graceExit/forceExit -> GracefulExit=1 + grace job delete / force job delete
 *  8  process-recover-enable=on -> hand off to the FSM; delete only fault pods, never escalate
 *     (platform mode: no deletion, docs/rules.md#resched.platform-mode). `pause` (row 9) falls through to 10/11.
 *  10 pod-rescheduling=on -> delete only fault pods (escalation: job-pending-escalation.ts)
 *  11 grace/force -> job level
 */
import type { FaultCause, JobFaultAggregate, RescheduleFaultType } from './job-aggregation.ts';
import type { B6Row, DecisionKind, EscalationBlock, JobAction, ReasonStep, RestartMode, RestartScope } from './job-decision-types.ts';
import { effectiveSubHealthyStrategy, jobReasonOf, masterTask, selectFaultTasks, subHealthOnly, type FaultTask } from './job-fault-tasks.ts';
import { firstRecoverStrategy, hotSwitchVerdict, processHandOff } from './job-handoffs.ts';
import { escalationBlockFor, podLevelCap } from './job-pending-escalation.ts';
import { retryAllowed, type RetryBudget } from './job-retry-budget.ts';
import { podRefOf, type JobKnobsInput, type JobPodView } from './job-view.ts';
import { DECISION_ROW_RULE, RULE } from '../../vocabulary/rule-ids.ts';

export interface PlanInput {
  readonly aggregate: JobFaultAggregate;
  readonly knobs: JobKnobsInput;
  readonly nowMs: number;
  /** TaskD/MindIO registered this job with our Recover service. */
  readonly registered: boolean;
  readonly retry?: RetryBudget;
  readonly hotSwitchDowngraded: boolean;
  readonly hotSwitchMaxPods: number;
  /** Only faults of pods passing this filter (faults outside a running restart). */
  readonly consider?: (pod: JobPodView) => boolean;
}

export interface RestartPlan {
  readonly scope: RestartScope;
  readonly mode: RestartMode;
  readonly targets: readonly JobPodView[];
  readonly tasks: readonly FaultTask[];
  readonly jobReason: RescheduleFaultType;
  readonly countsAgainstBudget: boolean;
  /** Write reset-config GracefulExit=1 before deleting (graceExit, non-process jobs). */
  readonly gracefulExit: boolean;
  readonly escalationBlock?: EscalationBlock;
  readonly bumpRetryTimeOnSuccess: boolean;
}

export interface FaultPlan {
  readonly kind: DecisionKind;
  readonly row: B6Row;
  readonly reasons: readonly ReasonStep[];
  readonly restart?: RestartPlan;
  readonly handOff?: JobAction;
  readonly requeueAfterMs?: number;
  /** Persist "hot switch downgraded to ignore" (docs/rules.md#hotswitch.failure). */
  readonly downgradeHotSwitch?: boolean;
  /** Identity of what the plan acts on; feeds the decision id. */
  readonly fingerprint: string;
}

/** Reason-chain steps for the fault and level links (first 10 tasks, then a count). */
export function faultSteps(tasks: readonly FaultTask[], nowMs: number): ReasonStep[] {
  const note = (c: FaultCause): string =>
    c.hidden === undefined || c.hidden.untilMs <= nowMs ? c.note : `${c.note} [hidden from the scheduler by ${c.hidden.by} until ${new Date(c.hidden.untilMs).toISOString()}]`;
  const steps: ReasonStep[] = tasks.slice(0, 10).flatMap((t): ReasonStep[] => [
    { stage: 'fault', detail: t.causes.map(note).join('; ') },
    { stage: 'level', detail: `rank ${t.pod.rank ?? '?'} pod ${t.pod.name}: ${t.rank.worstLevel ?? 'no level'} -> ${t.faultType}${t.hidden ? ' (hidden)' : ''}` },
  ]);
  if (tasks.length > 10) steps.push({ stage: 'fault', detail: `... and ${tasks.length - 10} more fault pods` });
  return steps;
}

/** A decision-table row names its rule by id (docs/rules.md), never by a row number a reader cannot look up. */
const rule = (row: B6Row, detail: string): ReasonStep => ({ stage: 'rule', row, detail: `${DECISION_ROW_RULE[row]}: ${detail}` });
const act = (detail: string): ReasonStep => ({ stage: 'action', detail });
const live = (pods: readonly JobPodView[]): JobPodView[] => pods.filter((p) => p.terminating !== true);
const names = (pods: readonly JobPodView[]): string => pods.map((p) => p.name).join(', ');

function fingerprintOf(kind: DecisionKind, row: B6Row, tasks: readonly FaultTask[], r?: RestartPlan, h?: JobAction): string {
  const t = tasks.map((x) => `${x.pod.uid}:${x.faultType}`).sort().join(',');
  const g = r === undefined ? '' : `${r.scope}:${r.mode}:${r.targets.map((p) => p.uid).sort().join(',')}`;
  const o = h?.type === 'handOffProcessRecovery' ? h.faultRanks.map((x) => `${x.pod.uid}:${x.codes.join('+')}`).join(',')
    : h?.type === 'handOffHotSwitch' ? h.pod.uid : '';
  return `${kind}|${row}|${t}|${g}|${o}`;
}

function plan(kind: DecisionKind, row: B6Row, tasks: readonly FaultTask[], reasons: ReasonStep[], extra: Partial<FaultPlan> = {}): FaultPlan {
  return { kind, row, reasons, ...extra, fingerprint: fingerprintOf(kind, row, tasks, extra.restart, extra.handOff) };
}

function handOffOrNone(row: B6Row, tasks: readonly FaultTask[], chain: ReasonStep[], proc: JobAction | undefined, none: string, extra: Partial<FaultPlan> = {}): FaultPlan {
  if (proc !== undefined) {
    return plan('process', row, tasks, [...chain, rule(row, none), act(`hand the fault ranks to the process-level recovery FSM (${RULE.decision.processLevel})`)], { ...extra, handOff: proc });
  }
  return plan('none', row, tasks, [...chain, rule(row, none), act('no action')], extra);
}

interface SubHealthArgs {
  readonly input: PlanInput;
  readonly visible: readonly FaultTask[];
  readonly subHealthPods: readonly JobPodView[];
  readonly chain: readonly ReasonStep[];
  readonly proc: JobAction | undefined;
  readonly allPods: readonly JobPodView[];
  readonly base: Pick<RestartPlan, 'jobReason' | 'countsAgainstBudget' | 'gracefulExit' | 'bumpRetryTimeOnSuccess'>;
  readonly processOn: boolean;
  readonly cap: EscalationBlock | undefined;
}

/** The reason-chain words for a pod-level cap. */
function capDetail(knobs: JobKnobsInput, cap: EscalationBlock): string {
  const why = cap === 'inference-job' ? `inference job (${knobs.inferenceCap ?? '?'})` : 'huawei.com/recover_policy_path=pod';
  return `${why} keeps the job at pod level (${RULE.resched.podLevelCap})`;
}

/** docs/rules.md#decision.hot-switch (hotSwitch) and #decision.sub-health (graceExit / forceExit) for a job whose counted faults are all sub-health. */
function subHealthPlan(a: SubHealthArgs): FaultPlan {
  const { input, visible, chain, allPods, base } = a;
  const { aggregate: agg, knobs } = input;
  const strategy = effectiveSubHealthyStrategy(knobs);
  if (strategy === 'hotSwitch') {
    const dels = visible.filter((t) => t.pod.needVolcanoDelete === true);
    if (dels.length > 0) {
      const stop = a.cap === undefined && masterTask(dels, agg.job) !== undefined;
      const restart: RestartPlan = stop
        ? { ...base, scope: 'job', mode: 'force', targets: allPods, tasks: dels, escalationBlock: 'not-pod-level' }
        : { ...base, scope: 'pod', mode: 'force', targets: dels.map((t) => t.pod), tasks: dels, escalationBlock: 'hot-switch' };
      const why = stop ? `hot switch stops the job (needVolcanoOpe=delete on rank 0, ${RULE.hotswitch.stopJob})` : 'hot switch migrates: needVolcanoOpe=delete';
      return plan(stop ? 'job' : 'hotSwitch', 6, dels, [...chain, rule(6, why), act(`force-delete ${names(restart.targets)}`)], { restart });
    }
    const v = hotSwitchVerdict(knobs, agg.job.pods, a.subHealthPods, input.registered, input.hotSwitchDowngraded, input.hotSwitchMaxPods);
    if (v.kind === 'handOff') {
      const handOff: JobAction = { type: 'handOffHotSwitch', pod: podRefOf(v.pod), ...(v.pod.rank === undefined ? {} : { podRank: v.pod.rank }) };
      return plan('hotSwitch', 6, visible, [...chain, rule(6, 'sub-health with subHealthyStrategy=hotSwitch'), act(v.detail)], { handOff });
    }
    return plan('none', 6, visible, [...chain, rule(6, v.detail), act('no action (ignore)')], v.kind === 'downgrade' ? { downgradeHotSwitch: true } : {});
  }
  if (strategy === 'graceExit') {
    if (a.proc !== undefined && firstRecoverStrategy(knobs) === 'dump') {
      return plan('process', 7, visible, [...chain, rule(7, 'graceExit with dump as the first recover strategy'), act('hand off to the recovery FSM (dump)')], { handOff: a.proc });
    }
    const restart: RestartPlan = { ...base, ...exitScope(a), mode: 'grace', tasks: visible, gracefulExit: !a.processOn };
    const what = `${restart.gracefulExit ? 'reset-config GracefulExit=1, then ' : ''}evict ${exitWhat(a, restart)}`;
    return plan('subHealthAction', 7, visible, [...chain, rule(7, `sub-health only, subHealthyStrategy=graceExit${capNote(a)}`), act(what)], { restart });
  }
  const restart: RestartPlan = { ...base, ...exitScope(a), mode: 'force', tasks: visible };
  return plan('subHealthAction', 7, visible, [...chain, rule(7, `sub-health only, subHealthyStrategy=forceExit${capNote(a)}`), act(`force-delete ${exitWhat(a, restart)}`)], { restart });
}

/** A sub-health exit deletes the whole job, or only the fault pods of a job capped at pod level. */
function exitScope(a: SubHealthArgs): Pick<RestartPlan, 'scope' | 'targets' | 'escalationBlock'> {
  return a.cap === undefined
    ? { scope: 'job', targets: a.allPods, escalationBlock: 'not-pod-level' }
    : { scope: 'pod', targets: a.visible.map((t) => t.pod), escalationBlock: a.cap };
}
const exitWhat = (a: SubHealthArgs, r: RestartPlan): string => (a.cap === undefined ? `all ${r.targets.length} pods` : names(r.targets));
const capNote = (a: SubHealthArgs): string => (a.cap === undefined ? '' : `; ${capDetail(a.input.knobs, a.cap)}`);

export function planJobFaults(input: PlanInput): FaultPlan {
  const { aggregate: agg, knobs, nowMs } = input;
  const all = selectFaultTasks(agg, knobs, nowMs);
  const keep = input.consider ?? ((): boolean => true);
  const tasks = all.tasks.filter((t) => keep(t.pod));
  const visible = all.visible.filter((t) => keep(t.pod));
  const subHealthPods = all.subHealthPods.filter(keep);
  const fs = knobs.faultScheduling ?? 'off';
  const strategy = effectiveSubHealthyStrategy(knobs);
  const processOn = knobs.processRecoverEnable === 'on';
  const proc = processHandOff(agg, knobs, input.registered);
  const hotSwitchCase = strategy === 'hotSwitch' && agg.healthState === 'SubHealthy' && subHealthPods.length > 0;
  const notes: ReasonStep[] = all.notes.slice(0, 10).map((n) => ({ stage: 'fault', detail: n }));
  const chain = [...faultSteps(visible.length > 0 ? visible : tasks, nowMs)];

  // Rows 1 and 7(ignore): nothing counts.
  if (tasks.length === 0 && !hotSwitchCase) {
    const subIgnored = strategy === 'ignore' && agg.ranks.some((r) => r.causes.some((c) => c.faultType === 'SubHealthFault'));
    return subIgnored
      ? handOffOrNone(7, tasks, notes, proc, 'sub-health faults under subHealthyStrategy=ignore: task healthy')
      : handOffOrNone(1, tasks, notes, proc, 'no fault affects a running pod of the job');
  }
  // Row 2: all counted faults hidden.
  if (visible.length === 0 && !hotSwitchCase) {
    const until = Math.min(...tasks.map((t) => t.hiddenUntilMs ?? nowMs));
    return handOffOrNone(2, tasks, chain, proc, 'faults hidden by an upstream filter window', { requeueAfterMs: Math.max(0, until - nowMs) });
  }
  // Row 3: never delete.
  if (fs === 'off') return handOffOrNone(3, visible, chain, proc, 'fault-scheduling off or absent: never delete pods');

  const reason = jobReasonOf(visible);
  let row12 = false;
  let countsAgainstBudget = false;
  if (visible.length > 0 && reason === 'pod-failed' && (knobs.faultRetryTimes ?? 0) > 0) {
    const v = retryAllowed(input.retry, knobs.faultRetryTimes);
    if (!v.allowed) return plan('none', 12, visible, [...chain, rule(12, `pod-failed only; ${v.detail}`), act('no restart')]);
    chain.push(rule(12, `pod-failed only; ${v.detail}; one restart spends one`));
    row12 = true;
    countsAgainstBudget = true;
  }
  const base = { jobReason: reason, countsAgainstBudget, gracefulExit: false, bumpRetryTimeOnSuccess: false };
  const allPods = live(agg.job.pods);

  // Row 4: external platform.
  if (fs === 'external-grace' || fs === 'external-force') {
    if (visible.length === 0) return plan('none', 4, tasks, [...chain, rule(4, `fault-scheduling=${fs}: no fault task to report`), act('no action')]);
    const restart: RestartPlan = { ...base, scope: 'external', mode: 'annotate', targets: visible.map((t) => t.pod), tasks: visible, escalationBlock: 'not-pod-level' };
    return plan('external', 4, visible, [...chain, rule(4, `fault-scheduling=${fs}: an outside platform reschedules`),
      act(`annotate ${names(restart.targets)} huawei.com/pod-status=Unhealthy-<faultType>; delete nothing`)], { restart });
  }
  const mode: RestartMode = fs === 'force' ? 'force' : 'grace';
  const cap = podLevelCap(knobs);
  const onlySub = subHealthOnly(visible);

  // Row 5: master rank.
  const master = masterTask(visible, agg.job);
  if (master !== undefined && !onlySub) {
    if (cap === undefined) {
      const restart: RestartPlan = { ...base, scope: 'job', mode, targets: allPods, tasks: visible, escalationBlock: 'not-pod-level' };
      return plan('job', row12 ? 12 : 5, visible, [...chain, rule(5, `rank 0 (${master.pod.name}) is faulty: job level even if pod/process level is configured`),
        act(`${mode === 'force' ? 'force-delete' : 'evict'} all ${allPods.length} pods`)], { restart });
    }
    chain.push(rule(5, `rank 0 is faulty but ${capDetail(knobs, cap)}`));
  }

  // Rows 6-7: sub-health only.
  if (onlySub || (visible.length === 0 && hotSwitchCase)) {
    return subHealthPlan({ input, visible, subHealthPods, chain, proc, allPods, base, processOn, cap });
  }

  // Row 8: process level (Volcano side: fault pods only, no escalation).
  if (processOn) {
    const targets = visible.map((t) => t.pod);
    const handOff = proc === undefined ? {} : { handOff: proc };
    if (knobs.platformMode === true) {
      return plan(proc === undefined ? 'none' : 'process', 8, visible, [...chain, rule(8, 'process-recover-enable=on in AI platform mode: the platform drives recovery, nothing is deleted'),
        act(proc === undefined ? 'no action' : 'hand off to the recovery FSM')], handOff);
    }
    const restart: RestartPlan = { ...base, scope: 'pod', mode, targets, tasks: visible, escalationBlock: 'process-recover-enable=on' };
    return plan(proc === undefined ? 'pod' : 'process', row12 ? 12 : 8, visible, [...chain, rule(8, 'process-recover-enable=on: fault pods only, no escalation'),
      act(`${proc === undefined ? '' : 'hand off to the recovery FSM; '}${mode === 'force' ? 'force-delete' : 'evict'} ${names(targets)}`)], { restart, ...handOff });
  }

  // Row 10: pod level.
  if (knobs.podRescheduling === true) {
    const targets = visible.map((t) => t.pod);
    const block = escalationBlockFor(knobs, 'pod', false);
    const restart: RestartPlan = { ...base, scope: 'pod', mode, targets, tasks: visible, bumpRetryTimeOnSuccess: true, ...(block ? { escalationBlock: block } : {}) };
    return plan('pod', row12 ? 12 : 10, visible, [...chain, rule(10, `pod-rescheduling=on: delete only fault pods${block ? ` (${block}: never beyond pod level)` : ''}`),
      act(`${mode === 'force' ? 'force-delete' : 'evict'} ${names(targets)}`)], { restart });
  }

  // Row 11: job level, or only the fault pods of a job capped at pod level.
  if (cap !== undefined) {
    const targets = visible.map((t) => t.pod);
    const restart: RestartPlan = { ...base, scope: 'pod', mode, targets, tasks: visible, escalationBlock: cap };
    return plan('pod', row12 ? 12 : 11, visible, [...chain, rule(11, `fault-scheduling=${fs}; ${capDetail(knobs, cap)}`),
      act(`${mode === 'force' ? 'force-delete' : 'evict'} ${names(targets)}`)], { restart });
  }
  const restart: RestartPlan = { ...base, scope: 'job', mode, targets: allPods, tasks: visible, escalationBlock: 'not-pod-level' };
  return plan('job', row12 ? 12 : 11, visible, [...chain, rule(11, `fault-scheduling=${fs}: job-level rescheduling`),
    act(`${mode === 'force' ? 'force-delete' : 'evict (force after grace-over-time)'} all ${allPods.length} pods`)], { restart });
}
