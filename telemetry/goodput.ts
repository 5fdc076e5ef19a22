/**
 * Goodput of a job through a fault (what a fault cost in training time): one recovery *episode* per job, from the first
 * fault observed to training running again, timed at the stages the controllers already observe:
 *
 *   fault observed --> decided --> pods_deleted --> pods_running --> resumed
 *
 * - fault observed: the earliest first-seen time of the faults the decision acts on (the fault
 *   store's, i.e. the agent's fault_time or our first observation), or the recovery FSM leaving INIT
 *   on `faultOccur` (a fault reported over gRPC); a decision on failed pods alone starts at the decision;
 * - decided: the job_decisions reconcile persisted a decision with actions (its `atMs`);
 * - pods_deleted: that reconcile's deletions returned;
 * - pods_running: a later job_decisions reconcile (every pod event of the job queues one) saw none of
 *   the restart's target pods left and at least minAvailable non-backup pods Running;
 * - resumed: the process-recovery FSM took a success edge (recoverSuccess, scale-in/-out success, or
 *   the fault-retry restart finishing), i.e. TaskD reported the processes recovered. Jobs without
 *   process-level recovery have no such report: their chain stops at pods_running.
 *
 * `clusterd_job_recovery_seconds{stage}` observes, once per episode and stage, the seconds from the
 * fault to that stage; `clusterd_job_lost_seconds_total` counts the same time up as stages are
 * reached, so a closed episode has added exactly (end - fault) where end is `resumed` for an episode
 * handed to the process-recovery FSM and `pods_running` otherwise. Every time is a parameter from the
 * observing code (the work queue's clock); nothing here reads a clock or arms a timer.
 *
 * Series are labelled `job_namespace`, `job_name` (not `namespace`/`job`, which Prometheus and the
 * Operator set as target labels), admitted through a SeriesCap, and removed when the job's PodGroup
 * goes away. Episodes live in memory: a restart mid-episode loses its timings (counters restart too),
 * except that a pending decision replayed after a restart opens the episode again from its persisted
 * fault and decision times.
 */
import type { Counter, Histogram } from 'prom-client';
import { OVERFLOW_LABEL, type SeriesCap } from './series-cap.ts';

export const RECOVERY_STAGES = ['decided', 'pods_deleted', 'pods_running', 'resumed'] as const;
export type RecoveryStage = (typeof RECOVERY_STAGES)[number];
export type GoodputLabel = 'job_namespace' | 'job_name';

export interface GoodputJob {
  /** The queue key `<ns>/<podGroupName>` both flows use. */
  readonly key: string;
  readonly namespace: string;
  /** The job's own name (vcjob / AscendJob metadata.name). */
  readonly name: string;
}

/** The pod facts the Running check needs (policy/jobs/job-view JobPodView fits). */
export interface GoodputPod {
  readonly uid: string;
  readonly phase: string;
  readonly terminating?: boolean;
  readonly backup?: boolean;
}

export interface GoodputDecision {
  /** Earliest first-seen time of the faults acted on; 0 = none (failed pods): the decision starts the episode. */
  readonly faultSinceMs: number;
  readonly atMs: number;
  /** Handed to the process-recovery FSM: the episode ends at `resumed`, not at pods_running. */
  readonly awaitResume: boolean;
  /** Pods that must be gone before the replacements count (the restart's targets). */
  readonly targets: readonly string[];
  /** Pods Running needed (the restart's minAvailable). */
  readonly minRunning: number;
}

interface Episode {
  readonly job: GoodputJob;
  startMs: number;
  /** Up to when lost seconds were counted. */
  countedMs: number;
  readonly seen: Set<RecoveryStage>;
  targets: ReadonlySet<string>;
  minRunning: number;
  awaitResume: boolean;
}

export interface GoodputMetrics {
  readonly stages: Histogram<GoodputLabel | 'stage'>;
  readonly lost: Counter<GoodputLabel>;
  readonly cap: SeriesCap;
}

export class GoodputTracker {
  private readonly episodes = new Map<string, Episode>();
  /** Jobs whose series exist (key -> labels), so a gone job's series can be removed. */
  private readonly labelled = new Map<string, Record<GoodputLabel, string>>();
  private readonly m: GoodputMetrics;

  constructor(m: GoodputMetrics) {
    this.m = m;
  }

  /** The recovery FSM left INIT on a fault (gRPC-reported): opens an episode if none is open. */
  faultObserved(job: GoodputJob, atMs: number): void {
    const e = this.open(job, atMs);
    e.awaitResume = true;
  }

  /** A decision with actions was persisted (or replayed after a restart). */
  decided(job: GoodputJob, d: GoodputDecision): void {
    const e = this.open(job, d.faultSinceMs > 0 ? Math.min(d.faultSinceMs, d.atMs) : d.atMs);
    // A later decision of the same episode (escalation, or job level after a failed process
    // recovery) decides how it ends; its targets replace the earlier ones.
    e.awaitResume = d.awaitResume;
    if (d.targets.length > 0) { e.targets = new Set(d.targets); e.minRunning = d.minRunning; }
    this.reach(e, 'decided', d.atMs);
  }

  podsDeleted(key: string, atMs: number): void {
    const e = this.episodes.get(key);
    if (e !== undefined) this.reach(e, 'pods_deleted', atMs);
  }

  /** The job's pods as a job_decisions reconcile sees them. */
  podsObserved(key: string, pods: readonly GoodputPod[], atMs: number): void {
    const e = this.episodes.get(key);
    if (e === undefined || e.targets.size === 0 || !e.seen.has('decided') || e.seen.has('pods_running')) return;
    if (pods.some((p) => e.targets.has(p.uid))) return;
    const running = pods.filter((p) => p.backup !== true && p.terminating !== true && p.phase === 'Running').length;
    if (running < e.minRunning) return;
    this.reach(e, 'pods_running', atMs);
    if (!e.awaitResume) this.episodes.delete(key);
  }

  /** The process-recovery FSM reported the job's processes recovered. */
  resumed(key: string, atMs: number): void {
    const e = this.episodes.get(key);
    if (e === undefined) return;
    this.reach(e, 'resumed', atMs);
    this.episodes.delete(key);
  }

  /** The job's PodGroup is gone: its episode and its series go too. */
  jobGone(key: string): void {
    this.episodes.delete(key);
    const labels = this.labelled.get(key);
    if (labels === undefined) return;
    this.labelled.delete(key);
    if (labels.job_name === OVERFLOW_LABEL) return; // aggregated: the `other` series stays
    // A job recreated under the same name (new UID, new key) shares the series: keep them for it.
    if ([...this.labelled.values()].some((l) => l.job_namespace === labels.job_namespace && l.job_name === labels.job_name)) return;
    for (const stage of RECOVERY_STAGES) this.m.stages.remove({ ...labels, stage });
    this.m.lost.remove(labels);
    this.m.cap.release(capKey(labels.job_namespace, labels.job_name));
  }

  /** Open episodes (tests, debugging). */
  openEpisodes(): number { return this.episodes.size; }

  private open(job: GoodputJob, startMs: number): Episode {
    const cur = this.episodes.get(job.key);
    if (cur !== undefined) {
      if (startMs < cur.startMs && cur.seen.size === 0) { cur.startMs = startMs; cur.countedMs = startMs; }
      return cur;
    }
    const e: Episode = { job, startMs, countedMs: startMs, seen: new Set(), targets: new Set(), minRunning: 0, awaitResume: false };
    this.episodes.set(job.key, e);
    return e;
  }

  private reach(e: Episode, stage: RecoveryStage, atMs: number): void {
    if (e.seen.has(stage)) return;
    e.seen.add(stage);
    const labels = this.labels(e.job);
    this.m.stages.observe({ ...labels, stage }, Math.max(0, atMs - e.startMs) / 1000);
    const lost = Math.max(0, atMs - e.countedMs);
    if (lost > 0) { this.m.lost.inc(labels, lost / 1000); e.countedMs = atMs; }
    else this.m.lost.inc(labels, 0); // the series exists from the first stage on
  }

  private labels(job: GoodputJob): Record<GoodputLabel, string> {
    const known = this.labelled.get(job.key);
    if (known !== undefined) return known;
    const own = this.m.cap.admit(capKey(job.namespace, job.name));
    const labels = own ? { job_namespace: job.namespace, job_name: job.name } : { job_namespace: OVERFLOW_LABEL, job_name: OVERFLOW_LABEL };
    this.labelled.set(job.key, labels);
    return labels;
  }
}

const capKey = (namespace: string, name: string): string => `${namespace}\u0000${name}`;
