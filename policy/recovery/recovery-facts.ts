/**
 * Read-only facts the recovery FSM derives from its state (fault pods, original pods, rescheduling
 * progress, recover-in-place plan) and the small write helpers every handler uses.
 */
import { awaitAll, emit, startTimer, type StepCtx } from './recovery-kit.ts';
import {
  buildSignal,
  expandToPods,
  isRetryType,
  podOf,
  podsOf,
  type RankFault,
  type SignalParts,
  type SignalType,
} from './recovery-signals.ts';
import type {
  RecoveryCommandBody,
  RecoveryContinuation,
  RecoveryFsmEvent,
  RecoveryNext,
  RecoveryState,
  RecoveryTimerId,
} from './recovery-types.ts';

export type Ctx = StepCtx<RecoveryState, RecoveryCommandBody>;

/** A handler failed in a way ClusterD treats as a handler error: the controller resets. */
export class RecoveryHandlerError extends Error {}

export const cmd = (ctx: Ctx, body: RecoveryCommandBody, awaitResult = false): number => emit(ctx, body, awaitResult);

export const timer = (ctx: Ctx, id: RecoveryTimerId, afterMs: number): void => startTimer(ctx, id, afterMs);

export const waitFor = (ctx: Ctx, ids: number[], ok: RecoveryNext, fail: RecoveryNext | null): void =>
  awaitAll(ctx, ids, ok, fail);

/**
 * Sends a signal. With `next` the FSM waits for the send result (e.g. notifySuccess / notifyFail);
 * with 'await' the result is wanted but the caller sets up the wait (several commands at once).
 */
export function send(ctx: Ctx, type: SignalType, parts: SignalParts, next?: { ok: RecoveryNext; fail: RecoveryNext | null } | 'await'): number {
  const id = cmd(ctx, { type: 'sendSignal', signal: buildSignal(ctx.s.config.jobId, ctx.s.uuid, type, parts) }, next !== undefined);
  if (next !== undefined && next !== 'await') waitFor(ctx, [id], next.ok, next.fail);
  return id;
}

export const ev = (e: RecoveryFsmEvent): RecoveryNext => ({ ev: e });
export const cont = (c: RecoveryContinuation): RecoveryNext => ({ cont: c });

export const allFaults = (s: RecoveryState): RankFault[] => s.faults.map((f) => ({ rankId: f.rankId, faultType: f.faultType }));
export const retryFaults = (s: RecoveryState): RankFault[] => allFaults(s).filter((f) => isRetryType(f.faultType));
export const normalFaults = (s: RecoveryState): RankFault[] => allFaults(s).filter((f) => !isRetryType(f.faultType));
export const hasNormalFaults = (s: RecoveryState): boolean => s.faults.some((f) => !isRetryType(f.faultType));

/** Pod ranks holding a cached fault. */
export const faultPods = (s: RecoveryState): number[] => podsOf(s.faults.map((f) => f.rankId), s.config.ranksPerPod);

/** Pods that must be replaced: all fault pods, or only the exit pods of a recover-in-place plan. */
export const exitPods = (s: RecoveryState): number[] => s.inPlace?.exitPods ?? faultPods(s);

export const podAt = (s: RecoveryState, podRank: number) => s.pods.find((p) => p.podRank === podRank);

/** The pod at this rank is still the one seen at the last reset. */
export function isOriginal(s: RecoveryState, podRank: number): boolean {
  const pod = podAt(s, podRank);
  const orig = s.originalPodUids[String(podRank)];
  return pod !== undefined && (orig === undefined || orig === pod.uid);
}

export const originalOnly = (s: RecoveryState, podRanks: readonly number[]): number[] => podRanks.filter((p) => isOriginal(s, p));

/** A new pod (new UID) holds this rank and has NPUs allocated. */
export function replaced(s: RecoveryState, podRank: number): boolean {
  const pod = podAt(s, podRank);
  const orig = s.originalPodUids[String(podRank)];
  return pod !== undefined && orig !== undefined && pod.uid !== orig && pod.npusAllocated && pod.phase !== 'Failed';
}

export const pgRunning = (s: RecoveryState): boolean => s.podGroup.exists && s.podGroup.phase === 'Running';

/** PodGroup Running and every given pod replaced (the "listen schedule result" condition, docs/rules.md#recover.fsm note). */
export const rescheduled = (s: RecoveryState, podRanks: readonly number[]): boolean =>
  pgRunning(s) && podRanks.every((p) => replaced(s, p));

export const rank0PodFaulty = (s: RecoveryState): boolean => s.faults.some((f) => podOf(f.rankId, s.config.ranksPerPod) === 0);

/** Node-expanded fault list (docs/rules.md#recover.node-expansion); pods restarting in place keep only their own ranks. */
export const expandedFaults = (s: RecoveryState): RankFault[] =>
  expandToPods(s.retryPath ? retryFaults(s) : allFaults(s), s.config.ranksPerPod, s.inPlace?.restartPods ?? []);

/**
 * Recover-in-place plan (docs/rules.md#recover.in-place): a pod may restart in place when each of its faults is a software
 * fault or a hardware fault flagged DoRestartInPlace; never when all faults are software faults on
 * more than one pod. Null when recover-in-place is not configured.
 */
export function planInPlace(s: RecoveryState): { restartPods: number[]; exitPods: number[] } | null {
  if (!s.config.strategies.includes('recover-in-place')) return null;
  const pods = faultPods(s);
  const onPod = (p: number) => s.faults.filter((f) => podOf(f.rankId, s.config.ranksPerPod) === p);
  const allSoftware = s.faults.every((f) => f.software);
  const restartPods = allSoftware && pods.length > 1 ? [] : pods.filter((p) => onPod(p).every((f) => f.software || f.restartInPlace));
  return { restartPods, exitPods: pods.filter((p) => !restartPods.includes(p)) };
}

/**
 * Adopts a recover-in-place plan; pods new on its exit list are stamped in `mustExitAtMs` (the
 * job's "must exit" report the recover-in-place filter reads, docs/rules.md#filter.recover-in-place).
 */
export function setInPlacePlan(ctx: Ctx, plan: { restartPods: number[]; exitPods: number[] } | null): void {
  const s = ctx.s;
  const before = s.inPlace?.exitPods ?? [];
  s.inPlace = plan;
  const added = (plan?.exitPods ?? []).filter((p) => !before.includes(p));
  if (added.length === 0) return;
  s.mustExitAtMs = { ...s.mustExitAtMs, ...Object.fromEntries(added.map((p) => [String(p), ctx.now])) };
  ctx.why.push(`recover-in-place: pods ${added.join(',')} must exit`);
}

/** Hardware in-place ranks still present in the latest fault feed. */
export function lingeringInPlaceRanks(s: RecoveryState): number[] {
  const restart = s.inPlace?.restartPods ?? [];
  const hw = s.faults.filter((f) => !f.software && f.restartInPlace && restart.includes(podOf(f.rankId, s.config.ranksPerPod)));
  return hw.filter((f) => s.lastFeed.some((o) => o.rankId === f.rankId)).map((f) => f.rankId);
}

/** Asks for replacement of exit pods not asked for yet in this recovery (idempotent). */
export function requestReplacement(ctx: Ctx, reason: string): void {
  const todo = exitPods(ctx.s).filter((p) => !ctx.s.replacementRequested.includes(p));
  if (todo.length === 0) return;
  ctx.s.replacementRequested = [...ctx.s.replacementRequested, ...todo].sort((a, b) => a - b);
  cmd(ctx, { type: 'replaceFaultPods', podRanks: todo, reason });
}

/** Stops holding step-retry faults back from rescheduling; `completed` when the step retry succeeded. */
export function releaseRetryHold(ctx: Ctx, completed = false): void {
  if (ctx.s.retryHeld.length === 0) return;
  cmd(ctx, { type: 'setStepRetryHold', rankIds: ctx.s.retryHeld, hold: false, completed });
  ctx.s.retryHeld = [];
}

/** Retry faults become normal faults (405/406 answers, agent without `retry`). */
export function convertRetryFaults(ctx: Ctx, why: string): void {
  ctx.s.faults = ctx.s.faults.map((f) => (isRetryType(f.faultType) ? { ...f, faultType: '1' } : f));
  ctx.s.retryPath = false;
  releaseRetryHold(ctx);
  ctx.why.push(`retry faults become normal faults: ${why}`);
}

export const annotateStatus = (ctx: Ctx, value: string): void => {
  cmd(ctx, { type: 'setPodGroupAnnotations', annotations: { ProcessRecoverStatus: value } });
};

/** AI platform mode (docs/rules.md#recover.platform-mode). */
export const platformOn = (s: RecoveryState): boolean => s.config.platformMode === true;

/** ClusterD's ProcessControlTimeout (timings stored before it existed: 300 s). */
export const platformMs = (s: RecoveryState): number => s.timings.processControlMs ?? 300_000;
