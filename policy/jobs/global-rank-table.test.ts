import { globalRankTable, type RankTableConfigMap } from './global-rank-table.ts';

const a2 = (status: string, extra: Record<string, unknown> = {}) => JSON.stringify({
  status, version: '1.0', server_count: '1',
  server_list: [{ server_id: 'node-1', host_ip: '10.0.0.1', container_ip: '172.16.0.5', device: [{ device_id: '3', device_ip: '192.168.1.3', rank_id: '0' }, { device_id: '5', device_ip: '192.168.1.5', rank_id: '1' }] }],
  super_pod_list: [{ super_pod_id: '0', server_list: [{ server_id: 'node-1' }] }], ...extra,
});
const cm = (name: string, hccl: string, labels: Record<string, string> = { 'grt-group/deploy-server': '2' }): RankTableConfigMap => ({ name, labels: { jobID: 'mindie-1', ...labels }, data: { 'hccl.json': hccl } });
const pods = (ip: string) => [{ name: 'p-0', hostIP: '10.0.9.1', podIP: ip }];

describe('global rank table (ClusterD domain/epranktable ranktable_util.go)', () => {
  it('groups 0 and 1 from the coordinator and controller pods, then one group per completed rank table, Go bytes', () => {
    const out = globalRankTable({ configMaps: [cm('rings-config-b', a2('initializing')), cm('rings-config-a', a2('completed'))], coordinator: pods('172.16.0.1'), controller: pods('172.16.0.2') });
    expect(out).toEqual({
      ok: '{"version":"1.0","status":"completed","server_group_list":['
        + '{"group_id":"0","server_count":"1","server_list":[{"server_id":"10.0.9.1","server_ip":"172.16.0.1"}]},'
        + '{"group_id":"1","server_count":"1","server_list":[{"server_id":"10.0.9.1","server_ip":"172.16.0.2"}]},'
        + '{"group_id":"2","deploy_server":"2","server_count":"1","server_list":[{"device":[{"device_id":"3","device_ip":"192.168.1.3","device_logical_id":"0","rank_id":"0"},'
        + '{"device_id":"5","device_ip":"192.168.1.5","device_logical_id":"1","rank_id":"1"}],"server_id":"10.0.0.1","server_ip":"172.16.0.5"}],'
        + '"super_pod_list":[{"super_pod_id":"0","server_list":[{"server_id":"10.0.0.1"}]}]}]}',
    });
  });

  it.each([
    ['no rank table', { configMaps: [] }],
    ['no completed rank table', { configMaps: [cm('rings-config-a', a2('initializing'))] }],
    ['no deploy-server label', { configMaps: [cm('rings-config-a', a2('completed'), {})] }],
    ['a number where Go wants a string', { configMaps: [cm('rings-config-a', a2('completed', { server_count: 1 }))] }],
    ['no coordinator job', { coordinator: undefined }],
    ['an unscheduled controller pod', { controller: pods('') }],
  ])('retries: %s', (_what, over) => {
    const out = globalRankTable({ configMaps: [cm('rings-config-a', a2('completed'))], coordinator: pods('172.16.0.1'), controller: pods('172.16.0.2'), ...over });
    expect('retry' in out).toBe(true);
  });
});
