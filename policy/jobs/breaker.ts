/**
 * Blast-radius circuit breaker (a fault storm must not restart or isolate half the cluster): pure decisions, time as a parameter.
 *
 * Scopes: `cluster` and one per switch domain (controllers/breaker.controller.ts names a node's
 * domain). Every isolation or reschedule the controller is about to carry out asks `admit` first,
 * naming its kind (chips, nodes, jobs), a de-duplication key and the domains it touches. Each scope
 * counts the distinct keys of each kind within a sliding window (`windowMs`); an action that would
 * take a scope past its threshold trips the scope, and that action and every later one touching a
 * tripped scope is HELD: decided and explained, not carried out. Chips are counted but not held
 * (`observe`): the device plugin takes a faulty chip out of service itself, we only see it.
 *
 * A tripped scope stays tripped until `reset` (the operator's annotation, newer than the trip) or
 * `autoReset` (after `autoResetMs`, when configured). Reset clears the scope's window, so the next
 * action starts a fresh count; held decisions are not replayed but re-decided by the caller from the
 * level-triggered state of that moment (a fault gone by then is not acted on).
 *
 * Bounded: a scope keeps at most threshold + 1 stamps per kind; untripped scopes with no stamps are
 * dropped by `prune`.
 */
import { BREAKER_KINDS, CLUSTER_SCOPE, type BreakerKind, type BreakerState, type ResetRequest, type ScopeState, type Stamp } from '../../schemas/breaker-state/breaker-state.ts';

import { bySource } from './breaker-accounting.ts';

export { CLUSTER_SCOPE, type BreakerKind, type BreakerState } from '../../schemas/breaker-state/breaker-state.ts';

/** Per kind: at most this many distinct keys per window; 0 = not limited. */
export type BreakerLimits = Readonly<Record<BreakerKind, number>>;

export interface BreakerConfig {
  readonly windowMs: number;
  /** Per switch domain. */
  readonly domain: BreakerLimits;
  readonly cluster: BreakerLimits;
  /** A tripped scope resets itself after this long; 0 = only by the operator. */
  readonly autoResetMs: number;
}

/**
 * Defaults (README "Blast-radius breaker"), for 16,000 nodes (2,000 SuperPods/racks of 8), 10 min window:
 * - domain: 8 nodes, 32 chips, 16 jobs. A switch domain of 8 servers losing all 8 within 10 min is
 *   the signature of a switch/fabric fault (or a bad rollout), not of independent hardware faults;
 *   chips: 32 = half a domain's 64 NPUs; jobs: 16 restarts in one rack in 10 min (a job restarted
 *   once per fault, several jobs per rack) is far above a normal rack's rate.
 * - cluster: 160 nodes (1 %), 640 chips, 200 jobs in 10 min. Field failure rates of NPU servers are
 *   of the order of a few % of nodes per month: at 16,000 nodes that is ~10-30 node faults a day, or
 *   well under 1 per 10 min on average; even a bad day at 20x stays below 160. A cluster-wide
 *   threshold crossing means something systemic (a noisy fault code, a firmware rollout, a software
 *   fault mass-isolating chips, as MindCluster warns), which is exactly when an operator should look.
 */
export const DEFAULT_BREAKER_CONFIG: BreakerConfig = {
  windowMs: 600_000,
  domain: { chips: 32, nodes: 8, jobs: 16 },
  cluster: { chips: 640, nodes: 160, jobs: 200 },
  autoResetMs: 0,
};

export interface Admission {
  readonly kind: BreakerKind;
  /** What is counted: a node name, `node/npu`, a decision id. The same key counts once per window. */
  readonly key: string;
  /** The switch domains the action touches (the cluster scope is always added). */
  readonly domains: readonly string[];
  /** Whose fault it is (policy/jobs/breaker-accounting.ts): kept with the stamp, summed in a trip's reason. */
  readonly source?: string;
}

export interface Trip {
  readonly scope: string;
  readonly reason: string;
}

export interface AdmitResult {
  readonly allowed: boolean;
  readonly state: BreakerState;
  /** Scopes tripped by this admission. */
  readonly tripped: readonly Trip[];
  /** When held: the tripped scopes that hold it, with their reasons. */
  readonly heldBy: readonly Trip[];
}

const emptyWindow = (): Record<BreakerKind, readonly Stamp[]> => ({ chips: [], nodes: [], jobs: [] });
const freshScope = (scope: string): ScopeState => ({ scope, tripped: false, reason: '', held: 0, window: emptyWindow() });
const limitOf = (cfg: BreakerConfig, scope: string, kind: BreakerKind): number => (scope === CLUSTER_SCOPE ? cfg.cluster : cfg.domain)[kind];
const scopesOf = (domains: readonly string[]): string[] => [CLUSTER_SCOPE, ...[...new Set(domains)].filter((d) => d !== CLUSTER_SCOPE).sort()];

function pruneScope(s: ScopeState, nowMs: number, cfg: Pick<BreakerConfig, 'windowMs'>): ScopeState {
  const from = nowMs - cfg.windowMs;
  let changed = false;
  const window = emptyWindow();
  for (const k of BREAKER_KINDS) {
    const kept = s.window[k].filter((w) => w.atMs > from);
    if (kept.length !== s.window[k].length) changed = true;
    window[k] = kept;
  }
  return changed ? { ...s, window } : s;
}

/**
 * Asks to carry out one action. `hold` false (chips): the action happens anyway; it is counted and
 * may trip scopes, but is never held.
 */
export function admit(state: BreakerState, req: Admission, nowMs: number, cfg: BreakerConfig, hold = true): AdmitResult {
  const names = scopesOf(req.domains);
  const scopes = names.map((n) => pruneScope(state.scopes[n] ?? freshScope(n), nowMs, cfg));
  const put = (list: readonly ScopeState[]): BreakerState => ({ ...state, scopes: { ...state.scopes, ...Object.fromEntries(list.map((s) => [s.scope, s])) } });
  // Counted already (a retry, a replay, the next step of an admitted restart, a chip reported
  // again): nothing new happens, so it is not held either (a half-done restart is finished).
  const counted = scopes.some((s) => limitOf(cfg, s.scope, req.kind) > 0 && s.window[req.kind].some((w) => w.key === req.key));
  if (counted) return { allowed: true, state: put(scopes), tripped: [], heldBy: [] };
  const heldBy = hold ? scopes.filter((s) => s.tripped).map((s) => ({ scope: s.scope, reason: s.reason })) : [];
  if (heldBy.length > 0) {
    return { allowed: false, state: put(scopes.map((s) => (s.tripped ? { ...s, held: s.held + 1 } : s))), tripped: [], heldBy };
  }
  const windowS = Math.round(cfg.windowMs / 1000);
  const tripped: Trip[] = [];
  for (const s of scopes) {
    const limit = limitOf(cfg, s.scope, req.kind);
    const n = s.window[req.kind].filter((w) => w.key !== req.key).length + 1;
    if (limit > 0 && n > limit && !s.tripped) {
      const counted = [...s.window[req.kind].filter((w) => w.key !== req.key), { source: req.source }];
      const sources = counted.some((w) => w.source !== undefined) ? `; by source: ${bySource(counted)}` : '';
      tripped.push({ scope: s.scope, reason: `${n} ${req.kind} ${req.kind === 'jobs' ? 'rescheduled' : 'isolated'} within ${windowS} s > ${limit} (last: ${req.key}${req.source === undefined ? '' : ` from ${req.source}`})${sources}` });
    }
  }
  const trippedSet = new Set(tripped.map((t) => t.scope));
  const reasonOf = new Map(tripped.map((t) => [t.scope, t.reason]));
  const count = !hold || tripped.length === 0;
  const next = scopes.map((s): ScopeState => {
    const limit = limitOf(cfg, s.scope, req.kind);
    let out = s;
    if (count && limit > 0 && !s.window[req.kind].some((w) => w.key === req.key)) {
      const stamp = { key: req.key, atMs: nowMs, ...(req.source === undefined ? {} : { source: req.source }) };
      out = { ...out, window: { ...out.window, [req.kind]: [...out.window[req.kind], stamp].slice(-(limit + 1)) } };
    }
    if (trippedSet.has(s.scope)) out = { ...out, tripped: true, trippedAtMs: nowMs, reason: reasonOf.get(s.scope)!, held: hold ? 1 : 0 };
    return out;
  });
  const allowed = !hold || tripped.length === 0;
  return { allowed, state: put(next), tripped, heldBy: allowed ? [] : tripped };
}

export interface ResetResult {
  readonly state: BreakerState;
  /** Scopes reset now. */
  readonly reset: readonly string[];
  /** Tripped scopes the request named but that tripped after it (a stale request). */
  readonly stale: readonly string[];
}

/** The operator's reset: scopes tripped at or before the request are reset, their windows cleared. */
export function reset(state: BreakerState, req: ResetRequest): ResetResult {
  const named = req.scope === 'all' ? Object.values(state.scopes) : state.scopes[req.scope] === undefined ? [] : [state.scopes[req.scope]!];
  const done: string[] = [];
  const stale: string[] = [];
  const scopes: Record<string, ScopeState> = { ...state.scopes };
  for (const s of named) {
    if (s.tripped && (s.trippedAtMs ?? 0) > req.atMs) { stale.push(s.scope); continue; }
    if (s.tripped) done.push(s.scope);
    scopes[s.scope] = { ...freshScope(s.scope), reason: s.tripped ? `reset by ${req.by}` : s.reason };
  }
  return { state: { ...state, scopes }, reset: done, stale };
}

/** Scopes whose auto-reset time has come are reset; `nextAtMs` = the next such time, if any. */
export function autoReset(state: BreakerState, nowMs: number, cfg: BreakerConfig): ResetResult & { readonly nextAtMs?: number } {
  if (cfg.autoResetMs <= 0) return { state, reset: [], stale: [] };
  const scopes: Record<string, ScopeState> = { ...state.scopes };
  const done: string[] = [];
  let next: number | undefined;
  for (const s of Object.values(state.scopes)) {
    if (!s.tripped) continue;
    const at = (s.trippedAtMs ?? nowMs) + cfg.autoResetMs;
    if (at <= nowMs) { scopes[s.scope] = { ...freshScope(s.scope), reason: `auto-reset after ${Math.round(cfg.autoResetMs / 1000)} s` }; done.push(s.scope); }
    else next = next === undefined ? at : Math.min(next, at);
  }
  return { state: done.length === 0 ? state : { ...state, scopes }, reset: done, stale: [], ...(next === undefined ? {} : { nextAtMs: next }) };
}

/**
 * Old stamps dropped; untripped scopes with nothing in their window (and nothing to say) dropped.
 * Every reader of a persisted state prunes it (by the window it was written with, when it says), so
 * the state is not rewritten when stamps merely age out.
 */
export function prune(state: BreakerState, nowMs: number, cfg: Pick<BreakerConfig, 'windowMs'>): BreakerState {
  const scopes: Record<string, ScopeState> = {};
  for (const s of Object.values(state.scopes)) {
    const p = pruneScope(s, nowMs, cfg);
    if (p.tripped || BREAKER_KINDS.some((k) => p.window[k].length > 0) || (p.scope === CLUSTER_SCOPE && p.reason !== '')) scopes[p.scope] = p;
  }
  return { ...state, scopes };
}

export const trippedScopes = (state: BreakerState): readonly ScopeState[] => Object.values(state.scopes).filter((s) => s.tripped);
