import {
  MAX_RESCHEDULE_RECORDS_BYTES,
  addRecord,
  encodeRescheduleHistory,
  logFileFormatTime,
  newRescheduleRecord,
  parseRescheduleHistory,
  rescheduleJobKey,
  retainJobs,
  trimToSize,
  type RescheduleHistory,
  type RescheduleReason,
  type RescheduleTaskReason,
} from './job-reschedule-reason.ts';

const UID = '6f1c2e9a-0c7b-4a53-9e0e-2b1f8d7c4a11';
const KEY = `team-a/llama-pretrain-${UID}`;
// Golden sample (docs/formats.md#job-reschedule-reason), its elided parts filled in (`6f1c…4a11`, `{…older…}`).
const SAMPLE =
  `{"${KEY}":{"JobID":"${KEY}","TotalRescheduleTimes":2,"RescheduleRecords":[` +
  '{"LogFileFormatTime":"I1121 10:03:20","RescheduleTimeStamp":1732183400,"ReasonOfTask":[{"RescheduleReason":"CardUnhealthy",' +
  '"PodName":"llama-pretrain-worker-3","NodeName":"node-a01","NodeRankIndex":"3"}]},' +
  '{"LogFileFormatTime":"I1121 09:10:00","RescheduleTimeStamp":1732180200,"ReasonOfTask":[{"RescheduleReason":"pod-failed",' +
  '"PodName":"llama-pretrain-worker-0","NodeName":"node-a02","NodeRankIndex":"0"}]}]}}';

const parse = (text: string): RescheduleHistory => {
  const r = parseRescheduleHistory(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};
const reasons = (n: number, pad = ''): RescheduleTaskReason[] =>
  Array.from({ length: n }, (_, i) => ({
    RescheduleReason: 'CardUnhealthy', PodName: `job-worker-${i}${pad}`, NodeName: `node-10-0-0-${i}`, NodeRankIndex: String(i),
  }));
const stamps = (h: RescheduleHistory, key: string): number[] =>
  (h.get(key)?.RescheduleRecords ?? []).map((r) => r.RescheduleTimeStamp);

describe('golden bytes', () => {
  it('the golden sample round-trips', () => {
    const h = parse(SAMPLE);
    expect(h.get(rescheduleJobKey('team-a', 'llama-pretrain', UID))?.TotalRescheduleTimes).toBe(2);
    expect(encodeRescheduleHistory(h)).toBe(SAMPLE);
  });

  it('AdditionalInfo is omitempty; map keys sorted; unknown keys dropped; "" when empty', () => {
    const text = '{"ns/b-2":{"JobID":"ns/b-2","TotalRescheduleTimes":1,"RescheduleRecords":null,"AdditionalInfo":"cut"},' +
      '"ns/a-1":{"JobID":"ns/a-1","TotalRescheduleTimes":0,"RescheduleRecords":[],"AdditionalInfo":"","X":1}}';
    expect(encodeRescheduleHistory(parse(text))).toBe(
      '{"ns/a-1":{"JobID":"ns/a-1","TotalRescheduleTimes":0,"RescheduleRecords":[]},' +
      '"ns/b-2":{"JobID":"ns/b-2","TotalRescheduleTimes":1,"RescheduleRecords":null,"AdditionalInfo":"cut"}}');
    expect(encodeRescheduleHistory(new Map())).toBe('');
    expect(parse('').size).toBe(0);
    expect(parse('null').size).toBe(0);
  });
});

describe('LogFileFormatTime', () => {
  it('formats like Go "I0102 15:04:05"', () => {
    expect(logFileFormatTime(1732183400)).toBe('I1121 10:03:20');
    expect(logFileFormatTime(1704067199)).toBe('I1231 23:59:59');
    expect(logFileFormatTime(1704067200)).toBe('I0101 00:00:00');
  });
  it('takes a time zone', () => {
    expect(logFileFormatTime(1732183400, 'Asia/Shanghai')).toBe('I1121 18:03:20');
    expect(logFileFormatTime(1704067200, 'America/New_York')).toBe('I1231 19:00:00');
    expect(() => logFileFormatTime(0, 'Not/AZone')).toThrow(RangeError);
  });
});

describe('addRecord', () => {
  it('keeps the newest 10 of 12 records, newest first, and counts all 12', () => {
    let h: RescheduleHistory = new Map();
    for (let i = 1; i <= 12; i++) h = addRecord(h, 'team-a/llama-pretrain', UID, newRescheduleRecord(reasons(1), 1000 + i));
    expect(stamps(h, KEY)).toEqual([1012, 1011, 1010, 1009, 1008, 1007, 1006, 1005, 1004, 1003]);
    expect(h.get(KEY)).toMatchObject({ JobID: KEY, TotalRescheduleTimes: 12 });
  });

  it('keeps at most 10 task reasons per record', () => {
    const h = addRecord(new Map(), 'ns/j', 'u', { LogFileFormatTime: 'x', RescheduleTimeStamp: 1, ReasonOfTask: reasons(15) });
    expect(h.get('ns/j-u')?.RescheduleRecords?.[0]?.ReasonOfTask).toHaveLength(10);
    expect(newRescheduleRecord(reasons(12), 5).ReasonOfTask).toHaveLength(10);
  });

  it('does not modify its input and continues a parsed history', () => {
    const before = parse(SAMPLE);
    const after = addRecord(before, 'team-a/llama-pretrain', UID, newRescheduleRecord(reasons(1), 1732190000));
    expect(encodeRescheduleHistory(before)).toBe(SAMPLE);
    expect(stamps(after, KEY)).toEqual([1732190000, 1732183400, 1732180200]);
    expect(after.get(KEY)?.TotalRescheduleTimes).toBe(3);
  });

  it('retainJobs drops jobs that are gone', () => {
    const h = addRecord(parse(SAMPLE), 'ns/other', 'u', newRescheduleRecord([], 1));
    expect([...retainJobs(h, new Set(['ns/other-u'])).keys()]).toEqual(['ns/other-u']);
  });
});

/** A job with `n` records (timestamps base+n … base+1, newest first), each with 10 padded reasons. */
function job(key: string, n: number, base: number, pad: string): RescheduleReason {
  return {
    JobID: key,
    TotalRescheduleTimes: n,
    RescheduleRecords: Array.from({ length: n }, (_, i) => newRescheduleRecord(reasons(10, pad), base + n - i)),
  };
}

describe('trimToSize', () => {
  it('leaves a small map alone', () => {
    const r = trimToSize(parse(SAMPLE));
    expect(r).toMatchObject({ encoded: SAMPLE, rounds: 0, dropped: [], fits: true });
  });

  it('drops the oldest record of every job with > 1 record per round, until it fits', () => {
    const pad = 'x'.repeat(250);
    const h = new Map<string, RescheduleReason>();
    for (let j = 0; j < 40; j++) h.set(`ns/big-${j}`, job(`ns/big-${j}`, 10, j * 100, pad));
    h.set('ns/two-u', job('ns/two-u', 2, 5000, pad));
    h.set('ns/one-u', job('ns/one-u', 1, 6000, pad));
    const start = Buffer.byteLength(encodeRescheduleHistory(h));
    expect(start).toBeGreaterThan(MAX_RESCHEDULE_RECORDS_BYTES);

    const r = trimToSize(h);
    expect(r.fits).toBe(true);
    expect(r.bytes).toBeLessThanOrEqual(MAX_RESCHEDULE_RECORDS_BYTES);
    expect(r.bytes).toBe(Buffer.byteLength(r.encoded));
    expect(r.encoded).toBe(encodeRescheduleHistory(r.history));
    // Each big job lost exactly `rounds` oldest records; the newest survive in order.
    const k = r.rounds;
    expect(k).toBe(4);
    for (let j = 0; j < 40; j++) {
      const all = Array.from({ length: 10 }, (_, i) => j * 100 + 10 - i);
      expect(stamps(r.history, `ns/big-${j}`)).toEqual(all.slice(0, 10 - k));
    }
    expect(stamps(r.history, 'ns/two-u')).toEqual([5002]); // lost its older record in round 1 only
    expect(stamps(r.history, 'ns/one-u')).toEqual([6001]); // never touched
    expect(r.dropped).toHaveLength(40 * k + 1);
    expect(r.dropped).toContainEqual({ jobKey: 'ns/two-u', rescheduleTimeStamp: 5001 });
    // Minimal: one round fewer would still be over the limit.
    const oneLess = new Map([...h].map(([key, v]) => {
      const recs = v.RescheduleRecords ?? [];
      return [key, { ...v, RescheduleRecords: recs.slice(0, Math.max(1, recs.length - (k - 1))) }] as const;
    }));
    expect(Buffer.byteLength(encodeRescheduleHistory(oneLess))).toBeGreaterThan(MAX_RESCHEDULE_RECORDS_BYTES);
    // The input is untouched.
    expect(Buffer.byteLength(encodeRescheduleHistory(h))).toBe(start);
  });

  it('never drops the newest record: may end over the limit (fits: false)', () => {
    const h = new Map<string, RescheduleReason>();
    for (let j = 0; j < 10; j++) h.set(`ns/j-${j}`, job(`ns/j-${j}`, 3, j * 10, ''));
    const r = trimToSize(h, 1000);
    expect(r.fits).toBe(false);
    for (const v of r.history.values()) expect(v.RescheduleRecords).toHaveLength(1);
  });

  it('stops after 10 rounds', () => {
    const h = new Map<string, RescheduleReason>([['ns/j-u', job('ns/j-u', 10, 0, '')]]);
    const r = trimToSize(h, 10);
    expect(r.rounds).toBeLessThanOrEqual(10);
    expect(stamps(r.history, 'ns/j-u')).toEqual([10]);
  });

  it('a realistic large cluster ends under 950 KiB and under the 1 MiB ConfigMap limit', () => {
    // 400 live jobs that each rescheduled 10+ times with 10 fault tasks, realistic pod/node names
    // (~6 MB before trimming). Around 600 such jobs even one record per job exceeds 950 KiB.
    const h = new Map<string, RescheduleReason>();
    for (let j = 0; j < 400; j++) {
      const key = rescheduleJobKey('ai-training-team', `pretrain-llm-70b-run-${j}`, `6f1c2e9a-0c7b-4a53-9e0e-${String(j).padStart(12, '0')}`);
      h.set(key, {
        JobID: key,
        TotalRescheduleTimes: 14,
        RescheduleRecords: Array.from({ length: 10 }, (_, i) => newRescheduleRecord(
          Array.from({ length: 10 }, (_, t) => ({
            RescheduleReason: 'CardUnhealthy',
            PodName: `pretrain-llm-70b-run-${j}-worker-${t * 13}`,
            NodeName: `gpu-node-10-200-${j % 250}-${t}`,
            NodeRankIndex: String(t * 13),
          })),
          1732180000 + j * 100 - i)),
      });
    }
    const r = trimToSize(h);
    expect(r.fits).toBe(true);
    expect(r.bytes).toBeLessThanOrEqual(MAX_RESCHEDULE_RECORDS_BYTES);
    expect(r.bytes).toBeLessThan(1024 * 1024);
    for (const v of r.history.values()) expect((v.RescheduleRecords ?? []).length).toBeGreaterThanOrEqual(1);
  });
});

describe('bad input is rejected, never thrown', () => {
  const rec = (extra: string): string =>
    `{"ns/a-1":{"JobID":"ns/a-1","TotalRescheduleTimes":1,"RescheduleRecords":[${extra}]}}`;
  it.each([
    ['malformed', '{"ns/a-1":'],
    ['array', '[]'],
    ['null job', '{"ns/a-1":null}'],
    ['TotalRescheduleTimes string', '{"ns/a-1":{"TotalRescheduleTimes":"2"}}'],
    ['TotalRescheduleTimes non-numeric', '{"ns/a-1":{"TotalRescheduleTimes":"many"}}'],
    ['TotalRescheduleTimes negative', '{"ns/a-1":{"TotalRescheduleTimes":-1}}'],
    ['timestamp string', rec('{"RescheduleTimeStamp":"1732183400"}')],
    ['timestamp fractional', rec('{"RescheduleTimeStamp":1.5}')],
    ['11 records', rec(Array.from({ length: 11 }, () => '{}').join(','))],
    ['11 task reasons', rec(`{"ReasonOfTask":[${Array.from({ length: 11 }, () => '{}').join(',')}]}`)],
    ['10 kB pod name', rec(`{"ReasonOfTask":[{"PodName":"${'p'.repeat(10_000)}"}]}`)],
    ['null record', rec('null')],
    ['NodeRankIndex number', rec('{"ReasonOfTask":[{"NodeRankIndex":3}]}')],
  ])('%s', (_n, text) => {
    expect(parseRescheduleHistory(text)).toMatchObject({ ok: false, reason: expect.stringMatching(/^recent-reschedule-records: /) });
  });

  it('oversized value', () => {
    expect(parseRescheduleHistory(`{${' '.repeat(1024 * 1024)}}`).ok).toBe(false);
  });

  it('__proto__ job key stays data', () => {
    const h = parse('{"__proto__":{"JobID":"x","TotalRescheduleTimes":1}}');
    expect(h.get('__proto__')?.JobID).toBe('x');
  });
});
