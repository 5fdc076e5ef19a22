import { createHash } from 'node:crypto';
import {
  RESET_CHECK_CODE_KEY,
  RESET_JSON_KEY,
  RESTART_TYPE_KEY,
  encodeResetConfigData,
  encodeTaskResetInfo,
  parseResetConfigData,
  parseTaskResetInfo,
  resetConfigName,
  resetInfoCheckCode,
  type TaskResetInfo,
} from './reset-config.ts';

// Golden sample (docs/formats.md#reset-config), byte for byte.
const INITIAL_JSON =
  '{"RankList":[],"UpdateTime":1732180000,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';
const INITIAL_CODE = 'c22a7c8962c1619c94f593ef948e7dab69c28a2e32eeda4e3725816eb4245ade';
const FAULT_JSON =
  '{"RankList":[{"RankId":8,"LogicId":0,"Status":"fault","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""},' +
  '{"RankId":9,"LogicId":0,"Status":"fault","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""}],' +
  '"UpdateTime":1732182200,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":true}';
const FAULT_CODE = '8e44dcc2065e8dc79e85297bc4dfa68b7be65129e27ffa45fa1b2b90e55b0077';

// Device-plugin style (ErrorCode [] and hex), my own example.
const DP_JSON =
  '{"RankList":[{"RankId":3,"LogicId":3,"Status":"unrecovered","Policy":"reset","InitialPolicy":"restart_request",' +
  '"ErrorCode":[2162169857,2160067593],"ErrorCodeHex":"80E01801,80C98009"}],"UpdateTime":1732182300,"RetryTime":2,' +
  '"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';

const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const parsed = (text: string): TaskResetInfo => {
  const r = parseTaskResetInfo(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};

describe('reset.json golden bytes (docs/formats.md#reset-config)', () => {
  it.each([
    ['initial', INITIAL_JSON, INITIAL_CODE],
    ['after fault 8,9', FAULT_JSON, FAULT_CODE],
  ])('%s: parse -> encode reproduces the bytes and the checkCode verifies', (_n, text, code) => {
    const info = parsed(text);
    expect(encodeTaskResetInfo(info)).toBe(text);
    expect(resetInfoCheckCode(info)).toBe(code);
    expect(sha(text)).toBe(code); // the sample is itself canonical
    const data = parseResetConfigData({ [RESET_JSON_KEY]: text, [RESET_CHECK_CODE_KEY]: code });
    expect(data.ok).toBe(true);
  });

  it('round-trips device-plugin ranks (ErrorCode [] vs null is preserved)', () => {
    expect(encodeTaskResetInfo(parsed(DP_JSON))).toBe(DP_JSON);
    const withEmpty = DP_JSON.replace('[2162169857,2160067593]', '[]');
    expect(encodeTaskResetInfo(parsed(withEmpty))).toBe(withEmpty);
  });

  it('canonicalises like Go: key order rewritten, unknown keys dropped, absent fields zero', () => {
    const shuffled = '{"RestartFaultProcess":false,"Extra":{"x":1},"GracefulExit":0,"FaultFlushing":false,' +
      '"RetryTime":0,"UpdateTime":1732180000,"RankList":[]}';
    expect(encodeTaskResetInfo(parsed(shuffled))).toBe(INITIAL_JSON);
    expect(encodeTaskResetInfo(parsed('{"UpdateTime":5}'))).toBe(
      '{"RankList":null,"UpdateTime":5,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}');
    expect(encodeTaskResetInfo(parsed('{"RankList":[{"RankId":1}]}'))).toBe(
      '{"RankList":[{"RankId":1,"LogicId":0,"Status":"","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""}],' +
      '"UpdateTime":0,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}');
  });

  it('accepts null scalars and pretty-printed text like Go (null leaves the zero value)', () => {
    const pretty = '{\n  "RankList": [\n    {"RankId": 1, "LogicId": 1, "Status": "unrecovered", "Policy": "reset",\n' +
      '     "InitialPolicy": null, "ErrorCode": [], "ErrorCodeHex": "8C03A000"}\n  ],\n  "UpdateTime": 1000000000,\n  "RetryTime": 1\n}';
    expect(encodeTaskResetInfo(parsed(pretty))).toBe(
      '{"RankList":[{"RankId":1,"LogicId":1,"Status":"unrecovered","Policy":"reset","InitialPolicy":"","ErrorCode":[],' +
      '"ErrorCodeHex":"8C03A000"}],"UpdateTime":1000000000,"RetryTime":1,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}');
  });

  it('escapes like Go', () => {
    const info = { ...parsed(INITIAL_JSON), RankList: [{ ...parsed(FAULT_JSON).RankList![0]!, Status: '<&>' }] };
    expect(encodeTaskResetInfo(info)).toContain('"Status":"\\u003c\\u0026\\u003e"');
  });
});

describe('reset-config data map', () => {
  it('encode keeps restartType and unknown keys, replaces reset.json and checkCode', () => {
    const info = parsed(FAULT_JSON);
    const data = encodeResetConfigData(info, {
      [RESET_JSON_KEY]: INITIAL_JSON,
      [RESET_CHECK_CODE_KEY]: INITIAL_CODE,
      [RESTART_TYPE_KEY]: 'hotReset',
      other: 'kept',
    });
    expect(data).toEqual({ [RESET_JSON_KEY]: FAULT_JSON, [RESET_CHECK_CODE_KEY]: FAULT_CODE, [RESTART_TYPE_KEY]: 'hotReset', other: 'kept' });
    expect(encodeResetConfigData(info, undefined, 'podReschedule')[RESTART_TYPE_KEY]).toBe('podReschedule');
    expect(Object.keys(encodeResetConfigData(info))).toEqual([RESET_JSON_KEY, RESET_CHECK_CODE_KEY]);
  });

  it('a __proto__ data key cannot pollute', () => {
    const existing = JSON.parse('{"__proto__":"x"}') as Record<string, string>;
    const data = encodeResetConfigData(parsed(INITIAL_JSON), existing);
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(Object.hasOwn(data, '__proto__')).toBe(true);
  });

  it('parse returns restartType and checkCode', () => {
    const r = parseResetConfigData({ [RESET_JSON_KEY]: INITIAL_JSON, [RESET_CHECK_CODE_KEY]: INITIAL_CODE, [RESTART_TYPE_KEY]: 'hotReset' });
    expect(r).toEqual({ ok: true, value: { info: parsed(INITIAL_JSON), checkCode: INITIAL_CODE, restartType: 'hotReset' } });
  });

  it('name', () => expect(resetConfigName('llama-pretrain')).toBe('reset-config-llama-pretrain'));
});

describe('bad input is rejected, never thrown', () => {
  const reject = (text: string): string => {
    const r = parseTaskResetInfo(text);
    expect(r.ok).toBe(false);
    return r.ok ? '' : r.reason;
  };

  it.each([
    ['malformed JSON', '{"RankList":['],
    ['empty string', ''],
    ['top-level array', '[]'],
    ['top-level null', 'null'],
    ['RankList not an array', '{"RankList":{}}'],
    ['RetryTime string', '{"RetryTime":"1"}'],
    ['RetryTime non-numeric', '{"RetryTime":"abc"}'],
    ['RetryTime fractional', '{"RetryTime":1.5}'],
    ['RetryTime negative', '{"RetryTime":-1}'],
    ['UpdateTime beyond 2^53', '{"UpdateTime":9007199254740993}'],
    ['GracefulExit 2', '{"GracefulExit":2}'],
    ['FaultFlushing string', '{"FaultFlushing":"true"}'],
    ['RankId negative', '{"RankList":[{"RankId":-1}]}'],
    ['LogicId beyond int32', '{"RankList":[{"LogicId":2147483648}]}'],
    ['ErrorCode of strings', '{"RankList":[{"ErrorCode":["80E01801"]}]}'],
    ['rank not an object', '{"RankList":[8]}'],
    ['10 kB Status', `{"RankList":[{"Status":"${'x'.repeat(10_000)}"}]}`],
  ])('%s', (_n, text) => {
    expect(reject(text)).toMatch(/^reset\.json: /);
  });

  it('oversized text is refused before parsing', () => {
    expect(reject(' '.repeat(1024 * 1024 + 1))).toMatch(/oversized/);
  });

  it('wrong, empty or absent checkCode', () => {
    const bad = parseResetConfigData({ [RESET_JSON_KEY]: INITIAL_JSON, [RESET_CHECK_CODE_KEY]: FAULT_CODE });
    expect(bad).toMatchObject({ ok: false, reason: expect.stringMatching(/checkCode mismatch/) });
    expect(parseResetConfigData({ [RESET_JSON_KEY]: INITIAL_JSON, [RESET_CHECK_CODE_KEY]: '' }).ok).toBe(false);
    expect(parseResetConfigData({ [RESET_JSON_KEY]: INITIAL_JSON }).ok).toBe(false);
    // ClusterD-like read-modify-write does not verify.
    expect(parseResetConfigData({ [RESET_JSON_KEY]: INITIAL_JSON }, { verifyCheckCode: false }).ok).toBe(true);
  });

  it('checkCode of a non-canonical but equivalent text verifies against the canonical form', () => {
    const spaced = INITIAL_JSON.replace(/,/g, ', ');
    expect(parseResetConfigData({ [RESET_JSON_KEY]: spaced, [RESET_CHECK_CODE_KEY]: INITIAL_CODE }).ok).toBe(true);
  });

  it('missing data or key', () => {
    expect(parseResetConfigData(undefined).ok).toBe(false);
    expect(parseResetConfigData({}).ok).toBe(false);
    expect(parseResetConfigData(JSON.parse('{"__proto__":{"reset.json":"{}"}}') as Record<string, string>).ok).toBe(false);
  });
});
