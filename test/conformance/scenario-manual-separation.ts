/**
 * ClusterD's own manual separation (docs/rules.md#manual.increment-faults to #manual.policy-config) against the real thing:
 * - `cluster-system/clusterd-config-cm` overridden before start (`fault_threshold: 2`; the shipped
 *   default is 3, so the second occurrence separating the chip proves the override is read; ClusterD
 *   reads the ConfigMap at start and then every 300 s);
 * - one code occurring twice on a chip a job uses (the device plugin reports it, then reports the chip
 *   healthy, then reports it again: two FaultReceivedTimes), judged hardware 30 s after the first
 *   occurrence, so the chip is ManuallySeparateNPU in cluster-info and listed in
 *   `cluster-system/clusterd-manual-info-cm` (ClusterD writes it on its 15 s loop);
 * - a restart of both controllers (ClusterD reloads the separation from clusterd-manual-info-cm);
 * - the operator's release: the chip deleted from the node's `Total` (the only edit the docs allow),
 *   after which ClusterD deletes the then empty ConfigMap on its next 15 s loop.
 * The job: a Volcano Job, and a PodGroup and a Pod it owns (its real UID), the Pod bound to node-m with the
 * device plugin's annotations for chip 1 (`huawei.com/AscendReal` and
 * `ascend.kubectl.kubernetes.io/ascend-910-configuration`, which is what ClusterD reads).
 */
import { addChipCode, chipName, removeChipCodes } from '../../tools/simulator/npu-state.ts';
import { defaultChipLevel } from '../../tools/simulator/fault-codes.ts';
import { paths } from '../../runtime/kube-client.ts';
import type { Scenario } from './runner.ts';
import { configMap, type World, type Write } from './world.ts';

const NODE = 'node-m';
const NPU = 1;
/** FreeRestartNPU in the device plugin's faultCode.json, no frequency rule of the device plugin's own. */
const CODE = '8C084E00';
const NS = 'team-a';
/** The Volcano Job's reference; the UID is the one each side's apiserver gave the Job (`ownerFrom`). */
const JOB = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'llama', uid: '', controller: true, blockOwnerDeletion: true };

const occur = (w: World, now: number): Write => {
  const s = w.node(NODE);
  addChipCode(s, chipName(s, NPU), 'card', CODE, defaultChipLevel(CODE), now);
  return w.deviceInfo(NODE, now);
};
const recover = (w: World, now: number): Write => {
  const s = w.node(NODE);
  removeChipCodes(s, chipName(s, NPU), 'card');
  return w.deviceInfo(NODE, now);
};

/** The job's PodGroup and its pod on node-m, as Volcano and the device plugin leave them. */
function job(): Write[] {
  const pg = {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: 'llama-pg', namespace: NS, ownerReferences: [JOB] },
    spec: { minMember: 1, queue: 'default' },
  };
  const devices = { pod_name: 'llama-worker-0', server_id: '192.168.0.11', host_ip: '192.168.0.11', super_pod_id: -1, devices: [{ device_id: String(NPU), device_ip: '10.0.0.2' }] };
  const pod = {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: 'llama-worker-0', namespace: NS, ownerReferences: [JOB],
      labels: { 'volcano.sh/job-name': 'llama' },
      annotations: {
        'scheduling.k8s.io/group-name': 'llama-pg',
        'huawei.com/AscendReal': `Ascend910-${NPU}`,
        'huawei.com/Ascend910': `Ascend910-${NPU}`,
        'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify(devices),
      },
    },
    spec: { nodeName: NODE, schedulerName: 'volcano', containers: [{ name: 'main', image: 'busybox', resources: { limits: { 'huawei.com/Ascend910': '1' }, requests: { 'huawei.com/Ascend910': '1' } } }] },
  };
  return [
    { op: 'put', collection: paths.namespaces(), body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } },
    { op: 'put', collection: paths.vcJobs(NS), body: { apiVersion: JOB.apiVersion, kind: 'Job', metadata: { name: JOB.name, namespace: NS }, spec: { minAvailable: 1, schedulerName: 'volcano', tasks: [{ name: 'main', replicas: 1 }] } } },
    { op: 'put', collection: paths.podGroups(NS), body: pg, ownerFrom: paths.vcJob(NS, JOB.name) },
    { op: 'put', collection: paths.pods(NS), body: pod, ownerFrom: paths.vcJob(NS, JOB.name) },
    { op: 'patch', path: paths.podStatus(NS, 'llama-worker-0'), body: { status: { phase: 'Running' } }, type: 'strategic' },
  ];
}

/** `clusterd-config-cm` as an operator overrides it: two occurrences in 24 h separate, never released by time. */
const policyOverride = (): Write => configMap('cluster-system', 'clusterd-config-cm', {
  'manually_separate_policy.conf': 'enabled: true\nseparate:\n  fault_window_hours: 24\n  fault_threshold: 2\nrelease:\n  fault_free_hours: -1\n',
});

/** The operator deletes the chip from `Total` (the Detail entry stays: only Total is read back). */
const operatorRelease = (): Write => ({
  op: 'patch', path: paths.configMap('cluster-system', 'clusterd-manual-info-cm'), type: 'json',
  body: [{ op: 'replace', path: `/data/${NODE}`, value: JSON.stringify({ Total: [], Detail: {} }) }],
});

const FIRST = `${CODE} on ${NODE} chip ${NPU} (job llama), 1st occurrence`;
const RESTART = 'restart both controllers';
const RELEASE = `operator deletes ${NODE} chip ${NPU} from Total in clusterd-manual-info-cm`;

export const MANUAL_SEPARATION: Scenario = {
  name: 'manual-separation',
  nodes: [{ name: NODE, prefix: 'huawei.com/Ascend910' }],
  setup: (w, now) => [...w.createNode(NODE, now), w.deviceInfo(NODE, now), ...job(), policyOverride()],
  // The comparison is with ClusterD alone: rescheduling the job is Volcano's part (allow-list 'rescheduling-outputs').
  // The chip faults and recovers twice within a minute, which flap damping (on by default, a
  // clusterd-ts extension ClusterD lacks) holds Unhealthy in cluster-info for 30 s; the scenario
  // compares ClusterD's manual separation, so damping is off here (its own tests: ops-breaker,
  // filters, fault-view-damping).
  ourFlags: ['--rescheduling=false', '--flap-damping-seconds=0'],
  steps: [
    { name: FIRST, writes: (w, now) => [occur(w, now)] },
    { name: `${CODE} recovered (1)`, writes: (w, now) => [recover(w, now)] },
    { name: `${CODE} on ${NODE} chip ${NPU}, 2nd occurrence`, writes: (w, now) => [occur(w, now)] },
    { name: `${CODE} recovered (2)`, writes: (w, now) => [recover(w, now)] },
    // ClusterD judges a job's faults 30 s after the first (software or hardware), then writes
    // clusterd-manual-info-cm on its 15 s loop.
    { name: 'wait for the 30 s judgement and the 15 s manual-info loop', waitSince: FIRST, ms: 30_000 + 17_000 },
    { name: RESTART, restart: true },
    // ClusterD notices an operator's edit by comparing the ConfigMap with what it last wrote, which it
    // only knows after its first 15 s loop since start: an edit before that is overwritten with its
    // cache (the operator's release is lost). An operator does not edit within 15 s of a restart.
    { name: 'wait for ClusterD\'s first manual-info loop after the restart', waitSince: RESTART, ms: 17_000 },
    { name: RELEASE, writes: () => [operatorRelease()], settleMinMs: 17_000 },
  ],
};
