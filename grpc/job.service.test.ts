import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';
import type { JobSummarySignal } from './messages.ts';
import { newUuid } from './job.service.ts';

const signal = (jobId: string, hccl = '{"status":"initializing"}'): JobSummarySignal => ({
  uuid: 'u', jobId, jobName: 'j', namespace: 'ns', frameWork: 'pytorch', jobStatus: 'pending', time: '1', cmIndex: '0', total: '1', HcclJson: hccl,
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
