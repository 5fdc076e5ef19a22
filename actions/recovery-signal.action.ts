/**
 * Sends one ProcessManageSignal on a job's subscription stream (docs/rules.md#recover.signal-stream, #timing.clusterd): one try
 * per call. ClusterD tries 3 times, sleeping 1 s and 2 s after the failed ones: SIGNAL_TRIES, run by
 * the caller's work queue (recovery-job.ts), whose backoff gives those waits. A job without an open
 * stream counts as a failed try (the agent may be re-subscribing). The FSM turns the outcome into
 * notifySuccess / notifyFail.
 */
import type { SignalStream } from '../grpc/handlers.ts';
import { processManageSignal } from '../grpc/messages.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';

export const SIGNAL_TRIES = 3;

export interface SignalSendDeps {
  /** The job's current stream (it may change between tries: a re-subscription). */
  readonly stream: () => SignalStream<ProcessManageSignal> | undefined;
  /** Do not send (controller stopping, FSM reset). */
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

/** One try: true when the signal was written on the job's open stream. */
export async function sendProcessSignal(d: SignalSendDeps, signal: ProcessManageSignal): Promise<boolean> {
  if (d.signal?.aborted === true) return false;
  const stream = d.stream();
  return stream !== undefined && !stream.closed && (await stream.send(toWireSignal(signal)));
}
