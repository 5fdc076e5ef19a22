/**
 * Sub-health hot switch over gRPC: the job of scenario-process-recovery.ts (two rank pods on node-a
 * and node-b, the real TaskD client) as a PyTorch job whose Job and PodGroup carry
 * `subHealthyStrategy=hotSwitch`, and node-c free for the backup pod. A sub-health chip fault
 * (81A3880C, SubHealthFault) on node-b (rank pod 1) starts ClusterD's hot switch
 * (component/clusterd/pkg/application/recover/hot_switch_controller.go): the `hot switch` signal,
 * then the fault pod annotated `inHotSwitchFlow=true`, `needOperatorOpe=create`. Nobody runs the
 * Ascend Operator or Volcano here, so the scenario plays them: the operator's backup pod
 * `<pod>-hot-0001` (annotations `podType=backup`, `backupSourcePodName`, `inHotSwitchFlow`, the
 * source's rank; the source gets `backupNewPodName`), scheduled on node-c and running (kubelet);
 * ClusterD sends `new pod running`, TaskD reports its strategy (migration), ClusterD marks the old pod
 * `needVolcanoOpe=delete` and labels it `fault-type=SubHealth`; Volcano deletes it; ClusterD sends
 * changeStrategy migration, TaskD reports success and ClusterD clears `inHotSwitchFlow` on the
 * backup pod. The TaskD exchange (grpc-inputs.ts), the pods' annotations and labels, the PodGroup and
 * reset-config are compared after every step.
 *
 * `--rescheduling=false` as in process-recovery (nobody replaces pods).
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import type { Write } from './world.ts';
import { chipFault, deviceAnnotation, exchange, JOB, jobObjects, NS, PG, podIp, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';

const SOURCE = `${JOB}-worker-1`;
const BACKUP = `${SOURCE}-hot-0001`;
const OWNER = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: JOB, uid: '', controller: true, blockOwnerDeletion: true };
const CHIPS = [0, 1];

/** The backup pod as the Ascend Operator creates it from the source pod (name, rank, owner, markers), scheduled on node-c. */
function backupPod(): Write[] {
  return [
    {
      op: 'put', collection: paths.pods(NS), ownerFrom: paths.vcJob(NS, JOB),
      body: {
        apiVersion: 'v1', kind: 'Pod',
        metadata: {
          name: BACKUP, namespace: NS, ownerReferences: [OWNER],
          labels: { app: JOB, 'volcano.sh/job-name': JOB, 'volcano.sh/task-spec': 'worker' },
          annotations: {
            'hccl/rankIndex': '1', 'scheduling.k8s.io/group-name': PG,
            podType: 'backup', backupSourcePodName: SOURCE, inHotSwitchFlow: 'true',
          },
        },
        spec: {
          nodeName: 'node-c', schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
          containers: [{ name: 'train', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': String(CHIPS.length) }, limits: { 'huawei.com/Ascend910': String(CHIPS.length) } } }],
        },
      } as KubeObject,
    },
    // The operator names the backup on its source.
    { op: 'patch', path: paths.pod(NS, SOURCE), type: 'merge', body: { metadata: { annotations: { backupNewPodName: BACKUP } } } },
  ];
}

/** The device plugin allocates node-c's chips, kubelet runs the backup pod. */
function backupRuns(): Write[] {
  const hostIp = '10.0.0.3';
  return [
    {
      op: 'patch', path: paths.pod(NS, BACKUP), type: 'merge',
      body: { metadata: { annotations: { 'huawei.com/AscendReal': CHIPS.map((c) => `Ascend910-${c}`).join(','), 'ascend.kubectl.kubernetes.io/ascend-910-configuration': deviceAnnotation(BACKUP, hostIp) } } },
    },
    { op: 'patch', path: paths.podStatus(NS, BACKUP), type: 'merge', body: { status: { phase: 'Running', hostIP: hostIp, podIP: podIp(2), conditions: [{ type: 'Ready', status: 'True' }] } } },
  ];
}

const signalSeen = (pred: (e: ClientEvent & { event: 'signal' }) => boolean) => (ev: readonly ClientEvent[]): boolean =>
  ev.some((e) => e.event === 'signal' && pred(e as ClientEvent & { event: 'signal' }));
const withAction = (a: string) => signalSeen((e) => e.signalType === 'hot-switch' && (e.actions ?? []).includes(a));

export const HOT_SWITCH: Scenario = {
  name: 'hot-switch',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }, { name: 'node-c' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('recover', {}, { framework: 'pytorch', subHealthyStrategy: 'hotSwitch' })],
  steps: [
    // TaskD answers the hot switch signal with strategy migration (tools/taskd-client -hot-switch-strategies).
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover'], '-hot-switch') },
    { name: 'sub-health fault 81A3880C on node-b chip 0 (rank pod 1)', writes: (w, now) => [chipFault(w, 'node-b', 0, '81A3880C', now)] },
    { name: 'exchange after the sub-health fault (hot switch)', perSide: (ctx) => exchange(ctx, withAction('hot switch'), 60_000) },
    { name: 'the operator creates the backup pod on node-c', writes: () => backupPod() },
    { name: 'the backup pod runs', writes: () => backupRuns() },
    { name: 'exchange after the backup pod runs (new pod running)', perSide: (ctx) => exchange(ctx, withAction('new pod running'), 60_000) },
    // Volcano deletes the pod ClusterD marked needVolcanoOpe=delete.
    { name: 'Volcano deletes the old pod', writes: () => [{ op: 'delete', path: paths.pod(NS, SOURCE) }] },
    { name: 'exchange after the old pod is gone (migration)', perSide: (ctx) => exchange(ctx, signalSeen((e) => e.signalType === 'changeStrategy'), 60_000) },
    { name: 'sub-health fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 0, now)] },
    { name: 'nothing written for 20 s', ms: 20_000 },
  ],
};

/**
 * The hot switch stopped (docs/rules.md#hotswitch.stop-job): as HOT_SWITCH up to `new pod running`,
 * then TaskD answers the pause with strategy `exit` (MindIO could not pause), ClusterD's ExitEvent
 * into NotifyStopJob, the handler its report timeouts also end in (hot_switch_controller.go
 * notifyStopJob, cleanStateWhenFailed): no signal, the rank-0 pod labelled `fault-type=SubHealth` and
 * annotated `needVolcanoOpe=delete`, the hot-switch markers off the fault pod, the backup pod
 * `needOperatorOpe=delete`, reset-config cleared and the stream ended. Nobody plays Volcano here, so
 * the marks are what is compared (the job restart that follows is Volcano's, ours only when it holds
 * the rescheduling role: test/integration/recovery-timeouts-more-real-client.test.ts).
 */
const resubscribedAfterNewPodRunning = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'hot-switch' && (e.actions ?? []).includes('new pod running'));
  return i >= 0 && ev.slice(i).some((e) => e.event === 'subscribe');
};

export const HOT_SWITCH_STOP: Scenario = {
  ...HOT_SWITCH,
  name: 'hot-switch-stop',
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover', '-hot-switch-strategies=exit'], '-hot-switch-stop') },
    ...HOT_SWITCH.steps.slice(1, 5),
    // The pause answered `exit`: the stop job's clean-up ends the stream and TaskD subscribes again.
    { name: 'exchange after the backup pod runs (new pod running, pause answered exit, stream reset)', perSide: (ctx) => exchange(ctx, resubscribedAfterNewPodRunning, 60_000) },
    { name: 'nothing written for 5 s', ms: 5_000 },
  ],
};
