/**
 * The job summary of A5 (`huawei.com/npu`) jobs: ClusterD adds the v2 rank list (`version` "2.0",
 * `rank_list`, `rank_count`) to `<ns>/job-summary-<job>` (component/clusterd/pkg/domain/pod/ranktable_v2.go).
 * Two nodes of one super pod whose device plugin reports under `huawei.com/npu`; two Volcano jobs
 * of two rank pods each (2 chips a pod) requesting `huawei.com/npu`. Each pod carries what Volcano's
 * ascend plugin writes on A5 (internal/npu/base/task.go setRealUsedNpuToPod):
 * `ascend.kubectl.kubernetes.io/ascend-npu-configuration` (server_ip, rack_id, server_index, and per
 * device super_device_id and the `levelList` copied from the node's base device info),
 * `huawei.com/npu` / `huawei.com/AscendReal` and `hccl/rankIndex`. Every device offers level 0/1
 * (UB) and both scale-out planes (UBOE at level 2, ROCE at level 3): job `a5-roce` leaves the choice
 * to ClusterD's default priority (RoCE), job `a5-uboe` sets the PodGroup label `scaleout-type: uboe`;
 * one device of `a5-uboe` lacks its UBOE entry (ClusterD fills the CLUSTER1 default). Then a pod
 * fails (the failed form) and `a5-roce` goes (the pre-delete form, still with its v2 table).
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { EXCEPTION_CHECK_MS, type Scenario, type SideContext } from './runner.ts';
import type { Write } from './world.ts';
import { exceptionReported } from './exception-report.ts';

const NS = 'a5';
const NODES = ['node-u0', 'node-u1'] as const;
const CHIPS = [0, 1];
const SUPER_POD = 1;

interface JobSpec { readonly name: string; readonly uid: string; readonly labels: Record<string, string>; readonly firstChip: number }
const JOBS: readonly JobSpec[] = [
  { name: 'a5-roce', uid: 'a5000000-0000-4000-8000-000000000001', labels: {}, firstChip: 0 },
  { name: 'a5-uboe', uid: 'a5000000-0000-4000-8000-000000000002', labels: { 'scaleout-type': 'uboe' }, firstChip: 2 },
];
const owner = (j: JobSpec) => ({ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: j.name, uid: '', controller: true, blockOwnerDeletion: true });
const pgName = (j: JobSpec): string => `${j.name}-${j.uid}`;
const podName = (j: JobSpec, rank: number): string => `${j.name}-worker-${rank}`;
const hostIp = (rank: number): string => `10.5.0.${rank + 1}`;
const owned = (j: JobSpec, collection: string, body: KubeObject): Write => ({ op: 'put', collection, body, ownerFrom: paths.vcJob(NS, j.name) });

const element = (layer: number, instance: string, type: string, addrType: string, addr: string | undefined) => ({
  net_layer: layer, net_instance_id: instance, net_type: type, net_attr: '',
  rank_addr_list: addr === undefined ? null : [{ addr_type: addrType, addr, ports: ['0/1', '0/2'], plane_id: `${instance}-plane` }],
});

/** A device's levelList (api.RankLevel) as the device plugin's base device info carries it. */
function levelList(rank: number, chip: number, withUboe: boolean): object[] {
  const eid = (level: number) => `0000:0000:0000:0000:0000:${SUPER_POD.toString(16)}${level}0${rank}:${chip.toString(16)}000:0001`;
  return [
    { level: 0, info: { UB: element(0, `superpod-${SUPER_POD}`, 'TOPO_FILE_DESC', 'EID', undefined) } },
    { level: 1, info: { UB: element(1, `superpod-${SUPER_POD}`, 'CLOS', 'EID', eid(1)) } },
    { level: 2, info: { ...(withUboe ? { UBOE: element(2, 'uboe-net', 'CLOS', 'IP', `172.20.${rank}.${chip}`) } : {}), UBG: element(2, 'ubg-net', 'CLOS', 'EID', eid(2)) } },
    { level: 3, info: { ROCE: element(3, 'roce-net', 'CLOS', 'IP', `172.30.${rank}.${chip}`) } },
  ];
}

/** Volcano's util.Instance for the pod (the A5 fields included), JSON as it marshals it. */
function npuConfiguration(j: JobSpec, rank: number): string {
  const chips = CHIPS.map((c) => c + j.firstChip);
  return JSON.stringify({
    pod_name: podName(j, rank), server_id: `uid-${j.name}-${rank}`, server_ip: hostIp(rank), host_ip: hostIp(rank), super_pod_id: SUPER_POD, rack_id: 0,
    devices: chips.map((c) => ({
      device_id: String(c), device_ip: '', super_device_id: String(16 * rank + c),
      levelList: levelList(rank, c, !(j.name === 'a5-uboe' && rank === 1 && c === chips[1])),
    })),
    server_index: String(rank),
  });
}

const podGroup = (j: JobSpec): Write => owned(j, paths.podGroups(NS), {
  apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
  metadata: { name: pgName(j), namespace: NS, labels: j.labels, ownerReferences: [owner(j)] },
  spec: { minMember: NODES.length, minResources: { 'huawei.com/npu': String(NODES.length * CHIPS.length) } },
  status: { phase: 'Pending' },
});

function jobObjects(j: JobSpec): Write[] {
  return [
    {
      op: 'put', collection: paths.vcJobs(NS), body: {
        apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: j.name, namespace: NS, labels: j.labels },
        spec: { minAvailable: NODES.length, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: NODES.length }] },
      },
    },
    podGroup(j),
  ];
}

/** The pods as Volcano binds them (annotations written at bind; the PodGroup Running) and kubelet runs them. */
function runningPods(j: JobSpec): Write[] {
  const out: Write[] = [{ op: 'patch', path: paths.podGroup(NS, pgName(j)), type: 'merge', body: { status: { phase: 'Running' } } }];
  for (const [rank, node] of NODES.entries()) {
    const name = podName(j, rank);
    const names = CHIPS.map((c) => `npu-${c + j.firstChip}`).join(',');
    out.push(owned(j, paths.pods(NS), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name, namespace: NS, ownerReferences: [owner(j)],
        labels: { app: j.name, 'volcano.sh/job-name': j.name, 'volcano.sh/task-spec': 'worker', ...j.labels },
        annotations: {
          'scheduling.k8s.io/group-name': pgName(j), 'hccl/rankIndex': String(rank),
          'huawei.com/npu': names, 'huawei.com/AscendReal': names,
          'ascend.kubectl.kubernetes.io/ascend-npu-configuration': npuConfiguration(j, rank),
        },
      },
      spec: {
        nodeName: node, schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
        containers: [{ name: 'train', image: 'training:latest', resources: { requests: { 'huawei.com/npu': String(CHIPS.length) }, limits: { 'huawei.com/npu': String(CHIPS.length) } } }],
      },
    }));
    out.push({ op: 'patch', path: paths.podStatus(NS, name), type: 'merge', body: { status: { phase: 'Running', hostIP: hostIp(rank), podIP: `10.6.${rank}.${j.firstChip + 1}` } } });
  }
  return out;
}

/**
 * Both sides must have written the v2 form, or the comparison would pass on two v1 summaries alike
 * (the ConfigMaps themselves are compared after every step).
 */
async function expectV2(ctx: SideContext): Promise<void> {
  for (const j of JOBS) {
    const cm = await ctx.admin.getOrUndefined<KubeObject & { data?: Record<string, string> }>(paths.configMap(NS, `job-summary-${j.name}`));
    const hccl = cm?.data?.['hccl.json'] ?? '';
    if (!hccl.includes('"version":"2.0"') || !hccl.includes('"rank_list":[')) throw new Error(`${ctx.side}: job-summary-${j.name} has no v2 rank list: ${hccl}`);
  }
}

export const NPU_JOB_SUMMARY: Scenario = {
  name: 'npu-job-summary',
  nodes: NODES.map((name, i) => ({ name, prefix: 'huawei.com/npu' as const, npus: 8, superPodId: SUPER_POD, serverIndex: i })),
  setup: (w, now) => [
    ...NODES.flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]),
    { op: 'put', collection: paths.namespaces(), body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } },
  ],
  // Neither side runs Volcano: clusterd-ts in ClusterD's role (the allow-listed rescheduling flag).
  ourFlags: ['--rescheduling=false'],
  steps: [
    // Each side reports (and clears) the pending PodGroups and the failed pod in scheduling-exception-report
    // on its own 10 s check: those steps wait for both checks.
    { name: 'A5 jobs submitted (PodGroups pending, no pods)', writes: () => JOBS.flatMap(jobObjects), settleMinMs: EXCEPTION_CHECK_MS },
    exceptionReported('the pending jobs', JOBS.map((j) => j.name), 'PodGroupPending'),
    { name: 'A5 pods bound with ascend-npu-configuration (levelList) and running', writes: () => JOBS.flatMap(runningPods), settleMinMs: EXCEPTION_CHECK_MS },
    { name: 'both sides wrote the v2 rank list', perSide: expectV2 },
    { name: 'a5-uboe rank 1 fails', writes: () => [{ op: 'patch', path: paths.podStatus(NS, podName(JOBS[1]!, 1)), type: 'merge', body: { status: { phase: 'Failed' } } }], settleMinMs: EXCEPTION_CHECK_MS },
    // One pod goes first (a step of its own: ClusterD folds the events of one job that come within its
    // 1 s idle sleep, ours does not): the failed form with a one-server table, its two ranks only.
    { name: 'a5-roce rank 1 pod deleted', writes: () => [{ op: 'delete', path: paths.pod(NS, podName(JOBS[0]!, 1)) }] },
    // Pre-delete: the delete form keeps the last rank table, v2 included.
    {
      name: 'a5-roce deleted (its last pod and PodGroup)', writes: () => [
        { op: 'delete', path: paths.pod(NS, podName(JOBS[0]!, 0)) },
        { op: 'delete', path: paths.podGroup(NS, pgName(JOBS[0]!)) },
      ],
    },
  ],
};
