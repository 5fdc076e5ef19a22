/**
 * Carries out the I/O commands of the recovery FSM (policy/recovery/recovery-types.ts) and the hot-switch FSM
 * (policy/recovery/hot-switch-types.ts): reset-config writes, signals, PodGroup and pod metadata, pod
 * deletions, the hand-over to pod/job-level rescheduling, and (option) the operator's backup pods.
 * In-memory commands (timers, step-retry holds, stream close, persistence) are the controller's.
 *
 * A command that fails throws; the controller turns that into `effectResult ok:false` for commands
 * the FSM awaits. Deletions carry UID preconditions and patches a UID precondition, so a replay
 * against a replaced pod changes nothing. `--dry-run`: every Kubernetes write is logged, not made
 * (signals are still sent: a client that connected to us expects them).
 */
import type { ConfigMap, Pod } from '../runtime/kube-objects.ts';
import type { SignalStream } from '../grpc/handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import type { HotSwitchCommand } from '../policy/recovery/hot-switch-types.ts';
import { HOT_SWITCH_ANNOTATION as A } from '../policy/recovery/hot-switch-types.ts';
import { RANK_INDEX_ANNOTATION, parseRankIndex } from '../policy/jobs/job-view.ts';
import type { RecoveryCommand } from '../policy/recovery/recovery-types.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { deleteBackupPod, ensureBackupPod } from './hot-switch-backup.action.ts';
import { deletePods } from './pod-deletion.action.ts';
import { annotationPatch, patchNodeAnnotations, patchPodGroupMeta, patchPodMeta } from './recovery-patch.action.ts';
import { RESET_CONFIG_TRIES, writeRecoveryResetConfig } from './recovery-reset-config.action.ts';
import { SIGNAL_TRIES, sendProcessSignal } from './recovery-signal.action.ts';

/** The job a command is for. */
export interface RecoveryJobTarget {
  /** ClientInfo.jobId: the job UID. */
  readonly jobId: string;
  /** `<ns>/<podGroupName>`. */
  readonly key: string;
  readonly namespace: string;
  /** The job's own name: `reset-config-<jobName>`. */
  readonly jobName: string;
  readonly podGroupName: string;
}

export type IoCommand =
  | Extract<RecoveryCommand, { type: 'writeResetConfig' | 'sendSignal' | 'setPodGroupLabel' | 'setPodGroupAnnotations' | 'labelPods' | 'replaceFaultPods' | 'escalateRescheduling' | 'annotateNodes' }>
  | Extract<HotSwitchCommand, { type: 'writeResetConfig' | 'sendSignal' | 'annotatePod' | 'labelPod' | 'deletePod' | 'escalateRescheduling' }>;

const IO_TYPES: ReadonlySet<string> = new Set([
  'writeResetConfig', 'sendSignal', 'setPodGroupLabel', 'setPodGroupAnnotations', 'labelPods', 'replaceFaultPods',
  'escalateRescheduling', 'annotatePod', 'labelPod', 'deletePod', 'annotateNodes',
]);

/** ClusterD's RetryPatchNodeAnnotation tries (constant.PatchNodeTimes). */
export const NODE_PATCH_TRIES = 3;
export const isIoCommand = (c: RecoveryCommand | HotSwitchCommand): c is IoCommand => IO_TYPES.has(c.type);

export interface RecoveryActionDeps {
  readonly client: KubeClient;
  readonly writer: ConfigMapWriter;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly now: () => number;
  /** Cached reset-config ConfigMap `ns/name`. */
  readonly resetConfig: (namespace: string, name: string) => ConfigMap | undefined;
  /** The job's pods from the informer cache, backups included. */
  readonly jobPods: (job: RecoveryJobTarget) => readonly Pod[];
  readonly stream: (jobId: string) => SignalStream<ProcessManageSignal> | undefined;
  /** We hold Volcano's rescheduling role now (`--rescheduling`, controllers/rescheduling-role.ts): fault pods are deleted here. */
  readonly rescheduling: () => boolean;
  readonly dryRun: boolean;
  /** `--hot-switch-backup-pods`: act as the operator for backup pods. */
  readonly backupPods: boolean;
  /**
   * The pod-/job-level rescheduler takes over (label `pause` is already written): true when a jobs
   * controller re-decides the job itself; false = carry the rescheduling out here.
   */
  readonly handover: (job: RecoveryJobTarget, level: 'pod' | 'job') => boolean;
}

/**
 * How many times a command is tried before its failure reaches the FSM; the caller's work queue
 * spaces the tries (1 s, 2 s: ClusterD's waits for both). A TerminalError is never tried again.
 */
export function ioCommandTries(c: RecoveryCommand | HotSwitchCommand): number {
  switch (c.type) {
    case 'sendSignal': return SIGNAL_TRIES;
    case 'writeResetConfig': return RESET_CONFIG_TRIES;
    case 'annotateNodes': return NODE_PATCH_TRIES;
    default: return 1;
  }
}

const podName = (p: Pod): string => p.metadata?.name ?? '';
const isBackup = (p: Pod): boolean => p.metadata?.annotations?.[A.podType] === 'backup';
const live = (p: Pod): boolean => p.metadata?.deletionTimestamp === undefined;

export class RecoveryActions {
  private readonly d: RecoveryActionDeps;

  constructor(d: RecoveryActionDeps) {
    this.d = d;
  }

  /** Rank pods (not backups, not terminating) holding the given pod ranks. */
  private podsAtRanks(job: RecoveryJobTarget, ranks: readonly number[]): Pod[] {
    return this.d.jobPods(job).filter((p) => live(p) && !isBackup(p) && ranks.includes(parseRankIndex(p.metadata?.annotations?.[RANK_INDEX_ANNOTATION]) ?? -1));
  }

  private podNamed(job: RecoveryJobTarget, name: string): Pod | undefined {
    return this.d.jobPods(job).find((p) => podName(p) === name);
  }

  private dry(what: string, job: RecoveryJobTarget, fields: object): boolean {
    if (this.d.dryRun) this.d.log.info(`dry run: would ${what}`, { job: job.key, ...fields });
    return this.d.dryRun;
  }

  private async forceDelete(job: RecoveryJobTarget, pods: readonly Pod[], why: string): Promise<void> {
    if (pods.length === 0 || this.dry('delete pods', job, { pods: pods.map(podName), why })) return;
    const refs = pods.map((p) => ({ name: podName(p), uid: p.metadata?.uid ?? '' }));
    const s = await deletePods(this.d.client, job.namespace, refs, { force: true, metrics: this.d.metrics });
    this.d.log.info('pods deleted', { job: job.key, why, deleted: s.deleted, gone: [...s.gone, ...s.replaced] });
  }

  /**
   * `originals`: pod rank -> UID of the pods the recovery started with; fault pods that were already
   * replaced (by the rescheduler, before the FSM got here) are not deleted again.
   */
  async run(job: RecoveryJobTarget, c: IoCommand, signal?: AbortSignal, originals?: Readonly<Record<string, string>>): Promise<void> {
    const d = this.d;
    const patch = { client: d.client, metrics: d.metrics };
    switch (c.type) {
      case 'writeResetConfig': {
        if (this.dry('write reset-config', job, { op: c.op })) return;
        const out = await writeRecoveryResetConfig({ cached: d.resetConfig, writer: d.writer, now: d.now },
          job.namespace, job.jobName, { op: c.op, ...(c.rankIds ? { rankIds: c.rankIds } : {}), ...(c.restartFaultProcess !== undefined ? { restartFaultProcess: c.restartFaultProcess } : {}) });
        d.log[out === 'written' ? 'info' : 'debug']('reset-config', { job: job.key, op: c.op, outcome: out, ranks: c.rankIds?.length ?? 0 });
        return;
      }
      case 'sendSignal': {
        const ok = await sendProcessSignal({ stream: () => d.stream(job.jobId), ...(signal ? { signal } : {}) }, c.signal);
        d.log[ok ? 'info' : 'warn'](ok ? 'signal sent' : 'signal not delivered (no open stream, or the write failed)', {
          job: job.key, signalType: c.signal.signalType, actions: c.signal.actions, changeStrategy: c.signal.changeStrategy || undefined,
          faultRanks: c.signal.faultRanks.length, nodeRankIds: c.signal.nodeRankIds, uuid: c.signal.uuid,
        });
        if (!ok) throw new Error(`signal ${c.signal.signalType} not delivered`);
        return;
      }
      case 'setPodGroupLabel':
        if (this.dry('label the PodGroup', job, { [c.key]: c.value })) return;
        await patchPodGroupMeta(patch, job.namespace, job.podGroupName, { labels: { [c.key]: c.value } });
        d.log.info('PodGroup labelled', { job: job.key, [c.key]: c.value });
        return;
      case 'setPodGroupAnnotations':
        if (this.dry('annotate the PodGroup', job, c.annotations)) return;
        await patchPodGroupMeta(patch, job.namespace, job.podGroupName, { annotations: { ...c.annotations } });
        d.log.info('PodGroup annotated', { job: job.key, ...c.annotations });
        return;
      case 'labelPods':
        for (const p of this.podsAtRanks(job, c.podRanks)) {
          if (this.dry('label a pod', job, { pod: podName(p), [c.key]: c.value })) continue;
          await patchPodMeta(patch, job.namespace, { name: podName(p), uid: p.metadata?.uid ?? '' }, { labels: { [c.key]: c.value } });
        }
        return;
      case 'replaceFaultPods':
        // Volcano's part in process mode (docs/rules.md#decision.process-level): only the fault pods go; the job's controller re-creates them.
        if (!d.rescheduling()) return;
        await this.forceDelete(job, this.podsAtRanks(job, c.podRanks).filter((p) => {
          const orig = originals?.[p.metadata?.annotations?.[RANK_INDEX_ANNOTATION] ?? ''];
          return orig === undefined || orig === p.metadata?.uid;
        }), c.reason);
        return;
      case 'escalateRescheduling': {
        const level = c.level;
        if (d.handover(job, level)) {
          d.log.info('rescheduling handed over', { job: job.key, level, reason: c.reason });
          return;
        }
        if (!d.rescheduling()) return; // Volcano reads the `pause` label itself
        const ranks = 'podRanks' in c ? c.podRanks : [];
        const pods = level === 'job' ? d.jobPods(job).filter((p) => live(p) && !isBackup(p)) : this.podsAtRanks(job, ranks);
        await this.forceDelete(job, pods, `${level}-level rescheduling: ${c.reason}`);
        return;
      }
      case 'annotatePod': {
        const pod = this.podNamed(job, c.podName);
        if (pod === undefined || this.dry('annotate a pod', job, { pod: c.podName, set: c.set, remove: c.remove })) return;
        await patchPodMeta(patch, job.namespace, { name: c.podName, uid: pod.metadata?.uid ?? '' }, { annotations: annotationPatch(c.set, c.remove) });
        d.log.info('pod annotated', { job: job.key, pod: c.podName, set: c.set, remove: c.remove });
        if (d.backupPods) await this.operatorReaction(job, pod, c.set);
        return;
      }
      case 'labelPod': {
        const pod = this.podNamed(job, c.podName);
        if (pod === undefined || this.dry('label a pod', job, { pod: c.podName, [c.key]: c.value })) return;
        await patchPodMeta(patch, job.namespace, { name: c.podName, uid: pod.metadata?.uid ?? '' }, { labels: { [c.key]: c.value } });
        return;
      }
      case 'annotateNodes':
        // ClusterD patches each node in turn and only logs a failure.
        if (this.dry('annotate nodes', job, { nodes: c.nodes, annotations: c.annotations })) return;
        for (const node of c.nodes) {
          const r = await patchNodeAnnotations(patch, node, c.annotations);
          d.log.info('node annotated', { job: job.key, node, annotations: c.annotations, result: r });
        }
        return;
      case 'deletePod':
        if (this.dry('delete a pod', job, { pod: c.podName, reason: c.reason })) return;
        await deletePods(d.client, job.namespace, [{ name: c.podName, uid: c.uid }], { force: true, metrics: d.metrics });
        d.log.info('pod deleted', { job: job.key, pod: c.podName, reason: c.reason });
        return;
    }
  }

  /** What the Ascend Operator does on `needOperatorOpe` (docs/rules.md#operator.hot-switch-pods), when we stand in for it. */
  private async operatorReaction(job: RecoveryJobTarget, pod: Pod, set: Readonly<Record<string, string>>): Promise<void> {
    const ope = set[A.needOperatorOpe];
    const bd = { client: this.d.client, metrics: this.d.metrics };
    if (ope === 'create' && !isBackup(pod)) {
      const name = await ensureBackupPod(bd, pod, this.d.jobPods(job));
      this.d.log.info('hot-switch backup pod created', { job: job.key, source: podName(pod), backup: name });
    } else if (ope === 'delete' && isBackup(pod)) {
      await deleteBackupPod(bd, pod);
      this.d.log.info('hot-switch backup pod deleted', { job: job.key, backup: podName(pod) });
    }
  }
}
