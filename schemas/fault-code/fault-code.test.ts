import {
  DEFAULT_FAULT_CODE_CONFIG,
  DEFAULT_FAULT_CODE_TABLE,
  buildFaultCodeTable,
  encodeFaultCode,
  parseFaultCode,
  type FaultCodeConfig,
} from './fault-code.ts';

const empty: FaultCodeConfig = {
  NotHandleFaultCodes: [], SubHealthFaultCodes: [], RestartRequestCodes: [], RestartBusinessCodes: [],
  FreeRestartNPUCodes: [], RestartNPUCodes: [], PreSeparateNPUCodes: [], SeparateNPUCodes: [],
};

describe('faultCode.json', () => {
  it('parses the lists and ignores unknown keys; missing lists are empty', () => {
    const r = parseFaultCode('{"RestartNPUCodes":["80e18005"],"Comment":"x","SeparateNPUCodes":null}');
    expect(r).toEqual({ ok: true, value: { ...empty, RestartNPUCodes: ['80e18005'] } });
  });

  it('round-trips the default table through encode/parse', () => {
    const text = encodeFaultCode(DEFAULT_FAULT_CODE_CONFIG);
    expect(text.startsWith('{"NotHandleFaultCodes":["81078603"')).toBe(true);
    expect(parseFaultCode(text)).toEqual({ ok: true, value: DEFAULT_FAULT_CODE_CONFIG });
  });

  it.each([
    ['not JSON', '{', /malformed JSON/],
    ['an array document', '[]', /must be object/],
    ['a list that is a string', '{"RestartNPUCodes":"80E18005"}', /RestartNPUCodes/],
    ['a number code', '{"RestartNPUCodes":[2162262021]}', /RestartNPUCodes\/0/],
    ['a non-hex code', '{"SeparateNPUCodes":["0xZZ"]}', /SeparateNPUCodes\/0/],
  ])('rejects %s', (_name, text, reason) => {
    const r = parseFaultCode(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it('gives the spec levels for the representative codes (`component/ascend-device-plugin/build/faultCode.json`)', () => {
    const t = DEFAULT_FAULT_CODE_TABLE.chip;
    expect(t.get('80E01801')).toBe('RestartBusiness');
    expect(t.get('80C98009')).toBe('RestartRequest');
    expect(t.get('80CB8009')).toBe('RestartRequest');
    expect(t.get('81078603')).toBe('NotHandleFault');
    expect(t.get('40F84E00')).toBe('RestartNPU');
    expect(t.get('8C084E00')).toBe('FreeRestartNPU');
    expect(t.get('80E18005')).toBe('RestartNPU');
    expect(t.get('80E18402')).toBe('SeparateNPU');
    expect(t.get('110001024')).toBe('PreSeparateNPU');
    expect(t.get('8C2FA001')).toBe('SubHealthFault');
    expect(t.get('80818C05')).toBe('SeparateNPU');
    expect(t.get('80818C06')).toBe('SubHealthFault');
  });

  it('keeps the most serious level of a duplicated code (A2301001)', () => {
    expect(DEFAULT_FAULT_CODE_TABLE.chip.get('A2301001')).toBe('SeparateNPU');
  });

  it('mirrors parameter-plane codes into the network table; restart levels become NotHandleFault there', () => {
    const t = buildFaultCodeTable({ ...empty, RestartNPUCodes: ['81078607'], SeparateNPUCodes: ['81078603'], SubHealthFaultNetworkCodes: ['110000002'] });
    expect(t.network.get('81078603')).toBe('SeparateNPU');
    expect(t.network.get('81078607')).toBe('NotHandleFault');
    expect(t.network.get('110000002')).toBe('SubHealthFault');
    expect(t.chip.get('81078607')).toBe('RestartNPU');
    expect(DEFAULT_FAULT_CODE_TABLE.network.get('110001024')).toBe('PreSeparateNPU');
  });

  it('is case-insensitive on lookup keys', () => {
    expect(buildFaultCodeTable({ ...empty, RestartNPUCodes: ['80e18005'] }).chip.get('80E18005')).toBe('RestartNPU');
  });
});
