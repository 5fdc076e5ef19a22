import { HEARTBEAT_TIMEOUT_CODE, aggregateJob } from './job-aggregation.ts';
import { chipFault, fourPodJob, jobOf, mapPods, nodeNotReady, podOf } from '../../test/support/job-fixtures.ts';
import { parseAscendReal, parseRankIndex, podViewFromMeta } from './job-view.ts';

describe('aggregateJob', () => {
  it('maps a SeparateNPU chip fault to the pod that holds the chip', () => {
    const agg = aggregateJob({ job: fourPodJob(), faults: [chipFault('node-2', 'Ascend910-5', 'SeparateNPU')] });
    expect(agg.ranks).toHaveLength(1);
    const r = agg.ranks[0]!;
    expect(r).toMatchObject({ podRank: 2, node: 'node-2', devices: ['Ascend910-5'], codes: ['80E18005'], worstLevel: 'SeparateNPU', faultType: 'CardUnhealthy' });
    expect(r.pod).toEqual({ name: 'llama-worker-2', uid: 'llama-worker-2-uid', node: 'node-2' });
    expect(agg.healthState).toBe('UnHealthy');
  });

  it('ignores chips the job does not use and nodes it does not run on', () => {
    const job = mapPods(fourPodJob(), (p) => ({ ...p, npus: ['Ascend910-0', 'Ascend910-1'] }));
    const agg = aggregateJob({ job, faults: [chipFault('node-2', 'Ascend910-5', 'SeparateNPU'), chipFault('node-9', 'Ascend910-0', 'SeparateNPU')] });
    expect(agg.ranks).toEqual([]);
    expect(agg.healthState).toBe('Healthy');
  });

  it('matches chips by index when the name prefixes differ', () => {
    const job = mapPods(fourPodJob(), (p) => ({ ...p, npus: ['npu-3'] }));
    const agg = aggregateJob({ job, faults: [chipFault('node-1', 'Ascend910-3', 'RestartNPU')] });
    expect(agg.ranks.map((r) => r.podRank)).toEqual([1]);
  });

  it('node NotReady hits every pod on the node as NodeUnhealthy / heartbeatTimeOut', () => {
    const job = jobOf([podOf('a', 0, 'node-x'), podOf('b', 1, 'node-x'), podOf('c', 2, 'node-y')]);
    const agg = aggregateJob({ job, faults: [nodeNotReady('node-x')] });
    expect(agg.ranks.map((r) => r.pod.name)).toEqual(['a', 'b']);
    const c = agg.ranks[0]!.causes[0]!;
    expect(c).toMatchObject({ origin: 'node-ready', faultType: 'NodeUnhealthy', code: HEARTBEAT_TIMEOUT_CODE, reasonCode: 'heartbeatTimeOut', reasonLevel: 'PreSeparateNPU', level: 'SeparateNPU' });
    expect(agg.healthState).toBe('UnHealthy');
  });

  it('NodeD SeparateNPU hits every pod on the node; PreSeparate does not affect the running job', () => {
    const sep = aggregateJob({ job: fourPodJob(), faults: [chipFault('node-1', undefined, 'SeparateNPU', 'PSU', 'node')] });
    expect(sep.ranks[0]).toMatchObject({ podRank: 1, faultType: 'NodeUnhealthy' });
    expect(sep.ranks[0]!.causes[0]!.affectsTask).toBe(true);
    const pre = aggregateJob({ job: fourPodJob(), faults: [chipFault('node-1', undefined, 'PreSeparateNPU', 'PSU', 'node')] });
    expect(pre.ranks[0]!.causes[0]!.affectsTask).toBe(false);
    expect(pre.healthState).toBe('Healthy');
  });

  it('switch sub-health makes the job SubHealthy; network faults never make a task faulty', () => {
    const sub = aggregateJob({ job: fourPodJob(), faults: [chipFault('node-3', undefined, 'SubHealthFault', '[0x08520003,na,L2,na]', 'switch')] });
    expect(sub.ranks[0]).toMatchObject({ podRank: 3, faultType: 'SubHealthFault' });
    expect(sub.healthState).toBe('SubHealthy');
    const net = aggregateJob({ job: fourPodJob(), faults: [chipFault('node-3', 'Ascend910-1', 'SeparateNPU', '81078603', 'network')] });
    expect(net.ranks[0]).toMatchObject({ faultType: 'CardNetworkUnhealthy' });
    expect(net.ranks[0]!.causes[0]!.affectsTask).toBe(false);
  });

  it('derives pod-failed, process-exception and RelationFaultSeparate from the pods', () => {
    const job = jobOf([
      podOf('a', 0, 'n0'),
      podOf('b', 1, 'n1', { phase: 'Failed' }),
      podOf('c', 2, 'n2', { containerFailed: true, faultTypeLabel: 'software' }),
      podOf('d', 3, 'n3', { faultTypeLabel: 'Separate' }),
    ]);
    const agg = aggregateJob({ job, faults: [] });
    expect(agg.ranks.map((r) => [r.pod.name, r.faultType])).toEqual([['b', 'pod-failed'], ['c', 'process-exception'], ['d', 'RelationFaultSeparate']]);
    expect(agg.healthState).toBe('UnHealthy');
  });

  it('orders causes per Volcano (node fault before card fault before failed pod)', () => {
    const job = jobOf([podOf('a', 0, 'n0', { phase: 'Failed' })]);
    const agg = aggregateJob({ job, faults: [chipFault('n0', 'Ascend910-0', 'SeparateNPU'), chipFault('n0', undefined, 'SeparateNPU', 'x', 'switch')] });
    expect(agg.ranks[0]!.faultType).toBe('NodeUnhealthy');
    expect(agg.ranks[0]!.causes.map((c) => c.faultType)).toEqual(['NodeUnhealthy', 'CardUnhealthy', 'pod-failed']);
  });

  it('leaves hot-switch backup pods out of the rank list; fingerprints are order-independent', () => {
    const job = jobOf([podOf('a', 1, 'n0'), podOf('a-hot-1234', 1, 'n0', { backup: true })]);
    const f = [chipFault('n0', 'Ascend910-0', 'SeparateNPU'), chipFault('n0', 'Ascend910-1', 'RestartNPU', '40F84E00')];
    const a1 = aggregateJob({ job, faults: f });
    const a2 = aggregateJob({ job, faults: [...f].reverse() });
    expect(a1.ranks.map((r) => r.pod.name)).toEqual(['a']);
    expect(a1.fingerprint).toBe(a2.fingerprint);
  });
});

describe('job view helpers', () => {
  it('parses rank and AscendReal and adapts pod metadata', () => {
    expect(parseRankIndex('3')).toBe(3);
    expect(parseRankIndex('x')).toBeUndefined();
    expect(parseAscendReal(' Ascend910-0, Ascend910-1 ,')).toEqual(['Ascend910-0', 'Ascend910-1']);
    const p = podViewFromMeta({
      name: 'p', uid: 'u', nodeName: 'n', phase: 'Running',
      labels: { 'fault-type': 'Separate' },
      annotations: { 'hccl/rankIndex': '0', 'huawei.com/AscendReal': 'Ascend910-2', needVolcanoOpe: 'delete', podType: 'backup' },
    });
    expect(p).toMatchObject({ rank: 0, node: 'n', npus: ['Ascend910-2'], faultTypeLabel: 'Separate', needVolcanoDelete: true, backup: true });
  });
});
