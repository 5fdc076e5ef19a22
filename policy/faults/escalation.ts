/**
 * FaultFrequency / FaultDuration escalation over all NPUs (docs/rules.md#detect.frequency-escalation to #detect.device-plugin-manual-separation), including
 * the parameter-plane 20 s rule (81078603 held <= 20 s stays NotHandleFault; longer -> PreSeparateNPU by
 * default; 5 times in 24 h -> ManuallySeparateNPU, released after 48 h fault-free).
 *
 * Input is level-triggered: the controller sends, per node, every chip/network fault it currently sees
 * (`observe`); the engine derives occurrences (new keys, or a later firstSeenMs) and recoveries (keys
 * gone) against its state, so a replayed or repeated snapshot changes nothing, and after a restart
 * with restored state the same faults are not counted again. State is plain data
 * (schemas/escalation-state `EscalationState`); persist it after every step that changed it.
 */
import type { CodeTrack, EscalationState } from '../../schemas/escalation-state/escalation-state.ts';
import type { FaultCustomization } from '../../schemas/fault-customization/fault-customization.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from './fault-level.ts';
import { advance, isIdleTrack, newTrack, occur, recover, trackDeadline, trackEscalations, type CodeRules, type TrackEvent } from './escalation-rules.ts';
import { earliest, type ConfigChange, type PolicyStep, type Tick } from '../policy-operator.ts';
import { reason, type Reason, type ReasonChain } from '../reasons.ts';

export type EscalationInput =
  /** All faults currently reported for `node` (any source; only chip and network faults with a device are used). */
  | { readonly type: 'observe'; readonly node: string; readonly faults: readonly LeveledFault[] }
  /** An operator released a manually separated NPU (e.g. removed it from the device plugin's ManuallySeparateNPU key). */
  | {
    readonly type: 'release'; readonly node: string; readonly device: string; readonly code?: string;
    /** `kubectl clusterd release`: only upgrades in force since at most this time (a later re-escalation stands), by whom. */
    readonly beforeMs?: number; readonly by?: string;
  };

export type EscalationOutput = TrackEvent & { readonly node: string; readonly device: string; readonly code: string };

/** An escalation in force, for the controller's desired view. */
export interface Escalation {
  readonly node: string;
  readonly device: string;
  readonly code: string;
  readonly level: NpuFaultLevel;
  readonly rule: 'FaultDuration' | 'FaultFrequency';
  readonly sinceMs: number;
  readonly reasons: ReasonChain;
}

export const escalationKey = (node: string, device: string, code: string): string => `${node}/${device}/${code}`;

const indexCache = new WeakMap<FaultCustomization, ReadonlyMap<string, CodeRules>>();
/** code (upper-case) -> its rules; first rule per code wins (parsing already de-duplicates). */
export function rulesByCode(c: FaultCustomization): ReadonlyMap<string, CodeRules> {
  const hit = indexCache.get(c);
  if (hit !== undefined) return hit;
  const m = new Map<string, { frequency?: CodeRules['frequency']; duration?: CodeRules['duration'] }>();
  for (const r of c.FaultFrequency) for (const code of r.EventId) {
    const e = m.get(code.toUpperCase()) ?? {};
    if (e.frequency === undefined) m.set(code.toUpperCase(), { ...e, frequency: r });
  }
  for (const r of c.FaultDuration) for (const code of r.EventId) {
    const e = m.get(code.toUpperCase()) ?? {};
    if (e.duration === undefined) m.set(code.toUpperCase(), { ...e, duration: r });
  }
  indexCache.set(c, m);
  return m;
}

const NO_RULES: CodeRules = {};

class Work {
  readonly tracks: Record<string, CodeTrack>;
  readonly outputs: EscalationOutput[] = [];
  readonly reasons: Reason[] = [];
  readonly rules: ReadonlyMap<string, CodeRules>;
  constructor(state: EscalationState, rules: ReadonlyMap<string, CodeRules>) {
    this.tracks = { ...state.tracks };
    this.rules = rules;
  }
  rulesOf(t: CodeTrack): CodeRules {
    return this.rules.get(t.code.toUpperCase()) ?? NO_RULES;
  }
  apply(key: string, step: { track: CodeTrack; events: readonly TrackEvent[] }): void {
    this.tracks[key] = step.track;
    for (const e of step.events) this.outputs.push({ ...e, node: step.track.node, device: step.track.device, code: step.track.code });
  }
  advanceKeys(keys: Iterable<string>, nowMs: number): void {
    for (const k of keys) {
      const t = this.tracks[k];
      if (t !== undefined) this.apply(k, advance(t, nowMs, this.rulesOf(t)));
    }
  }
  finish(): PolicyStep<EscalationState, EscalationOutput> {
    let deadline: number | undefined;
    for (const [k, t] of Object.entries(this.tracks)) {
      if (isIdleTrack(t)) delete this.tracks[k];
      else deadline = earliest(deadline, trackDeadline(t, this.rulesOf(t)));
    }
    return { state: { tracks: this.tracks }, outputs: this.outputs, reasons: this.reasons, nextDeadlineMs: deadline };
  }
}

const isChipFault = (f: LeveledFault): f is LeveledFault & { fault: { device: string } } =>
  (f.fault.source === 'npu' || f.fault.source === 'network') && f.fault.device !== undefined;

function observe(w: Work, node: string, faults: readonly LeveledFault[], nowMs: number): void {
  const nodeKeys = Object.keys(w.tracks).filter((k) => w.tracks[k]?.node === node);
  w.advanceKeys(nodeKeys, nowMs); // timers due before this observation fire first
  const present = new Map<string, { device: string; code: string; atMs: number; level: string }>();
  for (const f of faults) {
    if (!isChipFault(f) || f.fault.node !== node) continue;
    const code = f.fault.code.toUpperCase();
    if (!w.rules.has(code)) continue;
    const key = escalationKey(node, f.fault.device, code);
    const atMs = Math.max(0, Math.min(f.fault.firstSeenMs, nowMs));
    const prev = present.get(key);
    if (prev === undefined || atMs < prev.atMs) present.set(key, { device: f.fault.device, code, atMs, level: f.level });
  }
  for (const [key, p] of present) {
    const rules = w.rules.get(p.code) ?? NO_RULES;
    const existing = w.tracks[key];
    const t = existing === undefined ? newTrack(node, p.device, p.code, p.level, p.atMs) : { ...existing, baseLevel: p.level };
    if (existing === undefined) {
      w.apply(key, occur(t, p.atMs, rules, true));
    } else if (!t.active) {
      const fresh = p.atMs > t.instanceMs;
      if (!fresh) w.reasons.push(reason('base-level', `${key}: same instance (${p.atMs}) reported again; not counted twice`, { code: p.code }));
      w.apply(key, occur(t, p.atMs, rules, fresh));
    } else if (p.atMs > t.instanceMs) {
      // A later first-seen time while still present: the fault cleared and came back between observations.
      const r = recover(t, p.atMs, rules);
      w.apply(key, r);
      w.apply(key, occur(w.tracks[key] ?? r.track, p.atMs, rules, true));
    } else {
      w.tracks[key] = t;
    }
  }
  for (const k of nodeKeys) {
    const t = w.tracks[k];
    if (t !== undefined && t.active && !present.has(k)) w.apply(k, recover(t, nowMs, w.rulesOf(t)));
  }
  w.advanceKeys(new Set([...nodeKeys, ...present.keys()]), nowMs);
}

function release(w: Work, node: string, device: string, code: string | undefined, nowMs: number, beforeMs?: number, by?: string): void {
  for (const [k, t] of Object.entries(w.tracks)) {
    if (t.node !== node || t.device !== device || t.upgrade === null) continue;
    if (code !== undefined && t.code.toUpperCase() !== code.toUpperCase()) continue;
    if (beforeMs !== undefined && t.upgrade.sinceMs > beforeMs) continue;
    const who = by === undefined ? '' : ` (${by}${beforeMs === undefined ? '' : ` at ${new Date(beforeMs).toISOString()}`})`;
    const reasons = [reason('operator-release', `operator released ${node}/${device}${who}`, { code: t.code, level: t.baseLevel })];
    w.apply(k, { track: { ...t, upgrade: null, occurrences: [] }, events: [{ type: 'frequency-release', atMs: nowMs, cause: 'operator', reasons }] });
  }
}

function reconfigure(w: Work, nowMs: number): void {
  for (const [k, t] of Object.entries(w.tracks)) {
    const rules = w.rulesOf(t);
    let next = t;
    const events: TrackEvent[] = [];
    if (rules.duration === undefined && t.duration !== null) {
      if (t.duration.phase !== 'pending') events.push({ type: 'duration-recovered', atMs: nowMs, reasons: [reason('config-change', 'FaultDuration rule removed', { code: t.code, level: t.baseLevel })] });
      next = { ...next, duration: null };
    }
    if (rules.frequency === undefined && (t.upgrade !== null || t.occurrences.length > 0)) {
      if (t.upgrade !== null) events.push({ type: 'frequency-release', atMs: nowMs, cause: 'config-change', reasons: [reason('config-change', 'FaultFrequency rule removed', { code: t.code, level: t.baseLevel })] });
      next = { ...next, upgrade: null, occurrences: [] };
    }
    w.apply(k, { track: next, events });
  }
  w.advanceKeys(Object.keys(w.tracks), nowMs);
}

/** The escalation policy: `(state, input, nowMs, faultCustomization) -> step`. */
export function escalationPolicy(
  state: EscalationState,
  input: EscalationInput | Tick | ConfigChange<FaultCustomization>,
  nowMs: number,
  config: FaultCustomization,
): PolicyStep<EscalationState, EscalationOutput> {
  const w = new Work(state, rulesByCode(config));
  switch (input.type) {
    case 'observe':
      observe(w, input.node, input.faults, nowMs);
      break;
    case 'release':
      release(w, input.node, input.device, input.code, nowMs, input.beforeMs, input.by);
      break;
    case 'config':
      reconfigure(w, nowMs);
      break;
    case 'tick':
      w.advanceKeys(Object.keys(w.tracks), nowMs);
      break;
  }
  return w.finish();
}

/** Every escalation in force, most recent rule per (track, rule). */
export function activeEscalations(state: EscalationState, config: FaultCustomization): Escalation[] {
  const rules = rulesByCode(config);
  const out: Escalation[] = [];
  for (const t of Object.values(state.tracks)) {
    for (const e of trackEscalations(t, rules.get(t.code.toUpperCase()) ?? NO_RULES)) out.push({ node: t.node, device: t.device, code: t.code, ...e });
  }
  return out.sort((a, b) => (a.node + a.device + a.code < b.node + b.device + b.code ? -1 : 1));
}
