/**
 * The blast-radius breaker's persisted state and its reset request.
 *
 * `mindx-dl/clusterd-ts-breaker`, data key `state`:
 *   {"windowSeconds":n,
 *    "scopes":[{"scope":"cluster"|"<domain>","tripped":bool,"trippedAt":RFC3339|null,"reason":string,
 *               "held":number,"counts":{"chips":n,"nodes":n,"jobs":n},
 *               "sources":{"chips":{"<source>":n},"nodes":{...},"jobs":{...}},
 *               "window":{"chips":[{"key":s,"at":RFC3339,"source":s}],"nodes":[...],"jobs":[...]}}]}
 * `window` holds the stamps of the sliding window, at most threshold + 1 per kind, so a restarted or
 * new leader keeps counting where the last one stopped. `counts` is the number of entries in `window`
 * when it was written, `sources` the same split by the writer of the fault behind each entry (a
 * stamp's `source`: `public-fault <namespace>/<name>`, `device-info`, `node-info`, ...; see
 * policy/jobs/breaker-accounting.ts; `unknown` for stamps written before sources were recorded). The state is not rewritten when stamps merely age out (that was a write per
 * stamp in an idle cluster): every reader drops stamps older than `windowSeconds` (the
 * controller's `--breaker-window-seconds` at the last write) on load, `kubectl clusterd breaker
 * status` included. States written before `windowSeconds` existed lack it: shown as stored.
 *
 * Reset request: annotation `clusterd-ts.io/breaker-reset` on that ConfigMap, written by the kubectl
 * plugin (or by hand): {"scope":"all"|"<scope>","by":"<user>","at":RFC3339}. The controller applies
 * it, records it in `clusterd-ts.io/breaker-last-reset` and removes the request.
 *
 * It lives in mindx-dl beside the controller's other own state objects (job state, recovery state):
 * the controller already watches that namespace, so a reset is seen at once, on every replica.
 */
import { ok, parseJson, rejected, type Parsed } from '../parsed.ts';

export const BREAKER_NAMESPACE = 'mindx-dl';
export const BREAKER_CM_NAME = 'clusterd-ts-breaker';
export const BREAKER_STATE_KEY = 'state';
export const BREAKER_RESET_ANNOTATION = 'clusterd-ts.io/breaker-reset';
export const BREAKER_LAST_RESET_ANNOTATION = 'clusterd-ts.io/breaker-last-reset';
export const BREAKER_LABELS = { 'app.kubernetes.io/managed-by': 'clusterd-ts' } as const;
export const BREAKER_MAX_CHARS = 512 * 1024;
export const CLUSTER_SCOPE = 'cluster';

export const BREAKER_KINDS = ['chips', 'nodes', 'jobs'] as const;
export type BreakerKind = (typeof BREAKER_KINDS)[number];

/** One counted isolation or reschedule: what (`key`, for de-duplication), when, and whose fault it was. */
export interface Stamp {
  readonly key: string;
  readonly atMs: number;
  /** The writer of the fault behind it (policy/jobs/breaker-accounting.ts), e.g. `public-fault <ns>/<name>`, `device-info`; absent in old states. */
  readonly source?: string;
}

export interface ScopeState {
  readonly scope: string;
  readonly tripped: boolean;
  readonly trippedAtMs?: number;
  readonly reason: string;
  /** Decisions held in this scope since it tripped. */
  readonly held: number;
  readonly window: Readonly<Record<BreakerKind, readonly Stamp[]>>;
}

export interface BreakerState {
  /** The sliding window the stamps were counted in (readers drop older stamps); absent in old states. */
  readonly windowMs?: number;
  /** By scope name. */
  readonly scopes: Readonly<Record<string, ScopeState>>;
}

export const EMPTY_BREAKER_STATE: BreakerState = { scopes: {} };

export interface ResetRequest {
  /** `all` or one scope name. */
  readonly scope: string;
  readonly by: string;
  readonly atMs: number;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const parseTime = (v: unknown): number | undefined => {
  if (typeof v !== 'string' || !RFC3339.test(v)) return undefined;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
};
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Stamps per source (`unknown` for stamps without one), in key order: what the window holds, by whose faults. */
export function countBySource(stamps: readonly Stamp[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const w of stamps) out[w.source ?? 'unknown'] = (out[w.source ?? 'unknown'] ?? 0) + 1;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** Scopes in a fixed order (cluster first, then by name), so an unchanged state encodes to the same bytes. */
export function encodeBreakerState(s: BreakerState): string {
  const scopes = Object.values(s.scopes).sort((a, b) => (a.scope === CLUSTER_SCOPE ? -1 : b.scope === CLUSTER_SCOPE ? 1 : a.scope.localeCompare(b.scope)));
  return JSON.stringify({
    ...(s.windowMs === undefined ? {} : { windowSeconds: s.windowMs / 1000 }),
    scopes: scopes.map((x) => ({
      scope: x.scope, tripped: x.tripped, trippedAt: x.trippedAtMs === undefined ? null : iso(x.trippedAtMs), reason: x.reason, held: x.held,
      counts: Object.fromEntries(BREAKER_KINDS.map((k) => [k, x.window[k].length])),
      sources: Object.fromEntries(BREAKER_KINDS.map((k) => [k, countBySource(x.window[k])])),
      window: Object.fromEntries(BREAKER_KINDS.map((k) => [k, x.window[k].map((w) => ({ key: w.key, at: iso(w.atMs), ...(w.source === undefined ? {} : { source: w.source }) }))])),
    })),
  });
}

/** Never throws; a wrong shape is refused whole (the caller logs it and starts from an empty state). */
export function parseBreakerState(text: string | undefined): Parsed<BreakerState> {
  if (text === undefined || text === '') return ok(EMPTY_BREAKER_STATE);
  const j = parseJson('breaker state', text, { maxChars: BREAKER_MAX_CHARS });
  if (!j.ok) return j;
  if (!isObj(j.value) || !Array.isArray(j.value.scopes)) return rejected('breaker state: want {"scopes":[...]}', 'schema');
  const ws = j.value.windowSeconds;
  if (ws !== undefined && (typeof ws !== 'number' || !Number.isFinite(ws) || ws <= 0)) return rejected('breaker state: windowSeconds is not a positive number', 'out_of_range');
  const scopes: Record<string, ScopeState> = {};
  for (const [i, raw] of j.value.scopes.entries()) {
    const at = `breaker state: scopes[${i}]`;
    if (!isObj(raw) || typeof raw.scope !== 'string' || raw.scope === '' || typeof raw.tripped !== 'boolean') return rejected(`${at}: want scope (string) and tripped (bool)`, 'schema');
    const trippedAtMs = raw.trippedAt === null || raw.trippedAt === undefined ? undefined : parseTime(raw.trippedAt);
    if (raw.trippedAt !== null && raw.trippedAt !== undefined && trippedAtMs === undefined) return rejected(`${at}: trippedAt is not RFC 3339`, 'schema');
    const held = raw.held ?? 0;
    if (typeof held !== 'number' || !Number.isInteger(held) || held < 0) return rejected(`${at}: held is not a count`, 'out_of_range');
    const w = isObj(raw.window) ? raw.window : {};
    const window = {} as Record<BreakerKind, Stamp[]>;
    for (const k of BREAKER_KINDS) {
      const list = w[k] ?? [];
      if (!Array.isArray(list)) return rejected(`${at}: window.${k} is not a list`, 'schema');
      window[k] = [];
      for (const e of list) {
        const t = isObj(e) ? parseTime(e.at) : undefined;
        if (!isObj(e) || typeof e.key !== 'string' || t === undefined) return rejected(`${at}: window.${k} entry wants key and at (RFC 3339)`, 'schema');
        if (e.source !== undefined && typeof e.source !== 'string') return rejected(`${at}: window.${k} entry's source is not a string`, 'schema');
        window[k].push({ key: e.key, atMs: t, ...(typeof e.source === 'string' ? { source: e.source } : {}) });
      }
    }
    scopes[raw.scope] = {
      scope: raw.scope, tripped: raw.tripped, ...(trippedAtMs === undefined ? {} : { trippedAtMs }),
      reason: typeof raw.reason === 'string' ? raw.reason : '', held, window,
    };
  }
  return ok({ ...(ws === undefined ? {} : { windowMs: Math.round(ws * 1000) }), scopes });
}

/** The reset annotation's value. */
export function parseResetRequest(text: string): Parsed<ResetRequest> {
  const j = parseJson('breaker reset', text, { maxChars: 4096 });
  if (!j.ok) return j;
  const v = j.value;
  if (!isObj(v) || typeof v.scope !== 'string' || v.scope === '') return rejected('breaker reset: want {"scope":"all"|"<scope>","by":"<user>","at":RFC3339}', 'schema');
  const atMs = parseTime(v.at);
  if (atMs === undefined) return rejected('breaker reset: "at" is not an RFC 3339 time', 'schema');
  return ok({ scope: v.scope, by: typeof v.by === 'string' && v.by !== '' ? v.by : 'unknown', atMs });
}

export const encodeResetRequest = (r: ResetRequest): string => JSON.stringify({ scope: r.scope, by: r.by, at: iso(r.atMs) });
