import { DEFAULT_PUBLIC_FAULT_CONFIG, parsePublicFaultConfig, publicFaultLevel } from './public-fault-config.ts';
import { encodePublicFault, parsePublicFault, parsePublicFaultData, validatePublicFault } from './public-fault.ts';
import { publicFaultItems } from './public-fault-records.ts';

// Golden sample (docs/formats.md#public-fault), compacted. Its times (Nov 2024) break the "not before 2025-01-01" rule.
const SPEC_EXAMPLE =
  '{"id":"ccae-2026112100001","timestamp":1732182000000,"version":"1.0","resource":"CCAE","faults":[{"faultId":"f-000000017","faultType":"NPU","faultCode":"220001001","faultTime":1732181999000,"assertion":"occur","faultLocation":{"npuIp":"10.0.0.8"},"influence":[{"nodeName":"node-a01","nodeSN":"","deviceIds":[0,1]}],"description":"optical module down"}]}';
const T = 1795255200000; // 2026-11-21
const VALID = SPEC_EXAMPLE.replace('1732182000000', String(T)).replace('1732181999000', String(T - 1000));

const unwrap = <T>(p: { ok: true; value: T } | { ok: false; reason: string }): T => {
  if (!p.ok) throw new Error(`unexpected rejection: ${p.reason}`);
  return p.value;
};
const reasonOf = (p: { ok: boolean; reason?: string }): string => {
  expect(p.ok).toBe(false);
  return p.reason ?? '';
};
type Json = Record<string, unknown>;
/** VALID parsed, edited, re-validated. */
const edited = (edit: (v: Json & { faults: Array<Json & { influence: Json[] }> }) => void): ReturnType<typeof validatePublicFault> => {
  const v = JSON.parse(VALID) as Json & { faults: Array<Json & { influence: Json[] }> };
  edit(v);
  return validatePublicFault(v);
};
const fault0 = (v: { faults: Json[] }): Json => v.faults[0]!;

describe('public-fault golden bytes (docs/formats.md#public-fault)', () => {
  it('parse -> encode reproduces the payload byte for byte', () => {
    expect(encodePublicFault(unwrap(parsePublicFault(VALID)))).toBe(VALID);
  });

  it('the spec example itself is rejected by the timestamp rule (its times are in 2024)', () => {
    expect(reasonOf(parsePublicFault(SPEC_EXAMPLE))).toMatch(/^timestamp: must be a 13-digit ms time not before 2025-01-01/);
  });

  it('reads the CM data key and fills absent optional fields with Go zero values', () => {
    const text = VALID.replace(',"faultLocation":{"npuIp":"10.0.0.8"}', '').replace(',"description":"optical module down"', '').replace('"nodeSN":"",', '');
    const v = unwrap(parsePublicFaultData({ PublicFault: text }));
    expect(v.faults[0]).toMatchObject({ faultLocation: null, description: '', influence: [{ nodeName: 'node-a01', nodeSN: '', deviceIds: [0, 1] }] });
    expect(encodePublicFault(v)).toContain('"faultLocation":null');
  });
});

describe('validatePublicFault: one reason per rule (docs/rules.md#ingest.public-faults)', () => {
  it.each<[string, (v: Json & { faults: Array<Json & { influence: Json[] }> }) => void, RegExp]>([
    ['id too short', (v) => { v['id'] = 'short'; }, /^id: must be 8-128 characters/],
    ['id bad chars', (v) => { v['id'] = 'ccae/2026/1121'; }, /^id: must be 8-128 characters/],
    ['id too long', (v) => { v['id'] = 'x'.repeat(129); }, /^id: /],
    ['timestamp 10 digits', (v) => { v['timestamp'] = 1795255200; }, /^timestamp: /],
    ['timestamp before 2025', (v) => { v['timestamp'] = Date.UTC(2024, 11, 31); }, /^timestamp: /],
    ['version', (v) => { v['version'] = '2.0'; }, /^version: must be 1.0/],
    ['resource', (v) => { v['resource'] = 'someone'; }, /^resource: "someone" is not in publicFaultResource/],
    ['no faults', (v) => { v.faults = []; }, /^faults: must have 1-100 entries, got 0/],
    ['101 faults', (v) => { v.faults = Array.from({ length: 101 }, () => v.faults[0]!); }, /^faults: must have 1-100 entries, got 101/],
    ['faultId', (v) => { fault0(v)['faultId'] = 'f 1'; }, /^faults\[0\]\.faultId: /],
    ['faultType', (v) => { fault0(v)['faultType'] = 'GPU'; }, /^faults\[0\]\.faultType: must be one of NPU\|Node\|Network\|Storage/],
    ['faultCode format', (v) => { fault0(v)['faultCode'] = '22000100'; }, /^faults\[0\]\.faultCode: must be 9 digits/],
    ['faultCode unknown', (v) => { fault0(v)['faultCode'] = '999999999'; }, /^faults\[0\]\.faultCode: 999999999 is not in publicFaultCode/],
    ['faultTime', (v) => { fault0(v)['faultTime'] = 0; }, /^faults\[0\]\.faultTime: /],
    ['assertion', (v) => { fault0(v)['assertion'] = 'happen'; }, /^faults\[0\]\.assertion: must be one of occur\|recover\|once/],
    ['no influence', (v) => { v.faults[0]!.influence = []; }, /^faults\[0\]\.influence: must have 1-1000 entries, got 0/],
    ['1001 influences', (v) => { v.faults[0]!.influence = Array.from({ length: 1001 }, () => ({ nodeName: 'n' })); }, /^faults\[0\]\.influence: must have 1-1000 entries, got 1001/],
    ['no node', (v) => { v.faults[0]!.influence = [{ nodeName: '', nodeSN: '', deviceIds: [0] }]; }, /^faults\[0\]\.influence\[0\]: needs a nodeName or a nodeSN/],
    ['device id 32', (v) => { v.faults[0]!.influence[0]!['deviceIds'] = [32]; }, /deviceIds: id 32 is outside \[0, 32\)/],
    ['device id negative', (v) => { v.faults[0]!.influence[0]!['deviceIds'] = [-1]; }, /deviceIds: id -1 is outside/],
    ['device ids repeated', (v) => { v.faults[0]!.influence[0]!['deviceIds'] = [1, 1]; }, /deviceIds: ids must be unique/],
    ['33 device ids', (v) => { v.faults[0]!.influence[0]!['deviceIds'] = Array.from({ length: 33 }, (_, i) => i); }, /deviceIds: at most 32 ids, got 33/],
    ['wrong type', (v) => { v['timestamp'] = String(T); }, /^schema: \/timestamp must be integer/],
    ['wrong nested type', (v) => { v.faults[0]!.influence[0]!['deviceIds'] = ['0']; }, /^schema: .*deviceIds\/0 must be integer/],
    ['missing field', (v) => { delete v['version']; }, /^schema: .*must have required property 'version'/],
  ])('%s', (_n, edit, reason) => {
    expect(reasonOf(edited(edit))).toMatch(reason);
  });

  it.each([
    ['malformed JSON', VALID.slice(0, 40), /^PublicFault: malformed JSON/],
    ['not an object', '[1]', /^schema: \/ must be object/],
    ['null', 'null', /^request: empty public fault/],
    ['oversized', `${VALID.slice(0, -1)},"pad":"${'x'.repeat(1024 * 1024)}"}`, /^size: \d+ bytes is over the 1048576-byte limit/],
  ])('rejects %s text', (_n, text, reason) => {
    expect(reasonOf(parsePublicFault(text))).toMatch(reason);
  });

  it('rejects a CM without the data key', () => {
    expect(reasonOf(parsePublicFaultData({ Other: VALID }))).toMatch(/PublicFault is missing/);
  });

  it('accepts a node identified by serial number only, and custom resources/codes from config', () => {
    const cfg = unwrap(parsePublicFaultConfig('{"publicFaultCode":{"SubHealthFaultCodes":["300001001"]},"publicFaultResource":["myProbe"]}'));
    const text = VALID.replace('"CCAE"', '"myProbe"').replace('220001001', '300001001').replace('"nodeName":"node-a01","nodeSN":""', '"nodeName":"","nodeSN":"SN123"');
    expect(unwrap(parsePublicFault(text, cfg)).resource).toBe('myProbe');
    expect(reasonOf(parsePublicFault(VALID, cfg))).toMatch(/^resource: /);
  });
});

describe('public fault configuration', () => {
  it('takes the most severe level for a code in several lists', () => {
    expect(publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, '220001001')).toBe('SeparateNPU');
    expect(publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, '110001022')).toBe('PreSeparateNPU');
    expect(publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, '200001006')).toBe('NotHandleFault');
    expect(publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, '123456789')).toBeUndefined();
    const both = unwrap(parsePublicFaultConfig('{"publicFaultCode":{"NotHandleFaultCodes":["100000001"],"SeparateNPUCodes":["100000001"]},"publicFaultResource":[]}'));
    expect(publicFaultLevel(both, '100000001')).toBe('SeparateNPU');
  });

  it.each([
    ['malformed', '{', /malformed JSON/],
    ['bad code', '{"publicFaultCode":{"SeparateNPUCodes":["12"]},"publicFaultResource":[]}', /not 9 digits/],
    ['wrong type', '{"publicFaultCode":{"SeparateNPUCodes":"220001001"},"publicFaultResource":[]}', /must be array,null/],
  ])('rejects a %s config', (_n, text, reason) => {
    expect(reasonOf(parsePublicFaultConfig(text))).toMatch(reason);
  });
});

describe('DEFAULT_PUBLIC_FAULT_CONFIG', () => {
  it('has every code of the file ClusterD ships (10 SubHealth, 13 SeparateNPU), not only the representative ones', () => {
    const c = DEFAULT_PUBLIC_FAULT_CONFIG.publicFaultCode;
    expect([c.NotHandleFaultCodes?.length, c.SubHealthFaultCodes?.length, c.SeparateNPUCodes?.length, c.PreSeparateNPUCodes?.length]).toEqual([5, 10, 13, 2]);
    expect(publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, '010001004')).toBe('SubHealthFault');
    expect(publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, '120001003')).toBe('SeparateNPU');
  });
});

describe('publicFaultItems', () => {
  it('one item per influence of each fault, in message order, level from the config, time in ms', () => {
    const out = publicFaultItems(unwrap(parsePublicFault(VALID)), { nodeBySn: () => undefined });
    expect(out.unresolved).toEqual([]);
    expect(out.items).toEqual([{ assertion: 'occur', node: 'node-a01', resource: 'CCAE', faultId: 'f-000000017', faultType: 'NPU', code: '220001001', level: 'SeparateNPU', faultTimeMs: T - 1000, devIds: [0, 1] }]);
  });

  it('resolves nodeSN through the lookup; a fault with an unknown SN is left out whole (ClusterD checkNodeNameOrSN)', () => {
    const text = VALID.replace('"influence":[{"nodeName":"node-a01","nodeSN":"","deviceIds":[0,1]}]',
      '"influence":[{"nodeName":"","nodeSN":"SN1","deviceIds":[3]},{"nodeName":"","nodeSN":"SN9","deviceIds":[1]}]');
    const sns: Record<string, string> = { SN1: 'node-b' };
    expect(publicFaultItems(unwrap(parsePublicFault(text)), { nodeBySn: (sn) => sns[sn] })).toEqual({ items: [], unresolved: ['f-000000017'] });
    sns['SN9'] = 'node-c';
    expect(publicFaultItems(unwrap(parsePublicFault(text)), { nodeBySn: (sn) => sns[sn] }).items.map((i) => [i.node, i.devIds])).toEqual([['node-b', [3]], ['node-c', [1]]]);
  });

  it('an invalid fault is left out and named, the message\'s others kept (ClusterD checkFaultsAndFlush)', () => {
    const v = JSON.parse(VALID) as { faults: Array<Record<string, unknown> & { influence: Array<Record<string, unknown>> }> };
    const nodeWide = { ...v.faults[0]!, faultId: 'f-node-wide', influence: [{ nodeName: 'node-a01', nodeSN: '', deviceIds: null }] };
    const badName = { ...v.faults[0]!, faultId: 'f-bad-name', influence: [{ nodeName: 'Node_A', nodeSN: '', deviceIds: [1] }] };
    const parsed = unwrap(validatePublicFault({ ...v, faults: [nodeWide, v.faults[0], badName] }));
    expect(parsed.faults.map((f) => f.faultId)).toEqual(['f-000000017']);
    expect(parsed.dropped?.map((d) => [d.faultId, d.reason])).toEqual([
      ['f-node-wide', expect.stringMatching(/^faults\[0\]\.influence\[0\]\.deviceIds: at least 1 id/)],
      ['f-bad-name', expect.stringMatching(/^faults\[2\]\.influence\[0\]\.nodeName: not a valid node name/)],
    ]);
    expect(reasonOf(validatePublicFault({ ...v, faults: [nodeWide, badName] }))).toMatch(/^no valid fault; faults\[0\]\.influence\[0\]\.deviceIds/);
  });
});
