import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { eventually } from './stub-handlers.ts';
import { fakeCallerCheck, openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';

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
    expect(t.server.configRegistry.push('mindie-1', 'ns', '{"a":1}')).toBe(true);
    expect(t.server.configRegistry.push('mindie-1', 'ns', '{"a":1}')).toBe(true);
    await eventually(() => (s.messages.length === 2 ? true : undefined));
    expect(s.messages[0]).toEqual({ jobId: 'mindie-1', rankTable: '{"a":1}' });
    await register('mindie-1');
    expect((await s.done).code).toBe(GrpcStatus.OK);
    expect(t.server.configRegistry.push('mindie-1', 'ns', 'x')).toBe(false);
    const again = subscribe('mindie-1');
    await eventually(() => (t.server.configRegistry.push('mindie-1', 'ns', 'y') ? true : undefined));
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

describe('config.Config with the caller check: a MindIE job id only for a pod in its job\'s namespace or a system caller', () => {
  const POD_A = '127.0.0.41';
  const POD_B = '127.0.0.42';
  const SYSTEM = '127.0.0.43';
  const STRANGER = '127.0.0.44';
  let t: StubServer;
  const refused: string[] = [];
  beforeEach(async () => {
    refused.length = 0;
    t = await startStubServer({
      callerCheck: fakeCallerCheck({ [POD_A]: { namespaces: ['team-a'] }, [POD_B]: { namespaces: ['team-b'] }, [SYSTEM]: { system: true } }),
      onCallerRefused: (m) => void refused.push(m),
    });
    t.stub.configNamespaces.set('mindie-b', ['team-b']);
  });
  afterEach(() => t.close());
  const who = (jobId: string) => ({ jobId, role: 'mindie-ms-controller' });

  it('another namespace\'s pod can neither register nor subscribe for the id of team-b\'s job; team-b\'s pod and a system caller can', async () => {
    const a = t.clientFrom(POD_A);
    expect(await unaryError(a, 'config', 'Register', who('mindie-b'))).toMatchObject({ code: GrpcStatus.PERMISSION_DENIED, details: `caller ${POD_A} is neither a system caller nor a pod in namespace team-b` });
    expect(t.server.configRegistry.registered('mindie-b')).toBe(false);
    expect(await unaryCall(t.clientFrom(POD_B), 'config', 'Register', who('mindie-b'))).toEqual({ code: 0, info: 'register success' });
    // a registration held, another namespace's subscription is still refused (and takes nothing over)
    expect((await openStream(a, 'config', 'SubscribeRankTable', who('mindie-b')).done).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(refused).toEqual(['/config.Config/Register', '/config.Config/SubscribeRankTable']);
    const s = openStream<Table>(t.clientFrom(SYSTEM), 'config', 'SubscribeRankTable', who('mindie-b'));
    await t.stub.waitForCall((x) => x.method === 'SubscribeRankTable' && x.request === 'mindie-b');
    expect(t.server.configRegistry.push('mindie-b', 'team-b', '{"b":1}')).toBe(true);
    await eventually(() => (s.messages.length === 1 ? true : undefined));
    s.cancel();
  });

  it('an id that names no job yet: any pod may register and listen, but gets only a table built in a namespace it has a pod in; a stranger is refused', async () => {
    const a = t.clientFrom(POD_A);
    expect(await unaryCall(a, 'config', 'Register', who('later'))).toEqual({ code: 0, info: 'register success' });
    const s = openStream<Table>(a, 'config', 'SubscribeRankTable', who('later'));
    await t.stub.waitForCall((x) => x.method === 'SubscribeRankTable' && x.request === 'later');
    expect(t.server.configRegistry.push('later', 'team-b', '{"b":1}')).toBe(false);
    expect(t.server.configRegistry.push('later', 'team-a', '{"a":1}')).toBe(true);
    await eventually(() => (s.messages.length === 1 ? true : undefined));
    expect(s.messages).toEqual([{ jobId: 'later', rankTable: '{"a":1}' }]);
    expect((await unaryError(t.clientFrom(STRANGER), 'config', 'Register', who('later2'))).code).toBe(GrpcStatus.PERMISSION_DENIED);
    s.cancel();
  });
});
