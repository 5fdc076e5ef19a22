/**
 * Process-level recovery's elastic training (scale-in, then scale-out) over gRPC: the job of
 * scenario-process-recovery.ts (two rank pods, same objects and TaskD client) with
 * `recover-strategy: elastic-training,dump,exit`, and MindIO reporting `downgrade` among its
 * strategies. A chip fault on rank 3 (pod 1): the job has `fault-scheduling=force`, so ClusterD first
 * looks 20 s for the fault pod's replacement (canChooseScaleInStrategy, whetherHasEnoughResource,
 * component/clusterd/pkg/application/recover/controller.go); nobody replaces it, so it sends
 * changeStrategy `downgrade`. MindIO isolates ranks 2 and 3 (ReportRecoverStatus 201 with
 * IsolateRankIds, TaskD's elastic-training plugin), ClusterD sends faultNodesExit
 * (handleCheckScaleStrategyRecoverResult), MindIO reports the scale-in done (downgrade 0) and the
 * job runs on one pod (ScaleRunningState). Then the pod is replaced (deleted, created again with a
 * new UID, running): ClusterD sends changeStrategy `upgrade` (waitScaleOut), MindIO reports it done,
 * ClusterD resets the job's controller (handleFinish) and TaskD subscribes again.
 *
 * Neither side runs Volcano (`--rescheduling=false` as in process-recovery): the test replaces the pod.
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import { chipFault, exchange, JOB, jobObjects, NS, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';
import type { Write } from './world.ts';

const STRATEGIES = 'elastic-training,dump,exit';
const POD = `${JOB}-worker-1`;

/** The signal `pred` came and a ReportRecoverStatus was answered after it. */
const answeredAfter = (pred: (e: ClientEvent) => boolean) => (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && pred(e));
  return i >= 0 && ev.slice(i).some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus');
};
/** The upgrade came, was answered, and the client subscribed again after the reset. */
const scaledOut = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.changeStrategy === 'upgrade');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'subscribe');
};

/** Rank pod 1 as the job's controller creates it again: same objects as at setup, a new UID. */
const podAgain = (): Write[] =>
  jobObjects(STRATEGIES).filter((w) => (w.op === 'put' && w.body.kind === 'Pod' && w.body.metadata?.name === POD) || (w.op === 'patch' && w.path === paths.podStatus(NS, POD)));

export const ELASTIC: Scenario = {
  name: 'elastic',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects(STRATEGIES)],
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=downgrade,dump,exit', '-isolate-ranks=2,3'], '-elastic') },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    // stopTrain, globalFault, the 20 s look for a replacement, downgrade, 201, faultNodesExit, downgrade 0.
    { name: 'exchange until the scale-in is done', perSide: (ctx) => exchange(ctx, answeredAfter((e) => e.signalType === 'faultNodesExit'), 90_000) },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
    { name: 'rank pod 1 deleted', writes: () => [{ op: 'delete', path: paths.pod(NS, POD) }] },
    { name: 'rank pod 1 created again (new UID), running', writes: () => podAgain() },
    { name: 'exchange until the scale-out is done and TaskD subscribed again', perSide: (ctx) => exchange(ctx, scaledOut, 60_000) },
  ],
};

/**
 * The other way into scale-in: `recover-strategy: recover,elastic-training,dump,exit` with
 * `wait-reschedule-timeout: 30`, a chip fault on rank 1, so on the rank-0 pod. `recover` is chosen;
 * MindIO never reports it done (the fault pod is never replaced), and when the schedule wait ends
 * ClusterD scales in (handleDecideRecoverStrategy: NeedTryScaleInStrategyEvent, then
 * handleNotifyScaleInStrategy), asking only whether elastic-training is configured and MindIO
 * reported downgrade, not whether the rank-0 pod is faulty. MindIO isolates ranks 0 and 1, the fault
 * pod's own: faultNodesExit names no pod; the job runs scaled in.
 */
export const SCALE_IN_AFTER_RECOVER: Scenario = {
  name: 'scale-in-after-recover',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [
    ...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]),
    ...jobObjects('recover,elastic-training,dump,exit', { 'wait-reschedule-timeout': '30' }),
  ],
  steps: [
    {
      name: 'TaskD client inits, registers, subscribes',
      perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover,downgrade,dump,exit', '-recover-report=false', '-isolate-ranks=0,1'], '-scale-in-after-recover'),
    },
    { name: 'chip fault 80E18402 on node-a chip 1 (rank 1, the rank-0 pod)', writes: (w, now) => [chipFault(w, 'node-a', 1, '80E18402', now)] },
    // stopTrain, globalFault, changeStrategy recover unanswered, the 30 s schedule wait (ClusterD: up to 35 s), downgrade, 201, faultNodesExit, downgrade 0.
    { name: 'exchange until the scale-in is done', perSide: (ctx) => exchange(ctx, answeredAfter((e) => e.signalType === 'faultNodesExit'), 120_000) },
  ],
};

/**
 * MindIO answers the downgrade with 0 at once, no ranks to isolate. ClusterD's
 * handleCheckScaleStrategyRecoverResult then returns ScaleInSuccessEvent in
 * CheckReportScaleInIsolateRanksState, which has no rule for it: addEvent drops it and the job stays
 * there until the next reset: the stream stays open, reset-config keeps the fault ranks, and a
 * replaced pod brings no scale-out.
 */
export const SCALE_IN_ANSWERED_0: Scenario = {
  name: 'scale-in-answered-0',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects(STRATEGIES)],
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=downgrade,dump,exit'], '-scale-in-answered-0') },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    { name: 'exchange until the downgrade is answered', perSide: (ctx) => exchange(ctx, answeredAfter((e) => e.changeStrategy === 'downgrade'), 90_000) },
    { name: 'rank pod 1 deleted', writes: () => [{ op: 'delete', path: paths.pod(NS, POD) }] },
    { name: 'rank pod 1 created again (new UID), running: no scale-out', writes: () => podAgain() },
  ],
};
