/**
 * `kubectl clusterd breaker status|reset [SCOPE]`. Protocol shared with the controller's breaker:
 * ConfigMap `clusterd-ts-breaker` in the controller namespace, data key `state` =
 * `{"windowSeconds":n,"scopes":[{"scope":"cluster"|"<domain>","tripped":bool,"trippedAt":RFC3339|null,"reason":string,"held":number,
 * "counts":{...},"sources":{"chips"|"nodes"|"jobs":{"<source>":n}},"window":{"chips"|"nodes"|"jobs":[{"key","at","source"}]}}]}`
 * (`source`: who wrote the fault behind the count, e.g. `public-fault <namespace>/<name>`, `device-info`). The controller does not rewrite the
 * state when stamps merely age out, so status drops stamps older than `windowSeconds` (and the scopes
 * left with nothing to say, as the controller does on load) and counts the rest; a state without
 * `windowSeconds` (an older controller's) is shown as stored;
 * a reset is the annotation `clusterd-ts.io/breaker-reset` = `{"scope":"all"|scope,"by":user,"at":RFC3339}`,
 * which the controller acts on: it resets the scope, removes the request and records it as
 * `clusterd-ts.io/breaker-last-reset` (schemas/breaker-state). A reset is asked for only when there
 * is something to reset: a scope name that is not in the state is refused (exit 3), and so is a
 * scope (or `all`) with nothing tripped, so a no-op never replaces the record of the real reset.
 */
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import {
  BREAKER_CM_NAME, BREAKER_LAST_RESET_ANNOTATION, BREAKER_RESET_ANNOTATION, BREAKER_STATE_KEY, encodeBreakerState, parseBreakerState,
} from '../schemas/breaker-state/breaker-state.ts';
import { prune } from '../policy/jobs/breaker.ts';
import { CliError, EXIT } from './errors.ts';

export { BREAKER_CM_NAME };

export interface BreakerScope {
  readonly scope: string;
  readonly tripped: boolean;
  readonly trippedAt: string | null;
  readonly reason: string;
  readonly held: number;
  /** Stamps per kind in the window (`chips`, `nodes`, `jobs`); absent when the state has none. */
  readonly counts?: Readonly<Record<string, number>>;
  /** The same per kind by source (`public-fault <ns>/<name>`, `device-info`, ...); absent in a state without sources. */
  readonly sources?: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly [extra: string]: unknown;
}

export interface BreakerStatus {
  readonly present: boolean;
  readonly scopes: readonly BreakerScope[];
  /** The window the counts are over; absent: a state from before it was recorded, shown as stored. */
  readonly windowSeconds?: number;
  /** The last reset the controller carried out (who, when, which scope). */
  readonly lastReset?: unknown;
  /** A reset asked for that the controller has not carried out yet. */
  readonly pendingReset?: unknown;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Per scope and kind, where its counts came from: `  cluster chips: public-fault t/pf 600, device-info 41` lines ('' when none). */
export function sourceLines(scopes: readonly BreakerScope[]): string {
  const lines = scopes.flatMap((x) => Object.entries(x.sources ?? {}).flatMap(([kind, by]) => {
    const list = Object.entries(by).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    return list.length === 0 ? [] : [`  ${x.scope} ${kind}: ${list.map(([src, n]) => `${src} ${n}`).join(', ')}`];
  }));
  return lines.length === 0 ? '' : `counted by source:\n${lines.join('\n')}\n`;
}

/** The state's scopes as readers see them at `nowMs`: aged stamps dropped by the window the state names (the persisted format). */
function inWindow(text: string, nowMs: number): { scopes: unknown[]; windowSeconds: number } | undefined {
  const p = parseBreakerState(text);
  if (!p.ok || p.value.windowMs === undefined) return undefined;
  const shown = JSON.parse(encodeBreakerState(prune(p.value, nowMs, { windowMs: p.value.windowMs }))) as { scopes: unknown[] };
  return { scopes: shown.scopes, windowSeconds: p.value.windowMs / 1000 };
}

export async function breakerStatus(client: KubeClient, namespace: string, nowMs: number): Promise<BreakerStatus> {
  let cm: { data?: Record<string, string>; metadata?: { annotations?: Record<string, string> } };
  try {
    cm = await client.get(paths.configMap(namespace, BREAKER_CM_NAME));
  } catch (e) {
    if (isNotFound(e)) return { present: false, scopes: [] };
    throw e;
  }
  const text = cm.data?.[BREAKER_STATE_KEY];
  if (text === undefined) return { present: false, scopes: [] };
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch (e) {
    throw new CliError(`${namespace}/${BREAKER_CM_NAME} key ${BREAKER_STATE_KEY} is not JSON: ${(e as Error).message}`, EXIT.error);
  }
  const current = inWindow(text, nowMs);
  const scopes = current?.scopes ?? (parsed as { scopes?: unknown }).scopes;
  if (!Array.isArray(scopes)) throw new CliError(`${namespace}/${BREAKER_CM_NAME}: ${BREAKER_STATE_KEY} has no scopes list`, EXIT.error);
  const annotation = (key: string): unknown => {
    const text = cm.metadata?.annotations?.[key];
    if (text === undefined) return undefined;
    try { return JSON.parse(text); } catch { return text; }
  };
  const lastReset = annotation(BREAKER_LAST_RESET_ANNOTATION);
  const pendingReset = annotation(BREAKER_RESET_ANNOTATION);
  return {
    present: true,
    scopes: scopes.map(({ counts, sources, ...s }: Record<string, unknown>) => ({
      ...s,
      scope: String(s.scope ?? '?'), tripped: s.tripped === true, trippedAt: typeof s.trippedAt === 'string' ? s.trippedAt : null,
      reason: typeof s.reason === 'string' ? s.reason : '', held: typeof s.held === 'number' ? s.held : 0,
      ...(typeof counts === 'object' && counts !== null && !Array.isArray(counts)
        ? { counts: Object.fromEntries(Object.entries(counts).filter((e): e is [string, number] => typeof e[1] === 'number')) } : {}),
      ...(isRecord(sources) ? { sources: Object.fromEntries(Object.entries(sources).filter((e): e is [string, Record<string, unknown>] => isRecord(e[1]))
        .map(([k, v]) => [k, Object.fromEntries(Object.entries(v).filter((e): e is [string, number] => typeof e[1] === 'number'))])) } : {}),
    })),
    ...(current === undefined ? {} : { windowSeconds: current.windowSeconds }),
    ...(lastReset === undefined ? {} : { lastReset }),
    ...(pendingReset === undefined ? {} : { pendingReset }),
  };
}

/** `cluster`, `all` or a switch domain: a label value (the domain label's) or `superpod-<id>`. */
const SCOPE_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Refuses a reset that would change nothing: an unknown scope, or nothing tripped in it (exit 3). */
function checkReset(namespace: string, scope: string, cm: { data?: Record<string, string> }): void {
  const text = cm.data?.[BREAKER_STATE_KEY];
  const p = text === undefined ? undefined : parseBreakerState(text);
  if (p === undefined) throw new CliError(`no breaker state in ${namespace}/${BREAKER_CM_NAME} (nothing to reset)`, EXIT.notFound);
  if (!p.ok) throw new CliError(`${namespace}/${BREAKER_CM_NAME} key ${BREAKER_STATE_KEY} unreadable (${p.reason}); not changed`, EXIT.error);
  const scopes = Object.values(p.value.scopes);
  const tripped = scopes.filter((x) => x.tripped).map((x) => x.scope);
  if (scope === 'all') {
    if (tripped.length === 0) throw new CliError('nothing is tripped: no reset requested (the record of the last reset is kept)', EXIT.notFound);
    return;
  }
  const named = p.value.scopes[scope];
  if (named === undefined) throw new CliError(`unknown breaker scope ${scope}; scopes in the state: ${scopes.map((x) => x.scope).join(', ') || 'none'}`, EXIT.notFound);
  if (!named.tripped) throw new CliError(`scope ${scope} is not tripped: no reset requested (the record of the last reset is kept)${tripped.length > 0 ? `; tripped: ${tripped.join(', ')}` : ''}`, EXIT.notFound);
}

export async function breakerReset(client: KubeClient, namespace: string, scope: string, by: string, at: string): Promise<{ scope: string; by: string; at: string }> {
  if (!SCOPE_NAME.test(scope)) throw new CliError(`not a breaker scope: ${JSON.stringify(scope.slice(0, 80))} (all, cluster or a switch domain)`, EXIT.usage);
  const value = { scope, by, at };
  let cm: { data?: Record<string, string>; metadata?: { resourceVersion?: string } };
  try {
    cm = await client.get(paths.configMap(namespace, BREAKER_CM_NAME));
  } catch (e) {
    if (isNotFound(e)) throw new CliError(`no breaker state: ConfigMap ${namespace}/${BREAKER_CM_NAME} does not exist (nothing to reset)`, EXIT.notFound);
    throw e;
  }
  checkReset(namespace, scope, cm);
  // On the version checked: a state that changed meanwhile is a 409, not a reset of something else.
  await client.patch(paths.configMap(namespace, BREAKER_CM_NAME), { metadata: { resourceVersion: cm.metadata?.resourceVersion, annotations: { [BREAKER_RESET_ANNOTATION]: JSON.stringify(value) } } }, 'merge');
  return value;
}
