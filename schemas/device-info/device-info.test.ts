import { encodeDeviceFaultList, parseDeviceFaultList, type DeviceFault } from './device-fault.ts';
import {
  DEVICE_INFO_DESCRIPTION,
  deviceInfoCheckCode,
  encodeDeviceInfoCfg,
  nodeNameOfDeviceInfoCm,
  parseDeviceInfoCfg,
  parseDeviceInfoData,
  type DeviceInfoData,
} from './device-info.ts';
import { encodeDeviceInfoData, makeDeviceFault } from './device-info-encode.ts';
import { deviceInfoRecords, splitDeviceFaults } from './device-info-records.ts';
import { encodeSwitchInfo, parseSwitchInfo, switchFaultRecords, ZERO_SWITCH_INFO } from './switch-info.ts';

// Golden sample (docs/formats.md#device-info), byte for byte.
const GOLDEN_CFG =
  '{"DeviceInfo":{"DeviceList":{"huawei.com/Ascend910":"Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7","huawei.com/Ascend910-Fault":"[{\\"fault_type\\":\\"CardNetworkUnhealthy\\",\\"npu_name\\":\\"Ascend910-6\\",\\"large_model_fault_level\\":\\"PreSeparateNPU\\",\\"fault_level\\":\\"PreSeparateNPU\\",\\"fault_handling\\":\\"PreSeparateNPU\\",\\"fault_code\\":\\"81078603\\",\\"fault_time_and_level_map\\":{\\"81078603\\":{\\"fault_time\\":1732182100456,\\"fault_level\\":\\"PreSeparateNPU\\"}}},{\\"fault_type\\":\\"CardUnhealthy\\",\\"npu_name\\":\\"Ascend910-3\\",\\"large_model_fault_level\\":\\"SeparateNPU\\",\\"fault_level\\":\\"SeparateNPU\\",\\"fault_handling\\":\\"SeparateNPU\\",\\"fault_code\\":\\"80E18402,80E18401\\",\\"fault_time_and_level_map\\":{\\"80E18401\\":{\\"fault_time\\":1732182000123,\\"fault_level\\":\\"NotHandleFault\\"},\\"80E18402\\":{\\"fault_time\\":1732182000123,\\"fault_level\\":\\"SeparateNPU\\"}}}]","huawei.com/Ascend910-NetworkUnhealthy":"Ascend910-6","huawei.com/Ascend910-Recovering":"","huawei.com/Ascend910-Unhealthy":"Ascend910-3"},"UpdateTime":1732182160},"SuperPodID":-1,"ServerIndex":-1,"CheckCode":"98343e94aec932ed51a83d7c8ded1aad17112709a96528e59791617b59cfcd2b"}';
const GOLDEN_SWITCH =
  '{"FaultCode":["{\\"EventType\\":11,\\"AssembledFaultCode\\":\\"[0x00f103b0,155904,na,na]\\",\\"PeerPortDevice\\":1,\\"PeerPortId\\":3,\\"SwitchChipId\\":0,\\"SwitchPortId\\":7,\\"Severity\\":2,\\"Assertion\\":1,\\"AlarmRaisedTime\\":1732182000500}"],"FaultLevel":"Separate","UpdateTime":1732182160,"NodeStatus":"UnHealthy","FaultTimeAndLevelMap":{"[0x00f103b0,155904,na,na]_0_7":{"fault_time":1732182000500,"fault_level":"Separate"}}}';
const NOW = 1732182200000;

const unwrap = <T>(p: { ok: true; value: T } | { ok: false; reason: string }): T => {
  if (!p.ok) throw new Error(`unexpected rejection: ${p.reason}`);
  return p.value;
};
const reasonOf = (p: { ok: boolean; reason?: string }): string => {
  expect(p.ok).toBe(false);
  return p.reason ?? '';
};
const goldenData = (): Record<string, string> => ({ DeviceInfoCfg: GOLDEN_CFG, ManuallySeparateNPU: '', Description: DEVICE_INFO_DESCRIPTION });
/** A valid DeviceInfoCfg around an arbitrary DeviceList. */
const cfgWith = (list: Record<string, string>): string => {
  const info = { DeviceList: list, UpdateTime: 1732182160 };
  return encodeDeviceInfoCfg({ DeviceInfo: info, SuperPodID: -1, ServerIndex: -1, CheckCode: deviceInfoCheckCode(info) });
};
const fault = (over: Partial<DeviceFault>): DeviceFault => ({
  ...makeDeviceFault('CardUnhealthy', 'Ascend910-1', [{ code: '80E18402', level: 'SeparateNPU', timeMs: NOW - 1000 }]),
  ...over,
});

describe('device-info golden bytes (docs/formats.md#device-info)', () => {
  it('parse -> encode reproduces DeviceInfoCfg byte for byte and verifies CheckCode 98343e94…', () => {
    const cfg = unwrap(parseDeviceInfoCfg(GOLDEN_CFG));
    expect(cfg.CheckCode).toBe('98343e94aec932ed51a83d7c8ded1aad17112709a96528e59791617b59cfcd2b');
    expect(encodeDeviceInfoCfg(cfg)).toBe(GOLDEN_CFG);
  });

  it('the <P>-Fault string round-trips (code order kept, map keys sorted)', () => {
    const text = unwrap(parseDeviceInfoCfg(GOLDEN_CFG)).DeviceInfo.DeviceList['huawei.com/Ascend910-Fault']!;
    const faults = unwrap(parseDeviceFaultList(text, NOW));
    expect(faults.warnings).toEqual([]);
    expect(encodeDeviceFaultList(faults.value)).toBe(text);
  });

  it('encodeDeviceInfoData rebuilds the same DeviceInfoCfg bytes from the parsed parts', () => {
    const d = unwrap(parseDeviceInfoData(goldenData(), NOW));
    const data = encodeDeviceInfoData({
      prefix: d.lists.prefix, available: d.lists.available, unhealthy: d.lists.unhealthy,
      networkUnhealthy: d.lists.networkUnhealthy, recovering: d.lists.recovering, faults: d.lists.faults, updateTimeS: 1732182160,
    });
    expect(data['DeviceInfoCfg']).toBe(GOLDEN_CFG);
    expect(data['ManuallySeparateNPU']).toBe('');
    expect(data['UpgradeFaultReason']).toBe('{}');
    expect(data['Description']).toBe(DEVICE_INFO_DESCRIPTION);
    expect(data['SwitchInfoCfg']).toBeUndefined();
    expect(unwrap(parseDeviceInfoData(data, NOW)).lists).toEqual(d.lists);
  });

  it('SwitchInfoCfg example round-trips; the zero struct encodes as DP writes it', () => {
    const v = unwrap(parseSwitchInfo(GOLDEN_SWITCH, NOW));
    expect(encodeSwitchInfo(v.info)).toBe(GOLDEN_SWITCH);
    expect(v.events[0]?.AssembledFaultCode).toBe('[0x00f103b0,155904,na,na]');
    expect(encodeSwitchInfo(ZERO_SWITCH_INFO)).toBe('{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}');
    expect(unwrap(parseSwitchInfo(encodeSwitchInfo(ZERO_SWITCH_INFO), NOW)).events).toEqual([]);
  });
});

describe('parseDeviceInfoData', () => {
  it('breaks the golden CM into lists', () => {
    const d = unwrap(parseDeviceInfoData(goldenData(), NOW));
    expect(d.lists.prefix).toBe('huawei.com/Ascend910');
    expect(d.lists.unhealthy).toEqual(['Ascend910-3']);
    expect(d.lists.networkUnhealthy).toEqual(['Ascend910-6']);
    expect(d.lists.recovering).toEqual([]);
    expect(d.lists.available).toHaveLength(7);
    expect(d.switchInfo).toBeUndefined();
    expect(d.warnings).toEqual([]);
  });

  it('accepts the A5 huawei.com/npu prefix', () => {
    const data = encodeDeviceInfoData({ prefix: 'huawei.com/npu', available: ['npu-1', 'npu-0'], updateTimeS: 1, rackId: 0 });
    const d = unwrap(parseDeviceInfoData(data, NOW));
    expect(d.lists.prefix).toBe('huawei.com/npu');
    expect(d.lists.available).toEqual(['npu-0', 'npu-1']);
    expect(d.cfg.RackID).toBe(0);
    expect(data['DeviceInfoCfg']).toContain(',"RackID":0}');
  });

  it.each([
    ['missing CheckCode', GOLDEN_CFG.replace(/,"CheckCode":"[0-9a-f]+"/, ''), /CheckCode is missing or empty/],
    ['empty CheckCode', GOLDEN_CFG.replace(/"CheckCode":"[0-9a-f]+"/, '"CheckCode":""'), /CheckCode is missing or empty/],
    ['wrong CheckCode', GOLDEN_CFG.replace('98343e94', '98343e95'), /CheckCode mismatch/],
    ['changed payload', GOLDEN_CFG.replace('"UpdateTime":1732182160', '"UpdateTime":1732182161'), /CheckCode mismatch/],
    ['non-string CheckCode', GOLDEN_CFG.replace(/"CheckCode":"[0-9a-f]+"/, '"CheckCode":5'), /CheckCode must be string/],
    ['malformed JSON', GOLDEN_CFG.slice(0, -1), /DeviceInfoCfg: malformed JSON/],
    ['wrong type', GOLDEN_CFG.replace('"SuperPodID":-1', '"SuperPodID":"-1"'), /SuperPodID must be integer/],
    ['not an object', '[]', /must be object/],
  ])('rejects DeviceInfoCfg with %s', (_name, text, reason) => {
    expect(reasonOf(parseDeviceInfoData({ DeviceInfoCfg: text }, NOW))).toMatch(reason);
  });

  it('ignores unknown keys outside and inside the hashed object (ClusterD re-marshals)', () => {
    const withExtra = GOLDEN_CFG.replace('{"DeviceInfo":{', '{"Extra":1,"DeviceInfo":{"Junk":true,');
    expect(encodeDeviceInfoCfg(unwrap(parseDeviceInfoCfg(withExtra)))).toBe(GOLDEN_CFG);
  });

  it.each([
    ['missing DeviceInfoCfg', {}, /DeviceInfoCfg is missing/],
    ['unknown prefix', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend310P': 'Ascend310P-0' }) }, /unknown key "huawei.com\/Ascend310P"/],
    ['unknown suffix', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Broken': '' }) }, /unknown key/],
    ['mixed prefixes', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910': '', 'huawei.com/npu': '' }) }, /mixed resource prefixes/],
    ['bad NPU name in a CSV', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Unhealthy': 'Ascend910-3,3' }) }, /bad NPU name "3"/],
    ['empty CSV element', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910': 'Ascend910-0,,Ascend910-1' }) }, /bad NPU name ""/],
    ['leading zero id', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910': 'Ascend910-03' }) }, /bad NPU name/],
    ['malformed Fault JSON', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': '[{' }) }, /Fault: malformed JSON/],
    ['Fault not an array', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': '{}' }) }, /must be array/],
    ['bad npu_name in Fault', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([fault({ npu_name: 'GPU0' })]) }) }, /bad npu_name "GPU0"/],
    ['unknown fault_type', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([fault({ fault_type: 'Weird' })]) }) }, /unknown fault_type/],
    ['unknown level', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([fault({ fault_level: 'Boom' })]) }) }, /unknown fault_level "Boom"/],
    ['wrong field type in Fault', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': '[{"fault_type":1}]' }) }, /must be string|must have required/],
    ['bad ManuallySeparateNPU', { DeviceInfoCfg: GOLDEN_CFG, ManuallySeparateNPU: 'Ascend910-x' }, /ManuallySeparateNPU: bad NPU name/],
    ['malformed UpgradeFaultReason', { DeviceInfoCfg: GOLDEN_CFG, UpgradeFaultReason: '{"Ascend910-3":[' }, /UpgradeFaultReason: malformed JSON/],
    ['bad upgrade_type', { DeviceInfoCfg: GOLDEN_CFG, UpgradeFaultReason: '{"Ascend910-3":[{"upgrade_time":1,"fault_code":"A","fault_level":"SeparateNPU","upgrade_type":"X"}]}' }, /upgrade_type must be equal to one of/],
  ])('rejects %s', (_name, data, reason) => {
    expect(reasonOf(parseDeviceInfoData(data, NOW))).toMatch(reason);
  });

  it.each([
    ['malformed_json', { DeviceInfoCfg: '{' }],
    ['missing_key', { ManuallySeparateNPU: '' }],
    ['check_code', { DeviceInfoCfg: GOLDEN_CFG.replace('"CheckCode":"9', '"CheckCode":"8') }],
    ['unknown_prefix', { DeviceInfoCfg: cfgWith({ 'huawei.com/GPU': '' }) }],
    ['bad_npu_name', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([fault({ npu_name: 'GPU0' })]) }) }],
    ['bad_npu_name', { DeviceInfoCfg: GOLDEN_CFG, ManuallySeparateNPU: 'Ascend910-x' }],
    ['bad_npu_name', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Unhealthy': 'npu 3' }) }],
    ['unknown_value', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([fault({ fault_level: 'Boom' })]) }) }],
    ['schema', { DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': '[{"fault_type":1}]' }) }],
    ['out_of_range', { DeviceInfoCfg: GOLDEN_CFG.replace('"SuperPodID":-1', '"SuperPodID":2147483648') }],
    ['out_of_range', { DeviceInfoCfg: GOLDEN_CFG.replace('"SuperPodID":-1', '"SuperPodID":1.5') }],
  ] as const)('gives a %s rejection its own metric reason', (kind, data) => {
    const p = parseDeviceInfoData(data, NOW);
    expect(p).toMatchObject({ ok: false, kind });
  });

  it('drops a bad fault code token alone: the valid codes of that entry and of the ConfigMap stay (ClusterD keeps every token)', () => {
    const f = fault({ fault_code: '80E18402,zz,,80E18401', fault_time_and_level_map: { '80E18402': { fault_time: NOW - 1000, fault_level: 'SeparateNPU' }, zz: { fault_time: NOW - 1000, fault_level: 'SeparateNPU' } } });
    const other = makeDeviceFault('CardUnhealthy', 'Ascend910-2', [{ code: '80C98000', level: 'RestartNPU', timeMs: NOW - 1000 }]);
    const d = unwrap(parseDeviceInfoData({ DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([f, other]) }) }, NOW));
    expect(d.dropped).toEqual([
      { reason: expect.stringMatching(/bad fault_code token "zz" on Ascend910-1 dropped/), kind: 'bad_fault_code' },
      { reason: expect.stringMatching(/bad fault_code token "" on Ascend910-1 dropped/), kind: 'bad_fault_code' },
    ]);
    expect(d.lists.faults[0]).toMatchObject({ fault_code: '80E18402,80E18401', fault_time_and_level_map: { '80E18402': { fault_time: NOW - 1000, fault_level: 'SeparateNPU' } } });
    expect(splitDeviceFaults('n', d, NOW).map((x) => [x.device, x.code])).toEqual([['Ascend910-1', '80E18402'], ['Ascend910-1', '80E18401'], ['Ascend910-2', '80C98000']]);
  });

  it('strips spaces in fault_code before splitting, as ClusterD does', () => {
    const d = unwrap(parseDeviceInfoData({ DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([fault({ fault_code: '80E18402, 80E18401' })]) }) }, NOW));
    expect(d.dropped).toEqual([]);
    expect(d.lists.faults[0]?.fault_code).toBe('80E18402,80E18401');
  });

  it('reports zero and future fault_time as warnings, not rejection', () => {
    const faults = [
      makeDeviceFault('CardUnhealthy', 'Ascend910-1', [{ code: '80E18402', level: 'SeparateNPU', timeMs: 0 }]),
      makeDeviceFault('CardUnhealthy', 'Ascend910-2', [{ code: '80E18401', level: 'NotHandleFault', timeMs: NOW + 60_000 }]),
    ];
    const d = unwrap(parseDeviceInfoData(encodeDeviceInfoData({ available: [], faults, updateTimeS: 1 }), NOW));
    expect(d.warnings).toEqual([expect.stringMatching(/80E18402 on Ascend910-1 is not positive/), expect.stringMatching(/80E18401 on Ascend910-2 is in the future/)]);
    const recs = splitDeviceFaults('n1', d, NOW);
    expect(recs.map((r) => r.firstSeenMs)).toEqual([NOW, NOW]); // untrusted times fall back to now
  });

  it('de-duplicates repeated codes with a warning', () => {
    const f = fault({ fault_code: '80E18402,80E18402' });
    const d = unwrap(parseDeviceInfoData({ DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([f]) }), ManuallySeparateNPU: 'Ascend910-1,Ascend910-1' }, NOW));
    expect(d.lists.faults[0]?.fault_code).toBe('80E18402');
    expect(d.manuallySeparateNpu).toEqual(['Ascend910-1']);
    expect(d.warnings).toHaveLength(2);
  });

  it('keeps the device info when SwitchInfoCfg is bad, and reports it separately', () => {
    const d = unwrap(parseDeviceInfoData({ DeviceInfoCfg: GOLDEN_CFG, SwitchInfoCfg: '{"FaultCode":' }, NOW));
    expect(reasonOf(d.switchInfo!)).toMatch(/SwitchInfoCfg: malformed JSON/);
  });

  it('recognises device-info CMs by namespace and prefix', () => {
    expect(nodeNameOfDeviceInfoCm('kube-system', 'mindx-dl-deviceinfo-node-a01')).toBe('node-a01');
    expect(nodeNameOfDeviceInfoCm('mindx-dl', 'mindx-dl-deviceinfo-node-a01')).toBeUndefined();
    expect(nodeNameOfDeviceInfoCm('kube-system', 'mindx-dl-nodeinfo-node-a01')).toBeUndefined();
  });
});

describe('splitDeviceFaults (ClusterD splitDeviceFault)', () => {
  it('splits the golden faults into one record per code with its own level and source', () => {
    const d = unwrap(parseDeviceInfoData(goldenData(), NOW));
    expect(splitDeviceFaults('node-a01', d, NOW)).toEqual([
      { node: 'node-a01', device: 'Ascend910-6', source: 'network', code: '81078603', level: 'PreSeparateNPU', reportedLevel: 'PreSeparateNPU', firstSeenMs: 1732182100456 },
      { node: 'node-a01', device: 'Ascend910-3', source: 'npu', code: '80E18402', level: 'SeparateNPU', reportedLevel: 'SeparateNPU', firstSeenMs: 1732182000123 },
      { node: 'node-a01', device: 'Ascend910-3', source: 'npu', code: '80E18401', level: 'NotHandleFault', reportedLevel: 'NotHandleFault', firstSeenMs: 1732182000123 },
    ]);
  });

  it('turns an empty-code ManuallySeparateNPU entry and the CSV key into the pseudo-code, once per chip', () => {
    const pseudo = { ...fault({ npu_name: 'Ascend910-5', fault_code: '', fault_time_and_level_map: {} }), fault_level: 'ManuallySeparateNPU', large_model_fault_level: 'ManuallySeparateNPU', fault_handling: 'ManuallySeparateNPU' };
    const data: DeviceInfoData = unwrap(parseDeviceInfoData(encodeDeviceInfoData({
      available: [], faults: [pseudo], updateTimeS: 1, manuallySeparateNpu: ['Ascend910-5', 'Ascend910-7'],
      upgradeFaultReason: { 'Ascend910-7': [{ upgrade_time: 1732182000999, fault_code: '80E18005', fault_level: 'ManuallySeparateNPU', upgrade_type: 'FaultFrequency' }] },
    }), NOW));
    const recs = splitDeviceFaults('n', data, NOW);
    expect(recs.map((r) => [r.device, r.code, r.level, r.source, r.firstSeenMs])).toEqual([
      ['Ascend910-5', 'ManuallySeparateNPU', 'ManuallySeparateNPU', 'npu', NOW],
      ['Ascend910-7', 'ManuallySeparateNPU', 'ManuallySeparateNPU', 'npu', 1732182000999],
    ]);
  });

  it('falls back to the entry level when a code is missing from fault_time_and_level_map', () => {
    const f = fault({ fault_code: '80E18402,8C084E00' });
    const recs = splitDeviceFaults('n', unwrap(parseDeviceInfoData({ DeviceInfoCfg: cfgWith({ 'huawei.com/Ascend910-Fault': encodeDeviceFaultList([f]) }) }, NOW)), NOW);
    expect(recs.find((r) => r.code === '8C084E00')).toMatchObject({ level: 'SeparateNPU', firstSeenMs: NOW });
  });

  it('maps switch levels and groups ports per assembled code (source switch)', () => {
    const d = unwrap(parseDeviceInfoData({ DeviceInfoCfg: GOLDEN_CFG, SwitchInfoCfg: GOLDEN_SWITCH }, NOW));
    expect(deviceInfoRecords('node-a01', d, NOW).filter((r) => r.source === 'switch')).toEqual([
      { node: 'node-a01', source: 'switch', code: '[0x00f103b0,155904,na,na]', level: 'SeparateNPU', reportedLevel: 'Separate', firstSeenMs: 1732182000500, detail: '[0x00f103b0,155904,na,na]_0_7' },
    ]);
  });

  it.each([
    ['unknown FaultLevel', GOLDEN_SWITCH.replace('"FaultLevel":"Separate"', '"FaultLevel":"SeparateNPU"'), /unknown FaultLevel/],
    ['unknown map level', GOLDEN_SWITCH.replace('"fault_level":"Separate"', '"fault_level":"Reset"'), /unknown fault_level "Reset"/],
    ['bad map key', GOLDEN_SWITCH.replace('na]_0_7"', 'na]"'), /bad FaultTimeAndLevelMap key/],
    ['malformed FaultCode element', GOLDEN_SWITCH.replace('"{\\"EventType', '"{\\"EventType\\"'), /FaultCode\[0\]: malformed JSON/],
    ['wrong type in FaultCode element', GOLDEN_SWITCH.replace('\\"SwitchChipId\\":0', '\\"SwitchChipId\\":\\"0\\"'), /SwitchChipId must be integer/],
    ['wrong type', GOLDEN_SWITCH.replace('"UpdateTime":1732182160', '"UpdateTime":"x"'), /UpdateTime must be integer/],
  ])('rejects SwitchInfoCfg with %s', (_name, text, reason) => {
    expect(reasonOf(parseSwitchInfo(text, NOW))).toMatch(reason);
  });

  it('warns on future switch fault_time and records it at now', () => {
    const v = unwrap(parseSwitchInfo(GOLDEN_SWITCH.replace('"fault_time":1732182000500', `"fault_time":${NOW + 1}`), NOW));
    expect(v.warnings).toEqual([expect.stringMatching(/in the future/)]);
    expect(switchFaultRecords('n', v, NOW)[0]?.firstSeenMs).toBe(NOW);
  });
});
