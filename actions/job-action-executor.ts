/**
 * Carries out a job decision's actions, in order (policy/jobs/job-decision-types.ts JobAction). Every
 * action is safe to run twice: deletions carry UID preconditions, annotations a UID precondition,
 * reset-config changes are absolute values, reason records are skipped on a replay when already
 * written. Nobody waits for the reason record (ExecSummary.recording): the caller holds the decision's
 * journal clear until it landed. The controller persists the decision before calling `run`, and calls
 * it again after a crash (`replay: true`), so a decision is carried out at least once and its effects exactly once.
 *
 * Hand-offs to the process-level and hot-switch FSMs go to the recovery controller's sink, awaited:
 * a fault pod is deleted only after its FSM sent (or skipped) the preExitProcess.
 * `hooks.beforeAction` lets a test make an action fail or hang (e.g. "killed between decision and
 * deletion"); it gets the reconcile's abort signal.
 */
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { ExecAction, PendingDecision } from '../schemas/job-state/job-state.ts';
import type { RescheduleTaskReason } from '../schemas/job-reschedule-reason/job-reschedule-reason.ts';
import { reconcileResetConfig, type ResetConfigDeps } from './job-reset-config.action.ts';
import { deletePods, type PodDeleteSummary } from './pod-deletion.action.ts';
import { annotatePodStatus } from './pod-annotation.action.ts';

export interface JobActionHooks {
  /** Runs before each action; may throw (the action fails) or wait (on `signal`). Tests only. */
  beforeAction?(action: ExecAction, ctx: { readonly jobKey: string; readonly signal: AbortSignal }): Promise<void>;
}

/**
 * Takes a decision's hand-off to the job's FSMs. Resolves once the FSM did what must precede the
 * decision's next actions (the preExitProcess to the original fault pods before they are deleted).
 */
export type HandOffSink = (jobKey: string, action: Extract<ExecAction, { type: 'handOffProcessRecovery' | 'handOffHotSwitch' }>, signal: AbortSignal) => Promise<void>;

export interface JobTarget {
  readonly key: string;
  readonly namespace: string;
  /** The job's own name (reset-config-<name>). */
  readonly name: string;
  readonly uid: string;
}

/** A restart's record for `job-reschedule-reason` (`replay`: the decision is carried out again after a crash). */
export interface PendingRecord {
  readonly jobKey: string;
  readonly jobUid: string;
  readonly atMs: number;
  readonly tasks: readonly RescheduleTaskReason[];
  readonly replay: boolean;
}

/**
 * Where `recordRescheduleReason` goes: RescheduleReasonStore (reconcilers/job-reschedule-reason),
 * declared here so actions/ need not import reconcilers/. Resolves true when the record landed.
 */
export interface RescheduleReasonSink {
  add(rec: PendingRecord): Promise<boolean>;
}

export interface ExecutorDeps {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly reasons: RescheduleReasonSink;
  readonly resetConfig: ResetConfigDeps;
  readonly hooks?: JobActionHooks;
  readonly handOff: HandOffSink;
}

export interface ExecSummary {
  readonly deleted: readonly string[];
  readonly alreadyGone: readonly string[];
  readonly annotated: number;
  /**
   * The decision's reason record, not waited for (it is in the write-ahead; the reasons store spaces
   * its writes): resolves once it landed (true: added now, false: a replay found it there), rejects
   * if its write failed. The caller holds the decision's journal clear until then, so a crash or a
   * failed write replays the decision.
   */
  readonly recording?: Promise<boolean>;
  /** Wall ms from the start of `run` to the answer of the last pod DELETE (undefined: none sent); latency breakdown. */
  readonly deletesDoneMs?: number;
}

export class JobActionExecutor {
  private readonly d: ExecutorDeps;

  constructor(d: ExecutorDeps) {
    this.d = d;
  }

  async run(job: JobTarget, p: PendingDecision, opts: { readonly replay: boolean; readonly signal: AbortSignal }): Promise<ExecSummary> {
    const deleted: string[] = [];
    const alreadyGone: string[] = [];
    let annotated = 0;
    let recording: Promise<boolean> | undefined;
    let reason = '';
    const t0 = performance.now();
    let deletesDoneMs: number | undefined;
    for (const a of p.actions) {
      if (opts.signal.aborted) throw new Error('controller stopping; decision left pending');
      await this.d.hooks?.beforeAction?.(a, { jobKey: job.key, signal: opts.signal });
      switch (a.type) {
        case 'evictPods':
        case 'forceDeletePods': {
          const s: PodDeleteSummary = await deletePods(this.d.client, job.namespace, a.pods, { force: a.type === 'forceDeletePods', metrics: this.d.metrics, signal: opts.signal });
          deleted.push(...s.deleted);
          alreadyGone.push(...s.gone, ...s.replaced);
          reason ||= a.reasons[0]?.faultType ?? '';
          deletesDoneMs = performance.now() - t0;
          break;
        }
        case 'annotatePodStatus':
          if ((await annotatePodStatus(this.d.client, job.namespace, a.pod, a.value, { metrics: this.d.metrics })) === 'annotated') annotated++;
          break;
        case 'setGracefulExit':
          await reconcileResetConfig(this.d.resetConfig, job.namespace, job.name, { type: 'gracefulExit', value: a.value });
          break;
        case 'podRescheduledResetConfig':
          await reconcileResetConfig(this.d.resetConfig, job.namespace, job.name, { type: 'podRescheduled', retryTime: a.retryTime, updateTimeS: a.updateTimeS });
          break;
        case 'recordRescheduleReason': {
          const added = this.d.reasons.add({ jobKey: job.key, jobUid: job.uid, atMs: a.atMs, tasks: a.tasks, replay: opts.replay });
          recording = recording === undefined ? added : Promise.all([recording, added]).then(([x, y]) => x || y);
          recording.catch(() => undefined); // handled by the caller, possibly after it rejected
          break;
        }
        case 'handOffProcessRecovery':
        case 'handOffHotSwitch':
          await this.d.handOff(job.key, a, opts.signal);
          break;
      }
    }
    // A replay that finds the pods gone and adds the reason record finishes a restart whose
    // deletions went through in an attempt that died before it could count them (its apiserver
    // crashed mid-request): that restart is counted once its record was added, with it.
    const deletedNow = deleted.length > 0;
    if (deletedNow || (opts.replay && alreadyGone.length > 0)) {
      const action = p.actions.some((a) => a.type === 'forceDeletePods') ? 'force_delete_pods' : 'evict_pods';
      if (p.faultSinceMs > 0 && deletedNow) this.d.metrics.faultToAction.observe({ action }, Math.max(0, this.d.now() - p.faultSinceMs) / 1000);
      const count = (): void => this.d.metrics.countReschedule(job.namespace, reason || 'unknown');
      // Counted once the record landed; if its write fails, the replay that adds the record counts
      // the restart (above), so it is counted once.
      if (recording === undefined) { if (deletedNow) count(); } else recording.then((added) => { if (deletedNow || added) count(); }, () => undefined);
    }
    return { deleted, alreadyGone, annotated, ...(recording === undefined ? {} : { recording }), ...(deletesDoneMs === undefined ? {} : { deletesDoneMs }) };
  }
}
