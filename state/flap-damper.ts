/**
 * Flap damping in the jobs flow (policy/faults/flap-damping.ts has the rules and why): rule 2, the
 * restart budget. Holds each job's last restart, in memory; which hardware recovered and when is the
 * fault view's (controllers/fault-view.ts, published by controllers/fault-view-stage.ts, where rule 1's holds are computed once per change).
 *
 * Hysteresis is not applied to the decision view: a held record is hardware that is not faulty now,
 * so it never is a cause of a restart (a pod placed on that chip after it recovered never saw the
 * fault; a pod that was on it was restarted for it). Restarted or new leaders start with no damping
 * memory: the first flap after a restart is handled as a first fault (at most one extra restart).
 */
import { deferRestart, type FlapDampingConfig, type LastRestart } from '../policy/faults/flap-damping.ts';

/** Where damping is counted (telemetry/metrics.ts Metrics satisfies it: clusterd_flap_damped_total{rule}). */
export interface FlapDampedCounter {
  readonly flapDamped: { inc(labels: { rule: 'hold' | 'defer' }): void };
}

/** The entity (`node` or `node/device`) recovered after t (the fault view's damping state). */
export type RecoveredSince = (entity: string, t: number) => boolean;

export class FlapDamper {
  private readonly restarts = new Map<string, LastRestart>();
  private readonly cfg: FlapDampingConfig;
  private readonly now: () => number;
  private readonly recoveredSince: RecoveredSince;
  private readonly metrics: FlapDampedCounter | undefined;

  constructor(cfg: FlapDampingConfig, now: () => number, recoveredSince: RecoveredSince, metrics?: FlapDampedCounter) {
    this.cfg = cfg;
    this.now = now;
    this.recoveredSince = recoveredSince;
    this.metrics = metrics;
  }

  get enabled(): boolean { return this.cfg.holdMs > 0; }

  /**
   * Rule 2: the time to re-decide a restart of `job` for faults on `entities`, or undefined to act
   * now. `restart` (`<uid>/g<generation>`): the restart the decision belongs to (its later steps go on).
   */
  deferUntil(job: string, entities: readonly string[], restart?: string): number | undefined {
    if (!this.enabled) return undefined;
    const until = deferRestart(entities, this.restarts.get(job), this.recoveredSince, this.now(), this.cfg, restart);
    if (until !== undefined) this.metrics?.flapDamped.inc({ rule: 'defer' });
    return until;
  }

  /**
   * Records a restart. Within a period the entities add up: faults of one storm reach the flow in
   * several bursts, and a restart for a later burst must not make the earlier hardware new again.
   */
  restarted(job: string, entities: readonly string[], restart?: string): void {
    if (!this.enabled || entities.length === 0) return;
    const now = this.now();
    const prev = this.restarts.get(job);
    const same = prev !== undefined && restart !== undefined && prev.restart === restart;
    const keep = prev !== undefined && (same || now - prev.atMs < this.cfg.holdMs) ? prev.entities : [];
    this.restarts.set(job, { atMs: now, entities: [...new Set([...keep, ...entities])].sort(), ...(restart === undefined ? {} : { restart }) });
  }

  forget(job: string): void {
    this.restarts.delete(job);
  }
}
