/**
 * ClusterD's job statistic as a pure state machine (clusterd domain/statistics job_collect_utils.go
 * JobStcMgr, fed by application/statistics job_collect.go): one entry per Volcano Job / AscendJob,
 * keyed by the job object's UID, changed by the job's own events and by its job summary's
 * transitions (policy/jobs/job-summary.ts). No I/O, no clock: each event carries its time.
 *
 * `bumps` counts ClusterD's `version++`: the ConfigMap is rewritten on the next tick when it moved,
 * even if the bytes are the same (the apiserver makes that a no-op).
 */
import { MAX_JOB_STATISTICS, ZERO_STATISTIC, type JobStatisticFields } from '../../schemas/job-statistic/job-statistic.ts';
import type { JobStatus } from '../../schemas/job-summary/job-summary.ts';

/** What ClusterD keeps per job beyond the written fields (json "-"). */
export interface JobStatEntry extends JobStatisticFields {
  /** The summary status last seen; "" for an entry loaded from the ConfigMap. */
  readonly status: JobStatus | '';
  readonly name: string;
  readonly namespace: string;
  /** ScheduleProcess in percent: 0 created, 5 AscendJob updated, 10 PodGroup seen, 100 first running. */
  readonly progress: number;
}

export type StatEvent =
  /** VCJobCreate / ACJobCreate: the informer's add of the job object. */
  | { readonly kind: 'job_add'; readonly key: string; readonly name: string; readonly namespace: string; readonly customId: string }
  /** ACJobUpdate (a Volcano Job's update is ignored by ClusterD). */
  | { readonly kind: 'acjob_update'; readonly key: string }
  /** VCJobDelete / ACJobDelete. */
  | { readonly kind: 'job_delete'; readonly key: string }
  /**
   * The job summary of this key changed (PGAdd / PGUpdate / PGDelete). `first`: the summary was
   * just created. `cardNum`: chips of the job's complete rank table (PreServerList), 0 if none.
   */
  | { readonly kind: 'summary'; readonly key: string; readonly first: boolean; readonly status: JobStatus; readonly isPreDelete: boolean; readonly cardNum: number }
  /** JobInfoDelete: the job summary was dropped (a minute after its pre-delete). */
  | { readonly kind: 'summary_delete'; readonly key: string };

export interface TimedStatEvent {
  readonly event: StatEvent;
  readonly atSec: number;
}

export interface StatStep {
  readonly entries: ReadonlyMap<string, JobStatEntry>;
  readonly bumps: number;
  /** Job keys refused because MAX_JOB_STATISTICS entries are held. */
  readonly refused: readonly string[];
}

const PG_CREATED = 10;
const JOB_CREATED = 5;
const JOB_RUNNING = 100;

/** updateStatistic: the entry after the summary moved to `status`. */
export function updateStatistic(e: JobStatEntry, status: JobStatus, isPreDelete: boolean, cardNum: number, nowSec: number): JobStatEntry {
  const next = { ...e, status };
  switch (status) {
    case 'running':
      next.stopTime = 0;
      if (e.podFirstRunTime === 0) return { ...next, podFirstRunTime: nowSec, cardNum, progress: JOB_RUNNING };
      // Running again after a fault: the recovery's time.
      return e.podLastFaultTime > e.podLastRunTime ? { ...next, podLastRunTime: nowSec } : next;
    case 'complete':
      return { ...next, stopTime: nowSec };
    case 'failed': {
      // One fault per run: a second failed status without a run in between counts nothing.
      if (e.podLastRunTime < e.podLastFaultTime) return next;
      const podLastFaultTime = nowSec;
      return { ...next, podLastFaultTime, podFaultTimes: e.podFaultTimes + 1, stopTime: isPreDelete ? podLastFaultTime : next.stopTime };
    }
    default:
      return next;
  }
}

/** Applies events in order to a copy of `entries` (insertion order is the ConfigMap's order). */
export function applyStatEvents(entries: ReadonlyMap<string, JobStatEntry>, events: readonly TimedStatEvent[]): StatStep {
  const m = new Map(entries);
  let bumps = 0;
  const refused: string[] = [];
  for (const { event: ev, atSec } of events) {
    const e = m.get(ev.key);
    switch (ev.kind) {
      case 'job_add': {
        if (m.size >= MAX_JOB_STATISTICS) { if (e === undefined) refused.push(ev.key); break; }
        // A stopped entry of an earlier job of the same name goes (getOldStopJobStc).
        const old = [...m.values()].find((o) => o.namespace === ev.namespace && o.name === ev.name && o.stopTime !== 0);
        if (old !== undefined && old.id !== ev.key) { m.delete(old.id); bumps++; }
        if (e !== undefined) break;
        m.set(ev.key, { id: ev.key, ...ZERO_STATISTIC, customId: ev.customId, status: 'pending', name: ev.name, namespace: ev.namespace, progress: 0 });
        bumps++;
        break;
      }
      case 'acjob_update':
        if (e !== undefined && e.progress < JOB_CREATED) { m.set(ev.key, { ...e, progress: JOB_CREATED }); bumps++; }
        break;
      case 'job_delete': {
        if (e === undefined) break;
        let cur = e;
        // Deleted before its PodGroup was seen: a job with a configuration error, failed now.
        if (cur.progress < PG_CREATED && cur.stopTime === 0) { cur = { ...cur, status: 'failed', stopTime: atSec }; m.set(ev.key, cur); bumps++; }
        // Stopped jobs go with their object; a running one stays until its summary is dropped.
        if (cur.stopTime !== 0) { m.delete(ev.key); bumps++; }
        break;
      }
      case 'summary': {
        if (e === undefined) break;
        let cur = e;
        // PGAdd marks the PodGroup seen.
        if (ev.first && cur.progress < PG_CREATED) { cur = { ...cur, progress: PG_CREATED }; m.set(ev.key, cur); bumps++; }
        if (cur.status === ev.status) break;
        // PGUpdate re-marks the PodGroup seen on a change (PGDelete, the pre-delete, does not).
        if (!ev.isPreDelete) cur = { ...cur, progress: PG_CREATED };
        m.set(ev.key, updateStatistic(cur, ev.status, ev.isPreDelete, ev.cardNum, atSec));
        bumps++;
        break;
      }
      case 'summary_delete':
        if (e !== undefined) { m.delete(ev.key); bumps++; }
        break;
    }
  }
  return { entries: m, bumps, refused };
}

/**
 * LoadConfigMapToCache: the entries of the ConfigMap left by the last process whose job still has a
 * PodGroup (ClusterD's PodGroup cache at start), without status, name or progress (not written).
 * Returns how many were dropped.
 */
export function loadStatistics(loaded: readonly JobStatisticFields[], podGroupJobs: ReadonlySet<string>): [Map<string, JobStatEntry>, number] {
  const m = new Map<string, JobStatEntry>();
  let dropped = 0;
  for (const f of loaded) {
    if (!podGroupJobs.has(f.id)) { dropped++; continue; }
    m.set(f.id, { ...f, status: '', name: '', namespace: '', progress: 0 });
  }
  return [m, dropped];
}
