/**
 * The job summary of an A5 (`huawei.com/npu`) job on the real apiserver, written by the controller
 * as main.ts builds it: the v2 rank list ClusterD adds for resource type `npu`
 * (docs/formats.md#job-summary; component/clusterd/pkg/domain/pod/ranktable_v2.go), from the
 * `levelList` of each device in `ascend.kubectl.kubernetes.io/ascend-npu-configuration`, with the
 * PodGroup's `scaleout-type` label choosing the scale-out plane.
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { eventually, newNamespace } from '../support/cluster.ts';
import { jobsHarness } from '../support/jobs-support.ts';

interface Level { net_layer: number; net_instance_id: string; rank_addr_list: Array<{ addr: string }> | null }
interface HcclV2 {
  status: string; total: number; version?: string; rank_count?: number;
  server_list: Array<{ pod_name: string; device: Array<Record<string, string>> }>;
  rank_list?: Array<{ rank_id: number; local_id: number; device_id: number; level_list: Level[] }>;
}

const element = (layer: number, instance: string, addr?: string) => ({
  net_layer: layer, net_instance_id: instance, net_type: layer === 0 ? 'TOPO_FILE_DESC' : 'CLOS', net_attr: '',
  rank_addr_list: addr === undefined ? null : [{ addr_type: 'IP', addr, ports: ['0/1'], plane_id: 'p' }],
});

/** Volcano's A5 allocation annotation: devices 4 and 5, each with UB levels 0/1 and both scale-out planes. */
function npuConfiguration(pod: string, rank: number): string {
  return JSON.stringify({
    pod_name: pod, server_id: `uid-${rank}`, server_ip: `10.9.0.${rank}`, host_ip: `10.9.0.${rank}`, super_pod_id: 3, rack_id: 0, server_index: String(rank),
    devices: [4, 5].map((c) => ({
      device_id: String(c), device_ip: '', super_device_id: String(8 * rank + c),
      levelList: [
        { level: 0, info: { UB: element(0, 'superpod-3') } },
        { level: 1, info: { UB: element(1, 'superpod-3', `ub-${rank}-${c}`) } },
        { level: 2, info: { UBOE: element(2, 'uboe-net', `uboe-${rank}-${c}`) } },
        { level: 3, info: { ROCE: element(3, 'roce-net', `roce-${rank}-${c}`) } },
      ],
    })),
  });
}

describe('job-summary of a huawei.com/npu job (v2 rank_list)', () => {
  const h = jobsHarness();
  const admin = h.client;

  it('writes version 2.0, rank_list by rank (UBoE plane by the scaleout-type label) and rank_count; no ring-controller label', async () => {
    const ns = await newNamespace(admin, 'a5js');
    await h.startManager(['--rescheduling=false']);
    const job = await admin.create<KubeObject>(paths.vcJobs(ns), {
      apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: 'a5', namespace: ns },
      spec: { minAvailable: 2, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: 2 }] },
    });
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'a5', uid: job.metadata!.uid!, controller: true };
    const pg = `a5-${job.metadata!.uid!}`;
    await admin.create(paths.podGroups(ns), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: pg, namespace: ns, labels: { 'scaleout-type': 'UBoE' }, ownerReferences: [owner] },
      spec: { minMember: 2, minResources: { 'huawei.com/npu': '4' } },
    });
    // Created rank 1 first: the rank list is ordered by rank, not by pod.
    for (const rank of [1, 0]) {
      const name = `a5-worker-${rank}`;
      await admin.create<KubeObject>(paths.pods(ns), {
        apiVersion: 'v1', kind: 'Pod',
        metadata: {
          name, namespace: ns, ownerReferences: [owner], labels: { 'volcano.sh/job-name': 'a5' },
          annotations: { 'scheduling.k8s.io/group-name': pg, 'hccl/rankIndex': String(rank), 'huawei.com/npu': 'npu-4,npu-5', 'ascend.kubectl.kubernetes.io/ascend-npu-configuration': npuConfiguration(name, rank) },
        },
        spec: { nodeName: `a5-node-${rank}`, schedulerName: 'volcano', containers: [{ name: 'train', image: 'training:latest', resources: { limits: { 'huawei.com/npu': '2' }, requests: { 'huawei.com/npu': '2' } } }] },
      });
      await admin.patch(paths.podStatus(ns, name), { status: { phase: 'Running' } }, 'merge');
    }

    const cm = await eventually(async () => {
      const c = await admin.getOrUndefined<KubeObject & { data?: Record<string, string> }>(paths.configMap(ns, 'job-summary-a5'));
      return c?.data?.job_status === 'running' ? c : undefined;
    }, 20_000);
    expect(cm.metadata?.labels).toEqual({ 'outside-job-info': 'true' });
    const hccl = JSON.parse(cm.data!['hccl.json']!) as HcclV2;
    expect(Object.keys(hccl)).toEqual(['status', 'server_list', 'server_count', 'total', 'version', 'rank_list', 'rank_count']);
    expect([hccl.status, hccl.version, hccl.rank_count]).toEqual(['complete', '2.0', 4]);
    // v1's server_list is unchanged: no levelList there.
    expect(hccl.server_list.flatMap((s) => s.device.map((d) => Object.keys(d)))).toEqual(Array(4).fill(['device_id', 'device_ip', 'rank_id', 'super_device_id']));
    expect(hccl.rank_list!.map((r) => [r.rank_id, r.local_id, r.device_id, r.level_list.map((l) => [l.net_layer, l.rank_addr_list?.[0]?.addr ?? null])])).toEqual([
      [0, 4, 4, [[0, null], [1, 'ub-0-4'], [2, 'uboe-0-4']]],
      [1, 5, 5, [[0, null], [1, 'ub-0-5'], [2, 'uboe-0-5']]],
      [2, 4, 4, [[0, null], [1, 'ub-1-4'], [2, 'uboe-1-4']]],
      [3, 5, 5, [[0, null], [1, 'ub-1-5'], [2, 'uboe-1-5']]],
    ]);
  }, 60_000);
});
