/**
 * The manager's building blocks, in the spirit of controller-runtime's builder: a flow says what it
 * watches, which queue keys that feeds and which reconciler runs for the key; the manager runs a
 * list of flows through one lifecycle instead of hand-written start and stop lines.
 */
import type { Observable, Subscription } from 'rxjs';
import type { ControllerLoop } from '../runtime/controller-loop.ts';

/** One flow's part in the lifecycle; every step is optional and runs in the list's order. */
export interface Flow {
  readonly name: string;
  /** Subscribe to the sources (before they start, so the initial lists feed the flow). */
  start?(): void;
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

/** A trigger: a port (a Subject's Observable) and how long to wait before reconciling (coalescing). */
export interface Watch {
  readonly source: Observable<unknown>;
  readonly afterMs?: number;
  /** Queue only while acting (the source fires on standbys too). */
  readonly whileActing?: boolean;
}

/**
 * For(reconciler).Owns(key).Watches(ports): a loop whose one key is queued when acting starts
 * (`initial`) and whenever a watched port fires.
 */
export function singleton(name: string, loop: ControllerLoop, key: string, opts: { readonly initial: Initial; readonly watches?: readonly Watch[]; readonly acting?: () => boolean }): Flow {
  const subs: Subscription[] = [];
  return {
    name,
    start: () => {
      for (const w of opts.watches ?? []) {
        subs.push(w.source.subscribe(() => {
          if (w.whileActing === true && opts.acting?.() !== true) return;
          if (w.afterMs === undefined) loop.queue.add(key);
          else loop.queue.addAfter(key, w.afterMs);
        }));
      }
    },
    startActing: () => {
      loop.start();
      if (opts.initial === 'now') loop.queue.add(key);
      else if (opts.initial !== 'never') loop.queue.addAfter(key, opts.initial.afterMs);
    },
    stopActing: () => loop.stop(),
    stop: () => { for (const s of subs.splice(0)) s.unsubscribe(); },
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
