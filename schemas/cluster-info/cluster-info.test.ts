import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { parseSwitchInfo } from '../device-info/switch-info.ts';
import {
  CLUSTER_INFO_DEVICE_PREFIX,
  encodeClusterInfo,
  parseClusterInfo,
  type ClusterInfoEntry,
  type DeviceInfoEntry,
  type NodeInfoEntry,
  type SwitchInfoEntry,
} from './cluster-info.ts';
import { mergeDeviceFaults, recomputeDeviceList } from './device-list.ts';
import { shardClusterInfo, shardNames, surplusShards } from './shard.ts';

// Golden sample (docs/formats.md#cluster-info), byte for byte.
const GOLDEN_DEVICE_0 = String.raw`{"mindx-dl-deviceinfo-node-a01":{"DeviceList":{"huawei.com/Ascend910":"Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-4,Ascend910-5,Ascend910-7","huawei.com/Ascend910-Fault":"[{\"fault_type\":\"CardUnhealthy\",\"npu_name\":\"Ascend910-3\",\"large_model_fault_level\":\"SeparateNPU\",\"fault_level\":\"SeparateNPU\",\"fault_handling\":\"SeparateNPU\",\"fault_code\":\"80E18401,80E18402\",\"fault_time_and_level_map\":{\"80E18401\":{\"fault_time\":1732182000123,\"fault_level\":\"NotHandleFault\"},\"80E18402\":{\"fault_time\":1732182000123,\"fault_level\":\"SeparateNPU\"}}},{\"fault_type\":\"PublicFault\",\"npu_name\":\"Ascend910-6\",\"large_model_fault_level\":\"SeparateNPU\",\"fault_level\":\"SeparateNPU\",\"fault_handling\":\"SeparateNPU\",\"fault_code\":\"220001001\",\"fault_time_and_level_map\":{\"220001001\":{\"fault_time\":1732181999,\"fault_level\":\"SeparateNPU\"}}}]","huawei.com/Ascend910-NetworkUnhealthy":"","huawei.com/Ascend910-Recovering":"","huawei.com/Ascend910-Unhealthy":"Ascend910-3,Ascend910-6"},"UpdateTime":1732182160,"CmName":"mindx-dl-deviceinfo-node-a01","SuperPodID":-1,"RackID":0,"ServerIndex":-1}}`;
const GOLDEN_NODE_CM = '{"mindx-dl-nodeinfo-node-a02":{"FaultDevList":[{"DeviceType":"CPU","DeviceId":1,"FaultCode":["00000011"],"FaultLevel":"SeparateFault"}],"NodeStatus":"UnHealthy","CmName":"mindx-dl-nodeinfo-node-a02","UpdateTime":1732182160000}}';
const GOLDEN_SWITCH =
  '{"FaultCode":["{\\"EventType\\":11,\\"AssembledFaultCode\\":\\"[0x00f103b0,155904,na,na]\\",\\"PeerPortDevice\\":1,\\"PeerPortId\\":3,\\"SwitchChipId\\":0,\\"SwitchPortId\\":7,\\"Severity\\":2,\\"Assertion\\":1,\\"AlarmRaisedTime\\":1732182000500}"],"FaultLevel":"Separate","UpdateTime":1732182160,"NodeStatus":"UnHealthy","FaultTimeAndLevelMap":{"[0x00f103b0,155904,na,na]_0_7":{"fault_time":1732182000500,"fault_level":"Separate"}}}';

const unwrap = <T>(p: { ok: true; value: T } | { ok: false; reason: string }): T => {
  if (!p.ok) throw new Error(`unexpected rejection: ${p.reason}`);
  return p.value;
};
const chips = (ids: number[]): string[] => ids.map((i) => `Ascend910-${i}`);

describe('cluster-info golden bytes (docs/formats.md#cluster-info)', () => {
  it('cluster-info-device-0: parse -> encode is byte-exact', () => {
    expect(encodeClusterInfo(unwrap(parseClusterInfo('device', GOLDEN_DEVICE_0)))).toBe(GOLDEN_DEVICE_0);
  });

  it('cluster-info-device-0: built from fault records via mergeDeviceFaults + recomputeDeviceList', () => {
    const base = { node: 'node-a01', firstSeenMs: 1732182000123 } as const;
    const records: FaultRecord[] = [
      // Deliberately unsorted, with the PublicFault first.
      { node: 'node-a01', device: 'Ascend910-6', source: 'public', code: '220001001', level: 'SeparateNPU', reportedLevel: 'SeparateNPU', firstSeenMs: 1732181999000 },
      { ...base, device: 'Ascend910-3', source: 'npu', code: '80E18402', level: 'SeparateNPU', reportedLevel: 'SeparateNPU' },
      { ...base, device: 'Ascend910-3', source: 'npu', code: '80E18401', level: 'NotHandleFault', reportedLevel: 'NotHandleFault' },
      { ...base, source: 'node', code: '0000001D', level: 'SeparateNPU', reportedLevel: 'SeparateFault' }, // not a chip fault: ignored
    ];
    const faults = mergeDeviceFaults(records);
    const entry: DeviceInfoEntry = {
      DeviceList: recomputeDeviceList({ available: chips([0, 1, 2, 3, 4, 5, 6, 7]), faults }),
      UpdateTime: 1732182160, CmName: 'mindx-dl-deviceinfo-node-a01', SuperPodID: -1, RackID: 0, ServerIndex: -1,
    };
    expect(encodeClusterInfo({ 'mindx-dl-deviceinfo-node-a01': entry })).toBe(GOLDEN_DEVICE_0);
  });

  it('cluster-info-node-cm: parse -> encode and build are byte-exact', () => {
    expect(encodeClusterInfo(unwrap(parseClusterInfo('node', GOLDEN_NODE_CM)))).toBe(GOLDEN_NODE_CM);
    const entry: NodeInfoEntry = {
      FaultDevList: [{ DeviceType: 'CPU', DeviceId: 1, FaultCode: ['00000011'], FaultLevel: 'SeparateFault' }],
      NodeStatus: 'UnHealthy', CmName: 'mindx-dl-nodeinfo-node-a02', UpdateTime: 1732182160000,
    };
    expect(encodeClusterInfo({ 'mindx-dl-nodeinfo-node-a02': entry })).toBe(GOLDEN_NODE_CM);
  });

  it('cluster-info-switch: SwitchFaultInfo fields then CmName', () => {
    const info = unwrap(parseSwitchInfo(GOLDEN_SWITCH, 1732182200000)).info;
    const entry: SwitchInfoEntry = { ...info, CmName: 'mindx-dl-switchinfo-node-a01' };
    const text = encodeClusterInfo({ 'mindx-dl-switchinfo-node-a01': entry });
    expect(text).toBe(`{"mindx-dl-switchinfo-node-a01":${GOLDEN_SWITCH.slice(0, -1)},"CmName":"mindx-dl-switchinfo-node-a01"}}`);
    expect(encodeClusterInfo(unwrap(parseClusterInfo('switch', text)))).toBe(text);
  });

  it('empty value is ""', () => {
    expect(encodeClusterInfo({})).toBe('');
    expect(unwrap(parseClusterInfo('device', ''))).toEqual({});
  });
});

describe('recomputeDeviceList (AddFaultAndFix)', () => {
  const f = (npu: string, type: string, level: string) => ({
    fault_type: type, npu_name: npu, large_model_fault_level: level, fault_level: level, fault_handling: level, fault_code: '1', fault_time_and_level_map: {},
  });
  it('removes non-normal chips from <P>, routes them by fault type, keeps normal levels available', () => {
    const list = recomputeDeviceList({
      prefix: 'huawei.com/npu',
      available: ['npu-0', 'npu-1', 'npu-2', 'npu-3', 'npu-10'],
      recovering: ['npu-4'],
      faults: [f('npu-1', 'CardNetworkUnhealthy', 'PreSeparateNPU'), f('npu-2', 'CardUnhealthy', 'SubHealthFault'), f('npu-3', 'CardNetworkUnhealthy', 'NormalNetwork'), f('npu-10', 'PublicFault', 'RestartNPU')],
    });
    expect(Object.keys(list).sort()).toEqual(['huawei.com/npu', 'huawei.com/npu-Fault', 'huawei.com/npu-NetworkUnhealthy', 'huawei.com/npu-Recovering', 'huawei.com/npu-Unhealthy']);
    expect(list['huawei.com/npu']).toBe('npu-0,npu-2,npu-3');
    expect(list['huawei.com/npu-Unhealthy']).toBe('npu-10');
    expect(list['huawei.com/npu-NetworkUnhealthy']).toBe('npu-1');
    expect(list['huawei.com/npu-Recovering']).toBe('npu-4');
  });

  it('gives "[]" and empty strings when there is nothing', () => {
    expect(recomputeDeviceList({ available: [], faults: [] })).toEqual({
      'huawei.com/Ascend910': '', 'huawei.com/Ascend910-Fault': '[]', 'huawei.com/Ascend910-Unhealthy': '',
      'huawei.com/Ascend910-NetworkUnhealthy': '', 'huawei.com/Ascend910-Recovering': '',
    });
  });

  it('mergeDeviceFaults: the ManuallySeparateNPU pseudo-code gives a level but no code', () => {
    const r = (code: string, level: FaultRecord['level']): FaultRecord => ({ node: 'n', device: 'Ascend910-1', source: 'npu', code, level, reportedLevel: level, firstSeenMs: 5 });
    expect(mergeDeviceFaults([r('ManuallySeparateNPU', 'ManuallySeparateNPU'), r('80E18005', 'RestartNPU')])).toEqual([{
      fault_type: 'CardUnhealthy', npu_name: 'Ascend910-1', large_model_fault_level: 'ManuallySeparateNPU', fault_level: 'ManuallySeparateNPU',
      fault_handling: 'ManuallySeparateNPU', fault_code: '80E18005', fault_time_and_level_map: { '80E18005': { fault_time: 5, fault_level: 'RestartNPU' } },
    }]);
  });
});

describe('shardClusterInfo', () => {
  const entry = (i: number, pad = 0): DeviceInfoEntry => ({
    DeviceList: { 'huawei.com/Ascend910': chips([0, 1, 2, 3]).join(','), 'huawei.com/Ascend910-Fault': `[${' '.repeat(pad)}]` },
    UpdateTime: 1732182160, CmName: `mindx-dl-deviceinfo-node-${i}`, SuperPodID: -1, RackID: 0, ServerIndex: -1,
  });
  const many = (n: number): Record<string, ClusterInfoEntry> =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`mindx-dl-deviceinfo-node-${i}`, entry(i)]));

  it('one shard when it fits; equals encodeClusterInfo', () => {
    expect(shardClusterInfo(many(3))).toEqual([encodeClusterInfo(many(3))]);
  });

  it('splits by bytes, keeps every entry once in Go key order, is deterministic', () => {
    const all = many(200);
    const max = 4096;
    const shards = shardClusterInfo(all, max);
    expect(shards.length).toBeGreaterThan(1);
    for (const s of shards) expect(Buffer.byteLength(s)).toBeLessThanOrEqual(max);
    const keys = shards.flatMap((s) => Object.keys(unwrap(parseClusterInfo('device', s))));
    expect(keys).toEqual(Object.keys(all).sort());
    const merged = Object.assign({}, ...shards.map((s) => unwrap(parseClusterInfo('device', s)))) as Record<string, ClusterInfoEntry>;
    expect(encodeClusterInfo(merged)).toBe(encodeClusterInfo(all));
    // Greedy: no shard could have taken the next entry.
    for (let i = 0; i + 1 < shards.length; i++) {
      const nextKey = Object.keys(unwrap(parseClusterInfo('device', shards[i + 1]!)))[0]!;
      const grown = { ...unwrap(parseClusterInfo('device', shards[i]!)), [nextKey]: all[nextKey]! };
      expect(Buffer.byteLength(encodeClusterInfo(grown))).toBeGreaterThan(max);
    }
    expect(shardClusterInfo({ ...all }, max)).toEqual(shards);
  });

  it('puts an entry larger than the limit in a shard of its own; empty input gives [""]', () => {
    const big = { 'mindx-dl-deviceinfo-a': entry(0), 'mindx-dl-deviceinfo-b': entry(1, 5000), 'mindx-dl-deviceinfo-c': entry(2) };
    const shards = shardClusterInfo(big, 1000);
    expect(shards.map((s) => Object.keys(unwrap(parseClusterInfo('device', s))))).toEqual([['mindx-dl-deviceinfo-a'], ['mindx-dl-deviceinfo-b'], ['mindx-dl-deviceinfo-c']]);
    expect(shardClusterInfo({})).toEqual(['']);
  });

  it('uses the 800 KiB default', () => {
    const shards = shardClusterInfo(many(6000));
    expect(shards.length).toBeGreaterThan(1);
    for (const s of shards) expect(Buffer.byteLength(s)).toBeLessThanOrEqual(800 * 1024);
  });

  it('high-water mark: blanks surplus shards, never lowers the mark', () => {
    expect(shardNames(CLUSTER_INFO_DEVICE_PREFIX, 2)).toEqual(['cluster-info-device-0', 'cluster-info-device-1']);
    expect(surplusShards(CLUSTER_INFO_DEVICE_PREFIX, 1, 3)).toEqual({ blank: ['cluster-info-device-1', 'cluster-info-device-2'], highWater: 3 });
    expect(surplusShards(CLUSTER_INFO_DEVICE_PREFIX, 4, 3)).toEqual({ blank: [], highWater: 4 });
  });
});

describe('parseClusterInfo bad input', () => {
  it.each([
    ['device', GOLDEN_DEVICE_0.slice(0, -2), /malformed JSON/],
    ['device', GOLDEN_DEVICE_0.replace('"RackID":0', '"RackID":"0"'), /RackID must be integer/],
    ['device', '[]', /must be object/],
    ['node', GOLDEN_NODE_CM.replace('"UpdateTime":1732182160000', '"UpdateTime":null'), /UpdateTime must be integer/],
    ['switch', '{"x":{"CmName":"x"}}', /must have required property/],
  ] as const)('%s: %s', (kind, text, reason) => {
    const p = parseClusterInfo(kind, text);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.reason).toMatch(reason);
  });
});
