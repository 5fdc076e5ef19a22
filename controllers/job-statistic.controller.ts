/**
 * Feeds ClusterD's job statistic (reconcilers/job-statistic.reconciler.ts): an inbox of the events
 * ClusterD's statistic collector receives, each stamped with its time: the Volcano Job and
 * AscendJob informers' adds, AscendJob updates and deletes (by the job object's UID), and every
 * change of a job summary (reconcilers/job-summary.reconciler.ts's store). As ClusterD's memory, the
 * statistic lives on the leader only: the inbox fills while acting, starting with the job objects
 * in the caches (the informers' initial adds, which ClusterD handles after loading the ConfigMap).
 */
import { identityOf } from '../state/job-index.ts';
import type { Subscription } from 'rxjs';
import type { WatchEvent } from '../runtime/reflector.ts';
import type { KubeObject } from '../runtime/kube-client.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { StatEvent, TimedStatEvent } from '../policy/jobs/job-statistic.ts';
import type { JobSummaryState } from '../policy/jobs/job-summary.ts';
import { JOB_STATISTIC_CM_NAME, JOB_STATISTIC_WRITE_INTERVAL_MS, MAX_CUSTOM_JOB_ID_CHARS } from '../schemas/job-statistic/job-statistic.ts';
import { CLUSTER_INFO_NAMESPACE } from '../schemas/cluster-info/cluster-info.ts';
import { JOB_STATISTIC_RECONCILE_KEY, jobStatisticReconciler } from '../reconcilers/job-statistic.reconciler.ts';
import type { JobSummaryChange, JobSummaryStore } from '../reconcilers/job-summary.reconciler.ts';
import { controllerOwner } from './job-summary.controller.ts';
import type { Sources } from './sources/sources.ts';
import { CUSTOM_JOB_ID_ANNOTATION } from './sources/cache-shapes.ts';


export interface JobStatisticControllerDeps {
  readonly sources: Sources;
  readonly summaries: JobSummaryStore;
  readonly writer: ConfigMapWriter;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The controller's clock (runtime/clock.ts): report times and the loop's timers. */
  readonly clock: QueueClock;
  /**
   * --output-limits: a custom-job-id over MAX_CUSTOM_JOB_ID_CHARS is left out and the
   * ConfigMap kept within 1 MiB; false = ClusterD (copied whole, everything written).
   */
  readonly limits: boolean;
}

/** The chips of the job's complete rank table (ClusterD's PreServerList), 0 while it is incomplete. */
const cardsOf = (s: JobSummaryState): number =>
  (s.rankTable.status === 'complete' ? (s.rankTable.servers ?? []).reduce((n, srv) => n + srv.devices.length, 0) : 0);


function summaryEvent(c: JobSummaryChange): StatEvent {
  if (c.next === undefined) return { kind: 'summary_delete', key: c.key };
  return { kind: 'summary', key: c.key, first: c.prev === undefined, status: c.next.status, isPreDelete: c.next.isPreDelete, cardNum: cardsOf(c.next) };
}

export class JobStatisticController {
  readonly loop: ControllerLoop;
  private inbox: TimedStatEvent[] = [];
  private acting = false;
  private subs: Subscription[] = [];
  private readonly d: JobStatisticControllerDeps;

  constructor(d: JobStatisticControllerDeps) {
    this.d = d;
    const s = d.sources;
    this.loop = new ControllerLoop(jobStatisticReconciler({
      namespace: CLUSTER_INFO_NAMESPACE, writer: d.writer,
      actual: () => s.mindxDlConfigMaps.get(`${CLUSTER_INFO_NAMESPACE}/${JOB_STATISTIC_CM_NAME}`),
      drain: () => this.inbox.splice(0),
      // A PodGroup naming a Volcano Job or AscendJob counts for it only when that owner is verified (policy/jobs/job-identity.ts).
      podGroupJobs: () => new Set([...s.podGroups.store.values()].filter((pg) => identityOf(pg, s)?.verdict.ok !== false).map((pg) => controllerOwner(pg)?.uid ?? '').filter((u) => u !== '')),
      onInvalid: (reason) => d.metrics.invalidInput.inc({ format: 'job_statistic', reason }),
      onRefused: (keys) => d.metrics.boundHits.inc({ bound: 'job_statistics' }, keys.length),
      limits: d.limits,
      onOmitted: (ids, maxBytes) => d.metrics.bounds.hit('job_statistic_bytes', 'current-job-statistic over a ConfigMap\'s size: entries left out of this write (kept in memory)', { configMap: JOB_STATISTIC_CM_NAME, maxBytes, omitted: ids.slice(0, 10) }, ids.length),
    }), { log: d.log, metrics: d.metrics, clock: d.clock });
  }

  /** Subscribes before the sources start (events before acting are dropped: the caches replay them). */
  start(): void {
    const s = this.d.sources;
    this.subs = [
      s.vcJobs.events$.subscribe((ev) => this.push(this.jobEvent(ev as WatchEvent<KubeObject>, false))),
      s.ascendJobs.events$.subscribe((ev) => this.push(this.jobEvent(ev as WatchEvent<KubeObject>, true))),
      this.d.summaries.changes$.subscribe((c) => this.push(summaryEvent(c))),
    ];
  }

  stop(): void { for (const sub of this.subs) sub.unsubscribe(); }

  /** Leader: the job objects in the caches as adds, then the first tick one interval from now. */
  startActing(): void {
    this.acting = true;
    const s = this.d.sources;
    for (const o of [...s.vcJobs.store.values(), ...s.ascendJobs.store.values()]) this.push(this.jobAdd(o));
    this.loop.start();
    this.loop.queue.addAfter(JOB_STATISTIC_RECONCILE_KEY, JOB_STATISTIC_WRITE_INTERVAL_MS);
  }

  async stopActing(): Promise<void> {
    this.acting = false;
    this.inbox = [];
    await this.loop.stop();
  }

  /** ClusterD's job event of a watch event (a Volcano Job's update means nothing to it). */
  private jobEvent(ev: WatchEvent<KubeObject>, ascend: boolean): StatEvent | undefined {
    const o = ev.obj;
    if (ev.type === 'add') return this.jobAdd(o);
    if (ev.type === 'delete') return { kind: 'job_delete', key: o.metadata?.uid ?? '' };
    return ascend ? { kind: 'acjob_update', key: o.metadata?.uid ?? '' } : undefined;
  }

  /** VCJobCreate / ACJobCreate; with the limits an over-long custom-job-id is left out (counted, logged). */
  private jobAdd(o: KubeObject): StatEvent {
    let customId = o.metadata?.annotations?.[CUSTOM_JOB_ID_ANNOTATION] ?? '';
    if (this.d.limits && customId.length > MAX_CUSTOM_JOB_ID_CHARS) {
      this.d.metrics.bounds.hit('custom_job_id_chars', 'custom-job-id too long: left out of current-job-statistic', {
        job: `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, maxChars: MAX_CUSTOM_JOB_ID_CHARS,
      });
      customId = '';
    }
    return { kind: 'job_add', key: o.metadata?.uid ?? '', name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? '', customId };
  }

  private push(event: StatEvent | undefined): void {
    if (!this.acting || event === undefined || event.key === '') return;
    this.inbox.push({ event, atSec: Math.floor(this.d.clock.now() / 1000) });
  }
}
