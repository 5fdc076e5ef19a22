import { JOB_STATISTIC_CM_NAME, MAX_JOB_STATISTICS, ZERO_STATISTIC, fitJobStatistics, jobStatisticBytes, jobStatisticData, parseJobStatistics, type JobStatisticFields } from './job-statistic.ts';
import { applyStatEvents, loadStatistics, type JobStatEntry, type StatEvent, type TimedStatEvent } from '../../policy/jobs/job-statistic.ts';

const UID = '0a045946-5690-4b85-ae90-5d30286f8120';
const entry = (id: string, over: Partial<JobStatisticFields> = {}): JobStatisticFields => ({ id, ...ZERO_STATISTIC, ...over });

describe('current-job-statistic encoding (json.Marshal of ClusterD []constant.JobStatistic)', () => {
  it('golden bytes: a job just added is only its id (omitempty), as ClusterD wrote it in the process-recovery scenario', () => {
    expect(JOB_STATISTIC_CM_NAME).toBe('current-job-statistic');
    expect(jobStatisticData([entry(UID)])).toEqual({ data: `[{"id":"${UID}"}]`, totalJob: '1' });
  });

  it('golden bytes: every field in Go declaration order, HTML escaping in customID; no job is [] and 0', () => {
    const full = entry('u1', { customId: 'a<b>&c', cardNum: 16, podFirstRunTime: 1790000000, stopTime: 1790000300, podLastRunTime: 1790000200, podLastFaultTime: 1790000100, podFaultTimes: 2 });
    expect(jobStatisticData([full, entry('u2', { cardNum: 8 })])).toEqual({
      data: '[{"id":"u1","customID":"a\\u003cb\\u003e\\u0026c","cardNum":16,"podFirstRunTime":1790000000,"stopTime":1790000300,"podLastRunTime":1790000200,"podLastFaultTime":1790000100,"podFaultTimes":2},{"id":"u2","cardNum":8}]',
      totalJob: '2',
    });
    expect(jobStatisticData([])).toEqual({ data: '[]', totalJob: '0' });
  });

  it('load reads what it writes; Go\'s decode rules: case-insensitive keys, null entries and fields, any type error fails the whole load', () => {
    const full = entry('u1', { customId: 'x', cardNum: 16, podFirstRunTime: 5, stopTime: 6, podLastRunTime: 7, podLastFaultTime: 8, podFaultTimes: 2 });
    expect(parseJobStatistics(jobStatisticData([full, entry('u2')]))).toEqual({ ok: true, entries: [full, entry('u2')] });
    expect(parseJobStatistics({ data: '[{"ID":"u3","CardNum":4,"stopTime":null,"other":"x"},null]' })).toEqual({ ok: true, entries: [entry('u3', { cardNum: 4 }), entry('')] });
    expect(parseJobStatistics({ data: 'null' })).toEqual({ ok: true, entries: [] });
    expect(parseJobStatistics({ totalJob: '1' })).toMatchObject({ ok: false, reason: 'missing_data' });
    expect(parseJobStatistics(undefined)).toMatchObject({ ok: false, reason: 'missing_data' });
    expect(parseJobStatistics({ data: '[{"id":' })).toMatchObject({ ok: false, reason: 'syntax' });
    expect(parseJobStatistics({ data: '{"id":"u"}' })).toMatchObject({ ok: false, reason: 'type' });
    expect(parseJobStatistics({ data: '[{"id":"u"},{"id":7}]' })).toMatchObject({ ok: false, reason: 'type' });
    expect(parseJobStatistics({ data: '[{"id":"u","cardNum":"8"}]' })).toMatchObject({ ok: false, reason: 'type' });
    expect(parseJobStatistics({ data: '[{"id":"u","cardNum":1.5}]' })).toMatchObject({ ok: false, reason: 'type' });
    expect(parseJobStatistics({ data: '[3]' })).toMatchObject({ ok: false, reason: 'type' });
    // Go decides on the literal: 8.0 and 8e0 are not int64s, wherever they are in a known field.
    expect(parseJobStatistics({ data: '[{"id":"u","cardNum":8.0}]' })).toMatchObject({ ok: false, reason: 'type' });
    expect(parseJobStatistics({ data: '[{"id":"u","podFaultTimes":8e0}]' })).toMatchObject({ ok: false, reason: 'type' });
    expect(parseJobStatistics({ data: '[{"id":"u","unknown":8.5}]' })).toEqual({ ok: true, entries: [entry('u')] });
  });
});

describe('job statistic state machine (ClusterD JobStcMgr)', () => {
  let t = 1000;
  const at = (...evs: StatEvent[]): TimedStatEvent[] => evs.map((event) => ({ event, atSec: t }));
  const add = (key: string, name = 'llama', customId = ''): StatEvent => ({ kind: 'job_add', key, name, namespace: 'ns', customId });
  const summary = (key: string, status: 'pending' | 'running' | 'failed' | 'complete', o: { first?: boolean; isPreDelete?: boolean; cardNum?: number } = {}): StatEvent =>
    ({ kind: 'summary', key, first: o.first ?? false, status, isPreDelete: o.isPreDelete ?? false, cardNum: o.cardNum ?? 0 });
  const fields = (m: ReadonlyMap<string, JobStatEntry>): string => jobStatisticData([...m.values()]).data!;

  it('add -> PodGroup seen -> running (first run, cards) -> failed (a fault) -> running (recovered) -> failed pre-delete (stop) -> job object deleted (gone)', () => {
    t = 1000;
    let s = applyStatEvents(new Map(), at(add('u1', 'llama', 'c-1')));
    expect(fields(s.entries)).toBe('[{"id":"u1","customID":"c-1"}]');
    expect(s.bumps).toBe(1);
    s = applyStatEvents(s.entries, at(summary('u1', 'pending', { first: true })));
    expect(s.bumps).toBe(1); // ScheduleProcess only: same bytes, rewritten
    t = 1010;
    s = applyStatEvents(s.entries, at(summary('u1', 'running', { cardNum: 4 })));
    expect(fields(s.entries)).toBe('[{"id":"u1","customID":"c-1","cardNum":4,"podFirstRunTime":1010}]');
    // A second summary change with the same status moves nothing.
    expect(applyStatEvents(s.entries, at(summary('u1', 'running', { cardNum: 8 }))).bumps).toBe(0);
    t = 1020;
    s = applyStatEvents(s.entries, at(summary('u1', 'failed')));
    expect(fields(s.entries)).toBe('[{"id":"u1","customID":"c-1","cardNum":4,"podFirstRunTime":1010,"podLastFaultTime":1020,"podFaultTimes":1}]');
    t = 1030;
    s = applyStatEvents(s.entries, at(summary('u1', 'running', { cardNum: 8 })));
    expect(fields(s.entries)).toBe('[{"id":"u1","customID":"c-1","cardNum":4,"podFirstRunTime":1010,"podLastRunTime":1030,"podLastFaultTime":1020,"podFaultTimes":1}]');
    t = 1040;
    s = applyStatEvents(s.entries, at(summary('u1', 'failed', { isPreDelete: true })));
    expect(fields(s.entries)).toBe('[{"id":"u1","customID":"c-1","cardNum":4,"podFirstRunTime":1010,"stopTime":1040,"podLastRunTime":1030,"podLastFaultTime":1040,"podFaultTimes":2}]');
    s = applyStatEvents(s.entries, at({ kind: 'job_delete', key: 'u1' }));
    expect(fields(s.entries)).toBe('[]');
  });

  it('a job deleted before its PodGroup was seen goes at once; one whose PodGroup was seen stays until its summary is dropped', () => {
    t = 2000;
    let s = applyStatEvents(new Map(), at(add('a', 'a'), add('b', 'b'), summary('b', 'pending', { first: true }), { kind: 'job_delete', key: 'a' }, { kind: 'job_delete', key: 'b' }));
    expect(fields(s.entries)).toBe('[{"id":"b"}]');
    s = applyStatEvents(s.entries, at({ kind: 'summary_delete', key: 'b' }));
    expect(fields(s.entries)).toBe('[]');
    // Events of unknown keys (a summary of a PodGroup whose owner is no job object we saw) change nothing.
    expect(applyStatEvents(new Map(), at(summary('x', 'running', { first: true }), { kind: 'job_delete', key: 'x' }, { kind: 'acjob_update', key: 'x' })).bumps).toBe(0);
  });

  it('a completed job\'s entry is replaced by a new job of the same name; the order is stable (insertion)', () => {
    t = 3000;
    let s = applyStatEvents(new Map(), at(add('old', 'llama'), add('other', 'other'), summary('old', 'running', { first: true, cardNum: 2 })));
    t = 3100;
    s = applyStatEvents(s.entries, at(summary('old', 'complete')));
    expect(fields(s.entries)).toBe('[{"id":"old","cardNum":2,"podFirstRunTime":3000,"stopTime":3100},{"id":"other"}]');
    s = applyStatEvents(s.entries, at(add('new', 'llama')));
    expect(fields(s.entries)).toBe('[{"id":"other"},{"id":"new"}]');
  });

  it(`refuses new jobs at ${MAX_JOB_STATISTICS} entries`, () => {
    const full = new Map<string, JobStatEntry>(Array.from({ length: MAX_JOB_STATISTICS }, (_, i) => [`k${i}`, { ...entry(`k${i}`), status: 'pending', name: `j${i}`, namespace: 'ns', progress: 0 }]));
    const s = applyStatEvents(full, at(add('one-more'), add('k1', 'j1')));
    expect(s.refused).toEqual(['one-more']);
    expect(s.entries.size).toBe(MAX_JOB_STATISTICS);
    expect(s.bumps).toBe(0);
  });

  it('load keeps entries of jobs with a PodGroup; a loaded entry (no status) counts its next running as a recovery', () => {
    const [m, dropped] = loadStatistics([entry('u1', { podFirstRunTime: 10, podLastFaultTime: 20, podFaultTimes: 1 }), entry('gone')], new Set(['u1']));
    expect(dropped).toBe(1);
    t = 4000;
    const s = applyStatEvents(m, at(add('u1'), summary('u1', 'running', { first: true, cardNum: 8 })));
    expect(fields(s.entries)).toBe('[{"id":"u1","podFirstRunTime":10,"podLastRunTime":4000,"podLastFaultTime":20,"podFaultTimes":1}]');
  });
});

describe('fitJobStatistics (the 1 MiB a ConfigMap holds)', () => {
  it('everything when it fits; else stopped jobs first (oldest stop first), then the earliest added, to the byte', () => {
    const es = [entry('a'), entry('b', { stopTime: 20 }), entry('c'), entry('d', { stopTime: 10 })];
    expect(fitJobStatistics(es, 10_000)).toEqual({ data: jobStatisticData(es), omitted: [] });
    const full = jobStatisticBytes(jobStatisticData(es));
    const one = fitJobStatistics(es, full - 1);
    expect(one.omitted).toEqual(['d']);
    expect(one.data).toEqual(jobStatisticData([es[0]!, es[1]!, es[2]!]));
    expect(fitJobStatistics(es, full - 30).omitted).toEqual(['b', 'd']);
    const two = fitJobStatistics(es, jobStatisticBytes(jobStatisticData([es[2]!])));
    expect(two.omitted).toEqual(['a', 'b', 'd']);
    expect(jobStatisticBytes(two.data)).toBeLessThanOrEqual(jobStatisticBytes(jobStatisticData([es[2]!])));
  });
});
