/**
 * The process-level strategy menu and its choice (docs/rules.md#recover.register, #recover.strategy-choice, #recover.fsm transitions 17, 31, 34).
 * Pure functions: the FSM (recovery-fsm.ts) gathers the facts and asks here what to send.
 */

/** Process-level strategies in priority order (ClusterD sorts the menu this way). */
export const PROCESS_STRATEGIES = ['retry', 'recover-in-place', 'recover', 'elastic-training', 'dump', 'exit'] as const;
export type ProcessStrategy = (typeof PROCESS_STRATEGIES)[number];

/** What the PodGroup says about rescheduling beside the process-level menu. */
export interface StrategyMenu {
  /** Known strategies from `recover-strategy`, de-duplicated, priority-sorted, `exit` always last. */
  readonly strategies: readonly ProcessStrategy[];
  /** `fault-scheduling` grace/force: ClusterD adds `job-rescheduling` to the job's list. */
  readonly jobRescheduling: boolean;
  /** `pod-rescheduling=on`: ClusterD adds `pod-rescheduling`. */
  readonly podRescheduling: boolean;
}

export interface StrategyMenuInput {
  /** `recover-strategy` annotation (CSV) or its parsed list. */
  readonly recoverStrategy?: string | readonly string[];
  /** `fault-scheduling` label. */
  readonly faultScheduling?: string;
  /** `pod-rescheduling` label. */
  readonly podRescheduling?: string | boolean;
}

export function strategyMenu(input: StrategyMenuInput): StrategyMenu {
  const raw = input.recoverStrategy ?? [];
  const list = typeof raw === 'string' ? raw.split(',') : raw;
  const known = new Set<ProcessStrategy>(['exit']);
  for (const item of list) {
    const t = item.trim();
    if ((PROCESS_STRATEGIES as readonly string[]).includes(t)) known.add(t as ProcessStrategy);
  }
  return {
    strategies: PROCESS_STRATEGIES.filter((p) => known.has(p)),
    jobRescheduling: input.faultScheduling === 'grace' || input.faultScheduling === 'force',
    podRescheduling: input.podRescheduling === true || input.podRescheduling === 'on',
  };
}

/** The agent's `ReportRecoverStrategy` names that gate each strategy (docs/grpc.md#recover-vocabulary). */
const AGENT_GATE: Readonly<Record<ProcessStrategy, string | null>> = {
  retry: 'retry',
  'recover-in-place': 'recover',
  recover: 'recover',
  'elastic-training': 'downgrade',
  dump: 'dump',
  exit: null,
};

/** Why a choice is being made: first choice, or fallback after a failure (docs/rules.md#recover.strategy-choice). */
export type ChoiceAfter = 'first' | 'retry-failed' | 'recover-failed' | 'other-failed';

/** Scale-in gate computed by the FSM (docs/rules.md#recover.strategy-choice canChooseScaleInStrategy). */
export type ScaleInGate = 'allowed' | 'blocked' | 'wait';

export interface ChoiceInput {
  readonly after: ChoiceAfter;
  readonly configured: readonly ProcessStrategy[];
  /** Strategies the agent reported (after the FSM dropped any, e.g. `recover` on a failed retry). */
  readonly agent: readonly string[];
  /** The global fault was the retry-only kind (only UCE/HCCL ranks, `retry` configured). */
  readonly retryPath: boolean;
  /** Any non-retry fault is cached. */
  readonly hasNormalFaults: boolean;
  /** At least one fault pod may restart in place (docs/rules.md#recover.in-place). */
  readonly canRestartInPlace: boolean;
  /** The pod with rank 0 holds a fault: never scale in (docs/rules.md#decision.master-rank). */
  readonly rank0PodFaulty: boolean;
  readonly scaleIn: ScaleInGate;
  /**
   * AI platform mode (docs/rules.md#recover.platform-mode): the platform's strategy (ClusterD's platStrategy).
   * retry, recover / recover-in-place and dump are usable only when it names them. Undefined: not platform mode.
   */
  readonly platform?: string;
}

export interface Choice {
  readonly strategy: ProcessStrategy;
  /** Retry faults must become normal faults first (retry path, agent without `retry`). */
  readonly convertRetryFaults: boolean;
  /** elastic-training is next in line but the reschedule wait has not elapsed yet. */
  readonly waitForScaleIn: boolean;
  readonly reason: string;
}

/** The platform strategy a strategy needs in platform mode (supportRetryStrategy, supportTargetRecoverStrategy, supportDumpStrategy). */
const PLATFORM_GATE: Readonly<Record<ProcessStrategy, string | null>> = {
  retry: 'retry',
  'recover-in-place': 'recover',
  recover: 'recover',
  'elastic-training': null,
  dump: 'dump',
  exit: null,
};

const platformAllows = (s: ProcessStrategy, i: ChoiceInput): boolean => {
  const gate = PLATFORM_GATE[s];
  return i.platform === undefined || gate === null || i.platform === gate;
};

const usable = (s: ProcessStrategy, i: ChoiceInput): boolean => {
  const gate = AGENT_GATE[s];
  return i.configured.includes(s) && (gate === null || i.agent.includes(gate)) && platformAllows(s, i);
};

function pick(order: readonly ProcessStrategy[], i: ChoiceInput, prefix: string, convert = false): Choice {
  const skipped: string[] = [];
  for (const s of order) {
    if (s === 'exit') break;
    if (!usable(s, i)) {
      const cause = !i.configured.includes(s) ? 'not configured' : !platformAllows(s, i) ? `platform chose '${i.platform}'` : 'agent does not support it';
      skipped.push(`${s}: ${cause}`);
      continue;
    }
    if (s === 'retry' && i.hasNormalFaults) {
      skipped.push('retry: normal faults present');
      continue;
    }
    if (s === 'recover-in-place' && !i.canRestartInPlace) {
      skipped.push('recover-in-place: no pod may restart in place');
      continue;
    }
    if (s === 'elastic-training') {
      if (i.rank0PodFaulty) {
        skipped.push('elastic-training: rank-0 pod is faulty');
        continue;
      }
      if (i.scaleIn === 'blocked') {
        skipped.push('elastic-training: fault pods were rescheduled in time');
        continue;
      }
      if (i.scaleIn === 'wait') {
        return { strategy: s, convertRetryFaults: convert, waitForScaleIn: true, reason: `${prefix}: wait before scale-in` };
      }
    }
    return { strategy: s, convertRetryFaults: convert, waitForScaleIn: false, reason: why(prefix, s, skipped) };
  }
  return { strategy: 'exit', convertRetryFaults: convert, waitForScaleIn: false, reason: why(prefix, 'exit', skipped) };
}

const why = (prefix: string, s: string, skipped: readonly string[]): string =>
  `${prefix}: ${s}${skipped.length > 0 ? ` (skipped ${skipped.join('; ')})` : ''}`;

/**
 * docs/rules.md#recover.strategy-choice. First choice: retry -> recover-in-place -> recover -> elastic-training -> dump -> exit.
 * After a failed retry: the same without retry. After a failed recover / scale-in / scale-out:
 * dump -> exit. After anything else: exit. Retry path but the agent did not report `retry`: convert
 * the retry faults to normal and choose dump/exit.
 */
export function chooseStrategy(i: ChoiceInput): Choice {
  switch (i.after) {
    case 'first':
      // Platform mode: retry is ClusterD's first choice only when the platform confirmed it (supportRetryStrategy).
      if (i.retryPath && !platformAllows('retry', i)) return pick(PROCESS_STRATEGIES, i, `first choice (platform chose '${i.platform}')`);
      if (i.retryPath && !usable('retry', i)) return pick(['dump', 'exit'], i, 'retry path without agent retry', true);
      if (i.retryPath) return pick(['retry', 'exit'], i, 'first choice (retry path)');
      return pick(PROCESS_STRATEGIES, i, 'first choice');
    case 'retry-failed':
      return pick(['recover-in-place', 'recover', 'elastic-training', 'dump', 'exit'], i, 'after failed retry');
    case 'recover-failed':
      return pick(['dump', 'exit'], i, 'after failed recover/scale');
    case 'other-failed':
      return pick(['exit'], i, 'after failure');
  }
}

/** ClusterD's dump-first rule (docs/rules.md#recover.dump): dump configured and nothing above it. */
export function dumpFirst(configured: readonly ProcessStrategy[]): boolean {
  return configured.includes('dump') && !configured.some((s) => s === 'retry' || s === 'recover-in-place' || s === 'recover' || s === 'elastic-training');
}

/** `wait-reschedule-timeout` in seconds: an integer in 30-270, else the default 270 (docs/rules.md#timing.clusterd). */
export function waitRescheduleTimeoutS(annotation: string | number | undefined): number {
  const n = typeof annotation === 'number' ? annotation : annotation === undefined ? NaN : Number(annotation.trim());
  return Number.isInteger(n) && n >= 30 && n <= 270 ? n : 270;
}
