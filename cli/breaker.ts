/**
 * `kubectl clusterd breaker status|reset [SCOPE]`. Protocol shared with the controller's breaker:
 * ConfigMap `clusterd-ts-breaker` in the controller namespace, data key `state` =
 * `{"scopes":[{"scope":"cluster"|"<domain>","tripped":bool,"trippedAt":RFC3339|null,"reason":string,"held":number,...}]}`;
 * a reset is the annotation `clusterd-ts.io/breaker-reset` = `{"scope":"all"|scope,"by":user,"at":RFC3339}`,
 * which the controller acts on.
 */
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import { CliError, EXIT } from './errors.ts';

export const BREAKER_CM_NAME = 'clusterd-ts-breaker';
export const BREAKER_STATE_KEY = 'state';
export const BREAKER_RESET_ANNOTATION = 'clusterd-ts.io/breaker-reset';

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
  /** The last reset asked for, if the annotation is there. */
  readonly lastReset?: unknown;
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
  const reset = cm.metadata?.annotations?.[BREAKER_RESET_ANNOTATION];
  let lastReset: unknown;
  if (reset !== undefined) { try { lastReset = JSON.parse(reset); } catch { lastReset = reset; } }
  return {
    present: true,
    scopes: scopes.map((s: Record<string, unknown>) => ({
      ...s,
      scope: String(s.scope ?? '?'), tripped: s.tripped === true, trippedAt: typeof s.trippedAt === 'string' ? s.trippedAt : null,
      reason: typeof s.reason === 'string' ? s.reason : '', held: typeof s.held === 'number' ? s.held : 0,
    })),
    ...(lastReset === undefined ? {} : { lastReset }),
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
