/**
 * The job-identity flow: every PodGroup add or update queues its key for the refusal report
 * (reconcilers/job-identity.reconciler.ts); acting starts with every cached PodGroup, so a refusal
 * is reported once the caches (Jobs and AscendJobs included) have synced, never from a partial list.
 * The refusal itself is the job index's (state/job-index.ts): this flow only makes it visible.
 */
import type { Subscription } from 'rxjs';
import { objectKey } from '../runtime/reflector.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { Reconciler } from '../runtime/reconciler.ts';
import { jobIdentityReconciler } from '../reconcilers/job-identity.reconciler.ts';
import type { Sources } from './sources/sources.ts';

export interface JobIdentityControllerDeps {
  readonly sources: Pick<Sources, 'podGroups' | 'vcJobs' | 'ascendJobs'>;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly dryRun: boolean;
  /** The controller's clock (runtime/clock.ts): the loop's timers. */
  readonly clock: QueueClock;
}

export class JobIdentityController {
  private readonly reconciler: Reconciler;
  /** One per leadership term (a stopped loop does not start again). */
  private loop: ControllerLoop | undefined;
  private sub: Subscription | undefined;
  private readonly d: JobIdentityControllerDeps;

  constructor(d: JobIdentityControllerDeps) {
    this.d = d;
    const s = d.sources;
    // Created once: what it remembers (reported, verified) outlives a leadership term.
    this.reconciler = jobIdentityReconciler({ podGroup: (key) => s.podGroups.get(key), jobs: s, client: d.client, metrics: d.metrics, dryRun: d.dryRun });
  }

  start(): void {
    // A deleted PodGroup is queued too: its pass forgets what was remembered for it.
    this.sub = this.d.sources.podGroups.events$.subscribe((ev) => this.loop?.queue.add(objectKey(ev.obj)));
  }

  startActing(): void {
    if (this.loop !== undefined) return;
    const loop = new ControllerLoop(this.reconciler, { log: this.d.log, metrics: this.d.metrics, clock: this.d.clock });
    this.loop = loop;
    loop.start();
    for (const key of this.d.sources.podGroups.store.keys()) loop.queue.add(key);
  }

  async stopActing(): Promise<void> {
    const loop = this.loop;
    this.loop = undefined;
    await loop?.stop();
  }

  stop(): void { this.sub?.unsubscribe(); }
}
