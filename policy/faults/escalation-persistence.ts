/**
 * What the controller persists (schemas/escalation-state) and how it is kept small: expired entries are
 * pruned before each write (occurrences outside their TimeWindow, idle tracks, manual-separation history
 * older than 720 h, relation windows that are over, link-down memories older than 180 s).
 * Wiring: after each step of any engine, `composeEscalationState(...)` -> `pruneEscalationState(...)`
 * -> schemas `encodeEscalationState(doc)` -> write the ConfigMap only if the text changed. At start:
 * schemas `parseEscalationState(text)` -> `pruneEscalationState(doc, now, cfg)` -> the engines' initial
 * states (`doc.escalation`, `doc.manualSeparation`, `doc.relation`, `doc.filters`).
 */
import type {
  EscalationState,
  EscalationStateDoc,
  FilterState,
  ManualSeparationState,
  RelationState,
} from '../../schemas/escalation-state/escalation-state.ts';
import type { FaultCustomization } from '../../schemas/fault-customization/fault-customization.ts';
import { rulesByCode } from './escalation.ts';
import { isIdleTrack } from './escalation-rules.ts';
import { MANUAL_HISTORY_MS } from './manual-separation.ts';
import type { RelationFaultConfig } from './relation-fault-config.ts';
import { LINK_DOWN_MEMORY_MS } from '../filters/step-retry-filter.ts';

export interface PersistedStates {
  readonly escalation: EscalationState;
  readonly manualSeparation: ManualSeparationState;
  readonly relation: RelationState;
  readonly filters: FilterState;
}

export const composeEscalationState = (s: PersistedStates, nowMs: number): EscalationStateDoc => ({ version: 1, savedAtMs: nowMs, ...s });

export interface PruneConfig {
  readonly customization: FaultCustomization;
  readonly relation: RelationFaultConfig;
}

const S = 1000;

export function pruneEscalationState(doc: EscalationStateDoc, nowMs: number, cfg: PruneConfig): EscalationStateDoc {
  const rules = rulesByCode(cfg.customization);
  const tracks: Record<string, EscalationState['tracks'][string]> = {};
  for (const [k, t] of Object.entries(doc.escalation.tracks)) {
    const f = rules.get(t.code.toUpperCase())?.frequency;
    const occurrences = f === undefined ? t.occurrences : t.occurrences.filter((o) => o >= nowMs - f.TimeWindow * S);
    const next = occurrences.length === t.occurrences.length ? t : { ...t, occurrences };
    if (!isIdleTrack(next)) tracks[k] = next;
  }

  const m = doc.manualSeparation;
  const horizon = nowMs - MANUAL_HISTORY_MS;
  const counters: Record<string, readonly number[]> = {};
  for (const [k, times] of Object.entries(m.counters)) {
    const kept = times.filter((t) => t >= horizon);
    if (kept.length > 0) counters[k] = kept;
  }
  const lastSeen = Object.fromEntries(Object.entries(m.lastSeen).filter(([, t]) => t >= horizon));

  const maxWindow = Math.max(0, ...cfg.relation.durations.map((d) => d.TimeOutInterval * S));
  const jobs: Record<string, RelationState['jobs'][string]> = {};
  for (const [k, j] of Object.entries(doc.relation.jobs)) {
    const candidates = j.candidates.filter((c) => c.deadlineMs > nowMs);
    const triggers = j.triggers.filter((t) => nowMs - t.atMs <= maxWindow);
    if (candidates.length === 0 && triggers.length === 0 && Object.keys(j.strategies).length === 0) continue;
    jobs[k] = { ...j, candidates, triggers };
  }

  const linkDowns = Object.fromEntries(Object.entries(doc.filters.linkDowns).filter(([, v]) => nowMs - v.lastSeenMs <= LINK_DOWN_MEMORY_MS));

  return {
    version: doc.version,
    savedAtMs: nowMs,
    escalation: { tracks },
    manualSeparation: { lastSeen, pending: m.pending, counters, separated: m.separated },
    relation: { jobs },
    filters: { uceAccompany: doc.filters.uceAccompany, linkDowns },
  };
}
