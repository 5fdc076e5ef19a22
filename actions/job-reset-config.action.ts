/**
 * `reset-config-<jobName>` in the job's namespace, job-level uses only (the Volcano side,
 * docs/rules.md#resched.sub-health, #resched.pod-level-reset-config, #recover.reset-config-writes): `GracefulExit` 1/0 around a sub-health graceExit, and `RankList=[]`,
 * `RetryTime` after a pod-level reschedule (with `restartType: podReschedule`).
 *
 * The user creates the ConfigMap; we only update one that exists in the cache with label
 * `reset=true` (docs/formats.md#reset-config). The desired content is computed from the cached one with the pure
 * transitions of schemas/reset-config, encoded with the Go-compatible encoder (+ checkCode), and
 * written only when the bytes differ, with the cached resourceVersion (a 409 goes back to the queue).
 * As Volcano's plugin, each write replaces the data map (docs/formats.md#reset-config): a GracefulExit write
 * leaves `reset.json` and `checkCode` only (a `restartType` left by the device plugin goes, so TaskD does
 * not read a stale restart type), a placement write those and `restartType: podReschedule`.
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import {
  RESET_CONFIG_LABEL_KEY, RESET_CONFIG_LABEL_VALUE, RESTART_TYPE, encodeResetConfigData, parseResetConfigData, resetConfigName,
  type TaskResetInfo,
} from '../schemas/reset-config/reset-config.ts';
import { gracefulExit } from '../schemas/reset-config/reset-config.transitions.ts';

/** What a decision wants of the job's reset-config. */
export type ResetConfigChange =
  | { readonly type: 'gracefulExit'; readonly value: 0 | 1 }
  /** Pod-level reschedule placed: RankList=[], UpdateTime, RetryTime set to an absolute value (resolved before persisting). */
  | { readonly type: 'podRescheduled'; readonly retryTime: number; readonly updateTimeS: number };

export interface ResetConfigDeps {
  /** The cached reset-config ConfigMaps (label reset=true), by `ns/name`. */
  readonly cached: (namespace: string, name: string) => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
}

export type ResetConfigOutcome = 'written' | 'unchanged' | 'absent' | 'invalid';

const labelled = (cm: ConfigMap): boolean => cm.metadata?.labels?.[RESET_CONFIG_LABEL_KEY] === RESET_CONFIG_LABEL_VALUE;

/** The reset.json as cached, or why it cannot be used. CheckCode is not verified (ClusterD does not either). */
export function readResetConfig(d: ResetConfigDeps, namespace: string, jobName: string): { cm: ConfigMap; info: TaskResetInfo } | ResetConfigOutcome {
  const cm = d.cached(namespace, resetConfigName(jobName));
  if (cm === undefined || !labelled(cm)) return 'absent';
  const parsed = parseResetConfigData(cm.data, { verifyCheckCode: false });
  return parsed.ok ? { cm, info: parsed.value.info } : 'invalid';
}

/** The reset.json after the change (pure). */
export function applyChange(info: TaskResetInfo, change: ResetConfigChange): TaskResetInfo {
  if (change.type === 'gracefulExit') return gracefulExit(info, change.value);
  return { ...info, RankList: [], UpdateTime: change.updateTimeS, RetryTime: change.retryTime };
}

/** Makes the job's reset-config reflect the change; writes only on a byte difference. */
export async function reconcileResetConfig(d: ResetConfigDeps, namespace: string, jobName: string, change: ResetConfigChange): Promise<ResetConfigOutcome> {
  const cur = readResetConfig(d, namespace, jobName);
  if (typeof cur === 'string') return cur;
  const next = applyChange(cur.info, change);
  const restartType = change.type === 'podRescheduled' ? RESTART_TYPE.podReschedule : undefined;
  const data = encodeResetConfigData(next, undefined, restartType);
  const res = await d.writer.ensure('reset_config', { namespace, name: resetConfigName(jobName), data }, cur.cm);
  return res.written ? 'written' : 'unchanged';
}
