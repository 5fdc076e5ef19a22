import { createHash } from 'node:crypto';
import {
  FAULT_CONFIG_CHECK_CODE_KEY,
  FAULT_NPUS_KEY,
  encodeFaultConfigData,
  encodeTaskFaultInfo,
  faultConfigName,
  faultInfoCheckCode,
  parseFaultConfigData,
  parseTaskFaultInfo,
  type TaskFaultInfo,
} from './fault-config-job.ts';

// docs/formats.md#fault-config gives the shape only; this sample is built from it. Its checkCode is computed here
// independently (sha256 of the literal bytes), so the test pins encoder and hash to the same bytes.
const SAMPLE = '{"FaultRank":[8,9,15],"UpdateTime":1732182200}';
const SAMPLE_CODE = createHash('sha256').update(SAMPLE).digest('hex');

const parsed = (text: string): TaskFaultInfo => {
  const r = parseTaskFaultInfo(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};

describe('fault-npus', () => {
  it('parse -> encode reproduces the bytes; checkCode verifies', () => {
    const info = parsed(SAMPLE);
    expect(encodeTaskFaultInfo(info)).toBe(SAMPLE);
    expect(faultInfoCheckCode(info)).toBe(SAMPLE_CODE);
    expect(parseFaultConfigData({ [FAULT_NPUS_KEY]: SAMPLE, [FAULT_CONFIG_CHECK_CODE_KEY]: SAMPLE_CODE }).ok).toBe(true);
  });

  it('Go zero values and nil slices', () => {
    expect(encodeTaskFaultInfo(parsed('{}'))).toBe('{"FaultRank":null,"UpdateTime":0}');
    expect(encodeTaskFaultInfo(parsed('{"FaultRank":[],"UpdateTime":null,"x":1}'))).toBe('{"FaultRank":[],"UpdateTime":0}');
    expect(encodeTaskFaultInfo({ UpdateTime: 3, FaultRank: [1] })).toBe('{"FaultRank":[1],"UpdateTime":3}');
  });

  it('data map keeps foreign keys', () => {
    expect(encodeFaultConfigData(parsed(SAMPLE), { keep: 'me', [FAULT_NPUS_KEY]: 'old' })).toEqual({
      keep: 'me', [FAULT_NPUS_KEY]: SAMPLE, [FAULT_CONFIG_CHECK_CODE_KEY]: SAMPLE_CODE,
    });
    expect(faultConfigName('job-a')).toBe('fault-config-job-a');
  });

  it.each([
    ['malformed', '{"FaultRank":[1,'],
    ['array top level', '[1,2]'],
    ['string rank', '{"FaultRank":["1"]}'],
    ['negative rank', '{"FaultRank":[-1]}'],
    ['fractional rank', '{"FaultRank":[1.5]}'],
    ['null rank', '{"FaultRank":[null]}'],
    ['string time', '{"UpdateTime":"now"}'],
    ['huge time', '{"UpdateTime":1e300}'],
    ['too many ranks', `{"FaultRank":[${Array.from({ length: 100_001 }, () => '1').join(',')}]}`],
  ])('rejects %s', (_n, text) => {
    expect(parseTaskFaultInfo(text)).toMatchObject({ ok: false, reason: expect.stringMatching(/^fault-npus: /) });
  });

  it('rejects oversized text, wrong or empty checkCode, missing key', () => {
    expect(parseTaskFaultInfo('1'.repeat(1024 * 1024 + 1)).ok).toBe(false);
    expect(parseFaultConfigData({ [FAULT_NPUS_KEY]: SAMPLE, [FAULT_CONFIG_CHECK_CODE_KEY]: 'ab'.repeat(32) }).ok).toBe(false);
    expect(parseFaultConfigData({ [FAULT_NPUS_KEY]: SAMPLE, [FAULT_CONFIG_CHECK_CODE_KEY]: '' }).ok).toBe(false);
    expect(parseFaultConfigData({ [FAULT_NPUS_KEY]: SAMPLE }, { verifyCheckCode: false }).ok).toBe(true);
    expect(parseFaultConfigData({}).ok).toBe(false);
    expect(parseFaultConfigData(undefined).ok).toBe(false);
  });
});
