import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { eventually } from './stub-handlers.ts';
import { fakeCallerCheck, openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';
import type { JobSummarySignal } from './messages.ts';
import { newUuid } from './job.service.ts';

const signal = (jobId: string, hccl = '{"status":"initializing"}', namespace = 'ns'): JobSummarySignal => ({
  uuid: 'u', jobId, jobName: 'j', namespace, frameWork: 'pytorch', jobStatus: 'pending', time: '1', cmIndex: '0', total: '1', HcclJson: hccl,
  deleteTime: '', sharedTorIp: '', masterAddr: '', operator: 'add', sid: '',
});
type Reg = { code: number; info: string; clientId: string };

describe('job.Job (docs/grpc.md#job-service)', () => {
  let t: StubServer;
  let c: Client;
  beforeEach(async () => {
    t = await startStubServer();
    c = t.client();
  });
  afterEach(() => t.close());
  const register = (role: string) => unaryCall<Reg>(c, 'job', 'Register', { role });

  it('Register: whitelisted roles get 200 and a version-4 uuid; others UNKNOWN', async () => {
    const r = await register('CCAgent');
    expect(r).toMatchObject({ code: 200, info: 'registration successful' });
    expect(r.clientId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await unaryError(c, 'job', 'Register', { role: 'taskd' })).toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'role:taskd is not in whitelist' });
    expect(newUuid()).not.toBe(newUuid());
  });

  it('Subscribe checks the client id and role; signals broadcast before the subscription are delivered (at most 10)', async () => {
    expect(await openStream(c, 'job', 'SubscribeJobSummarySignal', { role: 'CCAgent', clientId: 'x' }).done)
      .toEqual({ code: GrpcStatus.UNKNOWN, details: 'invalid clientId: x, please register first' });
    const { clientId } = await register('CCAgent');
    expect(await openStream(c, 'job', 'SubscribeJobSummarySignal', { role: 'FdAgent', clientId }).done)
      .toEqual({ code: GrpcStatus.UNKNOWN, details: 'invalid role: FdAgent, please check role first' });
    for (let i = 0; i < 12; i++) t.server.jobRegistry.broadcast(signal(`job-${i}`));
    const s = openStream<JobSummarySignal>(c, 'job', 'SubscribeJobSummarySignal', { role: 'CCAgent', clientId });
    await eventually(() => (s.messages.length === 10 ? true : undefined));
    t.server.jobRegistry.broadcast(signal('late'));
    await eventually(() => (s.messages.length === 11 ? true : undefined));
    expect(s.messages.map((m) => m.jobId)).toEqual([...Array.from({ length: 10 }, (_, i) => `job-${i}`), 'late']);
    // a second stream of the client cancels the first
    const s2 = openStream<JobSummarySignal>(c, 'job', 'SubscribeJobSummarySignal', { role: 'CCAgent', clientId });
    expect(await s.done).toEqual({ code: GrpcStatus.CANCELLED, details: 'context canceled' });
    s2.cancel();
    await eventually(() => (t.server.jobRegistry.size === 0 ? true : undefined));
  });

  it('the List variant sends every job first, then each signal as a list of one', async () => {
    t.stub.jobBatches = [[signal('a'), signal('b')]];
    const { clientId } = await register('FdAgent');
    const s = openStream<{ jobSummarySignals: JobSummarySignal[]; ReportTime: string; JobTotalNum: number }>(c, 'job', 'SubscribeJobSummarySignalList', { role: 'FdAgent', clientId });
    await eventually(() => (s.messages.length === 1 ? true : undefined));
    expect(s.messages[0]!.jobSummarySignals.map((x) => x.jobId)).toEqual(['a', 'b']);
    expect(s.messages[0]!.JobTotalNum).toBe(2);
    await eventually(() => (t.server.jobRegistry.get(clientId)?.stream !== undefined ? true : undefined));
    t.server.jobRegistry.broadcast(signal('c'));
    await eventually(() => (s.messages.length === 2 ? true : undefined));
    expect(s.messages[1]).toMatchObject({ JobTotalNum: 1, jobSummarySignals: [{ jobId: 'c' }] });
    s.cancel();
  });
});

describe('job.Job with the caller check: a tenant sees its namespaces\' jobs, a system caller every job', () => {
  const POD_A = '127.0.0.31';
  const SYSTEM = '127.0.0.32';
  const STRANGER = '127.0.0.33';
  let t: StubServer;
  const refused: string[] = [];
  beforeEach(async () => {
    refused.length = 0;
    t = await startStubServer({
      callerCheck: fakeCallerCheck({ [POD_A]: { namespaces: ['team-a'] }, [SYSTEM]: { system: true } }),
      onCallerRefused: (m) => void refused.push(m),
    });
  });
  afterEach(() => t.close());
  type List = { jobSummarySignals: JobSummarySignal[]; JobTotalNum: number };

  it('an address that is no pod and no system caller cannot register (PERMISSION_DENIED); a role outside the whitelist still gets ClusterD\'s answer', async () => {
    const c = t.clientFrom(STRANGER);
    expect(await unaryError(c, 'job', 'Register', { role: 'CCAgent' })).toMatchObject({ code: GrpcStatus.PERMISSION_DENIED, details: `caller ${STRANGER} is neither a pod nor a system caller` });
    expect(await unaryError(c, 'job', 'Register', { role: 'taskd' })).toMatchObject({ code: GrpcStatus.UNKNOWN });
    expect(t.server.jobRegistry.size).toBe(0);
    expect(refused).toEqual(['/job.Job/Register']);
  });

  it('the List batches and the broadcast signals a tenant gets are its namespaces\' jobs only; a system caller gets both', async () => {
    t.stub.jobBatches = [[signal('a1', undefined, 'team-a'), signal('b1', undefined, 'team-b')]];
    const subscribe = async (ip: string) => {
      const c = t.clientFrom(ip);
      const { clientId } = await unaryCall<Reg>(c, 'job', 'Register', { role: 'FdAgent' });
      const s = openStream<List>(c, 'job', 'SubscribeJobSummarySignalList', { role: 'FdAgent', clientId });
      await eventually(() => (t.server.jobRegistry.get(clientId)?.stream !== undefined ? true : undefined));
      return s;
    };
    const tenant = await subscribe(POD_A);
    const system = await subscribe(SYSTEM);
    t.server.jobRegistry.broadcast(signal('b2', undefined, 'team-b'));
    t.server.jobRegistry.broadcast(signal('a2', undefined, 'team-a'));
    await eventually(() => (system.messages.length === 3 && tenant.messages.length === 2 ? true : undefined));
    const ids = (s: { messages: List[] }): string[][] => s.messages.map((m) => m.jobSummarySignals.map((x) => x.jobId));
    expect(ids(tenant)).toEqual([['a1'], ['a2']]);
    expect(tenant.messages[0]!.JobTotalNum).toBe(1);
    expect(ids(system)).toEqual([['a1', 'b1'], ['b2'], ['a2']]);
    tenant.cancel();
    system.cancel();
  });
});
