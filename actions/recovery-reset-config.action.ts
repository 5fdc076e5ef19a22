/**
 * reset-config writes of the process-level recovery FSM (docs/rules.md#recover.reset-config-writes, docs/formats.md#reset-config): the
 * ClusterD operations `notifyFaultFlushing`, `fault`, `restartAllProcess` and `clear`, as a
 * read-modify-write of `<jobns>/reset-config-<jobName>` with the Go-compatible `reset.json` and
 * `checkCode` (schemas/reset-config). Only a ConfigMap that exists with label `reset=true` is
 * written (the user creates it); keys we do not own (`restartType`, ...) are kept.
 *
 * Like ClusterD (setNewTaskInfo): 3 tries with 0 / 1 / 2 s back-off on write errors — the caller's
 * work queue runs them (RESET_CONFIG_TRIES, recovery-job.ts); here a write that lost to another
 * writer (409) is decided again on the fresher copy at once, up to 3 times — and the write
 * is refused while the device plugin runs a hot reset (a rank with Policy reset/restart). As
 * ClusterD, every operation writes, even one that only moves `UpdateTime` (a clear of a clear
 * reset.json at each registration: a watcher of the mounted file sees it, as with ClusterD; the
 * conformance suite compares it). Unlike ClusterD, a missing ConfigMap is not an error (the job
 * does not use reset-config; TaskD/MindIO recover without it), it is reported as `absent`.
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { isConflict, isNotFound } from '../runtime/kube-client.ts';
import { TerminalError } from '../runtime/reconciler.ts';
import {
  RESET_CONFIG_LABEL_KEY, RESET_CONFIG_LABEL_VALUE, encodeResetConfigData, parseResetConfigData, resetConfigName,
  type TaskResetInfo,
} from '../schemas/reset-config/reset-config.ts';
import { clear, fault, notifyFaultFlushing, restartAllProcess, type ResetWrite } from '../schemas/reset-config/reset-config.transitions.ts';

export type RecoveryResetOp = 'fault' | 'notifyFaultFlushing' | 'restartAllProcess' | 'clear';

export interface RecoveryResetRequest {
  readonly op: RecoveryResetOp;
  readonly rankIds?: readonly number[];
  readonly restartFaultProcess?: boolean;
}

export interface RecoveryResetDeps {
  /** The informer's copy of `ns/name` (reset-config ConfigMaps, label reset=true). */
  readonly cached: (namespace: string, name: string) => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly now: () => number;
}

export type RecoveryResetOutcome = 'written' | 'unchanged' | 'absent';

/** A write ClusterD would refuse too (hot reset running, unreadable reset.json): retrying cannot help. */
export class ResetConfigRefused extends TerminalError {
  override readonly name = 'ResetConfigRefused';
}

/** ClusterD's tries of one write (setNewTaskInfo); spaced 1 s, 2 s by the caller's work queue. */
export const RESET_CONFIG_TRIES = 3;
const CONFLICT_TRIES = 3;

/** The transition for one operation (pure). */
export function nextResetInfo(old: TaskResetInfo, req: RecoveryResetRequest, nowMs: number): ResetWrite {
  const nowS = Math.floor(nowMs / 1000);
  switch (req.op) {
    case 'fault':
      return fault(old, req.rankIds ?? [], req.restartFaultProcess ?? false, nowS);
    case 'notifyFaultFlushing':
      return notifyFaultFlushing(old, nowS);
    case 'restartAllProcess':
      return restartAllProcess(old, nowS);
    case 'clear':
      return clear(old, nowS);
  }
}

async function writeOnce(d: RecoveryResetDeps, namespace: string, jobName: string, req: RecoveryResetRequest): Promise<RecoveryResetOutcome> {
  const name = resetConfigName(jobName);
  const cm = d.writer.fresher(namespace, name, d.cached(namespace, name));
  if (cm === undefined || cm.metadata?.labels?.[RESET_CONFIG_LABEL_KEY] !== RESET_CONFIG_LABEL_VALUE) return 'absent';
  const parsed = parseResetConfigData(cm.data, { verifyCheckCode: false });
  if (!parsed.ok) throw new ResetConfigRefused(`reset-config ${namespace}/${name}: ${parsed.reason}`);
  const next = nextResetInfo(parsed.value.info, req, d.now());
  if (!next.ok) throw new ResetConfigRefused(`reset-config ${namespace}/${name}: ${next.reason}`);
  const data = encodeResetConfigData(next.value, cm.data);
  const res = await d.writer.ensure('reset_config', { namespace, name, data }, cm);
  return res.written ? 'written' : 'unchanged';
}

/**
 * Applies the operation once (a conflict is decided again on the fresher copy, up to 3 times);
 * throws on failure: ResetConfigRefused (a TerminalError) is not worth retrying, other errors are.
 */
export async function writeRecoveryResetConfig(d: RecoveryResetDeps, namespace: string, jobName: string, req: RecoveryResetRequest): Promise<RecoveryResetOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeOnce(d, namespace, jobName, req);
    } catch (e) {
      if (isNotFound(e)) return 'absent';
      if (!isConflict(e) || attempt >= CONFLICT_TRIES) throw e;
    }
  }
}
