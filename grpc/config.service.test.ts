import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, type StubServer } from './testing.ts';

type Table = { jobId: string; rankTable: string };

describe('config.Config (docs/grpc.md#config-service)', () => {
  let t: StubServer;
  let c: Client;
  beforeEach(async () => {
    t = await startStubServer({ limits: { maxServeJobs: 2 } });
    c = t.client();
  });
  afterEach(() => t.close());
  const register = (jobId: string) => unaryCall(c, 'config', 'Register', { jobId, role: 'mindie-ms-controller' });
  const subscribe = (jobId: string) => openStream<Table>(c, 'config', 'SubscribeRankTable', { jobId, role: 'mindie-ms-controller' });

  it('Register always answers 0 "register success"; a subscription without one is UNKNOWN', async () => {
    expect(await subscribe('mindie-1').done).toEqual({ code: GrpcStatus.UNKNOWN, details: 'jobId=mindie-1 not registered, role=mindie-ms-controller' });
    expect(await register('mindie-1')).toEqual({ code: 0, info: 'register success' });
  });

  it('a subscription listens, asks for a rank table, and gets every push; it ends (status OK) when the job registers again, taking the registration', async () => {
    await register('mindie-1');
    const s = subscribe('mindie-1');
    await t.stub.waitForCall((x) => x.method === 'SubscribeRankTable' && x.request === 'mindie-1');
    expect(t.server.configRegistry.push('mindie-1', '{"a":1}')).toBe(true);
    expect(t.server.configRegistry.push('mindie-1', '{"a":1}')).toBe(true);
    await eventually(() => (s.messages.length === 2 ? true : undefined));
    expect(s.messages[0]).toEqual({ jobId: 'mindie-1', rankTable: '{"a":1}' });
    await register('mindie-1');
    expect((await s.done).code).toBe(GrpcStatus.OK);
    expect(t.server.configRegistry.push('mindie-1', 'x')).toBe(false);
    const again = subscribe('mindie-1');
    await eventually(() => (t.server.configRegistry.push('mindie-1', 'y') ? true : undefined));
    again.cancel();
    await eventually(() => (t.server.configRegistry.registered('mindie-1') ? undefined : true));
    expect(await subscribe('mindie-1').done).toMatchObject({ code: GrpcStatus.UNKNOWN });
  });

  it('keeps at most maxServeJobs registrations: the oldest idle one is forgotten, the answer stays 0', async () => {
    await register('a');
    const s = subscribe('a');
    await t.stub.waitForCall((x) => x.method === 'SubscribeRankTable');
    await register('b');
    expect(await register('c')).toEqual({ code: 0, info: 'register success' });
    expect(t.server.configRegistry.size).toBe(2);
    expect(t.server.configRegistry.registered('a')).toBe(true);
    expect(t.server.configRegistry.registered('b')).toBe(false);
    s.cancel();
  });
});
