/**
 * Flap damping: a chip or node whose faults come and go must not restart a job
 * every time they come back. Pure; time is a parameter.
 *
 * Entity: a chip (`node/device`) or a node (node-wide faults, no device). An entity is faulty while
 * it has a record whose level acts (not NotHandleFault / NormalNPU); going from faulty to not faulty
 * is a *recovery*.
 *
 * Two rules, both only for entities that recover and fault again, so a fault that comes once and
 * goes is handled exactly as ClusterD handles it:
 * 1. Hysteresis (`dampView`): an entity with at least `recoveries` recoveries within `windowMs` is
 *    *flapping*; it is held faulty (its last fault records stay in the view) until it has been
 *    healthy for `holdMs`. Applied by the fault-view stage (controllers/fault-view-stage.ts) as its last stage,
 *    after the filters, to the *placement view* only (cluster-info: the scheduler keeps new pods off
 *    flapping hardware). Never to the view decisions are taken on: a held record is hardware that is
 *    not faulty now, so it is no cause of a restart (a pod on that chip was either restarted for that
 *    fault already or placed there after it recovered; counting it restarted new jobs for old faults).
 * 2. Restart budget (`deferRestart`): a job restarted less than `holdMs` ago is not restarted again
 *    (in a new generation) when every cause of the new restart is on hardware that recovered since
 *    that restart (a re-fault of flapping hardware) or on the hardware that restart was for (still
 *    faulty: the scheduler placed the new pods on it again). The decision is deferred to the end of
 *    the period and then re-decided from the view of that moment. A fault on other hardware (a new
 *    fault elsewhere, a failed pod) restarts at once, and so do the later steps of the same restart
 *    (grace, then force). So a flapping link, or a faulty chip the job keeps being given, restarts
 *    its job at most once per damping period.
 *
 * FaultFrequency escalation (policy/faults/escalation.ts) counts fault *occurrences* upstream of this view,
 * on the records the sources report: damping suppresses recoveries only (and a re-fault's restart),
 * never an occurrence, so a flapping chip is still escalated (e.g. to ManuallySeparateNPU) on the
 * count ClusterD / the device plugin would reach, and the escalated level shows through at once
 * (a present record always replaces the held one). A chip escalated to ManuallySeparateNPU stays
 * faulty in the job view, so it is never "recovered" or held: the escalation decides, not damping.
 * Its end is an operator's release (whichever path), never a flap: the entity is forgotten, so a
 * released chip is usable at once and its next fault counts from zero, as its escalation counters do.
 */
import type { FaultRecord } from '../../vocabulary/fault-types.ts';

export interface FlapDampingConfig {
  /** Hold time and restart period; 0 = damping off. */
  readonly holdMs: number;
  /** Recoveries within `windowMs` that make an entity flapping (rule 1). */
  readonly recoveries: number;
  readonly windowMs: number;
}

/**
 * Defaults: 2 recoveries in 60 s make an entity flapping; held until 30 s healthy. A real fault that
 * is repaired (hot reset, link retrain) recovers once; a second recovery within a minute is a flap.
 * 30 s is longer than a link's retrain cycles (seconds) yet short enough that a chip that is healthy
 * again is back in the job's view within half a minute.
 */
export const DEFAULT_FLAP_DAMPING: FlapDampingConfig = { holdMs: 30_000, recoveries: 2, windowMs: 60_000 };

export interface EntityState {
  /** Recovery times within the window, oldest first. */
  readonly recoveries: readonly number[];
  /** The records of its last faulty observation. */
  readonly last: readonly FaultRecord[];
  /** Set while not faulty (since its last recovery). */
  readonly healthySinceMs?: number;
}

export type DampState = ReadonlyMap<string, EntityState>;

const INERT: ReadonlySet<string> = new Set(['NotHandleFault', 'NormalNPU']);
export const entityOf = (f: Pick<FaultRecord, 'node' | 'device'>): string => (f.device === undefined ? f.node : `${f.node}/${f.device}`);

export interface DampedView {
  /** The records to decide on: the present ones plus those held by hysteresis. */
  readonly records: readonly FaultRecord[];
  /** The node's entities after this observation (absent key = forgotten). */
  readonly state: ReadonlyMap<string, EntityState>;
  /** Entities held faulty now (their records are in `records` though the source reports none). */
  readonly held: readonly string[];
  /** When the view of this node changes by itself (a hold ends, a window empties). */
  readonly nextChangeMs?: number;
}

/**
 * One node's view: `records` as the sources report them now, `prev` the node's entity states.
 * Idempotent for an unchanged input (calling it twice counts one recovery once).
 */
export function dampView(records: readonly FaultRecord[], prev: ReadonlyMap<string, EntityState>, nowMs: number, cfg: FlapDampingConfig): DampedView {
  if (cfg.holdMs <= 0) return { records, state: new Map(), held: [] };
  const present = new Map<string, FaultRecord[]>();
  for (const r of records) {
    if (INERT.has(r.level)) continue;
    const e = entityOf(r);
    present.set(e, [...(present.get(e) ?? []), r]);
  }
  const state = new Map<string, EntityState>();
  const out: FaultRecord[] = [...records];
  const held: string[] = [];
  let next: number | undefined;
  const soon = (t: number): void => { next = next === undefined ? t : Math.min(next, t); };
  const inWindow = (ts: readonly number[]): number[] => ts.filter((t) => t > nowMs - cfg.windowMs);
  for (const e of new Set([...prev.keys(), ...present.keys()])) {
    const p = prev.get(e);
    const now = present.get(e);
    const recoveries = inWindow(p?.recoveries ?? []);
    if (now !== undefined) {
      // Faulty: the present records win (an escalated level shows at once), as reported.
      state.set(e, { recoveries, last: now });
      if (recoveries.length > 0) soon(recoveries[0]! + cfg.windowMs);
      continue;
    }
    if (p === undefined) continue;
    // The end of a manual separation is an operator's release (kubectl clusterd release, Total in
    // clusterd-manual-info-cm, the device plugin's key), never a flap: the entity is forgotten.
    if (p.healthySinceMs === undefined && p.last.some((r) => r.level === 'ManuallySeparateNPU')) continue;
    const since = p.healthySinceMs ?? nowMs;
    const rec = p.healthySinceMs === undefined ? [...recoveries, nowMs] : recoveries;
    const flapping = rec.length >= cfg.recoveries;
    if (flapping && nowMs - since < cfg.holdMs) {
      out.push(...p.last);
      held.push(e);
      soon(since + cfg.holdMs);
    }
    // Kept while its recoveries still count (to recognise the next flap) or while it is held.
    if (rec.length > 0 || (flapping && nowMs - since < cfg.holdMs)) {
      state.set(e, { recoveries: rec, last: p.last, healthySinceMs: since });
      if (rec.length > 0) soon(rec[0]! + cfg.windowMs);
    }
  }
  return { records: out, state, held: held.sort(), ...(next === undefined ? {} : { nextChangeMs: next }) };
}

/** What a job's last restart was for (kept per job by the caller). */
export interface LastRestart {
  readonly atMs: number;
  readonly entities: readonly string[];
  /** Which restart (`<uid>/g<generation>`): its later steps are not deferred. */
  readonly restart?: string;
}

/**
 * Rule 2: defer a restart whose causes all flapped since the job's last restart, or were that
 * restart's own causes, less than `holdMs` ago. Answers the time to re-decide, or undefined to go
 * ahead. `recoveredSince(entity, t)`: the entity recovered after t. `restart` names the restart this
 * decision belongs to (`<uid>/g<generation>`); the same restart as the last one (its next step) is
 * never deferred.
 */
export function deferRestart(
  causes: readonly string[], last: LastRestart | undefined, recoveredSince: (entity: string, t: number) => boolean, nowMs: number, cfg: FlapDampingConfig, restart?: string,
): number | undefined {
  if (cfg.holdMs <= 0 || last === undefined || causes.length === 0) return undefined;
  if (restart !== undefined && last.restart === restart) return undefined;
  const until = last.atMs + cfg.holdMs;
  if (nowMs >= until) return undefined;
  // Every cause flapped since that restart (recovered, then faulted again): a re-fault, not news; or
  // is hardware that restart was for, still faulty (the job was placed on it again): no new fault.
  // Not only the last restart's own causes: faults of one storm reach the flow in several bursts.
  return causes.every((e) => last.entities.includes(e) || recoveredSince(e, last.atMs)) ? until : undefined;
}

/**
 * The job's last restart after one more restart at `atMs` for `entities`. Within a period the
 * entities add up: faults of one storm reach the flow in several bursts, and a restart for a later
 * burst must not make the earlier hardware new again. Undefined: nothing to remember (damping off,
 * no hardware behind the restart).
 */
export function afterRestart(prev: LastRestart | undefined, entities: readonly string[], atMs: number, cfg: Pick<FlapDampingConfig, 'holdMs'>, restart?: string): LastRestart | undefined {
  if (cfg.holdMs <= 0 || entities.length === 0) return undefined;
  const same = prev !== undefined && restart !== undefined && prev.restart === restart;
  const keep = prev !== undefined && (same || atMs - prev.atMs < cfg.holdMs) ? prev.entities : [];
  return { atMs, entities: [...new Set([...keep, ...entities])].sort(), ...(restart === undefined ? {} : { restart }) };
}
