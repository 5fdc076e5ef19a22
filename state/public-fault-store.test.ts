/**
 * PublicFaultStore follows ClusterD's dealFault / DealDelete (application/publicfault): one fault per
 * node and resource + faultId, first occurrence kept, recover and once on a 5 s delay counted in
 * whole seconds, the cap.
 */
import { PublicFaultStore } from './public-fault-store.ts';
import type { PublicFaultItem } from '../schemas/public-fault/public-fault-records.ts';
import { Metrics } from '../telemetry/metrics.ts';

const T = 1_795_600_000_000; // a whole second
const pf = (faultId: string, node: string, assertion: PublicFaultItem['assertion'] = 'occur', devIds: number[] = [0], extra: Partial<PublicFaultItem> = {}): PublicFaultItem => ({
  assertion, node, resource: 'CCAE', faultId, faultType: 'NPU', code: '220001001', level: 'SeparateNPU', faultTimeMs: T - 3_600_000, devIds, ...extra,
});
const chips = (s: PublicFaultStore, node: string): Array<string | undefined> => s.records(node, 'Ascend910').map((r) => r.device);

describe('PublicFaultStore', () => {
  it('one fault per node and resource + faultId, whichever source sent it; the chips under the device-info prefix', () => {
    const s = new PublicFaultStore();
    s.apply('ns/a', [pf('fault-01', 'n1', 'occur', [0, 1]), pf('fault-01', 'n2')], T);
    s.apply('ns/b', [pf('fault-01', 'n1', 'occur', [5])], T);
    expect(s.size).toBe(2);
    expect(chips(s, 'n1')).toEqual(['Ascend910-0', 'Ascend910-1']);
    expect(s.records('n2', 'npu').map((r) => r.device)).toEqual(['npu-0']);
    // The same fault id from another resource is another fault.
    s.apply('ns/c', [pf('fault-01', 'n1', 'occur', [7], { resource: 'fd-online' })], T);
    expect(s.size).toBe(3);
  });

  it('a repeated occur keeps the first occurrence (chips, code, time)', () => {
    const s = new PublicFaultStore();
    s.apply('ns/a', [pf('fault-01', 'n1', 'occur', [0])], T);
    const changed = s.apply('ns/a', [pf('fault-01', 'n1', 'occur', [2], { code: '110001022', level: 'PreSeparateNPU', faultTimeMs: T })], T + 7000);
    expect([...changed]).toEqual([]);
    expect(s.records('n1', 'Ascend910')).toEqual([expect.objectContaining({ device: 'Ascend910-0', code: '220001001', level: 'SeparateNPU', firstSeenMs: T - 3_600_000 })]);
  });

  it('recover: at once for a fault 5 s old, when it turns 5 s for a younger one, 5 s later for an unknown one', () => {
    const s = new PublicFaultStore();
    s.apply('a', [pf('fault-01', 'n1')], T);
    expect([...s.apply('a', [pf('fault-01', 'n1', 'recover')], T + 5000)]).toEqual(['n1']);
    expect(s.size).toBe(0);

    // occur and recover in one message: held until the fault is 5 s old (added in second T/1000).
    s.apply('a', [pf('fault-02', 'n1'), pf('fault-02', 'n1', 'recover')], T + 10_400);
    expect(s.size).toBe(1);
    expect(s.nextExpiry()).toBe(T + 15_400);
    expect(s.expire(T + 15_399)).toEqual({ changed: new Set(), ran: 0 });
    expect(s.expire(T + 15_400)).toEqual({ changed: new Set(['n1']), ran: 1 });

    // A recover before its occur deletes the occur that came meanwhile.
    s.apply('a', [pf('fault-03', 'n1', 'recover')], T + 20_000);
    s.apply('a', [pf('fault-03', 'n1')], T + 21_000);
    expect(s.size).toBe(1);
    expect(s.expire(T + 25_000)).toEqual({ changed: new Set(['n1']), ran: 1 });
    expect(s.size).toBe(0);
  });

  it('once lasts 5 s and does nothing to a fault already there', () => {
    const s = new PublicFaultStore();
    s.apply('a', [pf('fault-01', 'n1', 'once')], T + 300);
    expect(s.nextExpiry()).toBe(T + 5300);
    expect(s.expire(T + 5300).changed).toEqual(new Set(['n1']));
    s.apply('a', [pf('fault-02', 'n1')], T);
    s.apply('a', [pf('fault-02', 'n1', 'once')], T + 1000);
    expect(s.nextExpiry()).toBeUndefined();
    expect(s.size).toBe(1);
  });

  it('reloads statistic-fault-info entries as occurrences added now', () => {
    const s = new PublicFaultStore();
    s.load(new Map([['n1', [{ resource: 'CCAE', devIds: [3], faultId: 'fault-09', type: 'NPU', faultCode: '220001001', level: 'SeparateNPU', faultTime: 1_795_596_400 }]]]), () => 'SeparateNPU', T);
    expect(s.records('n1', 'Ascend910')).toEqual([expect.objectContaining({ device: 'Ascend910-3', firstSeenMs: 1_795_596_400_000, detail: 'CCAE/fault-09' })]);
    s.apply('b', [pf('fault-09', 'n1', 'recover')], T + 1000); // 1 s old: deleted when 5 s old
    expect(s.nextExpiry()).toBe(T + 5000);
  });

  it('refuses new faults at the cap, counted and logged; recovers still apply', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const s = new PublicFaultStore({ maxFaults: 2, bounds: metrics.bounds });
    expect([...s.apply('ns/a', [pf('fault-01', 'n1'), pf('fault-02', 'n1'), pf('fault-03', 'n2'), pf('fault-04', 'n3')], T)]).toEqual(['n1']);
    expect(s.size).toBe(2);
    expect((await metrics.boundHits.get()).values).toEqual([{ labels: { bound: 'public_faults' }, value: 2 }]);
    s.apply('ns/a', [pf('fault-01', 'n1', 'recover')], T + 6000);
    expect(s.size).toBe(1);
    s.apply('ns/a', [pf('fault-04', 'n3')], T + 6000);
    expect(chips(s, 'n3')).toEqual(['Ascend910-0']);
  });
});
