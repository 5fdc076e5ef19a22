/**
 * The step-retry filter on the scheduler view (docs/rules.md#filter.step-retry, #decision.hidden-by-filter, #filter.two-views): for a job with
 * `process-recover-enable=on` and `retry` in `recover-strategy`, the retry faults 80E01801 (UCE) and
 * 8C1F860B (HCCL) on its chips are kept out of what the rescheduler sees (cluster-info and the jobs
 * pipeline, both read DeviceFaultsController.effective) while policy/filters/step-retry-filter.ts says so:
 * the first 10 s of a fault, then while the recovery FSM's step retry runs (its `setStepRetryHold`
 * is the job's RecoverTime; a success is its completion). The recovery FSM is fed this view too
 * (ClusterD's job fault list comes from the filtered device-info; the business-plane report stands
 * in for a hidden fault, policy/recovery/recovery-feed.ts); fault subscribers keep the job view, unfiltered.
 * The filtering itself is pure (policy/filters/step-retry-view.ts); this module keeps its time.
 *
 * A verdict can change with time alone (the 10 s window ends, the 30 s completion window ends), so
 * the job's nodes are re-announced to the intake (`notify`) when a window ends or a hold changes:
 * cluster-info is re-rendered and the job re-decided.
 */
import type { SchedulerLike } from 'rxjs';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { isStepRetryJob, STEP_RETRY_COMPLETE_WINDOW_MS, type StepRetryJob } from '../policy/filters/step-retry-filter.ts';
import { retryFaultWindowEnds, stepRetryJobOf, stepRetrySchedulerView } from '../policy/filters/step-retry-view.ts';
import { jobNodes } from '../policy/jobs/job-view.ts';
import { TimerLoop } from '../runtime/timer-loop.ts';
import { schedulerClock } from '../runtime/work-queue.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { JobLookup } from '../policy/jobs/job-facts.ts';

export interface StepRetryViewDeps {
  /** The job index as the recovery flow reads it (current pods and last complete placement). */
  readonly index: JobLookup;
  /** The recovery FSM's step-retry facts of a job (by UID). */
  readonly stepRetry: (jobId: string, retryEnabled: boolean) => StepRetryJob;
  /** The unfiltered faults of a node. */
  readonly jobView: (node: string) => readonly FaultRecord[];
  /** Re-announce nodes whose scheduler view changed. */
  readonly notify: (nodes: readonly string[]) => void;
  /** Time: the window ends are work-queue keys on this scheduler's clock (tests pass a virtual one). */
  readonly scheduler: SchedulerLike;
  readonly now: () => number;
  readonly log: Logger;
  /** --trust-pod-npu-annotations (ClusterD): a contested chip is held by the first job naming it. */
  readonly openClaims?: boolean;
}

/** Slack after a window's end before looking again. */
const SLACK_MS = 50;

export class StepRetryView {
  private readonly d: StepRetryViewDeps;
  /** Per job key, the instants at which to look again; the timer key is the job key, armed for the earliest. */
  private readonly due = new Map<string, Set<number>>();
  private readonly timers: TimerLoop;

  constructor(d: StepRetryViewDeps) {
    this.d = d;
    this.timers = new TimerLoop({ name: 'step_retry_windows', log: d.log, clock: schedulerClock(d.scheduler) }, (key, nowMs) => this.fire(key, nowMs));
  }

  private nodesOf(key: string): string[] {
    const e = this.d.index.job(key);
    return e === undefined ? [] : jobNodes(e.view);
  }

  private nudgeAt(key: string, atMs: number): void {
    const times = this.due.get(key) ?? new Set<number>();
    if (times.has(atMs)) return;
    times.add(atMs);
    this.due.set(key, times);
    this.timers.start();
    this.timers.at(key, atMs);
  }

  /** The job's key is due: re-announce its nodes if one of its instants passed, then arm the next. */
  private fire(key: string, nowMs: number): void {
    const times = this.due.get(key);
    if (times === undefined) return;
    let passed = false;
    for (const t of times) if (t <= nowMs) { times.delete(t); passed = true; }
    if (passed) this.d.notify(this.nodesOf(key));
    if (times.size === 0) this.due.delete(key);
    else this.timers.at(key, Math.min(...times));
  }

  /** The job's faults changed: when a retry fault's 10 s window ends, look again. */
  watch(key: string): void {
    const pg = this.d.index.job(key)?.podGroup.metadata;
    if (pg === undefined || !isStepRetryJob(pg.labels, pg.annotations)) return;
    const now = this.d.now();
    for (const windowEnd of retryFaultWindowEnds(this.nodesOf(key).flatMap((n) => this.d.jobView(n)))) {
      const end = windowEnd + SLACK_MS;
      if (end > now) this.nudgeAt(key, end);
    }
  }

  /** A hold was set or released: look now, and when its completion window ends. */
  holdChanged(key: string): void {
    this.d.notify(this.nodesOf(key));
    this.nudgeAt(key, this.d.now() + STEP_RETRY_COMPLETE_WINDOW_MS + SLACK_MS);
  }

  stop(): void {
    this.due.clear();
    void this.timers.stop();
  }

  /** `records` of `node` as the rescheduler sees them (hidden retry faults dropped, HCCL re-levelled). */
  schedulerView(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[] {
    return stepRetrySchedulerView(records, (device) => stepRetryJobOf(this.d.index, this.d.stepRetry, node, device, this.d.openClaims === true), nowMs);
  }
}
