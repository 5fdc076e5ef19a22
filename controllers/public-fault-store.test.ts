import { PublicFaultStore } from './public-fault-store.ts';
import type { PublicFaultRecord } from '../schemas/public-fault/public-fault-records.ts';
import { Metrics } from '../telemetry/metrics.ts';

const pf = (faultId: string, node: string, assertion: PublicFaultRecord['assertion'] = 'occur', device?: string): PublicFaultRecord => ({
  assertion, resource: 'CCAE', faultId, faultType: 'NPU',
  record: { node, source: 'public', code: '220001001', level: 'SeparateNPU', reportedLevel: 'SeparateNPU', firstSeenMs: 0, ...(device === undefined ? {} : { device }) },
});

describe('PublicFaultStore', () => {
  it('counts one fault per (source, fault id, node) with its chips inside, as ClusterD caches them', () => {
    const s = new PublicFaultStore();
    s.apply('ns/a', [pf('f1', 'n1', 'occur', 'Ascend910-0'), pf('f1', 'n1', 'occur', 'Ascend910-1'), pf('f1', 'n2')], 0);
    expect(s.size).toBe(2);
    expect(s.records('n1').map((r) => r.device)).toEqual(['Ascend910-0', 'Ascend910-1']);
    expect(s.records('n2')).toHaveLength(1);
  });

  it('refuses new faults at the cap, counted and logged; updates and recovers still apply', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const s = new PublicFaultStore({ maxFaults: 2, bounds: metrics.bounds });
    expect([...s.apply('ns/a', [pf('f1', 'n1'), pf('f2', 'n1'), pf('f3', 'n2'), pf('f4', 'n3')], 0)]).toEqual(['n1']);
    expect(s.size).toBe(2);
    expect((await metrics.boundHits.get()).values).toEqual([{ labels: { bound: 'public_faults' }, value: 2 }]);
    s.apply('ns/a', [pf('f1', 'n1', 'occur', 'Ascend910-3')], 0);
    expect(s.records('n1').map((r) => r.device)).toEqual(['Ascend910-3', undefined]);
    s.apply('ns/a', [pf('f1', 'n1', 'recover')], 0);
    expect(s.size).toBe(1);
    s.apply('ns/a', [pf('f4', 'n3')], 0);
    expect(s.records('n3')).toHaveLength(1);
  });

  it('expires once-faults', () => {
    const s = new PublicFaultStore();
    s.apply('ns/a', [pf('f1', 'n1', 'once')], 1_000);
    expect(s.nextExpiry()).toBe(11_000);
    expect([...s.expire(10_999)]).toEqual([]);
    expect([...s.expire(11_000)]).toEqual(['n1']);
    expect(s.size).toBe(0);
  });
});
