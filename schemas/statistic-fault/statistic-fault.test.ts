import { encodeFaultNum, encodePublicFaults, statisticFaultData, MAX_FAULT_NUM, TOO_MANY_FAULTS_DESCRIPTION, type StatisticNodeFault } from './statistic-fault.ts';
import { FaultStore } from '../../state/fault-store.ts';
import { publicFaultPayload } from '../../tools/simulator/public-fault.ts';
import { encodePublicFault, PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS } from '../public-fault/public-fault.ts';

const fault = (over: Partial<StatisticNodeFault>): StatisticNodeFault => ({
  resource: 'CCAE', devIds: [], faultId: 'fault-0001', type: 'NPU', faultCode: '220001001', level: 'SeparateNPU', faultTime: 1_764_000_000, ...over,
});

describe('statistic-fault-info format (ClusterD constant.NodeFault / FaultNum)', () => {
  it('golden bytes: Go field order and tags, omitempty, node keys sorted, Go escaping', () => {
    const byNode = new Map([
      ['node-b', [fault({ faultId: 'id-b2', devIds: [0, 3] }), fault({ faultId: 'id-b1', resource: 'a<b&c', type: 'Node', faultCode: '220001002' })]],
      ['node-a', [fault({ faultId: 'id-a', level: 'NotHandleFault', faultCode: '200001006', faultTime: 1_764_000_001 })]],
      ['node-c', []],
    ]);
    expect(encodePublicFaults(byNode)).toBe(
      '{"node-a":[{"resource":"CCAE","faultId":"id-a","type":"NPU","faultCode":"200001006","level":"NotHandleFault","faultTime":1764000001}],' +
      '"node-b":[{"resource":"CCAE","devIds":[0,3],"faultId":"id-b2","type":"NPU","faultCode":"220001001","level":"SeparateNPU","faultTime":1764000000},' +
      '{"resource":"a\\u003cb\\u0026c","faultId":"id-b1","type":"Node","faultCode":"220001002","level":"SeparateNPU","faultTime":1764000000}]}',
    );
    expect(encodeFaultNum(3)).toBe('{"publicFaultNum":3}');
  });

  it('no fault: {} and publicFaultNum 0 (what ClusterD keeps once every fault recovered)', () => {
    expect(statisticFaultData(new Map(), { FaultNum: '{"publicFaultNum":1}', PublicFaults: '{"n":[]}' })).toEqual({ FaultNum: '{"publicFaultNum":0}', PublicFaults: '{}' });
  });

  it(`above ${MAX_FAULT_NUM} faults only FaultNum and Description are patched in; nothing when there is no ConfigMap`, () => {
    const many = new Map([['n', Array.from({ length: MAX_FAULT_NUM + 1 }, (_, i) => fault({ faultId: `f-${i}` }))]]);
    expect(statisticFaultData(many, { FaultNum: '{"publicFaultNum":1}', PublicFaults: '{"n":[]}' })).toEqual({
      FaultNum: `{"publicFaultNum":${MAX_FAULT_NUM + 1}}`, PublicFaults: '{"n":[]}', Description: TOO_MANY_FAULTS_DESCRIPTION,
    });
    expect(statisticFaultData(many, undefined)).toBeUndefined();
  });

  it('FaultStore groups a public fault per node and resource + faultId, with its device ids and faultTime in seconds', () => {
    const store = new FaultStore();
    const now = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const payload = publicFaultPayload({ code: '220001001', faultId: 'pf-00000001', resource: 'CCAE', timeMs: now, targets: [{ node: 'n1', npus: [3, 1] }, { node: 'n2', npus: [0] }] }, now);
    const cm = { metadata: { name: 'pf', namespace: 'default', labels: { ...PUBLIC_FAULT_LABELS } }, data: { [PUBLIC_FAULT_DATA_KEY]: encodePublicFault(payload) } };
    expect(store.applyPublicFault(cm, now)).toBeUndefined();
    expect(encodePublicFaults(store.publicFaultStatistics())).toBe(
      `{"n1":[{"resource":"CCAE","devIds":[3,1],"faultId":"pf-00000001","type":"Network","faultCode":"220001001","level":"SeparateNPU","faultTime":${Math.floor(now / 1000)}}],` +
      `"n2":[{"resource":"CCAE","devIds":[0],"faultId":"pf-00000001","type":"Network","faultCode":"220001001","level":"SeparateNPU","faultTime":${Math.floor(now / 1000)}}]}`,
    );
  });
});
