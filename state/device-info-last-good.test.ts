import { DeviceInfoLastGood, parseLastGood, readLastGood } from './device-info-last-good.ts';
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

  it('reads damaged entries too, with the reason, instead of dropping them', () => {
    const r = readLastGood({ data: { a: '{"x":"1"}', b: 'nope', c: '{"x":1}' } });
    expect([...r.good.keys()]).toEqual(['a']);
    expect([...r.damaged.keys()]).toEqual(['b', 'c']);
    expect(r.damaged.get('b')).toEqual({ text: 'nope', reason: expect.stringMatching(/^malformed JSON/) });
    expect(r.damaged.get('c')?.reason).toBe('not a JSON object of strings');
  });

  it('writes a damaged entry back verbatim while its node is held, and forgets it once the node is accepted or deleted', () => {
    const g = new DeviceInfoLastGood();
    g.keepDamaged('n1', 'mindx-dl-deviceinfo-n1', '{"DeviceInfoCfg":"cut');
    g.accept('n2', 'mindx-dl-deviceinfo-n2', data(3));
    g.reject('n2');
    expect(g.desired()).toEqual({ 'mindx-dl-deviceinfo-n1': '{"DeviceInfoCfg":"cut', 'mindx-dl-deviceinfo-n2': '{"DeviceInfoCfg":"xxx","ManuallySeparateNPU":""}' });
    expect(g.reject('n1')).toBe(false); // a later invalid update keeps it held, unchanged
    expect(g.desired()['mindx-dl-deviceinfo-n1']).toBe('{"DeviceInfoCfg":"cut');
    expect(g.accept('n1', 'mindx-dl-deviceinfo-n1', data(2))).toBe(true);
    expect(Object.keys(g.desired())).toEqual(['mindx-dl-deviceinfo-n2']);
    g.keepDamaged('n3', 'mindx-dl-deviceinfo-n3', 'x');
    expect(g.remove('n3')).toBe(true);
    expect(Object.keys(g.desired())).toEqual(['mindx-dl-deviceinfo-n2']);
  });
});
