/**
 * The shape of a pure policy `(state, input, nowMs, config) -> PolicyStep`. Time comes in as `nowMs`;
 * the step returns the state to persist, the outputs to act on and the earliest time it must be called
 * again with a `tick` (`nextDeadlineMs`). The controllers hold that deadline as a work-queue key
 * (runtime/timer-loop.ts) and call the policy with TICK when it is due; config changes reach the
 * policy as `{type:'config'}` inputs so it can react to them (e.g. disabling clears state).
 */
import type { ReasonChain } from './reasons.ts';

export interface Tick {
  readonly type: 'tick';
}
export interface ConfigChange<C> {
  readonly type: 'config';
  readonly config: C;
}
export const TICK: Tick = { type: 'tick' };

export interface PolicyStep<S, O> {
  readonly state: S;
  readonly outputs: readonly O[];
  /** Step-level explanations (ignored inputs, de-duplications) for debug logs. */
  readonly reasons: ReasonChain;
  /** Earliest time the policy must be called again with a tick; undefined = no timer pending. */
  readonly nextDeadlineMs: number | undefined;
}

export type Policy<S, I, O, C> = (state: S, input: I | Tick | ConfigChange<C>, nowMs: number, config: C) => PolicyStep<S, O>;

/** Earliest of several optional deadlines. */
export function earliest(...deadlines: ReadonlyArray<number | undefined>): number | undefined {
  let best: number | undefined;
  for (const d of deadlines) if (d !== undefined && (best === undefined || d < best)) best = d;
  return best;
}
