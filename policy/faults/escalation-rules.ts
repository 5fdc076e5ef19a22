/**
 * The FaultFrequency / FaultDuration machine of one code on one NPU (docs/rules.md#detect.frequency-escalation, #detect.duration-escalation):
 * pure functions from (track, event, rules) to (track, events). policy/faults/escalation.ts drives them.
 *
 * Duration: occur -> pending; held longer than FaultTimeout (strictly: > FaultTimeout s; 0 = at once)
 * -> timedOut, reported at FaultHandling; recover -> recovering, still reported; recovered for longer
 * than RecoverTimeout -> idle. A recovery while pending ends the episode without escalation
 * (81078603 held <= 20 s stays a NotHandleFault network fault).
 * Frequency: occurrences within TimeWindow (inclusive) >= Times -> FaultHandling. Released when fewer
 * than Times remain in the window, the fault has recovered after its last occurrence, and it stayed
 * recovered for longer than ReleaseTimeWindow (no ReleaseTimeWindow: only an operator releases).
 * Both rules on one code: one occurrence = one duration timeout; recovery = the end of RecoverTimeout.
 */
import type { CodeTrack } from '../../schemas/escalation-state/escalation-state.ts';
import type { FaultDurationRule, FaultFrequencyRule } from '../../schemas/fault-customization/fault-customization.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { reason, type ReasonChain } from '../reasons.ts';

export interface CodeRules {
  readonly frequency?: FaultFrequencyRule;
  readonly duration?: FaultDurationRule;
}

export type TrackEvent =
  | { readonly type: 'duration-timeout'; readonly atMs: number; readonly level: NpuFaultLevel; readonly reasons: ReasonChain }
  | { readonly type: 'duration-recovered'; readonly atMs: number; readonly reasons: ReasonChain }
  | { readonly type: 'frequency-upgrade'; readonly atMs: number; readonly level: NpuFaultLevel; readonly reasons: ReasonChain }
  | { readonly type: 'frequency-release'; readonly atMs: number; readonly cause: 'ReleaseTimeWindow' | 'operator' | 'config-change'; readonly reasons: ReasonChain };

export interface TrackStep {
  readonly track: CodeTrack;
  readonly events: readonly TrackEvent[];
}

const S = 1000;
const baseStep = (t: CodeTrack) => reason('base-level', 'level before escalation', { code: t.code, level: t.baseLevel });

export function newTrack(node: string, device: string, code: string, baseLevel: string, instanceMs: number): CodeTrack {
  return { node, device, code, baseLevel, active: false, instanceMs, duration: null, occurrences: [], lastFaultMs: null, lastRecoverMs: null, upgrade: null };
}

/** First instant (ms) at which a hold of `seconds` is exceeded. */
const exceededAt = (sinceMs: number, seconds: number): number => (seconds === 0 ? sinceMs : sinceMs + seconds * S + 1);

/** Adds one frequency occurrence at `atMs`; may upgrade. */
function countOccurrence(t: CodeTrack, atMs: number, rule: FaultFrequencyRule | undefined, how: string): TrackStep {
  if (rule === undefined) return { track: t, events: [] };
  const windowStart = atMs - rule.TimeWindow * S;
  const occurrences = [...t.occurrences.filter((o) => o >= windowStart), atMs].sort((a, b) => a - b).slice(-rule.Times);
  const lastFaultMs = Math.max(t.lastFaultMs ?? atMs, atMs);
  const next: CodeTrack = { ...t, occurrences, lastFaultMs };
  if (t.upgrade !== null || occurrences.length < rule.Times) return { track: next, events: [] };
  const reasons = [
    baseStep(t),
    reason('FaultFrequency', `${occurrences.length} ${how} within ${rule.TimeWindow} s (Times ${rule.Times})`, { code: t.code, level: rule.FaultHandling }),
  ];
  return {
    track: { ...next, upgrade: { level: rule.FaultHandling, sinceMs: atMs } },
    events: [{ type: 'frequency-upgrade', atMs, level: rule.FaultHandling, reasons }],
  };
}

/** The fault (re)appeared at `atMs`. `newInstance` false = the same instance reported again: never counted twice. */
export function occur(t: CodeTrack, atMs: number, rules: CodeRules, newInstance: boolean): TrackStep {
  const active: CodeTrack = { ...t, active: true, instanceMs: Math.max(t.instanceMs, atMs) };
  const d = rules.duration;
  if (d !== undefined) {
    if (t.duration === null) return { track: { ...active, duration: { phase: 'pending', sinceMs: atMs, escalatedAtMs: null } }, events: [] };
    if (t.duration.phase === 'recovering') return { track: { ...active, duration: { ...t.duration, phase: 'timedOut', sinceMs: atMs } }, events: [] };
    return { track: active, events: [] };
  }
  if (!newInstance) return { track: active, events: [] };
  return countOccurrence(active, atMs, rules.frequency, 'occurrences');
}

/** The fault is gone at `atMs`. */
export function recover(t: CodeTrack, atMs: number, rules: CodeRules): TrackStep {
  const inactive: CodeTrack = { ...t, active: false };
  const d = rules.duration;
  if (d !== undefined) {
    if (t.duration?.phase === 'pending') return { track: { ...inactive, duration: null }, events: [] };
    if (t.duration?.phase === 'timedOut') return { track: { ...inactive, duration: { ...t.duration, phase: 'recovering', sinceMs: atMs } }, events: [] };
    return { track: inactive, events: [] };
  }
  if (rules.frequency === undefined) return { track: inactive, events: [] };
  return { track: { ...inactive, lastRecoverMs: Math.max(t.lastRecoverMs ?? atMs, atMs) }, events: [] };
}

/** Applies every timer due at or before `nowMs`. */
export function advance(t: CodeTrack, nowMs: number, rules: CodeRules): TrackStep {
  const events: TrackEvent[] = [];
  let track = t;
  const d = rules.duration;
  if (d !== undefined && track.duration?.phase === 'pending') {
    const at = exceededAt(track.duration.sinceMs, d.FaultTimeout);
    if (nowMs >= at) {
      const reasons = [
        baseStep(track),
        reason('FaultDuration', `held longer than FaultTimeout ${d.FaultTimeout} s (since ${track.duration.sinceMs})`, { code: track.code, level: d.FaultHandling }),
      ];
      track = { ...track, duration: { phase: 'timedOut', sinceMs: at, escalatedAtMs: at } };
      events.push({ type: 'duration-timeout', atMs: at, level: d.FaultHandling, reasons });
      const counted = countOccurrence(track, at, rules.frequency, 'duration timeouts');
      track = counted.track;
      events.push(...counted.events);
    }
  }
  if (d !== undefined && track.duration?.phase === 'recovering') {
    const at = exceededAt(track.duration.sinceMs, d.RecoverTimeout);
    if (nowMs >= at) {
      const reasons = [reason('FaultDuration', `recovered for longer than RecoverTimeout ${d.RecoverTimeout} s`, { code: track.code, level: track.baseLevel })];
      track = { ...track, duration: null, lastRecoverMs: rules.frequency === undefined ? track.lastRecoverMs : at };
      events.push({ type: 'duration-recovered', atMs: at, reasons });
    }
  }
  const f = rules.frequency;
  if (f !== undefined) {
    const windowStart = nowMs - f.TimeWindow * S;
    const occurrences = track.occurrences.filter((o) => o >= windowStart);
    if (occurrences.length !== track.occurrences.length) track = { ...track, occurrences };
    const at = releaseAt(track, f);
    if (at !== undefined && nowMs >= at) {
      const reasons = [
        reason('FaultFrequency', `recovered since ${track.lastRecoverMs} for longer than ReleaseTimeWindow ${f.ReleaseTimeWindow} s; ${occurrences.length} occurrences left in the window`, { code: track.code, level: track.baseLevel }),
      ];
      track = { ...track, upgrade: null, occurrences: [] };
      events.push({ type: 'frequency-release', atMs: nowMs, cause: 'ReleaseTimeWindow', reasons });
    }
  }
  return { track, events };
}

/** When an upgrade is due for automatic release (undefined: not releasable now). */
function releaseAt(t: CodeTrack, f: FaultFrequencyRule): number | undefined {
  if (t.upgrade === null || f.ReleaseTimeWindow === undefined) return undefined;
  if (t.lastRecoverMs === null || t.lastRecoverMs < (t.lastFaultMs ?? 0) || t.active) return undefined;
  const n = t.occurrences.length;
  const belowTimes = n >= f.Times ? (t.occurrences[n - f.Times] ?? 0) + f.TimeWindow * S + 1 : 0;
  return Math.max(t.lastRecoverMs + f.ReleaseTimeWindow * S + 1, belowTimes);
}

/** Next instant this track needs a tick (undefined = none). */
export function trackDeadline(t: CodeTrack, rules: CodeRules): number | undefined {
  const ds: number[] = [];
  const d = rules.duration;
  if (d !== undefined && t.duration?.phase === 'pending') ds.push(exceededAt(t.duration.sinceMs, d.FaultTimeout));
  if (d !== undefined && t.duration?.phase === 'recovering') ds.push(exceededAt(t.duration.sinceMs, d.RecoverTimeout));
  const f = rules.frequency;
  if (f !== undefined) {
    const rel = releaseAt(t, f);
    if (rel !== undefined) ds.push(rel);
    const oldest = t.occurrences[0];
    if (oldest !== undefined) ds.push(oldest + f.TimeWindow * S + 1); // window pruning
  }
  return ds.length === 0 ? undefined : Math.min(...ds);
}

/** Escalated level of the track, if any, with the rule that set it. */
export function trackEscalations(t: CodeTrack, rules: CodeRules): Array<{ level: NpuFaultLevel; rule: 'FaultDuration' | 'FaultFrequency'; sinceMs: number; reasons: ReasonChain }> {
  const out: Array<{ level: NpuFaultLevel; rule: 'FaultDuration' | 'FaultFrequency'; sinceMs: number; reasons: ReasonChain }> = [];
  const d = rules.duration;
  if (d !== undefined && t.duration !== null && t.duration.phase !== 'pending') {
    const since = t.duration.escalatedAtMs ?? t.duration.sinceMs;
    const phase = t.duration.phase === 'recovering' ? `, recovering since ${t.duration.sinceMs} (RecoverTimeout ${d.RecoverTimeout} s)` : '';
    out.push({
      level: d.FaultHandling,
      rule: 'FaultDuration',
      sinceMs: since,
      reasons: [baseStep(t), reason('FaultDuration', `held longer than FaultTimeout ${d.FaultTimeout} s${phase}`, { code: t.code, level: d.FaultHandling })],
    });
  }
  if (t.upgrade !== null) {
    const level = t.upgrade.level as NpuFaultLevel;
    const f = rules.frequency;
    const detail = f === undefined ? 'escalated by an earlier rule' : `${f.Times} occurrences within ${f.TimeWindow} s`;
    out.push({ level, rule: 'FaultFrequency', sinceMs: t.upgrade.sinceMs, reasons: [baseStep(t), reason('FaultFrequency', detail, { code: t.code, level })] });
  }
  return out;
}

/** A track that holds nothing worth keeping. */
export const isIdleTrack = (t: CodeTrack): boolean => !t.active && t.duration === null && t.upgrade === null && t.occurrences.length === 0;
