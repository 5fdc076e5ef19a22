import { DeviceInfoLastGood, parseLastGood } from './device-info-last-good.ts';
import { Metrics } from '../telemetry/metrics.ts';

const data = (n: number): Record<string, string> => ({ DeviceInfoCfg: 'x'.repeat(n), ManuallySeparateNPU: '' });

describe('DeviceInfoLastGood', () => {
  it('holds a node only after a good version was seen, and releases it on the next good one or on delete', () => {
    const g = new DeviceInfoLastGood();
    expect(g.reject('n1')).toBe(false);
    expect(g.accept('n1', 'mindx-dl-deviceinfo-n1', data(3))).toBe(false);
    expect(g.reject('n1')).toBe(true);
    expect(g.reject('n1')).toBe(false);
    expect(Object.keys(g.desired())).toEqual(['mindx-dl-deviceinfo-n1']);
    expect(parseLastGood({ data: g.desired() }).get('mindx-dl-deviceinfo-n1')).toEqual(data(3));
    expect(g.accept('n1', 'mindx-dl-deviceinfo-n1', data(4))).toBe(true);
    expect(g.desired()).toEqual({});
    g.reject('n1');
    expect(g.remove('n1')).toBe(true);
    expect(g.desired()).toEqual({});
  });

  it('persists what fits its byte bound and counts the nodes left out', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const g = new DeviceInfoLastGood({ maxBytes: 2_500, bounds: metrics.bounds });
    for (const n of ['a', 'b', 'c']) { g.accept(n, `mindx-dl-deviceinfo-${n}`, data(1_000)); g.reject(n); }
    expect(Object.keys(g.desired())).toEqual(['mindx-dl-deviceinfo-a', 'mindx-dl-deviceinfo-b']);
    expect((await metrics.boundHits.get()).values).toEqual([{ labels: { bound: 'last_good_bytes' }, value: 1 }]);
  });

  it('skips persisted entries that are not a JSON object of strings', () => {
    expect([...parseLastGood({ data: { a: '{"x":"1"}', b: 'nope', c: '{"x":1}', d: '[]' } }).keys()]).toEqual(['a']);
  });
});
