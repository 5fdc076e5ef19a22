/**
 * config.Config's rank-table pushes (docs/grpc.md#config-service), as ClusterD's
 * component/clusterd/pkg/domain/epranktable/ranktable_manager.go: a queue of "generate the global
 * rank table of job id J (in namespace N)" messages, each a separate item:
 * - a subscription adds one with no namespace, rate-limited (first try after 2 s); the namespace is
 *   that of the job whose PodGroup carries `jobID=J`, `app=mindie-ms-server`;
 * - every event of a `rings-config-*` ConfigMap (label mx-consumer-cim=true) with a `jobID` label,
 *   and of a pod labelled `app=mindie-ms-controller` / `mindie-ms-coordinator` with a `jobID` label,
 *   adds one at once;
 * - a try that cannot build the table (policy/jobs/global-rank-table.ts) or finds no listening
 *   stream is retried after 2 s, 4 s, 8 s...; an item retried three times is dropped.
 * Every successful build is pushed, identical or not. Pending items are bounded (the oldest goes).
 */
import type { Subscription } from 'rxjs';
import { TimerLoop } from '../runtime/timer-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { WatchEvent } from '../runtime/reflector.ts';
import type { ConfigMap, Pod, PodGroup } from '../runtime/kube-objects.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { JobSummaryState } from '../policy/jobs/job-summary.ts';
import { globalRankTable, type InstancePod } from '../policy/jobs/global-rank-table.ts';
import type { Sources } from './sources/sources.ts';

const JOB_ID_LABEL = 'jobID';
const APP_LABEL = 'app';
const SERVER_APP = 'mindie-ms-server';
const CONTROLLER_APP = 'mindie-ms-controller';
const COORDINATOR_APP = 'mindie-ms-coordinator';
/** ClusterD's constant.QueueInitDelay / QueueMaxDelay / MaxRetryTime. */
const BASE_DELAY_MS = 2_000;
const MAX_DELAY_MS = 16_000;
const MAX_REQUEUES = 3;
const MAX_PENDING = 10_000;

/**
 * The namespaces of the MindIE server jobs that MindIE job id `jobId` names (PodGroup labels
 * `jobID=<jobId>`, `app=mindie-ms-server`): config.Config serves the id only to their pods (and to
 * system callers). Several when tenants chose the same id; none while the job does not exist yet.
 */
export function mindieNamespaces(jobs: ReadonlyMap<string, JobSummaryState>, podGroup: (jobKey: string) => PodGroup | undefined, jobId: string): string[] {
  const out = new Set<string>();
  for (const [key, s] of jobs) {
    const labels = podGroup(key)?.metadata?.labels ?? {};
    if ((labels[JOB_ID_LABEL] ?? '') === jobId && (labels[APP_LABEL] ?? '') === SERVER_APP) out.add(s.namespace);
  }
  return [...out];
}

export interface RankTablePublisherDeps {
  readonly sources: Pick<Sources, 'ringsConfigMaps' | 'pods'>;
  readonly jobs: () => ReadonlyMap<string, JobSummaryState>;
  readonly podGroup: (jobKey: string) => PodGroup | undefined;
  readonly pods: (jobKey: string) => readonly Pod[];
  /**
   * Push the table of job id `jobId`'s job in `namespace` to its listening stream; false when none
   * listens or its caller may not see that namespace (grpc/config.service.ts).
   */
  readonly push: (jobId: string, namespace: string, rankTable: string) => boolean;
  readonly clock: QueueClock;
  readonly log: Logger;
}

interface Item { readonly jobId: string; namespace: string; requeues: number }

export class RankTablePublisher {
  private readonly d: RankTablePublisherDeps;
  private readonly items = new Map<string, Item>();
  private nextId = 0;
  private readonly loop: TimerLoop;
  private sub: Subscription[] = [];

  constructor(d: RankTablePublisherDeps) {
    this.d = d;
    this.loop = new TimerLoop({ name: 'rank_table_publisher', log: d.log, clock: d.clock }, (key) => this.process(key));
  }

  start(): void {
    this.loop.start();
    const s = this.d.sources;
    this.sub = [
      s.ringsConfigMaps.events$.subscribe((ev: WatchEvent<ConfigMap>) => this.fromObject(ev.obj)),
      s.pods.events$.subscribe((ev: WatchEvent<Pod>) => {
        const app = ev.obj.metadata?.labels?.[APP_LABEL];
        if (app === CONTROLLER_APP || app === COORDINATOR_APP) this.fromObject(ev.obj);
      }),
    ];
  }

  async stop(): Promise<void> {
    for (const x of this.sub.splice(0)) x.unsubscribe();
    this.items.clear();
    await this.loop.stop();
  }

  /** A stream listens for `jobId` now (AddRateLimited of a message without namespace). */
  subscribed(jobId: string): void {
    this.rateLimited(this.add({ jobId, namespace: '', requeues: 0 }));
  }

  get pending(): number { return this.items.size; }

  private fromObject(o: ConfigMap | Pod): void {
    const jobId = o.metadata?.labels?.[JOB_ID_LABEL];
    if (jobId === undefined) return;
    const id = this.add({ jobId, namespace: o.metadata?.namespace ?? '', requeues: 0 });
    this.loop.after(id, 0);
  }

  private add(item: Item): string {
    if (this.items.size >= MAX_PENDING) {
      const oldest = this.items.keys().next().value;
      if (oldest !== undefined) this.items.delete(oldest);
    }
    const id = String(++this.nextId);
    this.items.set(id, item);
    return id;
  }

  private rateLimited(id: string): void {
    const item = this.items.get(id);
    if (item === undefined) return;
    const delay = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** item.requeues);
    item.requeues++;
    this.loop.after(id, delay);
  }

  /** The first job of the summary whose PodGroup has these labels (and namespace, if given). */
  private instanceJob(jobId: string, app: string, namespace?: string): JobSummaryState | undefined {
    for (const [key, s] of this.d.jobs()) {
      if (namespace !== undefined && s.namespace !== namespace) continue;
      const labels = this.d.podGroup(key)?.metadata?.labels ?? {};
      if ((labels[JOB_ID_LABEL] ?? '') === jobId && (labels[APP_LABEL] ?? '') === app) return s;
    }
    return undefined;
  }

  private instancePods(jobId: string, namespace: string, app: string): InstancePod[] | undefined {
    const job = this.instanceJob(jobId, app, namespace);
    if (job === undefined) return undefined;
    return this.d.pods(job.key).map((p) => ({ name: p.metadata?.name ?? '', hostIP: p.status?.hostIP ?? '', podIP: p.status?.podIP ?? '' }));
  }

  private process(id: string): void {
    const item = this.items.get(id);
    if (item === undefined) return;
    if (item.requeues >= MAX_REQUEUES) {
      this.items.delete(id);
      this.d.log.warn('global rank table not pushed: retries exhausted', { jobId: item.jobId.slice(0, 128) });
      return;
    }
    if (item.namespace === '') {
      const ns = this.instanceJob(item.jobId, SERVER_APP)?.namespace;
      if (ns === undefined) return this.rateLimited(id);
      item.namespace = ns;
    }
    const table = globalRankTable({
      configMaps: [...this.d.sources.ringsConfigMaps.store.values()]
        .filter((cm) => cm.metadata?.namespace === item.namespace && cm.metadata?.labels?.[JOB_ID_LABEL] === item.jobId)
        .map((cm) => ({ name: cm.metadata?.name ?? '', labels: cm.metadata?.labels ?? {}, data: cm.data ?? {} })),
      coordinator: this.instancePods(item.jobId, item.namespace, COORDINATOR_APP),
      controller: this.instancePods(item.jobId, item.namespace, CONTROLLER_APP),
    });
    if ('retry' in table) {
      this.d.log.debug('global rank table not ready', { jobId: item.jobId.slice(0, 128), reason: table.retry });
      return this.rateLimited(id);
    }
    if (!this.d.push(item.jobId, item.namespace, table.ok)) return this.rateLimited(id);
    this.items.delete(id);
    this.d.log.info('global rank table pushed', { jobId: item.jobId.slice(0, 128), bytes: table.ok.length });
  }
}
