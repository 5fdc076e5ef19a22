/**
 * Replays timed inputs through a policy without a scheduler, firing each deadline the policy asks for
 * before the next input. The same semantics as runPolicy, as a plain loop: for tests with explicit
 * `nowMs`, and for replaying a recorded history at start-up.
 */
import { TICK, type ConfigChange, type Policy, type PolicyStep, type Tick } from './policy-operator.ts';

export interface TimedStep<S, I, O> extends PolicyStep<S, O> {
  readonly atMs: number;
  readonly input: I | Tick | ConfigChange<unknown>;
}

export interface DriveResult<S, I, O> {
  readonly state: S;
  readonly steps: ReadonlyArray<TimedStep<S, I, O>>;
  /** Every output with the time it was produced. */
  readonly outputs: ReadonlyArray<{ readonly atMs: number; readonly output: O }>;
  readonly nextDeadlineMs: number | undefined;
}

/**
 * Runs `inputs` (sorted by time) and then ticks up to `untilMs` (default: the last input). A deadline
 * that does not move forward after a tick is pushed 1 ms on, as runPolicy does.
 */
export function drivePolicy<S, I, O, C>(
  policy: Policy<S, I, O, C>,
  initial: { readonly state: S; readonly config: C },
  inputs: ReadonlyArray<readonly [number, I | ConfigChange<C>]>,
  untilMs?: number,
): DriveResult<S, I, O> {
  let state = initial.state;
  let config = initial.config;
  let deadline: number | undefined;
  const steps: Array<TimedStep<S, I, O>> = [];
  const end = untilMs ?? inputs.at(-1)?.[0] ?? 0;
  const call = (atMs: number, input: I | Tick | ConfigChange<C>): void => {
    if (typeof input === 'object' && input !== null && (input as { type?: unknown }).type === 'config') config = (input as ConfigChange<C>).config;
    const step = policy(state, input, atMs, config);
    state = step.state;
    steps.push({ ...step, atMs, input: input as I | Tick | ConfigChange<unknown> });
    deadline = step.nextDeadlineMs !== undefined && input === TICK && step.nextDeadlineMs <= atMs ? atMs + 1 : step.nextDeadlineMs;
  };
  const tickUntil = (t: number, inclusive: boolean): void => {
    while (deadline !== undefined && (inclusive ? deadline <= t : deadline < t)) call(deadline, TICK);
  };
  for (const [atMs, input] of inputs) {
    tickUntil(atMs, false);
    call(atMs, input);
  }
  tickUntil(end, true);
  return {
    state,
    steps,
    outputs: steps.flatMap((s) => s.outputs.map((output) => ({ atMs: s.atMs, output }))),
    nextDeadlineMs: deadline,
  };
}
