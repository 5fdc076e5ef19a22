import type { FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import {
  FILTER_FAULT_CODE_ANNOTATION as CODE,
  FILTER_FAULT_LEVEL_ANNOTATION as LEVEL,
  customFilterRules,
  customFilterVerdict,
  parseFilterAnnotation,
} from './custom-filter.ts';

const S = 1000;
const lf = (code: string, level: NpuFaultLevel, firstSeenMs = 0, source: FaultSource = 'npu', reportedLevel: string = level): LeveledFault => ({
  fault: { node: 'n1', device: source === 'switch' ? undefined : 'Ascend910-0', source, code, level, reportedLevel, firstSeenMs },
  level,
  reasons: [],
});

describe('custom fault filter annotations (docs/rules.md#filter.custom)', () => {
  it('parses key[:seconds] lists, full-width separators and bracketed switch codes', () => {
    const r = parseFilterAnnotation('80C98009:30，80CB8009：120, [0x08520003,na,L2,na]:90,8C204E00');
    expect([...r.rules]).toEqual([
      ['80C98009', 30 * S],
      ['80CB8009', 120 * S],
      ['[0x08520003,na,L2,na]', 90 * S],
      ['8C204E00', 60 * S],
    ]);
    expect(r.warnings).toEqual([]);
  });

  it('unwraps a bracketed list', () => {
    expect([...parseFilterAnnotation('[80C98009:30,80CB8009]').rules.keys()]).toEqual(['80C98009', '80CB8009']);
  });

  it.each([['86401'], ['-5'], ['1.5'], ['abc'], ['']])('a bad timeout %j falls back to 60 s with a warning', (t) => {
    const r = parseFilterAnnotation(`80C98009:${t}`);
    expect(r.rules.get('80C98009')).toBe(60 * S);
    expect(r.warnings).toHaveLength(1);
  });

  it('accepts 0 and 86400', () => {
    expect([...parseFilterAnnotation('A:0,B:86400').rules.values()]).toEqual([0, 86_400 * S]);
  });

  it('bounds the number of rules of a hostile annotation', () => {
    const r = parseFilterAnnotation(Array.from({ length: 1000 }, (_, i) => `C${i}`).join(','));
    expect(r.rules.size).toBe(256);
    expect(r.warnings).toHaveLength(1);
  });
});

describe('custom filter verdicts', () => {
  it('hides a matching code while now - received <= timeout, then reports it', () => {
    const rules = customFilterRules({ [CODE]: '80C98009:30' });
    const f = lf('80c98009', 'RestartRequest', 1000);
    expect(customFilterVerdict(f, rules, 31 * S)).toMatchObject({ action: 'hide', untilMs: 31 * S + 1 });
    expect(customFilterVerdict(f, rules, 31 * S + 1)).toMatchObject({ action: 'pass' });
  });

  it('code rules take precedence over level rules', () => {
    const rules = customFilterRules({ [CODE]: '80C98009:10', [LEVEL]: 'RestartRequest:100' });
    expect(customFilterVerdict(lf('80C98009', 'RestartRequest'), rules, 50 * S).action).toBe('pass');
    expect(customFilterVerdict(lf('80CB8009', 'RestartRequest'), rules, 50 * S).action).toBe('hide');
  });

  it('switch faults match by assembled code or by switch level aliases', () => {
    const rules = customFilterRules({ [LEVEL]: 'SeparateFault:60' });
    expect(customFilterVerdict(lf('[0x00f103b0,155904,na,na]', 'SeparateNPU', 0, 'switch', 'Separate'), rules, S).action).toBe('hide');
    const byCode = customFilterRules({ [CODE]: '[0x08520003,na,L2,na]:60' });
    expect(customFilterVerdict(lf('[0x08520003,na,L2,na]', 'NotHandleFault', 0, 'switch', 'NotHandle'), byCode, S).action).toBe('hide');
  });

  it('MindIE server jobs hide RestartRequest for 60 s (docs/rules.md#filter.mindie-hold); the job annotation overrides it', () => {
    const mindie = customFilterRules(undefined, { mindIeServerSubscribed: true });
    const f = lf('80C98008', 'RestartRequest');
    const held = customFilterVerdict(f, mindie, 60 * S);
    expect(held).toMatchObject({ action: 'hide', untilMs: 60 * S + 1 });
    expect(held.reasons[0]?.rule).toBe('mindie-restart-request-hold');
    expect(customFilterVerdict(f, mindie, 60 * S + 1).action).toBe('pass');
    expect(customFilterVerdict(f, customFilterRules({ [LEVEL]: 'RestartRequest:5' }, { mindIeServerSubscribed: true }), 6 * S).action).toBe('pass');
    expect(customFilterVerdict(f, customFilterRules(undefined, { mindIeServerSubscribed: false }), S).action).toBe('pass');
  });

  it('uses ClusterD receive time when given', () => {
    const rules = customFilterRules({ [CODE]: '80C98009:30' });
    expect(customFilterVerdict(lf('80C98009', 'RestartRequest', 0), rules, 40 * S, 20 * S).action).toBe('hide');
  });
});
