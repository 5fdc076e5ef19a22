import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import {
  DEFAULT_MANUAL_SEPARATE_POLICY,
  MANUAL_SEPARATE_POLICY_SCHEMA,
  encodeManualSeparatePolicy,
  parseManualSeparatePolicy,
} from './manual-separate-policy.ts';

const shipped = `enabled: true
separate:
  fault_window_hours: 24
  fault_threshold: 3
release:
  fault_free_hours: 48
`;

describe('manually_separate_policy.conf', () => {
  it('parses the shipped policy and encodes it back byte for byte', () => {
    expect(parseManualSeparatePolicy(shipped)).toEqual({ ok: true, value: DEFAULT_MANUAL_SEPARATE_POLICY });
    expect(encodeManualSeparatePolicy(DEFAULT_MANUAL_SEPARATE_POLICY)).toBe(shipped);
    expect(new Ajv({ strict: true }).compile(MANUAL_SEPARATE_POLICY_SCHEMA as object)(parseYaml(shipped))).toBe(true);
  });

  it('fills missing fields with defaults; an empty document is the default policy', () => {
    expect(parseManualSeparatePolicy('separate:\n  fault_threshold: 1\n')).toEqual({
      ok: true,
      value: { ...DEFAULT_MANUAL_SEPARATE_POLICY, separate: { fault_window_hours: 24, fault_threshold: 1 } },
    });
    expect(parseManualSeparatePolicy('')).toEqual({ ok: true, value: DEFAULT_MANUAL_SEPARATE_POLICY });
  });

  it.each([
    ['window 1 and 720', 'separate: {fault_window_hours: 1}', true],
    ['window 720', 'separate: {fault_window_hours: 720}', true],
    ['window 0', 'separate: {fault_window_hours: 0}', false],
    ['window 721', 'separate: {fault_window_hours: 721}', false],
    ['threshold 50', 'separate: {fault_threshold: 50}', true],
    ['threshold 51', 'separate: {fault_threshold: 51}', false],
    ['threshold 0', 'separate: {fault_threshold: 0}', false],
    ['free hours -1 (never)', 'release: {fault_free_hours: -1}', true],
    ['free hours 240', 'release: {fault_free_hours: 240}', true],
    ['free hours 241', 'release: {fault_free_hours: 241}', false],
    ['free hours -2', 'release: {fault_free_hours: -2}', false],
    ['free hours 0', 'release: {fault_free_hours: 0}', false],
    ['a string threshold', 'separate: {fault_threshold: "3"}', false],
    ['a fractional window', 'separate: {fault_window_hours: 1.5}', false],
    ['enabled as a string', 'enabled: "yes"', false],
    ['separate as a list', 'separate: [1, 2]', false],
    ['a list document', '- 1', false],
    ['malformed YAML', 'separate: {fault_threshold: 3', false],
  ])('%s -> ok=%s', (_n, text, want) => {
    const r = parseManualSeparatePolicy(text);
    expect(r.ok).toBe(want);
    if (!r.ok) expect(r.reason).toMatch(/^manually_separate_policy.conf: /);
  });

  it('refuses alias bombs', () => {
    const bomb = 'a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n';
    expect(parseManualSeparatePolicy(bomb).ok).toBe(false);
  });
});
