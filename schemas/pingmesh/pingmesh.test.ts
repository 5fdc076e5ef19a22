import { parsePingMeshConfig } from './pingmesh-config.ts';
import { readPingMeshNode, type PingMeshNode } from './super-pod-device.ts';
import { desiredSuperPodConfigMaps } from '../../policy/pingmesh/super-pod-configmaps.ts';
import { SuperPodDevices } from '../../state/super-pod-devices.ts';

const base = (chips: number, prefix = 'Ascend910-', sdid = 100): string =>
  JSON.stringify(Object.fromEntries(Array.from({ length: chips }, (_, i) => [`${prefix}${i}`, { IP: `10.0.0.${i}`, SuperDeviceID: sdid + i }])));
const a3 = (over: Record<string, string> = {}): Record<string, string> => ({ superPodID: '1', serverIndex: '0', serverType: 'A3', baseDeviceInfos: base(2), ...over });
const node = (name: string, ann: Record<string, string>, labels?: Record<string, string>): PingMeshNode => {
  const r = readPingMeshNode(name, ann, labels);
  if (r.kind !== 'node') throw new Error(`not a node: ${JSON.stringify(r)}`);
  return r.node;
};

describe('super-pod-<id> format (ClusterD api.SuperPodDevice, RackMap left out)', () => {
  it('golden bytes v1 (A3): Go field order, nodes and chips sorted byte-wise, no AcceleratorType', () => {
    const s = new SuperPodDevices();
    s.setDetect(true);
    s.save(node('node-b', a3({ serverIndex: ' 1 ', baseDeviceInfos: base(11) })));
    s.save(node('node-a', a3()));
    const d = desiredSuperPodConfigMaps(s.detect, s.superPods(), s.gone());
    expect(d.write.map((w) => w.name)).toEqual(['super-pod-1']);
    expect(d.write[0]!.data).toEqual({
      superPodDevice: '{"Version":"A3","SuperPodID":"1","NodeDeviceMap":{' +
        '"node-a":{"NodeName":"node-a","ServerID":"0","DeviceMap":{"0":"100","1":"101"}},' +
        '"node-b":{"NodeName":"node-b","ServerID":"1","DeviceMap":{"0":"100","1":"101","10":"110","2":"102","3":"103","4":"104","5":"105","6":"106","7":"107","8":"108","9":"109"}}}}',
    });
  });

  it('golden bytes v2 (A5): npu- chips, AcceleratorType, and an 850 super pod published under its accelerator type', () => {
    const s = new SuperPodDevices();
    s.setDetect(true);
    s.save(node('a5-0', { superPodID: '7', serverIndex: '3', serverType: 'npu', baseDeviceInfos: base(1, 'npu-', 5), rackID: '2' }, { 'accelerator-type': '950-SuperPod-Atlas-8' }));
    s.save(node('a5-1', { superPodID: '8', serverType: 'npu', baseDeviceInfos: base(1, 'npu-', 6) }, { 'accelerator-type': '850-SuperPod-Atlas-8' }));
    const d = desiredSuperPodConfigMaps(true, s.superPods(), []);
    expect(d.write.map((w) => w.data['superPodDevice'])).toEqual([
      '{"Version":"npu","SuperPodID":"7","NodeDeviceMap":{"a5-0":{"NodeName":"a5-0","ServerID":"3","DeviceMap":{"0":"5"}}},"AcceleratorType":"950-SuperPod-Atlas-8"}',
      '{"Version":"850-SuperPod-Atlas-8","SuperPodID":"8","NodeDeviceMap":{"a5-1":{"NodeName":"a5-1","ServerID":"","DeviceMap":{"0":"6"}}},"AcceleratorType":"850-SuperPod-Atlas-8"}',
    ]);
  });

  it('nodes pingmesh does not take: no super pod id, another server type, an A5 that is not a super pod', () => {
    expect(readPingMeshNode('n', { serverType: 'A3', baseDeviceInfos: base(1) }, {}).kind).toBe('none');
    expect(readPingMeshNode('n', a3({ serverType: 'A2' }), {}).kind).toBe('none');
    expect(readPingMeshNode('n', a3({ serverType: 'npu' }), { 'accelerator-type': '850-Atlas-8p-8' }).kind).toBe('none');
  });

  it.each([
    ['malformed JSON', a3({ baseDeviceInfos: '{' }), 'malformed_json'],
    ['a null chip (would crash ClusterD)', a3({ baseDeviceInfos: '{"Ascend910-0":null}' }), 'schema'],
    ['SuperDeviceID over uint32', a3({ baseDeviceInfos: '{"Ascend910-0":{"SuperDeviceID":4294967296}}' }), 'schema'],
    ['SuperDeviceID not an integer literal', a3({ baseDeviceInfos: '{"Ascend910-0":{"SuperDeviceID":1.0}}' }), 'schema'],
    ['a chip that is not Ascend910-<int>', a3({ baseDeviceInfos: '{"Ascend910-x":{"SuperDeviceID":1}}' }), 'bad_npu_name'],
    ['no chip', a3({ baseDeviceInfos: '{}' }), 'out_of_range'],
    ['a negative super pod id', a3({ superPodID: '-1' }), 'out_of_range'],
    ['a super pod id that is no number', a3({ superPodID: 'sp1' }), 'out_of_range'],
    ['no baseDeviceInfos', a3({ baseDeviceInfos: '' }), 'missing_key'],
  ])('bad annotations are refused with a reason: %s', (_what, ann, kind) => {
    const r = readPingMeshNode('n', ann, {});
    expect(r.kind).toBe('bad');
    if (r.kind === 'bad') expect(r.rejection.kind).toBe(kind);
  });

  it('Go decoding of baseDeviceInfos: field names case-insensitive, unknown fields and null fields ignored, Atoi ids', () => {
    const n = node('n', a3({ superPodID: ' 007 ', baseDeviceInfos: '{"Ascend910-+3":{"superdeviceid":9,"ip":null,"extra":[1.5]}}' }));
    expect(n.superPodId).toBe('007');
    expect([...n.device.DeviceMap]).toEqual([['+3', '9']]);
  });
});

describe('pingmesh-config (ClusterD constant.HccspingMeshItem, isValidConfigPingMesh)', () => {
  const item = (activate: string, taskInterval: number | string = 5): string => `{"activate":"${activate}","task_interval":${taskInterval}}`;

  it('detection is on when any item is on, off when all are off', () => {
    const on = parsePingMeshConfig({ global: item('off'), '1': item('on', 60) });
    expect(on.ok && on.value.detect).toBe(true);
    const off = parsePingMeshConfig({ global: item('off', 1) });
    expect(off.ok && !off.value.detect).toBe(true);
  });

  it('Go decoding: case-insensitive names (a later key wins), unknown fields ignored', () => {
    const p = parsePingMeshConfig({ global: '{"ACTIVATE":"off","Activate":"on","Task_Interval":3,"x":{}}' });
    expect(p.ok && p.value.items.get('global')).toEqual({ activate: 'on', taskInterval: 3 });
  });

  it.each([
    ['no item', {}, 'missing_key'],
    ['not JSON', { global: '{"activate":' }, 'malformed_json'],
    ['not an object', { global: '"on"' }, 'schema'],
    ['activate not a string', { global: '{"activate":1,"task_interval":5}' }, 'schema'],
    ['task_interval 1.0 (Go int takes integer literals only)', { global: item('on', '1.0') }, 'out_of_range'],
    ['task_interval 0', { global: item('on', 0) }, 'out_of_range'],
    ['task_interval 61', { global: item('on', 61) }, 'out_of_range'],
    ['activate neither on nor off', { global: item('On') }, 'unknown_value'],
    ['a null item (the zero item)', { global: 'null' }, 'unknown_value'],
    ['one bad item among good ones', { global: item('on'), '2': item('maybe') }, 'unknown_value'],
  ])('refused whole: %s', (_what, data, kind) => {
    const p = parsePingMeshConfig(data as Record<string, string>);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.kind).toBe(kind);
  });
});

describe('super pods between events (ClusterD superpod_storage.go)', () => {
  it('nothing is written or deleted while detection is off', () => {
    const s = new SuperPodDevices();
    s.save(node('n1', a3()));
    s.remove('2', 'gone');
    expect(desiredSuperPodConfigMaps(s.detect, s.superPods(), s.gone())).toEqual({ write: [], remove: [] });
    s.setDetect(true);
    const d = desiredSuperPodConfigMaps(s.detect, s.superPods(), s.gone());
    expect([d.write.map((w) => w.name), d.remove]).toEqual([['super-pod-1'], ['2']]);
  });

  it('a super pod is gone with its last node; a node that moves stays in its old super pod until deleted', () => {
    const s = new SuperPodDevices();
    s.save(node('n1', a3()));
    s.save(node('n2', a3()));
    s.save(node('n2', a3({ superPodID: '2' })));
    expect(s.superPods().map((p) => [p.id, [...p.nodes.keys()]])).toEqual([['1', ['n1', 'n2']], ['2', ['n2']]]);
    s.remove('2', 'n2');
    s.remove('1', 'n1');
    expect(s.superPods().map((p) => p.id)).toEqual(['1']);
    expect(s.gone()).toEqual(['2']);
    s.save(node('n3', a3({ superPodID: '2' })));
    expect(s.gone()).toEqual([]);
  });

  it('a super pod holds one server type (its first node\'s)', () => {
    const s = new SuperPodDevices();
    s.save(node('n1', a3()));
    expect(s.save(node('a5', { superPodID: '1', serverType: 'npu', baseDeviceInfos: base(1, 'npu-') }, { 'accelerator-type': '950-SuperPod-Atlas-8' }))).toBe('version_mismatch');
    expect([...s.superPods()[0]!.nodes.keys()]).toEqual(['n1']);
  });
});
