/**
 * `kubectl clusterd breaker status|reset [SCOPE]`. Protocol shared with the controller's breaker:
 * ConfigMap `clusterd-ts-breaker` in the controller namespace, data key `state` =
 * `{"scopes":[{"scope":"cluster"|"<domain>","tripped":bool,"trippedAt":RFC3339|null,"reason":string,"held":number,...}]}`;
 * a reset is the annotation `clusterd-ts.io/breaker-reset` = `{"scope":"all"|scope,"by":user,"at":RFC3339}`,
 * which the controller acts on: it resets the scope, removes the request and records it as
 * `clusterd-ts.io/breaker-last-reset` (schemas/breaker-state).
 */
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import { BREAKER_CM_NAME, BREAKER_LAST_RESET_ANNOTATION, BREAKER_RESET_ANNOTATION, BREAKER_STATE_KEY } from '../schemas/breaker-state/breaker-state.ts';
import { CliError, EXIT } from './errors.ts';

export { BREAKER_CM_NAME };

export interface BreakerScope {
  readonly scope: string;
  readonly tripped: boolean;
  readonly trippedAt: string | null;
  readonly reason: string;
  readonly held: number;
  readonly [extra: string]: unknown;
}

export interface BreakerStatus {
  readonly present: boolean;
  readonly scopes: readonly BreakerScope[];
  /** The last reset the controller carried out (who, when, which scope). */
  readonly lastReset?: unknown;
  /** A reset asked for that the controller has not carried out yet. */
  readonly pendingReset?: unknown;
}

export async function breakerStatus(client: KubeClient, namespace: string): Promise<BreakerStatus> {
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
  const scopes = (parsed as { scopes?: unknown }).scopes;
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
    scopes: scopes.map((s: Record<string, unknown>) => ({
      ...s,
      scope: String(s.scope ?? '?'), tripped: s.tripped === true, trippedAt: typeof s.trippedAt === 'string' ? s.trippedAt : null,
      reason: typeof s.reason === 'string' ? s.reason : '', held: typeof s.held === 'number' ? s.held : 0,
    })),
    ...(lastReset === undefined ? {} : { lastReset }),
    ...(pendingReset === undefined ? {} : { pendingReset }),
  };
}

export async function breakerReset(client: KubeClient, namespace: string, scope: string, by: string, at: string): Promise<{ scope: string; by: string; at: string }> {
  const value = { scope, by, at };
  try {
    await client.patch(paths.configMap(namespace, BREAKER_CM_NAME), { metadata: { annotations: { [BREAKER_RESET_ANNOTATION]: JSON.stringify(value) } } }, 'merge');
  } catch (e) {
    if (isNotFound(e)) throw new CliError(`no breaker state: ConfigMap ${namespace}/${BREAKER_CM_NAME} does not exist (nothing to reset)`, EXIT.notFound);
    throw e;
  }
  return value;
}
