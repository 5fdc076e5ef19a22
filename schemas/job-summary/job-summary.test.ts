import { DEFAULT_HCCL_JSON, addData, deleteData, encodeRankTable, hcclSlices, jobSummaryCmName, jobSummaryLabels, pendingData, type HcclServer, type RankTable } from './job-summary.ts';
import { summaryPods, summaryStep, type JobSummaryState, type SummaryContext, type SummaryPod, type SummaryPodGroup } from '../../policy/jobs/job-summary.ts';

const server = (i: number, over: Partial<HcclServer> = {}): HcclServer => ({
  devices: [{ deviceId: '0', deviceIp: `192.168.${i}.0`, rankId: String(2 * i) }, { deviceId: '1', deviceIp: `192.168.${i}.1`, rankId: String(2 * i + 1) }],
  serverId: `10.0.0.${i}`, hostIp: `10.0.0.${i}`, superPodId: 0, serverName: `node-${i}`, serverSn: '', podName: `job-worker-${i}`, containerIds: {}, ...over,
});

describe('job-summary hccl.json (json.Marshal of ClusterD constant.RankTable)', () => {
  it('golden bytes: Go field order and tags, server_count a string, container_ids a sorted Go map, omitempty super_device_id, HTML escaping', () => {
    const t: RankTable = {
      status: 'complete', serverCount: '2', total: 1,
      servers: [server(1), server(2, { containerIds: { worker: 'containerd://b', main: 'containerd://a<&>' }, devices: [{ deviceId: '3', deviceIp: '', rankId: '2', superDeviceId: '7' }] })],
    };
    expect(encodeRankTable(t)).toBe(
      '{"status":"complete","server_list":[' +
      '{"device":[{"device_id":"0","device_ip":"192.168.1.0","rank_id":"2"},{"device_id":"1","device_ip":"192.168.1.1","rank_id":"3"}],"server_id":"10.0.0.1","host_ip":"10.0.0.1","super_pod_id":0,"server_name":"node-1","server_sn":"","pod_name":"job-worker-1","container_ids":{}},' +
      '{"device":[{"device_id":"3","device_ip":"","rank_id":"2","super_device_id":"7"}],"server_id":"10.0.0.2","host_ip":"10.0.0.2","super_pod_id":0,"server_name":"node-2","server_sn":"","pod_name":"job-worker-2","container_ids":{"main":"containerd://a\\u003c\\u0026\\u003e","worker":"containerd://b"}}' +
      '],"server_count":"2","total":1}',
    );
    // The zero RankTable of a pending job: nil slice, empty strings.
    expect(encodeRankTable({ status: '', servers: null, serverCount: '', total: 0 })).toBe('{"status":"","server_list":null,"server_count":"","total":0}');
  });

  it('slices by servers under the byte cap, each slice with the full server_count and total = slice count; none without servers', () => {
    const t: RankTable = { status: 'complete', servers: [server(1), server(2), server(3)], serverCount: '3', total: 0 };
    const one = encodeRankTable({ ...t, servers: [server(1)], total: 0 }).length;
    const slices = hcclSlices(t, one + 5); // room for one server per slice
    expect(slices).toHaveLength(3);
    expect(slices.map((s) => JSON.parse(s) as { total: number; server_count: string; server_list: Array<{ server_name: string }> }).map((s) => [s.total, s.server_count, s.server_list.map((x) => x.server_name)]))
      .toEqual([[3, '3', ['node-1']], [3, '3', ['node-2']], [3, '3', ['node-3']]]);
    expect(hcclSlices(t)).toEqual([encodeRankTable({ ...t, total: 1 })]);
    expect(hcclSlices(t, 10)).toHaveLength(3); // a server larger than the cap is a slice of its own
    expect(hcclSlices({ ...t, servers: [] })).toEqual([]);
    expect(jobSummaryCmName('llama', 0)).toBe('job-summary-llama');
    expect(jobSummaryCmName('llama', 2)).toBe('job-summary-llama-2');
  });

  it('labels: ring-controller.atlas unless the resource type is npu', () => {
    expect(jobSummaryLabels('Ascend910')).toEqual({ 'ring-controller.atlas': 'ascend-910', 'outside-job-info': 'true' });
    expect(jobSummaryLabels('')).toEqual({ 'ring-controller.atlas': 'ascend-910', 'outside-job-info': 'true' });
    expect(jobSummaryLabels('npu')).toEqual({ 'outside-job-info': 'true' });
  });

  it('data keys of the pending, add and delete forms (initCM, updateCM, preDeleteCM)', () => {
    const j = { name: 'llama', framework: 'pytorch', key: 'uid-1', status: 'failed' as const, addTimeSec: 1_790_000_000, sid: 'uid-1', totalCmNum: 1, sharedTorIp: '', masterAddr: '10.0.0.1' };
    expect(pendingData({ ...j, status: 'pending' })).toEqual({ job_name: 'llama', framework: 'pytorch', job_id: 'uid-1', job_status: 'pending', cm_index: '0', total: '1', 'hccl.json': DEFAULT_HCCL_JSON, operator: 'add', time: '1790000000', sid: 'uid-1' });
    expect(addData(j, 0, 'H', 1_790_000_100)).toEqual({ sharedTorIp: '', masterAddr: '10.0.0.1', job_name: 'llama', framework: 'pytorch', job_id: 'uid-1', job_status: 'failed', time: '1790000000', operator: 'add', cm_index: '0', total: '1', 'hccl.json': 'H', sid: 'uid-1', deleteTime: '1790000100' });
    expect(Object.keys(addData({ ...j, framework: '', status: 'running' }, 0, '', 0)).sort()).toEqual(['cm_index', 'framework', 'hccl.json', 'job_id', 'job_name', 'job_status', 'operator', 'sid', 'time', 'total']);
    expect(deleteData({ ...j, framework: 'mindspore' }, 0, DEFAULT_HCCL_JSON, 1_790_000_200)).toEqual({ job_name: 'llama', framework: 'mindspore', job_status: 'failed', job_id: 'uid-1', sid: 'uid-1', 'hccl.json': DEFAULT_HCCL_JSON, operator: 'delete', deleteTime: '1790000200', total: '1', time: '1790000000', cm_index: '0' });
  });
});

describe('job-summary state machine (ClusterD jobv2 updateJob)', () => {
  const UID = '7c1d2e3f-0a1b-4c5d-8e9f-0123456789ab';
  const pg: SummaryPodGroup = { name: `job-${UID}`, namespace: 'ns', ownerUid: UID, ownerName: 'job', ownerKind: 'Job', minMember: 2, labels: {}, annotations: {}, minResources: ['huawei.com/Ascend910'] };
  const pod = (r: number, over: Partial<SummaryPod> = {}): SummaryPod => ({
    name: `job-worker-${r}`, namespace: 'ns', uid: `p${r}`, nodeName: `node-${r + 1}`, phase: 'Running', labels: { app: 'mindspore' },
    annotations: { 'hccl/rankIndex': String(r), 'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({ pod_name: `job-worker-${r}`, server_id: `10.0.0.${r + 1}`, host_ip: `10.0.0.${r + 1}`, devices: [{ device_id: '0', device_ip: `192.168.${r + 1}.0` }, { device_id: '1', device_ip: `192.168.${r + 1}.1` }] }) },
    containers: [{ limits: ['huawei.com/Ascend910'], env: [] }], containerStatuses: [], ...over,
  });
  const ctx = (nowSec: number): SummaryContext => ({ nowSec, nodeSn: (n) => (n === 'node-1' ? 'SN1' : ''), snByIp: () => '' });

  it('pending -> running (rank table complete, framework from the pods\' app label) -> unchanged -> failed -> pre-delete', () => {
    const s1 = summaryStep(undefined, pg, [], ctx(100))!;
    expect(s1.next.status).toBe('pending');
    expect(s1.writes).toEqual([{ index: 0, data: expect.objectContaining({ job_status: 'pending', 'hccl.json': DEFAULT_HCCL_JSON, time: '100', sid: UID }) }]);

    const pods = [pod(1), pod(0)];
    const s2 = summaryStep(s1.next, pg, pods, ctx(101))!;
    expect(s2.next.status).toBe('running');
    expect(s2.writes).toHaveLength(1);
    const hccl = JSON.parse(s2.writes[0]!.data['hccl.json']!) as { status: string; server_list: Array<{ server_name: string; server_sn: string; device: Array<{ rank_id: string }> }>; total: number };
    expect(hccl.status).toBe('complete');
    expect(hccl.server_list.map((s) => [s.server_name, s.server_sn, s.device.map((d) => d.rank_id)])).toEqual([['node-1', 'SN1', ['0', '1']], ['node-2', '', ['2', '3']]]);
    expect(s2.writes[0]!.data).toMatchObject({ job_status: 'running', framework: 'mindspore', time: '100', operator: 'add', total: '1' });
    expect(s2.writes[0]!.data.deleteTime).toBeUndefined();

    // A pod change that leaves the status as it was writes nothing (ClusterD's cache is consistent).
    expect(summaryStep(s2.next, pg, [pod(0), pod(1, { labels: { app: 'x' } })], ctx(102))).toBeUndefined();

    const s3 = summaryStep(s2.next, pg, [pod(0), pod(1, { phase: 'Failed' })], ctx(103))!;
    expect(s3.writes[0]!.data).toMatchObject({ job_status: 'failed', deleteTime: '103' });

    const s4 = summaryStep(s3.next, undefined, [], ctx(110))!;
    expect(s4.next.isPreDelete).toBe(true);
    expect(s4.writes[0]!.data).toMatchObject({ operator: 'delete', job_status: 'failed', deleteTime: '110', 'hccl.json': s2.writes[0]!.data['hccl.json'] });
  });

  // Found by the conformance scenario hot-switch (ClusterD's preHandlePods, jobv2/processor.go).
  it('a hot-switch backup pod stays out of the summary until its source pod is deleted, then the summary is rebuilt once with it', () => {
    const s1 = summaryStep(summaryStep(undefined, pg, [], ctx(100))!.next, pg, [pod(0), pod(1)], ctx(101))!;
    const backup = pod(1, { name: 'job-worker-1-hot-0001', uid: 'p9', nodeName: 'node-9', annotations: { ...pod(1).annotations, podType: 'backup', backupSourcePodName: 'job-worker-1' } });
    // Pending, it makes the job failed (the status counts every pod), but the content stays without it.
    const pending = { ...backup, phase: 'Pending' };
    const p1 = summaryStep(s1.next, pg, [pod(0), pod(1), pending], ctx(102), summaryPods([pod(0), pod(1), pending], () => false))!;
    expect(p1.next.status).toBe('failed');
    expect((JSON.parse(p1.writes[0]!.data['hccl.json']!) as { server_list: unknown[] }).server_list).toHaveLength(2);
    const running = summaryPods([pod(0), pod(1), backup], () => false);
    expect(running).toEqual({ pods: [pod(0), pod(1)], rebuild: false, released: [] });
    expect(summaryStep(s1.next, pg, [pod(0), pod(1), backup], ctx(102), running)).toBeUndefined();
    const released = summaryPods([pod(0), backup], (p) => p.name === backup.name);
    expect(released.rebuild).toBe(true);
    const s2 = summaryStep(s1.next, pg, [pod(0), backup], ctx(103), released)!;
    const hccl = JSON.parse(s2.writes[0]!.data['hccl.json']!) as { status: string; server_list: Array<{ server_name: string; pod_name: string }> };
    expect([hccl.status, hccl.server_list.map((x) => x.pod_name)]).toEqual(['complete', ['job-worker-0', 'job-worker-1-hot-0001']]);
  });

  it('a job without hccl/rankIndex runs with no server: hccl.json "" (what ClusterD wrote in the manual-separation scenario)', () => {
    const bare = pod(0, { annotations: { 'ascend.kubectl.kubernetes.io/ascend-910-configuration': '{"devices":[{"device_id":"1"}]}' } });
    const s = summaryStep(undefined, { ...pg, minMember: 1 }, [bare], ctx(5))!;
    expect(s.writes[0]!.data).toMatchObject({ job_status: 'running', 'hccl.json': '', total: '1', framework: 'mindspore' });
    expect((s.next as JobSummaryState).rankTable.status).toBe('initializing');
  });
});

describe('job-summary against ClusterD\'s own bytes', () => {
  it('the process-recovery scenario\'s two rank pods give the hccl.json ClusterD wrote', () => {
    const dev = (pod: string, ip: string) => JSON.stringify({ pod_name: pod, server_id: ip, host_ip: ip, devices: [0, 1].map((c) => ({ device_id: String(c), device_ip: `192.168.${ip.split('.')[3]}.${c}` })) });
    const pods: SummaryPod[] = [0, 1].map((r) => ({
      name: `pr-job-worker-${r}`, namespace: 'training', uid: `u${r}`, nodeName: ['node-a', 'node-b'][r]!, phase: 'Running', labels: { app: 'pr-job' },
      annotations: { 'hccl/rankIndex': String(r), 'ascend.kubectl.kubernetes.io/ascend-910-configuration': dev(`pr-job-worker-${r}`, `10.0.0.${r + 1}`) },
      containers: [{ limits: ['huawei.com/Ascend910'], env: [] }], containerStatuses: [],
    }));
    const pg: SummaryPodGroup = { name: 'pg', namespace: 'training', ownerUid: 'uid', ownerName: 'pr-job', ownerKind: 'Job', minMember: 2, labels: {}, annotations: {}, minResources: ['huawei.com/Ascend910'] };
    const step = summaryStep(undefined, pg, pods, { nowSec: 1, nodeSn: () => '', snByIp: () => '' })!;
    expect(step.writes[0]!.data['hccl.json']).toBe(
      '{"status":"complete","server_list":[{"device":[{"device_id":"0","device_ip":"192.168.1.0","rank_id":"0"},{"device_id":"1","device_ip":"192.168.1.1","rank_id":"1"}],"server_id":"10.0.0.1","host_ip":"10.0.0.1","super_pod_id":0,"server_name":"node-a","server_sn":"","pod_name":"pr-job-worker-0","container_ids":{}},{"device":[{"device_id":"0","device_ip":"192.168.2.0","rank_id":"2"},{"device_id":"1","device_ip":"192.168.2.1","rank_id":"3"}],"server_id":"10.0.0.2","host_ip":"10.0.0.2","super_pod_id":0,"server_name":"node-b","server_sn":"","pod_name":"pr-job-worker-1","container_ids":{}}],"server_count":"2","total":1}',
    );
    expect(step.writes[0]!.data).toMatchObject({ framework: 'pr-job', job_status: 'running', total: '1', cm_index: '0', operator: 'add' });
  });
});
