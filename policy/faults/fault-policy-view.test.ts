import { applyPreSeparate, effectiveRecords, inUsePreSeparated } from './fault-policy-view.ts';
import { NpuUsageIndex } from '../../state/npu-usage.ts';
import { rec } from '../../test/support/fault-policy-test-kit.ts';
import type { LeveledFault } from './fault-level.ts';
import type { Escalation } from './escalation.ts';
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import type { ClusterInfoView } from '../../reconcilers/cluster-info.reconciler.ts';
import type { Pod } from '../../runtime/kube-objects.ts';

const lv = (r: FaultRecord): LeveledFault => ({ fault: r, level: r.level, reasons: [] });
const esc = (device: string, code: string, level: Escalation['level'], rule: Escalation['rule'] = 'FaultDuration'): Escalation =>
  ({ node: 'n1', device, code, level, rule, sinceMs: 5, reasons: [] });

describe('effective records', () => {
  it('raises the escalated record; an escalation whose code is gone is added as its own record', () => {
    const out = effectiveRecords('n1', [lv(rec('n1', 'Ascend910-2', '81078603', 'NotHandleFault', 1, 'network'))], [esc('Ascend910-2', '81078603', 'PreSeparateNPU'), esc('Ascend910-3', '81078603', 'PreSeparateNPU')], []);
    expect(out.map((r) => `${r.device}/${r.source}/${r.code}/${r.level}`)).toEqual([
      'Ascend910-2/network/81078603/PreSeparateNPU', 'Ascend910-3/network/81078603/PreSeparateNPU',
    ]);
  });

  it('a ManuallySeparateNPU upgrade adds the pseudo-code on the chip; so does a ClusterD separation, leaving live codes at their own level', () => {
    const live = lv(rec('n1', 'Ascend910-1', '8C084E00', 'FreeRestartNPU', 5));
    const out = effectiveRecords('n1', [live], [esc('Ascend910-0', '80E18005', 'ManuallySeparateNPU', 'FaultFrequency')], [{ device: 'Ascend910-1', codes: ['8C084E00'], sinceMs: 9 }]);
    // ClusterD's manual-fault processor adds one code-less fault (fault_code "" in cluster-info) beside the chip's own.
    expect(out.map((r) => `${r.device}/${r.source}/${r.code}/${r.level}`)).toEqual([
      'Ascend910-1/npu/8C084E00/FreeRestartNPU', 'Ascend910-0/npu/ManuallySeparateNPU/ManuallySeparateNPU', 'Ascend910-1/npu/ManuallySeparateNPU/ManuallySeparateNPU',
    ]);
  });
});

const pod = (name: string, node: string, npus: string, extra: Partial<Pod['metadata']> = {}, phase = 'Running'): Pod => ({
  metadata: { name, namespace: 'ns', annotations: { 'huawei.com/AscendReal': npus, 'scheduling.k8s.io/group-name': 'pg-1' }, ...extra },
  spec: { nodeName: node, containers: [{ name: 'ascend', resources: { limits: { 'huawei.com/Ascend910': String(npus.split(',').length) } } }] }, status: { phase },
});

describe('NPU usage from pods', () => {
  it('maps chips to the job, forgets finished pods and reports the nodes that changed', () => {
    const u = new NpuUsageIndex();
    expect(u.apply({ type: 'add', obj: pod('p0', 'n1', 'Ascend910-0,Ascend910-1') })).toEqual(['n1']);
    expect(u.jobOf('n1', 'Ascend910-1')).toBe('ns/pg-1');
    expect(u.inUse('n1', 'Ascend910-2')).toBe(false);
    const p = pod('p0', 'n1', 'Ascend910-0,Ascend910-1');
    expect(u.apply({ type: 'update', obj: p, old: p })).toEqual([]);
    expect(u.apply({ type: 'update', obj: pod('p0', 'n1', 'Ascend910-0', {}, 'Succeeded'), old: p })).toEqual(['n1']);
    expect(u.nodeHasNpuPods('n1')).toBe(false);
  });
});

describe('pre-separate (docs/rules.md#ingest.pre-separate)', () => {
  const usage = new NpuUsageIndex();
  usage.apply({ type: 'add', obj: pod('p0', 'n1', 'Ascend910-0') });
  const records = [rec('n1', 'Ascend910-0', '80E3A201', 'PreSeparateNPU', 1), rec('n1', 'Ascend910-1', '80E3A201', 'PreSeparateNPU', 1)];

  it('an in-use chip leaves the available list but is not listed Unhealthy; an idle one is', () => {
    expect([...inUsePreSeparated('n1', records, usage)]).toEqual(['Ascend910-0']);
    const view: ClusterInfoView = {
      device: { 'mindx-dl-deviceinfo-n1': { DeviceList: { 'huawei.com/Ascend910': 'Ascend910-2', 'huawei.com/Ascend910-Unhealthy': 'Ascend910-0,Ascend910-1', 'huawei.com/Ascend910-Fault': '[]', 'huawei.com/Ascend910-NetworkUnhealthy': '', 'huawei.com/Ascend910-Recovering': '' }, UpdateTime: 1, CmName: 'mindx-dl-deviceinfo-n1', SuperPodID: -1, RackID: 0, ServerIndex: -1 } },
      node: {
        'mindx-dl-nodeinfo-n1': { FaultDevList: null, NodeStatus: 'PreSeparate', CmName: 'mindx-dl-nodeinfo-n1', UpdateTime: 1 },
        'mindx-dl-nodeinfo-n2': { FaultDevList: null, NodeStatus: 'PreSeparate', CmName: 'mindx-dl-nodeinfo-n2', UpdateTime: 1 },
      },
      switch: {},
    };
    const out = applyPreSeparate(view, { usage, effective: (n) => (n === 'n1' ? records : []) });
    expect(out.device['mindx-dl-deviceinfo-n1']?.DeviceList['huawei.com/Ascend910-Unhealthy']).toBe('Ascend910-1');
    expect(out.device['mindx-dl-deviceinfo-n1']?.DeviceList['huawei.com/Ascend910']).toBe('Ascend910-2');
    expect(out.node['mindx-dl-nodeinfo-n1']?.NodeStatus).toBe('Healthy');
    expect(out.node['mindx-dl-nodeinfo-n2']?.NodeStatus).toBe('UnHealthy');
    // Ascend910-0 came in the device plugin's own -Unhealthy list above: taken out all the same (ClusterD updateCardUnHealthy)
    expect(view.device['mindx-dl-deviceinfo-n1']?.DeviceList['huawei.com/Ascend910-Unhealthy']).toContain('Ascend910-0');
  });

  it('parameter-plane codes are left to the network rules', () => {
    expect(inUsePreSeparated('n1', [rec('n1', 'Ascend910-0', '81078603', 'PreSeparateNPU', 1)], usage).size).toBe(0);
  });
});
