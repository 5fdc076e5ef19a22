/**
 * Runs a Reconciler over a WorkQueue with a fixed number of workers. Errors go back to the queue
 * (rate-limited), never swallowed; a TerminalError is logged and dropped; an unexpected throw is
 * caught here, at the loop boundary, so the process stays up.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { TerminalError, type Reconciler } from './reconciler.ts';
import { STOPPED } from './stopped.ts';
import type { QueueClock } from './clock.ts';
import { WorkQueue } from './work-queue.ts';

/**
 * Reconcile ids for the log: a random start per process, then a counter. Unique within a process's
 * log without drawing entropy for every pass (a syscall-backed read that showed in profiles).
 */
let lastReconcileId = randomBytes(4).readUInt32BE(0);
const nextReconcileId = (): string => (lastReconcileId = (lastReconcileId + 1) >>> 0).toString(16).padStart(8, '0');

export interface ControllerLoopOptions {
  readonly workers?: number;
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** A queue of its own (backoff settings); it must run on `clock`. */
  readonly queue?: WorkQueue;
  /** The controller's clock (runtime/clock.ts): the reconcilers' `now` and the queue's timers. */
  readonly clock: QueueClock;
}

export class ControllerLoop {
  readonly queue: WorkQueue;
  private readonly abort = new AbortController();
  private readonly running: Array<Promise<void>> = [];
  private readonly reconciler: Reconciler;
  private readonly opts: ControllerLoopOptions;

  constructor(reconciler: Reconciler, opts: ControllerLoopOptions) {
    this.reconciler = reconciler;
    this.opts = opts;
    this.queue = opts.queue ?? new WorkQueue({ clock: opts.clock });
  }

  start(): void {
    for (let i = 0; i < (this.opts.workers ?? 1); i++) this.running.push(this.worker());
  }

  async stop(): Promise<void> {
    this.abort.abort(STOPPED);
    this.queue.shutDown();
    await Promise.all(this.running);
  }

  /**
   * Resolves when the queue is empty, nothing is in flight and the reconciler has put off no work
   * (Reconciler.settling: tests, benchmarks). It polls in real
   * time on purpose: it waits for real I/O to drain, and a test on a manual clock calls it too.
   */
  async idle(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length > 0 || this.inFlight > 0 || this.reconciler.settling?.() === true) {
      if (Date.now() > deadline) throw new Error(`${this.reconciler.name}: not idle after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  private inFlight = 0;

  private async worker(): Promise<void> {
    const name = this.reconciler.name;
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.inFlight++;
      const log = this.opts.log.child({ controller: name, key, reconcileId: nextReconcileId() });
      const t0 = performance.now();
      let result = 'success';
      try {
        const out = await this.reconciler.reconcile(key, { log, signal: this.abort.signal, now: () => this.opts.clock.now() });
        this.queue.forget(key);
        if (out.requeueAfterMs !== undefined) { this.queue.addAfter(key, out.requeueAfterMs); result = 'requeue_after'; }
      } catch (err) {
        if (err instanceof TerminalError) {
          result = 'terminal';
          this.queue.forget(key);
          log.error('reconcile failed terminally; waiting for the next change', { err: err.message });
        } else {
          result = 'error';
          const delay = this.queue.addRateLimited(key);
          const isBug = err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError;
          log[isBug ? 'error' : 'warn']('reconcile failed; requeued', { err: String(err), stack: isBug ? (err as Error).stack : undefined, retryInMs: delay, retries: this.queue.retries(key) });
        }
      } finally {
        this.inFlight--;
        this.queue.done(key);
        this.opts.metrics?.reconciles.inc({ controller: name, result });
        this.opts.metrics?.reconcileDuration.observe({ controller: name }, (performance.now() - t0) / 1000);
        this.opts.metrics?.queueDepth.set({ controller: name }, this.queue.length);
      }
    }
  }
}
