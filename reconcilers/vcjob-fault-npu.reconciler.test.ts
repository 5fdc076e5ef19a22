import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { chipFault, nodeNotReady } from '../test/support/job-fixtures.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { FakeConfigMaps } from '../test/support/job-fakes.ts';
import { faultNodeOf, remainRetryTimesOf, vcjobFaultNpuReconciler } from './vcjob-fault-npu.reconciler.ts';

describe('vcjob-fault-npu-cm', () => {
  it('lists a NotReady node as NodeUnhealthy with heartbeatTimeOut', () => {
    expect(faultNodeOf('n1', [{ ...nodeNotReady('n1'), firstSeenMs: 5_500 }])).toEqual({
      FaultDeviceList: [{ fault_type: 'NodeUnhealthy', npu_name: '', fault_level: '', fault_handling: '', large_model_fault_level: '', fault_code: 'heartbeatTimeOut' }],
      NodeName: 'n1', UnhealthyNPU: [], NetworkUnhealthyNPU: [], NodeHealthState: 'NodeUnhealthy', UpdateTime: 5,
    });
  });

  it('lists card and network faults by chip; healthy or NotHandle-only nodes are not fault nodes', () => {
    const n = faultNodeOf('n2', [chipFault('n2', 'Ascend910-3', 'SeparateNPU', '80E18402'), chipFault('n2', 'Ascend910-5', 'SeparateNPU', '81078603', 'network')]);
    expect(n?.NodeHealthState).toBe('CardUnhealthy');
    expect(n?.UnhealthyNPU).toEqual(['Ascend910-3']);
    expect(n?.NetworkUnhealthyNPU).toEqual(['Ascend910-5']);
    expect(n?.FaultDeviceList?.[0]).toEqual({ fault_type: 'CardUnhealthy', npu_name: 'Ascend910-3', fault_level: 'SeparateNPU', fault_handling: 'SeparateNPU', large_model_fault_level: 'SeparateNPU', fault_code: '80E18402' });
    expect(faultNodeOf('n3', [chipFault('n3', 'Ascend910-1', 'NotHandleFault')])).toBeUndefined();
    expect(faultNodeOf('n4', [])).toBeUndefined();
  });

  it('keeps the persisted budget, starts new jobs at N, skips jobs without a budget', () => {
    const m = remainRetryTimesOf([
      { key: 'ns/b-u2', uid: 'u2', faultRetryTimes: 3 },
      { key: 'ns/a-u1', uid: 'u1', faultRetryTimes: 2, budget: { uid: 'u1', times: 1 } },
      { key: 'ns/c-u3', uid: 'u3', faultRetryTimes: 0 },
    ]);
    expect([...m]).toEqual([['ns/a-u1', { UUID: 'u1', Times: 1 }], ['ns/b-u2', { UUID: 'u2', Times: 3 }]]);
  });

  it('merges into the existing ConfigMap, keeps foreign keys, writes nothing on a resync', async () => {
    const cms = new FakeConfigMaps();
    await cms.client().create('/api/v1/namespaces/volcano-system/configmaps', {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'vcjob-fault-npu-cm', namespace: 'volcano-system' }, data: { 'fault-job-910x8': 'legacy' },
    } as never);
    const faults: Record<string, FaultRecord[]> = { n1: [chipFault('n1', 'Ascend910-0', 'SeparateNPU', '80E18402')] };
    const r = vcjobFaultNpuReconciler({
      nodes: () => ['n1', 'n2'], faultsOf: (n) => faults[n] ?? [], retryJobs: () => [{ key: 'ns/a-u1', uid: 'u1', faultRetryTimes: 2 }],
      cached: () => cms.get('volcano-system', 'vcjob-fault-npu-cm'), writer: new ConfigMapWriter(cms.client()),
    });
    const ctx = { log: silentLogger, signal: new AbortController().signal, now: () => 0 };
    await r.reconcile('vcjob-fault-npu-cm', ctx);
    await r.reconcile('vcjob-fault-npu-cm', ctx);
    expect(cms.writes.map((w) => w.verb)).toEqual(['create', 'replace']);
    const data = cms.get('volcano-system', 'vcjob-fault-npu-cm')?.data;
    expect(data?.['fault-job-910x8']).toBe('legacy');
    expect(data?.['remain-retry-times']).toBe('{"ns/a-u1":{"UUID":"u1","Times":2}}');
    expect(data?.['fault-node']).toContain('"NodeName":"n1"');
  });
});
