import type { SignalStream } from '../grpc/handlers.ts';
import type { FaultMsgSignal } from '../grpc/messages.ts';
import type { FaultRecord, NpuFaultLevel } from '../vocabulary/fault-types.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { FaultPublisher, nodeFaultInfo } from './grpc-fault.ts';
import type { Node } from '../runtime/kube-objects.ts';

const rec = (node: string, code: string, level: NpuFaultLevel, device?: string, source: FaultRecord['source'] = 'npu'): FaultRecord =>
  ({ node, source, code, level, reportedLevel: level, firstSeenMs: 1, ...(device ? { device } : {}) });

describe('fault.Fault picture (docs/grpc.md#fault-service)', () => {
  it('groups per chip and per node-wide source, with Healthy / SubHealthy / UnHealthy levels', () => {
    const info = nodeFaultInfo('n1', [
      rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-3'),
      rec('n1', '81A3880C', 'SubHealthFault', 'Ascend910-3'),
      rec('n1', '8C2FA001', 'SubHealthFault', 'Ascend910-5'),
      rec('n1', '0100000D', 'NotHandleFault', undefined, 'node'),
      rec('n1', '2C000031', 'SubHealthFault', undefined, 'node'),
    ], { ip: '10.0.0.1', sn: 'SN1' });
    expect(info).toEqual({
      nodeName: 'n1', nodeIP: '10.0.0.1', nodeSN: 'SN1', faultLevel: 'UnHealthy',
      faultDevice: [
        { deviceId: '3', deviceType: 'NPU', faultCodes: ['80E18402', '81A3880C'], faultLevel: 'UnHealthy', faultType: [], faultReason: [], switchFaultInfos: [], faultLevels: ['SeparateNPU', 'SubHealthFault'] },
        { deviceId: '5', deviceType: 'NPU', faultCodes: ['8C2FA001'], faultLevel: 'SubHealthy', faultType: [], faultReason: [], switchFaultInfos: [], faultLevels: ['SubHealthFault'] },
        { deviceId: '-1', deviceType: 'Node', faultCodes: ['2C000031'], faultLevel: 'SubHealthy', faultType: [], faultReason: [], switchFaultInfos: [], faultLevels: ['SubHealthFault'] },
      ].sort((a, b) => `${a.deviceType}/${a.deviceId}`.localeCompare(`${b.deviceType}/${b.deviceId}`)),
    });
    expect(nodeFaultInfo('n2', [rec('n2', '0100000D', 'NotHandleFault', undefined, 'node')], { ip: '', sn: '' })).toBeUndefined();
  });

  it('pushes `fault` on a change, nothing on a repeat, one `normal` when it clears', async () => {
    let records: FaultRecord[] = [];
    const sent: FaultMsgSignal[] = [];
    const stream: SignalStream<FaultMsgSignal> = {
      id: 1, client: { jobId: 'job-uid-1', role: 'mindie' }, closed: false, signal: new AbortController().signal,
      send: async (m) => (sent.push(m), true), end: () => undefined,
    };
    const p = new FaultPublisher({
      sources: { nodes: { get: (): Node | undefined => undefined } } as never,
      faultsOf: () => records, faultNodes: () => ['n1'], jobNodes: () => ['n1'], jobIds: () => ['job-uid-1'], log: silentLogger,
    });
    p.subscribe(stream);
    expect(sent).toEqual([]);
    records = [rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-1')];
    p.changed();
    p.changed();
    records = [];
    p.changed();
    p.changed();
    expect(sent.map((m) => [m.signalType, m.nodeFaultInfo.length])).toEqual([['fault', 1], ['normal', 0]]);
  });

  // Found by the conformance scenario fault-service (ClusterD's GetFaultMsgSignal and publish_fault_plugin.go).
  it('answers a query with a normal, empty message when nothing is faulty (a known job or the cluster), null for an unknown job', () => {
    const p = new FaultPublisher({
      sources: { nodes: { get: (): Node | undefined => undefined } } as never,
      faultsOf: () => [], faultNodes: () => [], jobNodes: (j) => (j === 'job-a' ? ['n1'] : undefined), jobIds: () => ['job-a'], log: silentLogger,
    });
    expect(p.query('job-a')).toMatchObject({ jobId: 'job-a', signalType: 'normal', nodeFaultInfo: [] });
    expect(p.query('-1')).toMatchObject({ jobId: '-1', signalType: 'normal', nodeFaultInfo: [] });
    expect(p.query('job-unknown')).toBeNull();
  });

  it('a job\'s messages name each node by the host IP of the job\'s pod there (ClusterD\'s server list), the cluster\'s by the Node', () => {
    const node = { status: { addresses: [{ type: 'InternalIP', address: '192.0.2.7' }] } } as Node;
    const p = new FaultPublisher({
      sources: { nodes: { get: (): Node | undefined => node } } as never,
      faultsOf: () => [rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-0')], faultNodes: () => ['n1'], jobNodes: () => ['n1'], jobIds: () => ['job-a'],
      jobHostIps: () => new Map([['n1', '10.0.0.1']]), log: silentLogger,
    });
    expect(p.query('job-a')?.nodeFaultInfo.map((n) => n.nodeIP)).toEqual(['10.0.0.1']);
    expect(p.query('-1')?.nodeFaultInfo.map((n) => n.nodeIP)).toEqual(['192.0.2.7']);
  });

  it('tells a cluster-wide subscriber each job\'s faults under that job\'s id, and nothing of a node without a job', () => {
    let records: FaultRecord[] = [];
    const sent: FaultMsgSignal[] = [];
    const p = new FaultPublisher({
      sources: { nodes: { get: (): Node | undefined => undefined } } as never,
      faultsOf: (n) => records.filter((r) => r.node === n), faultNodes: () => ['n1', 'n9'], jobNodes: (j) => (j === 'job-a' ? ['n1'] : undefined), jobIds: () => ['job-a'], log: silentLogger,
    });
    p.subscribe({ id: 1, client: { jobId: '-1', role: 'platform' }, closed: false, signal: new AbortController().signal, send: async (m) => (sent.push(m), true), end: () => undefined });
    records = [rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-0')];
    p.changed();
    records = [];
    p.changed();
    records = [rec('n9', '80E18402', 'SeparateNPU', 'Ascend910-1')];
    p.changed();
    expect(sent.map((m) => [m.jobId, m.signalType, m.nodeFaultInfo.map((n) => n.nodeName).join()])).toEqual([['job-a', 'fault', 'n1'], ['job-a', 'normal', '']]);
  });
  it('announces a job\'s nodes when its first subscriber arrives and when its last one leaves (the MindIE hold follows it)', () => {
    const announced: Array<[string, string[]]> = [];
    const streamOf = (id: number, jobId: string): SignalStream<FaultMsgSignal> => ({
      id, client: { jobId, role: 'mindie' }, closed: false, signal: new AbortController().signal,
      send: async () => true, end: () => undefined,
    });
    const p = new FaultPublisher({
      sources: { nodes: { get: (): Node | undefined => undefined } } as never,
      faultsOf: () => [], faultNodes: () => ['n1', 'n2', 'n9'], jobNodes: (j) => (j === 'job-a' ? ['n1', 'n2'] : undefined), jobIds: () => ['job-a'], log: silentLogger,
      subscriptionChanged: (jobId, nodes) => announced.push([jobId, [...nodes]]),
    });
    const a1 = p.subscribe(streamOf(1, 'job-a'));
    const a2 = p.subscribe(streamOf(2, 'job-a'));
    const all = p.subscribe(streamOf(3, '-1')); // the cluster-wide subscription holds nothing back
    expect(announced).toEqual([['job-a', ['n1', 'n2']]]);
    expect(p.subscribed('job-a')).toBe(true);
    a1.onClose('client-cancelled');
    a1.onClose('client-cancelled'); // a second close of the same stream changes nothing
    expect(announced).toHaveLength(1);
    a2.onClose('client-cancelled');
    all.onClose('server-ended');
    expect(announced).toEqual([['job-a', ['n1', 'n2']], ['job-a', ['n1', 'n2']]]);
    expect(p.subscribed('job-a')).toBe(false);
  });
  // Found by the conformance scenario inference-job.
  it('a NotReady node is an entry with no code and no level, as ClusterD\'s node-ready fault', () => {
    expect(nodeFaultInfo('n3', [rec('n3', 'heartbeatTimeOut', 'SeparateNPU', undefined, 'node-ready')], { ip: '10.0.0.3', sn: '' })).toEqual({
      nodeName: 'n3', nodeIP: '10.0.0.3', nodeSN: '', faultLevel: 'UnHealthy',
      faultDevice: [{ deviceId: '-1', deviceType: 'Node', faultCodes: [], faultLevel: 'UnHealthy', faultType: [], faultReason: [], switchFaultInfos: [], faultLevels: [] }],
    });
  });

  it('a MindIE job id gets the picture of its instance jobs\' nodes under that id; a query knows no such id', () => {
    const sent: FaultMsgSignal[] = [];
    const stream: SignalStream<FaultMsgSignal> = {
      id: 1, client: { jobId: 'mindie-1', role: 'mindie-ms-controller' }, closed: false, signal: new AbortController().signal,
      send: async (m) => (sent.push(m), true), end: () => undefined,
    };
    const p = new FaultPublisher({
      sources: { nodes: { get: (): Node | undefined => undefined } } as never,
      faultsOf: (n) => (n === 'n1' ? [rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-0')] : []), faultNodes: () => ['n1'],
      jobNodes: () => undefined, jobIds: () => [], log: silentLogger,
      multiInstance: (id) => (id === 'mindie-1' ? { nodes: ['n1', 'n2'], hostIps: new Map([['n1', '10.9.0.1']]) } : undefined),
    });
    p.subscribe(stream);
    expect(sent.map((m) => [m.jobId, m.signalType, m.nodeFaultInfo.map((n) => [n.nodeName, n.nodeIP])])).toEqual([['mindie-1', 'fault', [['n1', '10.9.0.1']]]]);
    expect(p.query('mindie-1')).toBeNull();
    expect(p.subscribed('mindie-1', 'mindie-ms-controller')).toBe(true);
    expect(p.subscribed('mindie-1', 'mindie')).toBe(false);
  });
});
