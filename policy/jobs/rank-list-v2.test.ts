import { summaryStep, type SummaryContext, type SummaryPod, type SummaryPodGroup } from './job-summary.ts';
import { hcclSlices, type RankTable } from '../../schemas/job-summary/job-summary.ts';

const UID = 'a5a5a5a5-0000-4000-8000-000000000001';
const ctx: SummaryContext = { nowSec: 100, nodeSn: () => '', snByIp: () => '' };
const pg = (minResources: string[], labels: Record<string, string> = {}): SummaryPodGroup => ({
  name: 'pg', namespace: 'ns', ownerUid: UID, ownerName: 'a5job', ownerKind: 'Job', minMember: 2, labels, annotations: {}, minResources,
});

const el = (layer: number, id: string, type: string, addr?: string) => ({
  net_layer: layer, net_instance_id: id, net_type: type, net_attr: '',
  ...(addr === undefined ? {} : { rank_addr_list: [{ addr_type: 'IP', addr, ports: ['0/1'], plane_id: 'CLUSTER' }] }),
});
/** A device's levelList as Volcano copies it into ascend-npu-configuration (extra keys dropped by Go). */
const levels = (pod: number, chip: number, scaleOut: Record<string, object>) => [
  { level: 0, info: { UB: { ...el(0, 'superpod-1', 'TOPO_FILE_DESC'), extra: 1 } } },
  { level: 1, info: { UB: el(1, 'superpod-1', 'CLOS', `10.1.${pod}.${chip}`) } },
  { level: 2, info: Object.fromEntries(Object.entries(scaleOut).filter(([k]) => k !== 'ROCE')) },
  { level: 3, info: Object.fromEntries(Object.entries(scaleOut).filter(([k]) => k === 'ROCE')) },
];
const pod = (r: number, scaleOut: (chip: number) => Record<string, object>, res = 'huawei.com/npu', anno = 'ascend.kubectl.kubernetes.io/ascend-npu-configuration'): SummaryPod => ({
  name: `w-${r}`, namespace: 'ns', uid: `p${r}`, nodeName: `node-${r}`, phase: 'Running', labels: {},
  annotations: {
    'hccl/rankIndex': String(r),
    [anno]: JSON.stringify({ pod_name: `w-${r}`, server_id: `10.0.0.${r}`, server_ip: `10.0.0.${r}`, host_ip: `10.0.0.${r}`, super_pod_id: 1, rack_id: 0, server_index: String(r), devices: [0, 1].map((c) => ({ device_id: String(c), device_ip: '', super_device_id: String(8 * r + c), levelList: levels(r, c, scaleOut(c)) })) }),
  },
  containers: [{ limits: [res], env: [] }], containerStatuses: [],
});

const hccl = (p: SummaryPodGroup, pods: SummaryPod[]): Record<string, unknown> => {
  const s = summaryStep(undefined, p, pods, ctx)!;
  return JSON.parse(s.writes[0]!.data['hccl.json']!) as Record<string, unknown>;
};
type Rank = { rank_id: number; level_list: Array<{ net_layer: number; net_instance_id: string; rank_addr_list: unknown }> };

describe('v2 rank_list of huawei.com/npu jobs (ranktable_v2.go ConstructRankListV2)', () => {
  const both = (c: number) => ({ ROCE: el(3, 'roce-plane', 'CLOS', `20.0.0.${c}`), UBOE: el(2, 'uboe-plane', 'CLOS', `30.0.0.${c}`) });

  it('golden hccl.json: version, rank_list by rank id (level 0/1 + RoCE by default priority), rank_count after server_list', () => {
    const s = summaryStep(undefined, pg(['huawei.com/npu']), [pod(1, both), pod(0, both)], ctx)!;
    const text = s.writes[0]!.data['hccl.json']!;
    const rank = (id: number, chip: number, pod: number) => `{"rank_id":${id},"local_id":${chip},"device_id":${chip},"level_list":[` +
      '{"net_layer":0,"net_instance_id":"superpod-1","net_type":"TOPO_FILE_DESC","net_attr":"","rank_addr_list":null},' +
      `{"net_layer":1,"net_instance_id":"superpod-1","net_type":"CLOS","net_attr":"","rank_addr_list":[{"addr_type":"IP","addr":"10.1.${pod}.${chip}","ports":["0/1"],"plane_id":"CLUSTER"}]},` +
      `{"net_layer":3,"net_instance_id":"roce-plane","net_type":"CLOS","net_attr":"","rank_addr_list":[{"addr_type":"IP","addr":"20.0.0.${chip}","ports":["0/1"],"plane_id":"CLUSTER"}]}]}`;
    expect(text.endsWith(`"server_count":"2","total":1,"version":"2.0","rank_list":[${rank(0, 0, 0)},${rank(1, 1, 0)},${rank(2, 0, 1)},${rank(3, 1, 1)}],"rank_count":4}`)).toBe(true);
    // v1's device entries never carry levelList.
    expect(text).not.toContain('levelList');
    expect(s.next.rankTable.rankCount).toBe(4);
  });

  it('scaleout-type UBoE selects level 2 (UBOE over UBG); a missing element is the CLUSTER1 default', () => {
    const t = hccl(pg(['huawei.com/npu'], { 'scaleout-type': ' uboe ' }), [pod(0, (c) => (c === 0 ? both(c) : { ROCE: el(3, 'r', 'CLOS') , UBG: el(2, 'ubg', 'CLOS') })), pod(1, both)]);
    const ranks = t.rank_list as Rank[];
    expect(ranks.map((r) => r.level_list.map((l) => [l.net_layer, l.net_instance_id]))).toEqual([
      [[0, 'superpod-1'], [1, 'superpod-1'], [2, 'uboe-plane']],
      [[0, 'superpod-1'], [1, 'superpod-1'], [2, 'CLUSTER1']],
      [[0, 'superpod-1'], [1, 'superpod-1'], [2, 'uboe-plane']],
      [[0, 'superpod-1'], [1, 'superpod-1'], [2, 'uboe-plane']],
    ]);
    expect(ranks[1]!.level_list[2]!.rank_addr_list).toEqual([]);
  });

  it('no scale-out port type at all: both levels 2 and 3 dropped; an invalid label keeps neither', () => {
    const none = () => ({});
    expect((hccl(pg(['huawei.com/npu']), [pod(0, none), pod(1, none)]).rank_list as Rank[])[0]!.level_list.map((l) => l.net_layer)).toEqual([0, 1]);
    expect((hccl(pg(['huawei.com/npu'], { 'scaleout-type': 'ib' }), [pod(0, both), pod(1, both)]).rank_list as Rank[])[0]!.level_list.map((l) => l.net_layer)).toEqual([0, 1]);
  });

  it('only npu jobs: an Ascend910 job with the same devices stays v1', () => {
    const t = hccl(pg(['huawei.com/Ascend910']), [0, 1].map((r) => pod(r, both, 'huawei.com/Ascend910', 'ascend.kubectl.kubernetes.io/ascend-910-configuration')));
    expect(Object.keys(t)).toEqual(['status', 'server_list', 'server_count', 'total']);
  });

  it('a device id that is no integer: its server entry stays, it has no rank, and slices cap at the rank list\'s end (computeRankEnd)', () => {
    const bad = pod(0, both);
    const text = bad.annotations['ascend.kubectl.kubernetes.io/ascend-npu-configuration']!.replace('"device_id":"1"', '"device_id":"x1"');
    const s = summaryStep(undefined, pg(['huawei.com/npu']), [{ ...bad, annotations: { ...bad.annotations, 'ascend.kubectl.kubernetes.io/ascend-npu-configuration': text } }, pod(1, both)], ctx)!;
    const table: RankTable = s.next.rankTable;
    expect([table.rankCount, table.ranks!.map((r) => r.rankId)]).toEqual([3, [0, 2, 3]]);
    const one = hcclSlices({ ...table, servers: table.servers!.slice(0, 1) })[0]!.length;
    // Slice 0's two devices take ranks 0 and 2 (by position, as ClusterD): slice 1 gets the rest.
    const parts = hcclSlices(table, one + 5).map((x) => JSON.parse(x) as { rank_list: Rank[]; server_list: unknown[] });
    expect(parts.map((p) => [p.server_list.length, p.rank_list.map((r) => r.rank_id)])).toEqual([[1, [0, 2]], [1, [3]]]);
  });

  it('slices keep each slice\'s rank_list aligned with its servers, rank_count the job\'s', () => {
    const s = summaryStep(undefined, pg(['huawei.com/npu']), [pod(0, both), pod(1, both)], ctx)!;
    const table: RankTable = s.next.rankTable;
    const one = hcclSlices({ ...table, servers: table.servers!.slice(0, 1) })[0]!.length;
    const parts = hcclSlices(table, one + 5).map((x) => JSON.parse(x) as { total: number; rank_count: number; rank_list: Rank[]; server_list: Array<{ pod_name: string }> });
    expect(parts.map((p) => [p.total, p.rank_count, p.server_list.map((x) => x.pod_name), p.rank_list.map((r) => r.rank_id)]))
      .toEqual([[2, 4, ['w-0'], [0, 1]], [2, 4, ['w-1'], [2, 3]]]);
  });
});
