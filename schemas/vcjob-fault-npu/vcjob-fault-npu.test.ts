import {
  FAULT_NODE_KEY,
  REMAIN_RETRY_TIMES_KEY,
  encodeFaultNodes,
  encodeRemainRetryTimes,
  encodeVcjobFaultNpuData,
  parseFaultNodes,
  parseRemainRetryTimes,
  parseVcjobFaultNpuData,
  vcJobId,
  type FaultNode,
  type RemainRetryTimesMap,
} from './vcjob-fault-npu.ts';

// Golden sample (docs/formats.md#vcjob-fault-npu-cm), byte for byte.
const REMAIN =
  '{"team-a/llama-pretrain-6f1c2e9a-0c7b-4a53-9e0e-2b1f8d7c4a11":{"UUID":"6f1c2e9a-0c7b-4a53-9e0e-2b1f8d7c4a11","Times":2}}';
// Built from the field list in docs/formats.md#vcjob-fault-npu-cm (exact Go field order and tags).
const FAULT_NODE =
  '[{"FaultDeviceList":[{"fault_type":"CardUnhealthy","npu_name":"Ascend910-3","fault_level":"SeparateNPU",' +
  '"fault_handling":"SeparateNPU","large_model_fault_level":"SeparateNPU","fault_code":"80E18401,80E18402"}],' +
  '"NodeName":"node-a01","UnhealthyNPU":["Ascend910-3"],"NetworkUnhealthyNPU":[],"NodeHealthState":"CardUnhealthy",' +
  '"UpdateTime":1732182160},' +
  '{"FaultDeviceList":[{"fault_type":"NodeUnhealthy","npu_name":"","fault_level":"","fault_handling":"",' +
  '"large_model_fault_level":"","fault_code":"heartbeatTimeOut"}],"NodeName":"node-a02","UnhealthyNPU":null,' +
  '"NetworkUnhealthyNPU":null,"NodeHealthState":"NodeUnhealthy","UpdateTime":1732182161}]';

const nodes = (text: string): readonly FaultNode[] => {
  const r = parseFaultNodes(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};
const times = (text: string): RemainRetryTimesMap => {
  const r = parseRemainRetryTimes(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};

describe('golden bytes', () => {
  it('remain-retry-times (golden sample) round-trips', () => {
    const m = times(REMAIN);
    expect(m.get(vcJobId('team-a', 'llama-pretrain', '6f1c2e9a-0c7b-4a53-9e0e-2b1f8d7c4a11'))).toEqual({
      UUID: '6f1c2e9a-0c7b-4a53-9e0e-2b1f8d7c4a11', Times: 2,
    });
    expect(encodeRemainRetryTimes(m)).toBe(REMAIN);
  });

  it('fault-node round-trips with nil vs empty slices preserved', () => {
    expect(encodeFaultNodes(nodes(FAULT_NODE))).toBe(FAULT_NODE);
  });

  it('remain-retry-times keys are sorted like a Go map; fields in Go order', () => {
    const m = new Map([['ns/b-2', { Times: 1, UUID: '2' }], ['ns/a-1', { Times: 0, UUID: '1' }]]);
    expect(encodeRemainRetryTimes(m)).toBe('{"ns/a-1":{"UUID":"1","Times":0},"ns/b-2":{"UUID":"2","Times":1}}');
  });

  it('empty values are "" both ways', () => {
    expect(encodeFaultNodes([])).toBe('');
    expect(encodeRemainRetryTimes(new Map())).toBe('');
    expect(nodes('')).toEqual([]);
    expect(nodes('null')).toEqual([]);
    expect(times('').size).toBe(0);
    expect(times('{}').size).toBe(0);
  });

  it('canonicalises like Go: unknown keys (the old NodeDEnable) dropped, absent fields zero', () => {
    const withExtra = '[{"NodeName":"n","NodeDEnable":true,"UpdateTime":5,"FaultDeviceList":[{"fault_code":"x","fault_time_and_level_map":{}}]}]';
    expect(encodeFaultNodes(nodes(withExtra))).toBe(
      '[{"FaultDeviceList":[{"fault_type":"","npu_name":"","fault_level":"","fault_handling":"","large_model_fault_level":"",' +
      '"fault_code":"x"}],"NodeName":"n","UnhealthyNPU":null,"NetworkUnhealthyNPU":null,"NodeHealthState":"","UpdateTime":5}]');
  });
});

describe('merge semantics', () => {
  it('writes both keys and keeps every other key', () => {
    const existing = { 'fault-job-910x8': 'legacy', checkCode: 'abc', [FAULT_NODE_KEY]: 'old', [REMAIN_RETRY_TIMES_KEY]: 'old' };
    const data = encodeVcjobFaultNpuData({ faultNodes: nodes(FAULT_NODE), remainRetryTimes: times(REMAIN) }, existing);
    expect(data).toEqual({ 'fault-job-910x8': 'legacy', checkCode: 'abc', [FAULT_NODE_KEY]: FAULT_NODE, [REMAIN_RETRY_TIMES_KEY]: REMAIN });
    expect(encodeVcjobFaultNpuData({ faultNodes: [], remainRetryTimes: new Map() })).toEqual({
      [FAULT_NODE_KEY]: '', [REMAIN_RETRY_TIMES_KEY]: '',
    });
  });

  it('parses a whole data map; absent keys read as empty', () => {
    const r = parseVcjobFaultNpuData({ [REMAIN_RETRY_TIMES_KEY]: REMAIN });
    expect(r.ok && r.value.faultNodes.length === 0 && r.value.remainRetryTimes.size === 1).toBe(true);
    expect(parseVcjobFaultNpuData(undefined).ok).toBe(true);
  });

  it('a __proto__ job id is an ordinary key', () => {
    const m = times('{"__proto__":{"UUID":"u","Times":1}}');
    expect(m.get('__proto__')).toEqual({ UUID: 'u', Times: 1 });
    expect(encodeRemainRetryTimes(m)).toBe('{"__proto__":{"UUID":"u","Times":1}}');
  });
});

describe('bad input is rejected, never thrown', () => {
  it.each([
    ['malformed', '{"a":'],
    ['array instead of map', '[]'],
    ['null entry', '{"ns/a-1":null}'],
    ['Times string', '{"ns/a-1":{"UUID":"1","Times":"2"}}'],
    ['Times non-numeric', '{"ns/a-1":{"UUID":"1","Times":"abc"}}'],
    ['Times negative', '{"ns/a-1":{"UUID":"1","Times":-1}}'],
    ['Times fractional', '{"ns/a-1":{"UUID":"1","Times":1.5}}'],
    ['UUID number', '{"ns/a-1":{"UUID":1,"Times":1}}'],
    ['10 kB job id', `{"${'j'.repeat(10_000)}":{"UUID":"1","Times":1}}`],
  ])('remain-retry-times: %s', (_n, text) => {
    expect(parseRemainRetryTimes(text)).toMatchObject({ ok: false, reason: expect.stringMatching(/^remain-retry-times: /) });
  });

  it.each([
    ['malformed', '[{'],
    ['object instead of array', '{}'],
    ['null element', '[null]'],
    ['UpdateTime string', '[{"UpdateTime":"1"}]'],
    ['UpdateTime negative', '[{"UpdateTime":-5}]'],
    ['UnhealthyNPU of numbers', '[{"UnhealthyNPU":[1]}]'],
    ['FaultDeviceList element not object', '[{"FaultDeviceList":["x"]}]'],
    ['fault_code number', '[{"FaultDeviceList":[{"fault_code":1}]}]'],
    ['10 kB npu name', `[{"UnhealthyNPU":["${'n'.repeat(10_000)}"]}]`],
  ])('fault-node: %s', (_n, text) => {
    expect(parseFaultNodes(text)).toMatchObject({ ok: false, reason: expect.stringMatching(/^fault-node: /) });
  });

  it('oversized values', () => {
    expect(parseFaultNodes(`[${' '.repeat(1024 * 1024)}]`).ok).toBe(false);
    expect(parseVcjobFaultNpuData({ [FAULT_NODE_KEY]: '[', [REMAIN_RETRY_TIMES_KEY]: REMAIN }).ok).toBe(false);
  });
});
