import { globalTorInfoOf, parseTorTopology } from './tor-share.reconciler.ts';
import { encodeGlobalTorInfo } from '../schemas/tor-share/tor-share.ts';

const torInfo = JSON.stringify({
  version: '1.0', tor_count: 2,
  server_list: [
    { tor_id: 0, tor_ip: '10.0.0.1', server: [{ server_ip: '192.168.0.1', npu_count: 8, slice_id: 0 }, { server_ip: '192.168.0.2', npu_count: 8, slice_id: 1 }] },
    { tor_id: 1, tor_ip: '10.0.0.2', server: [{ server_ip: '192.168.0.3', npu_count: 8, slice_id: 0 }] },
  ],
});

describe('tor-share-cm', () => {
  it('parses basic-tor-node-cm tor_info and rejects garbage without throwing', () => {
    expect(parseTorTopology(torInfo)?.tors).toEqual([
      { ip: '10.0.0.1', serverIps: ['192.168.0.1', '192.168.0.2'] }, { ip: '10.0.0.2', serverIps: ['192.168.0.3'] },
    ]);
    expect(parseTorTopology('{')).toBeUndefined();
    expect(parseTorTopology('{"server_list":5}')).toBeUndefined();
    expect(parseTorTopology(undefined)).toBeUndefined();
  });

  it('marks TORs free, exclusive or shared (unhealthy when a large-model job shares it)', () => {
    const nodeByIp = new Map([['192.168.0.1', 'a'], ['192.168.0.2', 'b'], ['192.168.0.3', 'c']]);
    const info = globalTorInfoOf(parseTorTopology(torInfo)!, nodeByIp, [
      { name: 'llama', affinity: 'large-model-schema', nodes: ['a'] },
      { name: 'bert', affinity: 'normal-schema', nodes: ['b'] },
    ]);
    expect(encodeGlobalTorInfo(info)).toBe('{"10.0.0.1":{"IsHealthy":1,"IsSharedTor":1,"nodes":[{"NodeIp":"192.168.0.1","NodeName":"a","JobName":["llama"]},'
      + '{"NodeIp":"192.168.0.2","NodeName":"b","JobName":["bert"]}]},"10.0.0.2":{"IsHealthy":0,"IsSharedTor":0,"nodes":[{"NodeIp":"192.168.0.3","NodeName":"c","JobName":[]}]}}');
    const one = globalTorInfoOf(parseTorTopology(torInfo)!, nodeByIp, [{ name: 'llama', affinity: 'large-model-schema', nodes: ['c'] }]);
    expect(one.get('10.0.0.2')).toEqual({ IsHealthy: 0, IsSharedTor: 2, nodes: [{ NodeIp: '192.168.0.3', NodeName: 'c', JobName: ['llama'] }] });
  });
});
