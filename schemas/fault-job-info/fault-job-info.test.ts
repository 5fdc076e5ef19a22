import { encodeFaultJobEntry, parseFaultNodes, type SuperPodFaultInfo } from './fault-job-info.ts';
import { chipPrefixOf, parseBaseDeviceInfos, superPodIdOf } from '../super-pod-device/super-pod-device.ts';

const info = (o: Partial<SuperPodFaultInfo>): SuperPodFaultInfo => ({ SdIds: null, FaultNodes: [], NodeNames: null, FaultTimes: 0, JobId: '', ...o });

describe('fault-job-info encoding (Go json.Marshal of map[int]api.SuperPodFaultInfos)', () => {
  it('matches Go byte for byte: keys sorted as strings, sets as objects, nil slices as null, JobId omitempty', () => {
    // Bytes printed by Go 1.24's encoding/json for the same values (sets.String = map[string]Empty).
    const both = ['node-b', 'node-a'];
    expect(encodeFaultJobEntry(new Map([
      [10, info({ SdIds: ['10', '11'], FaultNodes: both, FaultTimes: 1700000000, JobId: 'uid-1' })],
      [2, info({ SdIds: ['3'], FaultNodes: both, NodeNames: ['node-c', 'node-d'], FaultTimes: 1700000000, JobId: 'uid-1' })],
    ]))).toBe('{"10":{"SdIds":["10","11"],"FaultNodes":{"node-a":{},"node-b":{}},"NodeNames":null,"FaultTimes":1700000000,"JobId":"uid-1"},'
      + '"2":{"SdIds":["3"],"FaultNodes":{"node-a":{},"node-b":{}},"NodeNames":["node-c","node-d"],"FaultTimes":1700000000,"JobId":"uid-1"}}');
    expect(encodeFaultJobEntry(new Map([[0, info({ FaultNodes: ['<x>'] })]]))).toBe('{"0":{"SdIds":null,"FaultNodes":{"\\u003cx\\u003e":{}},"NodeNames":null,"FaultTimes":0}}');
  });

  it('reads back the fault nodes of every SuperPod; refuses what Go could not unmarshal', () => {
    const p = parseFaultNodes('{"1":{"FaultNodes":{"a":{}}},"2":{"FaultNodes":{"b":{}},"Extra":1},"3":{"FaultNodes":null}}');
    expect(p.ok && [...p.value].sort()).toEqual(['a', 'b']);
    expect(parseFaultNodes('{"x":{"FaultNodes":{}}}').ok).toBe(false);
    expect(parseFaultNodes('{"1":{"FaultNodes":["a"]}}').ok).toBe(false);
    expect(parseFaultNodes('not json').ok).toBe(false);
  });
});

describe('Node SuperPod annotations (ClusterD node_storage.go)', () => {
  it('superPodID: a trimmed integer >= 0', () => {
    expect(superPodIdOf(' 3 ')).toBe(3);
    expect(superPodIdOf('-1')).toBeUndefined();
    expect(superPodIdOf('x')).toBeUndefined();
    expect(superPodIdOf(undefined)).toBeUndefined();
  });

  it('baseDeviceInfos: phyId -> SuperDeviceID; one bad chip name or value leaves the node without devices', () => {
    const p = parseBaseDeviceInfos('{"Ascend910-1":{"IP":"1.1.1.1","SuperDeviceID":65}, "Ascend910-0":{"SuperDeviceID":64}, "2":{}}');
    expect(p.ok && [...p.value].sort()).toEqual([['0', '64'], ['1', '65'], ['2', '0']]);
    expect(parseBaseDeviceInfos('{"npu-x":{"SuperDeviceID":1}}').ok).toBe(false);
    expect(parseBaseDeviceInfos('{"Ascend910-0":{"SuperDeviceID":-1}}').ok).toBe(false);
    expect(parseBaseDeviceInfos('{"Ascend910-0":{"IP":5}}').ok).toBe(false);
    expect(parseBaseDeviceInfos('{}').ok).toBe(false);
  });

  it('baseDeviceInfos of an A5 node (serverType npu): chips `npu-<phyId>` (getNodeDeviceA5)', () => {
    const p = parseBaseDeviceInfos('{"npu-1":{"SuperDeviceID":65},"npu-0":{"SuperDeviceID":64}}', chipPrefixOf(' npu '));
    expect(p.ok && [...p.value].sort()).toEqual([['0', '64'], ['1', '65']]);
    expect(parseBaseDeviceInfos('{"npu-1":{"SuperDeviceID":65}}', chipPrefixOf('A3')).ok).toBe(false);
  });
});
