/** The reconcile contract (docs/CONVENTIONS.md#reconcilers): level-triggered, idempotent, timers as requeues. */
import type { Logger } from '../telemetry/logger.ts';

export interface Outcome {
  /** Run this key again after this many ms (grace periods, timeouts); never a setTimeout of its own. */
  readonly requeueAfterMs?: number;
}

export interface ReconcileContext {
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly now: () => number;
}

export interface Reconciler {
  /** snake_case; becomes the `controller` label. */
  readonly name: string;
  reconcile(key: string, ctx: ReconcileContext): Promise<Outcome>;
  /**
   * True while a pass has work it put off for a short while (a write spaced by a rate limit, a
   * burst held to coalesce), as opposed to a periodic requeue: ControllerLoop.idle waits for it.
   */
  settling?(): boolean;
}

/** Thrown for errors that retrying cannot fix (docs/CONVENTIONS.md#errors, terminal): no requeue until the next change. */
export class TerminalError extends Error {
  override readonly name: string = 'TerminalError';
}
