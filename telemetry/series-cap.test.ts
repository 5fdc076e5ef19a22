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

  it('caps clusterd_job_reschedules_total by namespace and reason', async () => {
    const m = new Metrics({ processMetrics: false, maxSeriesPerMetric: 10 });
    for (let i = 0; i < 50; i++) m.countReschedule(`ns-${i}`, 'SeparateNPU');
    const s = (await m.reschedules.get()).values;
    expect(s.length).toBe(11);
    expect(s.find((x) => x.labels.namespace === OVERFLOW_LABEL)?.value).toBe(40);
  });
});
