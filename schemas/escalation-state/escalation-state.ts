/**
 * The controller's persisted escalation state: FaultFrequency/FaultDuration tracks, ClusterD manual
 * separation counters, relation-fault windows and the short filter memories. ClusterD and the device
 * plugin keep these in memory and lose them on restart; we store them in a ConfigMap we own and read
 * them back at start. These types are also the policy engines' state types (policy/ works on them
 * directly), so nothing is converted between memory and the wire. All times are Unix milliseconds.
 */
import { validate as generated } from './escalation-state.validators.gen.ts';
import { goJson, goMap } from '../go-json.ts';
import { parseValidated, type Parsed, type SchemaValidator } from '../parsed.ts';

export const ESCALATION_STATE_CM_NAMESPACE = 'cluster-system';
export const ESCALATION_STATE_CM_NAME = 'clusterd-ts-escalation-state';
export const ESCALATION_STATE_KEY = 'escalation-state.json';
export const ESCALATION_STATE_VERSION = 1;
/** A ConfigMap holds at most 1 MiB; leave room for metadata. */
export const ESCALATION_STATE_MAX_BYTES = 900 * 1024;

/** Duration machine of one code on one NPU (docs/rules.md#detect.duration-escalation); null in CodeTrack = idle. */
export interface DurationPhase {
  readonly phase: 'pending' | 'timedOut' | 'recovering';
  /** pending: fault start; timedOut: when it timed out (or re-occurred while recovering); recovering: recovery start. */
  readonly sinceMs: number;
  /** When the fault first exceeded FaultTimeout in this episode (null while pending). */
  readonly escalatedAtMs: number | null;
}

/** FaultFrequency / FaultDuration tracking of one code on one NPU (policy/faults/escalation.ts). */
export interface CodeTrack {
  readonly node: string;
  readonly device: string;
  readonly code: string;
  /** Level of the code before escalation, for reason chains. */
  readonly baseLevel: string;
  /** Present in the node's last observation. */
  readonly active: boolean;
  /** firstSeenMs of the current (or last) instance; a later value is a new occurrence. */
  readonly instanceMs: number;
  readonly duration: DurationPhase | null;
  /** Counted FaultFrequency occurrences, ascending. */
  readonly occurrences: readonly number[];
  readonly lastFaultMs: number | null;
  readonly lastRecoverMs: number | null;
  /** FaultFrequency escalation in force. */
  readonly upgrade: { readonly level: string; readonly sinceMs: number } | null;
}

/** Key `node/device/code` (escalationKey in policy/faults/escalation.ts). */
export interface EscalationState {
  readonly tracks: Readonly<Record<string, CodeTrack>>;
}

export interface ManualPendingFault {
  readonly node: string;
  readonly device: string;
  readonly code: string;
  readonly atMs: number;
}

export interface ManualSeparatedNpu {
  readonly node: string;
  readonly device: string;
  /** Seen in clusterd-manual-info-cm `Total` at least once; only then does its absence mean "operator released". */
  readonly observedInCm: boolean;
  readonly entries: ReadonlyArray<{ readonly code: string; readonly lastSeparateTimeMs: number }>;
}

/** ClusterD manual separation (policy/faults/manual-separation.ts, docs/rules.md#manual). */
export interface ManualSeparationState {
  /** `node/device/code` -> receive time of the last processed instance (de-duplication). */
  readonly lastSeen: Readonly<Record<string, number>>;
  /** Job key -> faults waiting for the 30 s software/hardware judgement. */
  readonly pending: Readonly<Record<string, { readonly windowStartMs: number; readonly faults: readonly ManualPendingFault[] }>>;
  /** `node/device/code` -> counted hardware occurrences, ascending. */
  readonly counters: Readonly<Record<string, readonly number[]>>;
  /** `node/device` -> separated NPU. */
  readonly separated: Readonly<Record<string, ManualSeparatedNpu>>;
}

export type RelationStrategy = 'Separate' | 'SubHealth';

export interface RelationCandidate {
  readonly node: string;
  /** null for a switch fault (acts on the whole node). */
  readonly device: string | null;
  readonly code: string;
  readonly kind: 'faultDevice' | 'faultSwitch';
  readonly atMs: number;
  readonly deadlineMs: number;
  /**
   * No longer reported at the last observation: it meets no trigger but a CQE (non-A3 job) and gets
   * no default at its deadline, until it is reported again (forced in on an HCCL retry).
   */
  readonly gone?: true;
}

export interface RelationTrigger {
  readonly node: string;
  readonly device: string | null;
  readonly code: string;
  readonly atMs: number;
}

export interface RelationJobState {
  /** When the controller first saw the job; older faults are skipped. */
  readonly firstSeenMs: number;
  /** A3 job: a CQE trigger inside the window turns a timed-out device link-down into Separate. */
  readonly a3: boolean;
  readonly candidates: readonly RelationCandidate[];
  readonly triggers: readonly RelationTrigger[];
  /** Node -> strategy decided for the job's pod on that node; Separate is sticky. */
  readonly strategies: Readonly<Record<string, RelationStrategy>>;
}

/** Relation faults (policy/faults/relation-faults.ts, docs/rules.md#job.relation-faults), keyed by job. */
export interface RelationState {
  readonly jobs: Readonly<Record<string, RelationJobState>>;
}

export interface LinkDownEntry {
  readonly node: string;
  readonly device: string | null;
  readonly code: string;
  readonly lastSeenMs: number;
  readonly firstSeenMs?: number;
  readonly level?: string;
  readonly reportedLevel?: string;
  readonly detail?: string;
}

/** Short memories of the per-node filters (policy/filters/uce-accompany.ts, policy/filters/step-retry-filter.ts). */
export interface FilterState {
  /** `faultKey@firstSeenMs` of an AIC/AIV fault -> decision. */
  readonly uceAccompany: Readonly<Record<string, 'drop' | 'report'>>;
  /** `node/device/code` of a UB switch L2 link-down -> last seen, and the record to force in again (policy/filters/step-retry-filter.ts). */
  readonly linkDowns: Readonly<Record<string, LinkDownEntry>>;
}

export interface EscalationStateDoc {
  readonly version: typeof ESCALATION_STATE_VERSION;
  readonly savedAtMs: number;
  readonly escalation: EscalationState;
  readonly manualSeparation: ManualSeparationState;
  readonly relation: RelationState;
  readonly filters: FilterState;
}

export const EMPTY_ESCALATION_STATE: EscalationState = { tracks: {} };
export const EMPTY_MANUAL_SEPARATION_STATE: ManualSeparationState = { lastSeen: {}, pending: {}, counters: {}, separated: {} };
export const EMPTY_RELATION_STATE: RelationState = { jobs: {} };
export const EMPTY_FILTER_STATE: FilterState = { uceAccompany: {}, linkDowns: {} };
export const emptyEscalationStateDoc = (savedAtMs = 0): EscalationStateDoc => ({
  version: ESCALATION_STATE_VERSION,
  savedAtMs,
  escalation: EMPTY_ESCALATION_STATE,
  manualSeparation: EMPTY_MANUAL_SEPARATION_STATE,
  relation: EMPTY_RELATION_STATE,
  filters: EMPTY_FILTER_STATE,
});

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated as SchemaValidator<EscalationStateDoc>;

/** Parses the ConfigMap value. Rejects anything not exactly this version's shape (start fresh then). */
export function parseEscalationState(text: string): Parsed<EscalationStateDoc> {
  return parseValidated(ESCALATION_STATE_KEY, text, validate);
}

/** Go-JSON form: records become sorted Go maps, so equal states encode to equal bytes (no spurious writes). */
function wire(doc: EscalationStateDoc): unknown {
  const map = <V, W>(r: Readonly<Record<string, V>>, f: (v: V) => W) => goMap(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, f(v)])));
  const id = <V>(v: V): V => v;
  const m = doc.manualSeparation;
  return {
    version: doc.version,
    savedAtMs: doc.savedAtMs,
    escalation: { tracks: map(doc.escalation.tracks, id) },
    manualSeparation: { lastSeen: map(m.lastSeen, id), pending: map(m.pending, id), counters: map(m.counters, id), separated: map(m.separated, id) },
    relation: { jobs: map(doc.relation.jobs, (j) => ({ ...j, strategies: map(j.strategies, id) })) },
    filters: { uceAccompany: map(doc.filters.uceAccompany, id), linkDowns: map(doc.filters.linkDowns, id) },
  };
}

export type EncodedEscalationState =
  | { readonly ok: true; readonly text: string; readonly evicted: readonly string[] }
  | { readonly ok: false; readonly reason: string };

interface Eviction {
  readonly tier: number;
  readonly ageMs: number;
  readonly what: string;
  readonly drop: (d: MutableDoc) => void;
}
interface MutableDoc {
  readonly version: typeof ESCALATION_STATE_VERSION;
  readonly savedAtMs: number;
  readonly escalation: { tracks: Record<string, CodeTrack> };
  readonly manualSeparation: {
    lastSeen: Record<string, number>;
    pending: Record<string, ManualSeparationState['pending'][string]>;
    counters: Record<string, readonly number[]>;
    separated: Record<string, ManualSeparatedNpu>;
  };
  readonly relation: { jobs: Record<string, RelationJobState> };
  readonly filters: { uceAccompany: Record<string, 'drop' | 'report'>; linkDowns: Record<string, FilterState['linkDowns'][string]> };
}

/**
 * Least valuable first: filter memories, then frequency histories without an escalation in force,
 * then manual-separation counters of NPUs that are not separated, then relation windows. Escalations
 * in force, separated NPUs and pending judgements are never evicted.
 */
function evictions(doc: EscalationStateDoc): Eviction[] {
  const out: Eviction[] = [];
  for (const k of Object.keys(doc.filters.uceAccompany)) out.push({ tier: 0, ageMs: 0, what: `filters.uceAccompany/${k}`, drop: (d) => delete d.filters.uceAccompany[k] });
  for (const [k, v] of Object.entries(doc.filters.linkDowns)) out.push({ tier: 0, ageMs: v.lastSeenMs, what: `filters.linkDowns/${k}`, drop: (d) => delete d.filters.linkDowns[k] });
  for (const [k, t] of Object.entries(doc.escalation.tracks)) {
    if (t.upgrade !== null || t.duration !== null || t.active) continue;
    out.push({ tier: 1, ageMs: t.lastFaultMs ?? t.instanceMs, what: `escalation.tracks/${k}`, drop: (d) => delete d.escalation.tracks[k] });
  }
  const m = doc.manualSeparation;
  const separatedNpu = (k: string): boolean => Object.hasOwn(m.separated, k.slice(0, k.lastIndexOf('/')));
  for (const k of new Set([...Object.keys(m.counters), ...Object.keys(m.lastSeen)])) {
    if (separatedNpu(k)) continue;
    const age = Math.max(m.lastSeen[k] ?? 0, ...(m.counters[k] ?? []));
    out.push({ tier: 2, ageMs: age, what: `manualSeparation/${k}`, drop: (d) => { delete d.manualSeparation.counters[k]; delete d.manualSeparation.lastSeen[k]; } });
  }
  for (const [k, j] of Object.entries(doc.relation.jobs)) out.push({ tier: 3, ageMs: j.firstSeenMs, what: `relation.jobs/${k}`, drop: (d) => delete d.relation.jobs[k] });
  return out.sort((a, b) => a.tier - b.tier || a.ageMs - b.ageMs);
}

function mutableCopy(doc: EscalationStateDoc): MutableDoc {
  return {
    version: doc.version,
    savedAtMs: doc.savedAtMs,
    escalation: { tracks: { ...doc.escalation.tracks } },
    manualSeparation: { lastSeen: { ...doc.manualSeparation.lastSeen }, pending: { ...doc.manualSeparation.pending }, counters: { ...doc.manualSeparation.counters }, separated: { ...doc.manualSeparation.separated } },
    relation: { jobs: { ...doc.relation.jobs } },
    filters: { uceAccompany: { ...doc.filters.uceAccompany }, linkDowns: { ...doc.filters.linkDowns } },
  };
}

/**
 * Encodes the state within `maxBytes` (UTF-8). Expired entries should already be pruned
 * (policy/faults/escalation-persistence.ts); if the text is still too large, the least valuable entries are
 * evicted (reported in `evicted`). Fails only when what must be kept does not fit.
 */
export function encodeEscalationState(doc: EscalationStateDoc, maxBytes: number = ESCALATION_STATE_MAX_BYTES): EncodedEscalationState {
  const size = (t: string): number => Buffer.byteLength(t, 'utf8');
  let text = goJson(wire(doc));
  if (size(text) <= maxBytes) return { ok: true, text, evicted: [] };
  const queue = evictions(doc);
  const work = mutableCopy(doc);
  const evicted: string[] = [];
  while (queue.length > 0) {
    const batch = queue.splice(0, Math.max(1, Math.ceil(queue.length / 10)));
    for (const e of batch) {
      e.drop(work);
      evicted.push(e.what);
    }
    text = goJson(wire(work));
    if (size(text) <= maxBytes) return { ok: true, text, evicted };
  }
  return { ok: false, reason: `${ESCALATION_STATE_KEY}: ${size(text)} bytes of escalations in force exceed ${maxBytes}` };
}
