import type { Client } from '@grpc/grpc-js';
import { Code } from './codes.ts';
import { startStubServer, unaryCall, type StubServer } from './testing.ts';

const request = (over: Record<string, unknown> = {}, fault: Record<string, unknown> = {}) => ({
  id: 'ccae-2026112100001', timestamp: 1_763_700_000_000, version: '1.0', resource: 'CCAE',
  faults: [{
    faultId: 'f-000000017', faultType: 'NPU', faultCode: '220001001', faultTime: 1_763_699_999_000, assertion: 'occur',
    faultLocation: { npuIp: '10.0.0.8' }, influence: [{ nodeName: 'node-a01', nodeSN: '', deviceIds: [0, 1] }],
    description: 'optical module down', ...fault,
  }],
  ...over,
});
type S = { code: number; info: string };

describe('PubFault/SendPublicFault (docs/grpc.md#pubfault-service)', () => {
  let t: StubServer;
  let c: Client;
  beforeEach(async () => {
    t = await startStubServer({ limits: { pubFaultBurst: 3 } });
    c = t.client();
  });
  afterEach(() => t.close());
  const send = (req: object) => unaryCall<S>(c, 'pubFault', 'SendPublicFault', req);

  it('accepts a valid request and hands it to the handler decoded', async () => {
    expect(await send(request())).toEqual({ code: 0, info: 'public fault send successfully' });
    expect(t.stub.calls.find((x) => x.method === 'SendPublicFault')?.request).toEqual(request());
  });

  it.each([
    ['unknown resource', request({ resource: 'nobody' })],
    ['bad id', request({ id: 'short' })],
    ['seconds timestamp', request({ timestamp: 1_763_700_000 })],
    ['version', request({ version: '2.0' })],
    ['no faults', request({ faults: [] })],
    ['fault code', request({}, { faultCode: '80E18005' })],
    ['fault type', request({}, { faultType: 'Disk' })],
    ['assertion', request({}, { assertion: 'maybe' })],
    ['influence without node', request({}, { influence: [{ nodeName: '', nodeSN: '', deviceIds: [] }] })],
    ['device id 32', request({}, { influence: [{ nodeName: 'n', deviceIds: [32] }] })],
    ['duplicate device id', request({}, { influence: [{ nodeName: 'n', deviceIds: [1, 1] }] })],
  ])('409 for %s', async (_what, req) => {
    expect((await send(req)).code).toBe(Code.InvalidReqParam);
  });

  it('410 once the resource bucket is empty; other resources are unaffected', async () => {
    for (let i = 0; i < 3; i++) expect((await send(request())).code).toBe(0);
    expect(await send(request())).toEqual({ code: Code.InvalidReqRate, info: 'limiter work by resource failed' });
    expect((await send(request({ resource: 'pingmesh' }))).code).toBe(0);
  });

  it('passes the handler\'s 409 (fault code not in the public-fault config) through', async () => {
    t.stub.pubFaultAnswer = { code: Code.InvalidReqParam, info: 'faultCode 220001999 not in config' };
    expect(await send(request())).toEqual({ code: 409, info: 'faultCode 220001999 not in config' });
  });
});
