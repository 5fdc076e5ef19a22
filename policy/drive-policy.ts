/**
 * Replays timed inputs through a policy, firing each deadline the policy asks for before the next
 * input: the step functions' tests, with explicit `nowMs`. The same semantics as the controllers'
 * deadline keys (a tick at each deadline; one that does not move forward is pushed 1 ms on), whose
 * own tests drive the production path on the work queue's manual clock.
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
 * that does not move forward after a tick is pushed 1 ms on, as the controllers do.
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
