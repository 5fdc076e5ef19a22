/**
 * A task run at a fixed period through a work queue: one key, added again `everyMs` after each pass
 * (the reconciler's `requeueAfterMs`), so a periodic refresh uses the mechanism every reconciler's
 * timers use and owns no setInterval. A pass that throws is retried with the queue's backoff; the
 * period resumes after the next good pass.
 */
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { ControllerLoop } from './controller-loop.ts';
import type { QueueClock } from './clock.ts';
import { WorkQueue } from './work-queue.ts';

export interface PeriodicOptions {
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** The controller's clock (runtime/clock.ts). */
  readonly clock: QueueClock;
}

export class Periodic {
  private readonly loop: ControllerLoop;
  private readonly name: string;
  private readonly everyMs: number;

  /** `name` is the reconciler name (the `controller` label) and the queue key. */
  constructor(name: string, everyMs: number, run: () => void | Promise<void>, o: PeriodicOptions) {
    this.name = name;
    this.everyMs = everyMs;
    const queue = new WorkQueue({ clock: o.clock });
    this.loop = new ControllerLoop({
      name,
      reconcile: async () => {
        await run();
        return { requeueAfterMs: everyMs };
      },
    }, { log: o.log, queue, clock: o.clock, ...(o.metrics === undefined ? {} : { metrics: o.metrics }) });
  }

  /** The first pass runs one period from now (as setInterval's). */
  start(): void {
    this.loop.start();
    this.loop.queue.addAfter(this.name, this.everyMs);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
