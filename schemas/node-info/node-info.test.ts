import {
  encodeNodeInfoCm,
  encodeNodeInfoData,
  msToRfc3339,
  nodeInfoCheckCode,
  nodeNameOfNodeInfoCm,
  nodeStatusOf,
  parseNodeInfoCm,
  parseNodeInfoData,
  splitNodeFaults,
  type FaultDev,
} from './node-info.ts';

// Golden sample (docs/formats.md#node-info), byte for byte.
const GOLDEN =
  '{"NodeInfo":{"FaultDevList":[{"DeviceType":"PSU","DeviceId":1,"FaultCode":["0300000D"],"FaultLevel":"NotHandleFault"},{"DeviceType":"CPU","DeviceId":0,"FaultCode":["0000001D"],"FaultLevel":"PreSeparateFault"}],"NodeStatus":"PreSeparate"},"CheckCode":"35f048680f6a6c4a3a58316dc31efc5b3a5b8ec919c6e058608306854c41aad5"}';
const GOLDEN_TIME = '2026-11-21T10:02:40Z';
const NOW = Date.parse('2026-11-21T10:05:00Z');

const unwrap = <T>(p: { ok: true; value: T } | { ok: false; reason: string }): T => {
  if (!p.ok) throw new Error(`unexpected rejection: ${p.reason}`);
  return p.value;
};
const reasonOf = (p: { ok: boolean; reason?: string }): string => {
  expect(p.ok).toBe(false);
  return p.reason ?? '';
};
const withValidCode = (devs: FaultDev[] | null, status: string): string => {
  const info = { FaultDevList: devs, NodeStatus: status };
  return encodeNodeInfoCm({ NodeInfo: info, CheckCode: nodeInfoCheckCode(info) });
};

describe('node-info golden bytes (docs/formats.md#node-info)', () => {
  it('parse -> encode reproduces the NodeInfo value and verifies CheckCode 35f04868…', () => {
    const d = unwrap(parseNodeInfoData({ NodeInfo: GOLDEN, updateTime: GOLDEN_TIME }));
    expect(d.cm.CheckCode).toBe('35f048680f6a6c4a3a58316dc31efc5b3a5b8ec919c6e058608306854c41aad5');
    expect(encodeNodeInfoCm(d.cm)).toBe(GOLDEN);
    expect(d.updateTimeMs).toBe(Date.parse(GOLDEN_TIME));
    expect(d.warnings).toEqual([]);
  });

  it('encodeNodeInfoData writes the same bytes NodeD would', () => {
    const d = unwrap(parseNodeInfoData({ NodeInfo: GOLDEN, updateTime: GOLDEN_TIME }));
    expect(encodeNodeInfoData({ faultDevList: d.cm.NodeInfo.FaultDevList, updateTimeMs: d.updateTimeMs! })).toEqual({ NodeInfo: GOLDEN, updateTime: GOLDEN_TIME });
  });
});

describe('parseNodeInfoData', () => {
  it.each([
    ['missing NodeInfo key', { updateTime: GOLDEN_TIME }, /NodeInfo is missing/],
    ['malformed JSON', { NodeInfo: GOLDEN.slice(1) }, /NodeInfo: malformed JSON/],
    ['missing CheckCode', { NodeInfo: GOLDEN.replace(/,"CheckCode":"[0-9a-f]+"/, '') }, /CheckCode is missing or empty/],
    ['empty CheckCode', { NodeInfo: GOLDEN.replace(/"CheckCode":"[0-9a-f]+"/, '"CheckCode":""') }, /CheckCode is missing or empty/],
    ['wrong CheckCode', { NodeInfo: GOLDEN.replace('35f04868', '35f04869') }, /CheckCode mismatch/],
    ['edited payload', { NodeInfo: GOLDEN.replace('"DeviceId":1', '"DeviceId":2') }, /CheckCode mismatch/],
    ['wrong type', { NodeInfo: GOLDEN.replace('"DeviceId":1', '"DeviceId":"1"') }, /DeviceId must be integer/],
    ['unknown level', { NodeInfo: withValidCode([{ DeviceType: 'CPU', DeviceId: 0, FaultCode: ['0000001D'], FaultLevel: 'Fatal' }], 'UnHealthy') }, /unknown FaultLevel "Fatal"/],
    ['unknown status', { NodeInfo: withValidCode(null, 'Sick') }, /unknown NodeStatus "Sick"/],
    ['bad code', { NodeInfo: withValidCode([{ DeviceType: 'CPU', DeviceId: 0, FaultCode: ['0x1D'], FaultLevel: 'SeparateFault' }], 'UnHealthy') }, /bad FaultCode "0x1D"/],
    ['bad updateTime', { NodeInfo: GOLDEN, updateTime: '21/11/2026' }, /not an RFC3339 time/],
  ])('rejects %s', (_n, data, reason) => {
    expect(reasonOf(parseNodeInfoData(data))).toMatch(reason);
  });

  it('warns on a missing updateTime and duplicate codes', () => {
    const text = withValidCode([{ DeviceType: 'CPU', DeviceId: 0, FaultCode: ['0000001D', '0000001D'], FaultLevel: 'SeparateFault' }], 'UnHealthy');
    const d = unwrap(parseNodeInfoData({ NodeInfo: text }));
    expect(d.updateTimeMs).toBeUndefined();
    expect(d.warnings).toHaveLength(2);
    expect(splitNodeFaults('n', d, NOW)).toHaveLength(1);
  });

  it('ignores unknown keys (ClusterD re-marshals)', () => {
    const extra = GOLDEN.replace('"NodeStatus":"PreSeparate"', '"NodeStatus":"PreSeparate","Heartbeat":1');
    expect(encodeNodeInfoCm(unwrap(parseNodeInfoCm(extra)).cm)).toBe(GOLDEN);
  });

  it('accepts nil FaultDevList and offsets in updateTime', () => {
    const d = unwrap(parseNodeInfoData({ NodeInfo: withValidCode(null, 'Healthy'), updateTime: '2026-11-21T18:02:40+08:00' }));
    expect(d.updateTimeMs).toBe(Date.parse(GOLDEN_TIME));
    expect(splitNodeFaults('n', d, NOW)).toEqual([]);
  });

  it('recognises node-info CMs by namespace and prefix', () => {
    expect(nodeNameOfNodeInfoCm('mindx-dl', 'mindx-dl-nodeinfo-a')).toBe('a');
    expect(nodeNameOfNodeInfoCm('kube-system', 'mindx-dl-nodeinfo-a')).toBeUndefined();
  });
});

describe('splitNodeFaults', () => {
  it('maps NodeD levels into the NPU vocabulary, source node', () => {
    const d = unwrap(parseNodeInfoData({ NodeInfo: GOLDEN, updateTime: GOLDEN_TIME }));
    expect(splitNodeFaults('node-a02', d, NOW)).toEqual([
      { node: 'node-a02', source: 'node', code: '0300000D', level: 'NotHandleFault', reportedLevel: 'NotHandleFault', firstSeenMs: NOW, detail: 'PSU#1' },
      { node: 'node-a02', source: 'node', code: '0000001D', level: 'PreSeparateNPU', reportedLevel: 'PreSeparateFault', firstSeenMs: NOW, detail: 'CPU#0' },
    ]);
  });

  it('keeps the most serious level when one code hits several devices', () => {
    const devs: FaultDev[] = [
      { DeviceType: 'PSU', DeviceId: 0, FaultCode: ['0300000D'], FaultLevel: 'NotHandleFault' },
      { DeviceType: 'PSU', DeviceId: 1, FaultCode: ['0300000D'], FaultLevel: 'SeparateFault' },
      { DeviceType: 'Memory', DeviceId: 3, FaultCode: ['2C000031'], FaultLevel: 'SubHealthFault' },
    ];
    const d = unwrap(parseNodeInfoData(encodeNodeInfoData({ faultDevList: devs, updateTimeMs: NOW })));
    expect(d.cm.NodeInfo.NodeStatus).toBe('UnHealthy');
    expect(splitNodeFaults('n', d, NOW).map((r) => [r.code, r.level, r.reportedLevel, r.detail])).toEqual([
      ['0300000D', 'SeparateNPU', 'SeparateFault', 'PSU#0,PSU#1'],
      ['2C000031', 'SubHealthFault', 'SubHealthFault', 'Memory#3'],
    ]);
  });

  it('derives NodeStatus like NodeD', () => {
    expect(nodeStatusOf(null)).toBe('Healthy');
    expect(nodeStatusOf([{ FaultLevel: 'NotHandleFault' }])).toBe('Healthy');
    expect(nodeStatusOf([{ FaultLevel: 'PreSeparateFault' }, { FaultLevel: 'NotHandleFault' }])).toBe('PreSeparate');
    expect(nodeStatusOf([{ FaultLevel: 'PreSeparateFault' }, { FaultLevel: 'SeparateFault' }])).toBe('UnHealthy');
    expect(msToRfc3339(Date.parse(GOLDEN_TIME) + 999)).toBe(GOLDEN_TIME);
  });
});
