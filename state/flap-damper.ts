/**
 * Flap damping in the jobs flow (policy/faults/flap-damping.ts has the rules and why): rule 2, the
 * restart budget. Holds each job's last restart, in memory; which hardware recovered and when is the
 * fault view's (controllers/fault-view.ts, published by controllers/fault-view-stage.ts, where rule 1's holds are computed once per change).
 * The job's step (policy/jobs/job-step.ts) reads the budget (`last`, `config`, `recoveredSince`) and
 * answers the deferral and the next `LastRestart`; the reconcile writes it back (`record`) once the
 * restart was carried out.
 *
 * Hysteresis is not applied to the decision view: a held record is hardware that is not faulty now,
 * so it never is a cause of a restart (a pod placed on that chip after it recovered never saw the
 * fault; a pod that was on it was restarted for it). Restarted or new leaders start with no damping
 * memory: the first flap after a restart is handled as a first fault (at most one extra restart).
 */
import { afterRestart, deferRestart, type FlapDampingConfig, type LastRestart } from '../policy/faults/flap-damping.ts';

/** Where damping is counted (telemetry/metrics.ts Metrics satisfies it: clusterd_flap_damped_total{rule}). */
export interface FlapDampedCounter {
  readonly flapDamped: { inc(labels: { rule: 'hold' | 'defer' }): void };
}

/** The entity (`node` or `node/device`) recovered after t (the fault view's damping state). */
export type RecoveredSince = (entity: string, t: number) => boolean;

export class FlapDamper {
  private readonly restarts = new Map<string, LastRestart>();
  readonly config: FlapDampingConfig;
  private readonly now: () => number;
  readonly recoveredSince: RecoveredSince;
  private readonly metrics: FlapDampedCounter | undefined;

  constructor(cfg: FlapDampingConfig, now: () => number, recoveredSince: RecoveredSince, metrics?: FlapDampedCounter) {
    this.config = cfg;
    this.now = now;
    this.recoveredSince = recoveredSince;
    this.metrics = metrics;
  }

  get enabled(): boolean { return this.config.holdMs > 0; }

  /** The job's last restart (the step's input). */
  last(job: string): LastRestart | undefined {
    return this.restarts.get(job);
  }

  /** The step's answer after a restart was carried out (undefined: nothing to remember). */
  record(job: string, last: LastRestart | undefined): void {
    if (last !== undefined) this.restarts.set(job, last);
  }

  /** A restart was deferred (counted once per deferral). */
  countDeferred(): void {
    this.metrics?.flapDamped.inc({ rule: 'defer' });
  }

  /**
   * Rule 2: the time to re-decide a restart of `job` for faults on `entities`, or undefined to act
   * now. `restart` (`<uid>/g<generation>`): the restart the decision belongs to (its later steps go on).
   */
  deferUntil(job: string, entities: readonly string[], restart?: string): number | undefined {
    if (!this.enabled) return undefined;
    const until = deferRestart(entities, this.restarts.get(job), this.recoveredSince, this.now(), this.config, restart);
    if (until !== undefined) this.countDeferred();
    return until;
  }

  /** Records a restart now (policy/faults/flap-damping.ts afterRestart: within a period the entities add up). */
  restarted(job: string, entities: readonly string[], restart?: string): void {
    this.record(job, afterRestart(this.restarts.get(job), entities, this.now(), this.config, restart));
  }

  forget(job: string): void {
    this.restarts.delete(job);
  }
}
