/**
 * Sends one ProcessManageSignal on a job's subscription stream as ClusterD does (behavior.md A.9
 * #67, C.1): up to 3 tries, sleeping 1 s and 2 s after the failed ones. A job without an open stream
 * counts as a failed try (the agent may be re-subscribing). The FSM turns the outcome into
 * notifySuccess / notifyFail.
 */
import type { SignalStream } from '../grpc/handlers.ts';
import { processManageSignal } from '../grpc/messages.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';

export const SIGNAL_TRIES = 3;
export const SIGNAL_BACKOFF_MS = [1_000, 2_000] as const;

export interface SignalSendDeps {
  /** The job's current stream (it may change between tries: a re-subscription). */
  readonly stream: () => SignalStream<ProcessManageSignal> | undefined;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Stop retrying (controller stopping, FSM reset). */
  readonly signal?: AbortSignal;
}

/** A fresh copy of a policy signal for the stream, every list present (the FSM keeps its own). */
export const toWireSignal = (s: ProcessManageSignal): ProcessManageSignal =>
  processManageSignal({
    uuid: s.uuid,
    jobId: s.jobId,
    signalType: s.signalType,
    actions: [...s.actions],
    faultRanks: s.faultRanks.map((r) => ({ rankId: r.rankId, faultType: r.faultType })),
    changeStrategy: s.changeStrategy,
    timeout: s.timeout,
    nodeRankIds: [...s.nodeRankIds],
    extraParams: s.extraParams,
  });

/** Resolves true once a try succeeded, false after the last failed one. */
export async function sendProcessSignal(d: SignalSendDeps, signal: ProcessManageSignal): Promise<boolean> {
  const sleep = d.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref()));
  const wire = toWireSignal(signal);
  for (let attempt = 0; attempt < SIGNAL_TRIES; attempt++) {
    if (d.signal?.aborted === true) return false;
    const stream = d.stream();
    if (stream !== undefined && !stream.closed && (await stream.send(wire))) return true;
    const wait = SIGNAL_BACKOFF_MS[attempt];
    if (wait !== undefined) await sleep(wait);
  }
  return false;
}
