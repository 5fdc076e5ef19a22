/**
 * Idempotence of job decisions. Every decision carries a stable id built from the job UID, the
 * restart generation, the lifecycle step and a fingerprint of the fault set it acts on. The controller
 * records the id (together with the new state) *before* acting and skips a decision whose id is
 * already recorded, so a replay after a crash or a duplicate evaluation does not act twice. Deletes
 * also carry UID preconditions, so the rare act-twice is harmless anyway.
 */
import type { JobDecision, JobRescheduleState } from './job-decision-types.ts';

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** 64-bit FNV-1a over the UTF-16 code units of `text`, as 16 hex digits. Not cryptographic. */
export function fingerprintHash(text: string): string {
  let h = FNV64_OFFSET;
  for (let i = 0; i < text.length; i++) {
    h ^= BigInt(text.charCodeAt(i));
    h = (h * FNV64_PRIME) & MASK64;
  }
  return h.toString(16).padStart(16, '0');
}

/** `<uid>/g<generation>/<step>/<hash(fingerprint)>`: readable in logs, stable across replays. */
export const decisionIdOf = (jobUid: string, generation: number, step: string, fingerprint: string): string =>
  `${jobUid}/g${generation}/${step}/${fingerprintHash(fingerprint)}`;

export const DEFAULT_ACTED_HISTORY_CAP = 32;

/** Has the controller already recorded (and so acted on) this decision? */
export const alreadyActed = (history: Pick<JobRescheduleState, 'acted'> | undefined, decision: Pick<JobDecision, 'decisionId'>): boolean =>
  history?.acted.includes(decision.decisionId) ?? false;

/** Record a decision as acted on; keeps the newest `cap` ids. Decisions without actions need no record. */
export function markActed<S extends Pick<JobRescheduleState, 'acted'>>(state: S, decision: Pick<JobDecision, 'decisionId'>, cap = DEFAULT_ACTED_HISTORY_CAP): S {
  if (state.acted.includes(decision.decisionId)) return state;
  return { ...state, acted: [...state.acted, decision.decisionId].slice(-cap) };
}
