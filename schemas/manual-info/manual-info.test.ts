import { encodeManualInfo, encodeManualInfoData, parseManualInfo, parseManualInfoData } from './manual-info.ts';

// The shape of docs/formats.md#manual-info, filled with example values.
const SAMPLE = '{"Total":["Ascend910-3","Ascend910-5"],"Detail":{"Ascend910-3":[{"FaultCode":"8C084E00","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1732182000999}],"Ascend910-5":[{"FaultCode":"80E18005","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1732182100000},{"FaultCode":"8C084E00","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1732182100001}]}}';

const unwrap = <T>(p: { ok: true; value: T } | { ok: false; reason: string }): T => {
  if (!p.ok) throw new Error(`unexpected rejection: ${p.reason}`);
  return p.value;
};

describe('manual-info', () => {
  it('parse -> encode is byte-exact', () => {
    expect(encodeManualInfo(unwrap(parseManualInfo(SAMPLE)))).toBe(SAMPLE);
  });

  it('sorts Detail keys as a Go map and keeps nil vs empty', () => {
    const v = { Total: [], Detail: { 'Ascend910-5': null, 'Ascend910-10': [] } };
    expect(encodeManualInfo(v)).toBe('{"Total":[],"Detail":{"Ascend910-10":[],"Ascend910-5":null}}');
    expect(encodeManualInfo({ Total: null, Detail: null })).toBe('{"Total":null,"Detail":null}');
  });

  it('round-trips the whole data map', () => {
    const data = { 'node-b': SAMPLE, 'node-a': '{"Total":null,"Detail":null}' };
    const parsed = unwrap(parseManualInfoData(data));
    expect(encodeManualInfoData(parsed)).toEqual(data);
    expect(Object.keys(encodeManualInfoData(parsed))).toEqual(['node-a', 'node-b']);
  });

  it.each([
    ['malformed JSON', '{"Total":[', /malformed JSON/],
    ['wrong type', SAMPLE.replace('"LastSeparateTime":1732182000999', '"LastSeparateTime":"1732182000999"'), /LastSeparateTime must be integer/],
    ['missing Detail', '{"Total":[]}', /must have required property 'Detail'/],
    ['bad chip name', SAMPLE.replace('"Total":["Ascend910-3"', '"Total":["chip three"'), /bad NPU name "chip three"/],
    ['bad Detail key', '{"Total":[],"Detail":{"x":[]}}', /bad NPU name "x"/],
  ])('rejects %s', (_n, text, reason) => {
    const p = parseManualInfo(text);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.reason).toMatch(reason);
    const d = parseManualInfoData({ 'node-a': text });
    expect(d.ok ? '' : d.reason).toMatch(/^node node-a: /);
  });
});
