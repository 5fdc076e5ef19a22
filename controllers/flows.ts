/**
 * The manager's lifecycle blocks: every flow (declared in controllers/build.ts, built by
 * controllers/wiring.ts) runs through one lifecycle instead of hand-written start and stop lines.
 */
import type { ControllerLoop } from '../runtime/controller-loop.ts';

/** One flow's part in the lifecycle; every step is optional and runs in the list's order. */
export interface Flow {
  readonly name: string;
  /** Subscribe to the sources (before they start, so the initial lists feed the flow). */
  start?(): void;
  /** The caches synced: read what `synced` needs (awaited in order, only when it returns a promise). */
  beforeSynced?(): Promise<void> | void;
  /** The caches synced: restore what the last process persisted, before anything acts. */
  synced?(): void;
  /** This replica leads: start the reconcilers and queue what a restart must look at. */
  startActing?(): void;
  /** Leadership lost (or shutdown): drain the reconcilers. */
  stopActing?(): Promise<void> | void;
  /** Shutdown, after stopActing: unsubscribe, end timers. */
  stop?(): Promise<void> | void;
}

/** When a singleton reconciler's key is first queued once acting. */
export type Initial = 'now' | 'never' | { readonly afterMs: number };

/**
 * For(reconciler).Owns(key): the lifecycle of a loop whose one key is queued when acting starts
 * (`initial`); what else queues it is the flow's event handlers (`keyOn`, controllers/wiring.ts).
 */
export function singleton(loop: ControllerLoop, key: string, initial: Initial): Omit<Flow, 'name'> {
  return {
    startActing: () => {
      loop.start();
      if (initial === 'now') loop.queue.add(key);
      else if (initial !== 'never') loop.queue.addAfter(key, initial.afterMs);
    },
    stopActing: () => loop.stop(),
  };
}

/** An event mapped to a loop's key, at once or after `afterMs` (coalescing); `when` gates it (e.g. only while acting). */
export function keyOn(loop: ControllerLoop, key: string, opts: { readonly afterMs?: number; readonly when?: () => boolean } = {}): () => void {
  return () => {
    if (opts.when !== undefined && !opts.when()) return;
    if (opts.afterMs === undefined) loop.queue.add(key);
    else loop.queue.addAfter(key, opts.afterMs);
  };
}

/** Runs one lifecycle step over the flows, in order (awaiting each async one). */
export async function runStep(flows: readonly Flow[], step: 'stopActing' | 'stop'): Promise<void> {
  for (const f of flows) await f[step]?.();
}

/** The synchronous steps, in order. */
export function runSyncStep(flows: readonly Flow[], step: 'start' | 'synced' | 'startActing'): void {
  for (const f of flows) f[step]?.();
}

/** `beforeSynced` of every flow, in order; a step that returns no promise is not awaited (no extra turn). */
export async function runBeforeSynced(flows: readonly Flow[]): Promise<void> {
  for (const f of flows) {
    const p = f.beforeSynced?.();
    if (p !== undefined) await p;
  }
}
