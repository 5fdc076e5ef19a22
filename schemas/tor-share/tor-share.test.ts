import {
  GLOBAL_TOR_INFO_KEY,
  TOR_HEALTH,
  TOR_SHARING,
  encodeGlobalTorInfo,
  encodeTorShareData,
  parseGlobalTorInfo,
  type GlobalTorInfo,
} from './tor-share.ts';

// Built from docs/formats.md#tor-share-cm (field names, the `nodes` tag, Go map key order).
const SAMPLE =
  '{"10.0.0.1":{"IsHealthy":0,"IsSharedTor":1,"nodes":[{"NodeIp":"192.168.1.10","NodeName":"node-a01","JobName":["llama-pretrain"]},' +
  '{"NodeIp":"192.168.1.11","NodeName":"node-a02","JobName":[]}]},' +
  '"10.0.0.2":{"IsHealthy":1,"IsSharedTor":2,"nodes":[]},' +
  '"10.0.0.3":{"IsHealthy":0,"IsSharedTor":0,"nodes":null}}';

const parse = (text: string): GlobalTorInfo => {
  const r = parseGlobalTorInfo(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};

describe('global-tor-info', () => {
  it('parse -> encode reproduces the bytes', () => {
    const m = parse(SAMPLE);
    expect(m.get('10.0.0.2')).toEqual({ IsHealthy: TOR_HEALTH.unhealthy, IsSharedTor: TOR_SHARING.exclusive, nodes: [] });
    expect(encodeGlobalTorInfo(m)).toBe(SAMPLE);
  });

  it('sorts TOR IPs byte-wise like a Go map and writes {} when empty', () => {
    const m: GlobalTorInfo = new Map([
      ['10.0.0.10', { IsHealthy: 0, IsSharedTor: 0, nodes: [] }],
      ['10.0.0.9', { IsHealthy: 0, IsSharedTor: 0, nodes: [] }],
    ]);
    expect(encodeGlobalTorInfo(m)).toBe(
      '{"10.0.0.10":{"IsHealthy":0,"IsSharedTor":0,"nodes":[]},"10.0.0.9":{"IsHealthy":0,"IsSharedTor":0,"nodes":[]}}');
    expect(encodeGlobalTorInfo(new Map())).toBe('{}');
    expect(encodeTorShareData(new Map())).toEqual({ [GLOBAL_TOR_INFO_KEY]: '{}' });
  });

  it('Go zero values; unknown keys dropped; "" and null read as empty', () => {
    expect(encodeGlobalTorInfo(parse('{"t":{"nodes":[{"NodeName":"n","X":1}],"Extra":true}}'))).toBe(
      '{"t":{"IsHealthy":0,"IsSharedTor":0,"nodes":[{"NodeIp":"","NodeName":"n","JobName":null}]}}');
    expect(parse('').size).toBe(0);
    expect(parse('null').size).toBe(0);
  });

  it.each([
    ['malformed', '{"t":'],
    ['array', '[]'],
    ['null TOR', '{"t":null}'],
    ['IsHealthy 2', '{"t":{"IsHealthy":2}}'],
    ['IsHealthy negative', '{"t":{"IsHealthy":-1}}'],
    ['IsSharedTor 3', '{"t":{"IsSharedTor":3}}'],
    ['IsSharedTor string', '{"t":{"IsSharedTor":"1"}}'],
    ['IsSharedTor non-numeric', '{"t":{"IsSharedTor":"shared"}}'],
    ['nodes object', '{"t":{"nodes":{}}}'],
    ['JobName string', '{"t":{"nodes":[{"JobName":"j"}]}}'],
    ['null job name', '{"t":{"nodes":[{"JobName":[null]}]}}'],
    ['10 kB node name', `{"t":{"nodes":[{"NodeName":"${'n'.repeat(10_000)}"}]}}`],
    ['oversized', `{${' '.repeat(1024 * 1024)}}`],
  ])('rejects %s', (_n, text) => {
    expect(parseGlobalTorInfo(text)).toMatchObject({ ok: false, reason: expect.stringMatching(/^global-tor-info: /) });
  });
});
