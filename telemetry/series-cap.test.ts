import { FaultGauge } from '../controllers/fault-policy-report.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { Metrics } from './metrics.ts';
import { OVERFLOW_LABEL } from './series-cap.ts';

const record = (node: string, code: string): FaultRecord => ({ node, device: 'Ascend910-0', source: 'npu', code, level: 'SeparateNPU', reportedLevel: 'SeparateNPU', firstSeenMs: 0 });
const codes = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => (0x80000000 + from + i).toString(16).toUpperCase());

async function series(m: Metrics): Promise<Array<{ labels: Record<string, string | number>; value: number }>> {
  return (await m.faults.get()).values as Array<{ labels: Record<string, string | number>; value: number }>;
}
const hits = async (m: Metrics): Promise<number> => (await m.boundHits.get()).values.filter((v) => v.labels.bound === 'metric_series').reduce((a, v) => a + v.value, 0);

describe('metric series cap', () => {
  it('one device-info with 10,000 distinct codes makes at most the cap of clusterd_faults series, the rest in "other"', async () => {
    const m = new Metrics({ processMetrics: false, maxSeriesPerMetric: 100 });
    const g = new FaultGauge(m);
    g.update('n1', codes(10_000).map((c) => record('n1', c)));
    const s = await series(m);
    expect(s.length).toBe(101);
    expect(s.find((x) => x.labels.code === OVERFLOW_LABEL)?.value).toBe(9_900);
    expect(s.reduce((a, x) => a + x.value, 0)).toBe(10_000);
    expect(await hits(m)).toBe(9_900);
    // /metrics stays small: 101 series, not 10,001.
    expect((await m.registry.metrics()).length).toBeLessThan(20_000);
  });

  it('frees a place when a series goes back to zero, and aggregated codes leave "other" when they clear', async () => {
    const m = new Metrics({ processMetrics: false, maxSeriesPerMetric: 10 });
    const g = new FaultGauge(m);
    g.update('n1', codes(10).map((c) => record('n1', c)));
    g.update('n2', codes(5, 100).map((c) => record('n2', c)));
    expect((await series(m)).find((x) => x.labels.code === OVERFLOW_LABEL)?.value).toBe(5);
    g.update('n2', []);
    expect((await series(m)).some((x) => x.labels.code === OVERFLOW_LABEL)).toBe(false);
    g.update('n1', codes(9).map((c) => record('n1', c)));
    g.update('n3', [record('n3', 'AAAAAAAA')]);
    const s = await series(m);
    expect(s.length).toBe(10);
    expect(s.some((x) => x.labels.code === 'AAAAAAAA')).toBe(true);
    g.update('n1', []);
    g.update('n3', []);
    expect(await series(m)).toEqual([]);
  });

  it('caps clusterd_job_reschedules_total by job_namespace and reason', async () => {
    const m = new Metrics({ processMetrics: false, maxSeriesPerMetric: 10 });
    for (let i = 0; i < 50; i++) m.countReschedule(`ns-${i}`, 'SeparateNPU');
    const s = (await m.reschedules.get()).values;
    expect(s.length).toBe(11);
    expect(s.find((x) => x.labels.job_namespace === OVERFLOW_LABEL)?.value).toBe(40);
  });
});

describe('per-node and per-NPU fault gauges', () => {
  const rec = (node: string, device: string | undefined, level: FaultRecord['level'], code = '80E18402'): FaultRecord => ({ node, ...(device === undefined ? {} : { device }), source: device === undefined ? 'node' : 'npu', code, level, reportedLevel: level, firstSeenMs: 0 });
  const values = async (g: { get(): Promise<{ values: Array<{ labels: Record<string, string | number>; value: number }> }> }) =>
    Object.fromEntries((await g.get()).values.map((v) => [Object.values(v.labels).join('/'), v.value]));

  it('counts active faults by node and by chip, and removes a series when its faults clear', async () => {
    const m = new Metrics({ processMetrics: false });
    const g = new FaultGauge(m);
    g.update('n1', [rec('n1', 'Ascend910-0', 'SeparateNPU'), rec('n1', 'Ascend910-0', 'SeparateNPU', '80E01801'), rec('n1', 'Ascend910-3', 'SubHealthFault'), rec('n1', undefined, 'SeparateNPU', '0x1')]);
    expect(await values(m.nodeFaults)).toEqual({ 'n1/SeparateNPU': 3, 'n1/SubHealthFault': 1 });
    expect(await values(m.npuFaults)).toEqual({ 'n1/Ascend910-0/SeparateNPU': 2, 'n1/Ascend910-3/SubHealthFault': 1 });
    g.update('n1', [rec('n1', 'Ascend910-3', 'SubHealthFault')]);
    expect(await values(m.nodeFaults)).toEqual({ 'n1/SubHealthFault': 1 });
    expect(await values(m.npuFaults)).toEqual({ 'n1/Ascend910-3/SubHealthFault': 1 });
    g.update('n1', []);
    expect(await values(m.nodeFaults)).toEqual({});
    expect(await values(m.npuFaults)).toEqual({});
  });

  it('16,000 faulty nodes make at most the cap of series, the rest under node="other"', async () => {
    const m = new Metrics({ processMetrics: false, maxSeriesPerMetric: 100 });
    const g = new FaultGauge(m);
    for (let i = 0; i < 16_000; i++) g.update(`n${i}`, [rec(`n${i}`, 'Ascend910-1', 'SeparateNPU')]);
    const nodes = await values(m.nodeFaults);
    expect(Object.keys(nodes).length).toBe(101);
    expect(nodes['other/SeparateNPU']).toBe(15_900);
    const npus = await values(m.npuFaults);
    expect(Object.keys(npus).length).toBe(101);
    expect(npus['other/other/SeparateNPU']).toBe(15_900);
    for (let i = 0; i < 16_000; i++) g.update(`n${i}`, []);
    expect(await values(m.nodeFaults)).toEqual({});
  });
});
