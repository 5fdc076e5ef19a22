/**
 * Flap damping in the jobs flow (policy/faults/flap-damping.ts has the rules and why). Holds, in memory, the
 * per-node entity states and each job's last restart, and gives the jobs flow its damped fault view.
 *
 * The view is level-triggered: every read of a node compares the node's records with its last
 * observation (an unchanged input changes nothing); the jobs flow reads every node whose faults
 * change (controllers/jobs.controller.ts), so no recovery is missed; a hold that ends by itself comes back as the decision reconcile's requeue
 * (`nextChangeMs`), never as a timer. Restarted or new leaders start with no damping memory: the
 * first flap after a restart is handled as a first fault (at most one extra restart).
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { dampView, deferRestart, heldOnly, type EntityState, type FlapDampingConfig, type LastRestart } from '../policy/faults/flap-damping.ts';

/** Where damping is counted (telemetry/metrics.ts Metrics satisfies it: clusterd_flap_damped_total{rule}). */
export interface FlapDampedCounter {
  readonly flapDamped: { inc(labels: { rule: 'hold' | 'defer' }): void };
}

export class FlapDamper {
  private readonly nodes = new Map<string, ReadonlyMap<string, EntityState>>();
  private readonly next = new Map<string, number>();
  private readonly restarts = new Map<string, LastRestart>();
  private readonly cfg: FlapDampingConfig;
  private readonly now: () => number;
  private readonly metrics: FlapDampedCounter | undefined;

  constructor(cfg: FlapDampingConfig, now: () => number, metrics?: FlapDampedCounter) {
    this.cfg = cfg;
    this.now = now;
    this.metrics = metrics;
  }

  get enabled(): boolean { return this.cfg.holdMs > 0; }

  /**
   * The node's records as the rescheduler should see them: `shown` (its view) plus the records of
   * entities held by hysteresis. Recoveries are judged on `observed` (default `shown`): the
   * hardware's own reports, so a filter that hides a fault for a while is not a recovery.
   */
  view(node: string, shown: readonly FaultRecord[], observed: readonly FaultRecord[] = shown): readonly FaultRecord[] {
    if (!this.enabled) return shown;
    const prev = this.nodes.get(node);
    if (prev === undefined && observed.length === 0) return shown;
    const before = new Set([...(prev ?? new Map<string, EntityState>())].filter(([, s]) => s.healthySinceMs !== undefined).map(([e]) => e));
    const v = dampView(observed, prev ?? new Map(), this.now(), this.cfg);
    for (const e of v.held) if (!before.has(e)) this.metrics?.flapDamped.inc({ rule: 'hold' });
    if (v.state.size === 0) this.nodes.delete(node); else this.nodes.set(node, v.state);
    if (v.nextChangeMs === undefined) this.next.delete(node); else this.next.set(node, v.nextChangeMs);
    if (observed === shown) return v.records;
    const held = v.held.flatMap((e) => v.state.get(e)?.last ?? []);
    return held.length === 0 ? shown : [...shown, ...held];
  }

  /** Earliest time the view of one of these nodes changes by itself. */
  nextChangeMs(nodes: readonly string[]): number | undefined {
    let t: number | undefined;
    for (const n of nodes) { const x = this.next.get(n); if (x !== undefined) t = t === undefined ? x : Math.min(t, x); }
    return t;
  }

  /** Rules 2 and 3: the time to re-decide a restart of `job` for faults on `entities`, or undefined to act now. */
  deferUntil(job: string, entities: readonly string[]): { readonly untilMs: number; readonly rule: 'held' | 'refault' } | undefined {
    if (!this.enabled) return undefined;
    const held = heldOnly(entities, (e) => this.heldUntil(e));
    const until = held ?? deferRestart(entities, this.restarts.get(job), (e, t) => this.recoveredSince(e, t), this.now(), this.cfg);
    if (until === undefined) return undefined;
    this.metrics?.flapDamped.inc({ rule: 'defer' });
    return { untilMs: until, rule: held !== undefined ? 'held' : 'refault' };
  }

  /**
   * Records a restart. Within a period the entities add up: faults of one storm reach the flow in
   * several bursts, and a restart for a later burst must not make the earlier hardware new again.
   */
  restarted(job: string, entities: readonly string[]): void {
    if (!this.enabled || entities.length === 0) return;
    const now = this.now();
    const prev = this.restarts.get(job);
    const keep = prev !== undefined && now - prev.atMs < this.cfg.holdMs ? prev.entities : [];
    this.restarts.set(job, { atMs: now, entities: [...new Set([...keep, ...entities])].sort() });
  }

  forget(job: string): void {
    this.restarts.delete(job);
  }

  /** The end of the entity's hold, if its records are in the view only by hysteresis now. */
  private heldUntil(entity: string): number | undefined {
    const since = this.nodes.get(entity.split('/')[0]!)?.get(entity)?.healthySinceMs;
    if (since === undefined) return undefined;
    const until = since + this.cfg.holdMs;
    return until > this.now() ? until : undefined;
  }

  private recoveredSince(entity: string, t: number): boolean {
    const node = entity.split('/')[0]!;
    return (this.nodes.get(node)?.get(entity)?.recoveries ?? []).some((r) => r > t);
  }
}
