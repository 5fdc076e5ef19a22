/**
 * Runs a pure policy `(state, input, nowMs, config) -> PolicyStep` as an RxJS operator on a scheduler.
 * Time comes only from the scheduler; deadlines the policy returns become scheduled `tick` inputs, so
 * a 24 h window runs in virtual time under TestScheduler. Config changes travel in the same input
 * stream (`{type:'config'}`) so the policy can react to them (e.g. disabling clears state).
 * Every step is emitted with its full state: the controller persists `state` (it is plain data from
 * schemas/escalation-state) and acts on `outputs`.
 */
import { Observable, asyncScheduler, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
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

/**
 * Operator form of a policy. Completes when the input completes and no deadline is pending.
 * The policy must be total (it never throws on data); a throw is forwarded as an error.
 */
export function runPolicy<S, I, O, C>(
  policy: Policy<S, I, O, C>,
  initial: { readonly state: S; readonly config: C },
  scheduler: SchedulerLike = asyncScheduler,
): OperatorFunction<I | ConfigChange<C>, PolicyStep<S, O>> {
  return (input$) =>
    new Observable<PolicyStep<S, O>>((out) => {
      let state = initial.state;
      let config = initial.config;
      let timer: Subscription | undefined;
      let deadline: number | undefined;
      let inputDone = false;

      const run = (input: I | Tick | ConfigChange<C>): void => {
        if (isConfig<C>(input)) config = input.config;
        let step: PolicyStep<S, O>;
        try {
          step = policy(state, input, scheduler.now(), config);
        } catch (e) {
          out.error(e);
          return;
        }
        state = step.state;
        out.next(step);
        arm(step.nextDeadlineMs, input === TICK);
      };

      // A deadline not in the future after a tick would spin at one instant; it is pushed 1 ms on.
      const arm = (next: number | undefined, afterTick: boolean): void => {
        if (next === deadline && timer !== undefined && !timer.closed) return;
        timer?.unsubscribe();
        timer = undefined;
        deadline = next;
        if (next === undefined) {
          if (inputDone) out.complete();
          return;
        }
        timer = scheduler.schedule(() => {
          timer = undefined;
          deadline = undefined;
          run(TICK);
        }, Math.max(afterTick ? 1 : 0, next - scheduler.now()));
      };

      const sub = input$.subscribe({
        next: (i) => run(i),
        error: (e: unknown) => out.error(e),
        complete: () => {
          inputDone = true;
          if (deadline === undefined) out.complete();
        },
      });
      return () => {
        sub.unsubscribe();
        timer?.unsubscribe();
      };
    });
}

function isConfig<C>(i: unknown): i is ConfigChange<C> {
  return typeof i === 'object' && i !== null && (i as { type?: unknown }).type === 'config';
}

/** Earliest of several optional deadlines. */
export function earliest(...deadlines: ReadonlyArray<number | undefined>): number | undefined {
  let best: number | undefined;
  for (const d of deadlines) if (d !== undefined && (best === undefined || d < best)) best = d;
  return best;
}
