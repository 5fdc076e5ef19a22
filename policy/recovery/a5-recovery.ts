/**
 * A5 (`npu`) jobs before the global-fault notification (docs/rules.md#recover.rack-wait,
 * #recover.force-release-a5), as ClusterD's handleNotifyGlobalFault
 * (component/clusterd/pkg/application/recover/controller.go dealWithRackScheduling, dealWithForceRelease,
 * isA5Job): a job on an A5 node skips the SDID-based force release and its wait for NodeD; one whose
 * PodGroup carries `ra-block` first waits, try by try, for its PodGroup to be Running again.
 */

/** ClusterD's RackBlockSchedulingKey: the PodGroup annotation of rack-affinity scheduling (any value). */
export const RACK_BLOCK_ANNOTATION = 'ra-block';
/** ClusterD's MaxRackReschedulingRetryTimes: waits while the count is not above it (so 4 waits). */
export const MAX_RACK_WAIT_TRIES = 3;
/** ClusterD's RackReschedulingDelayTimeOut (3 s), the wait per try. */
export const RACK_WAIT_MS = 3_000;

/** ClusterD's isA5Job: a pod of the job is on a node whose super-pod device says server type `npu`. */
export function jobOnA5(nodes: readonly string[], isA5Node: (node: string) => boolean): boolean {
  return nodes.some((n) => n !== '' && isA5Node(n));
}

export interface RackWaitInput {
  readonly a5: boolean;
  readonly rackBlock: boolean;
  readonly podGroupRunning: boolean;
  /** Waits already done in this notification. */
  readonly tries: number;
  readonly waitMs: number;
}

export type RackWaitStep =
  | { readonly wait: true; readonly tries: number; readonly reason: string }
  | { readonly wait: false; readonly applies: boolean; readonly reason: string };

/**
 * One look of ClusterD's loop: while the PodGroup is not Running and no more than 3 waits are done,
 * wait 3 s more. ClusterD looks only after each wait, so a PodGroup that turns Running meanwhile
 * still costs the rest of that wait. A wait of 0 ms (flag) skips the loop: its looks would all be
 * at once.
 */
export function rackWaitStep(i: RackWaitInput): RackWaitStep {
  if (!i.a5 || !i.rackBlock) return { wait: false, applies: false, reason: !i.a5 ? 'not an A5 job' : `no ${RACK_BLOCK_ANNOTATION} annotation` };
  if (i.podGroupRunning) return { wait: false, applies: true, reason: `PodGroup Running after ${i.tries} wait(s)` };
  if (i.tries > MAX_RACK_WAIT_TRIES || i.waitMs <= 0) return { wait: false, applies: true, reason: `PodGroup not Running after ${i.tries} wait(s): globalFault goes on` };
  return { wait: true, tries: i.tries + 1, reason: `PodGroup not Running: rack rescheduling wait ${i.tries + 1} (${i.waitMs} ms)` };
}
