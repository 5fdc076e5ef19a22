import { manualInfoReconciler } from './manual-info.reconciler.ts';
import { fakeConfigMaps as fakeCluster } from '../test/support/fault-policy-test-kit.ts';
import type { ReconcileContext } from '../runtime/reconciler.ts';
import { silentLogger } from '../telemetry/logger.ts';
import type { ManualInfoNode } from '../policy/faults/manual-separation.ts';

const ctx = (now: number): ReconcileContext => ({ log: silentLogger, signal: new AbortController().signal, now: () => now });

describe('manual-info reconciler', () => {
  it('writes clusterd-manual-info-cm as ClusterD does, only on difference, and deletes it when nothing is separated, as ClusterD does', async () => {
    const c = fakeCluster();
    let view: Record<string, ManualInfoNode> = {};
    const r = manualInfoReconciler({ desired: () => view, actual: () => c.objects.get('cs/clusterd-manual-info-cm'), writer: c.writer, namespace: 'cs' });
    await r.reconcile('k', ctx(1));
    expect(c.writes).toEqual([]); // nothing separated and no ConfigMap: nothing to write
    view = { n1: { Total: ['Ascend910-1'], Detail: { 'Ascend910-1': [{ FaultCode: '8C084E00', FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: 1700000000000 }] } } };
    await r.reconcile('k', ctx(2));
    await r.reconcile('k', ctx(3));
    expect(c.writes.map((w) => w.verb)).toEqual(['create']);
    expect(c.objects.get('cs/clusterd-manual-info-cm')?.data).toEqual({
      n1: '{"Total":["Ascend910-1"],"Detail":{"Ascend910-1":[{"FaultCode":"8C084E00","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1700000000000}]}}',
    });
    view = {};
    await r.reconcile('k', ctx(4));
    await r.reconcile('k', ctx(5));
    expect(c.writes.map((w) => w.verb)).toEqual(['create', 'delete']);
    expect(c.objects.has('cs/clusterd-manual-info-cm')).toBe(false);
  });
});
