import { Client, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import { Code } from './codes.ts';
import { processManageSignal } from './messages.ts';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, tcpProxy, unaryCall, unaryError, type StubServer } from './testing.ts';

const JOB = '6f1c2a9e-0b1d-4c55-9a7e-3d2f1e0c9b11';
const who = { jobId: JOB, role: 'taskd' };
type S = { code: number; info: string };

describe('Recover service (docs/grpc.md#server-behaviour)', () => {
  let t: StubServer;
  let c: Client;
  beforeEach(async () => {
    t = await startStubServer({ limits: { keepAliveSignalMs: 60_000 } }, [JOB]);
    c = t.client();
  });
  afterEach(() => t.close());

  const call = (name: string, req: object) => unaryCall<S>(c, 'recover', name, req);
  const join = async () => {
    expect((await call('Init', who)).code).toBe(0);
    expect((await call('Register', who)).code).toBe(0);
  };

  it('Init: 502 for an unknown or empty jobId, then success text; idempotent afterwards', async () => {
    expect((await call('Init', { jobId: 'no-such-job', role: 'taskd' })).code).toBe(Code.OperatePodGroupError);
    expect((await call('Init', { jobId: '', role: 'taskd' })).code).toBe(Code.OperatePodGroupError);
    expect(await call('Init', who)).toEqual({ code: 0, info: `job(uid=${JOB}) init success` });
    t.stub.initAnswer = () => ({ code: 403, info: 'off' });
    expect((await call('Init', who)).code).toBe(0); // already initialised: the handler is not asked again
    expect(t.stub.calls.filter((x) => x.method === 'Init')).toHaveLength(1);
  });

  it('Init: the handler may refuse with 403 and the job stays uninitialised', async () => {
    t.stub.initAnswer = () => ({ code: Code.ProcessRecoverEnableOff, info: 'process recover is off' });
    expect((await call('Init', who)).code).toBe(403);
    expect((await call('Register', who)).code).toBe(Code.UnInit);
  });

  it('Register: 408 before Init, 402 when the job vanished, 0 twice without asking the handler again', async () => {
    expect((await call('Register', who)).code).toBe(Code.UnInit);
    await call('Init', who);
    t.jobs.delete(JOB);
    expect((await call('Register', who)).code).toBe(Code.JobNotExist);
    t.jobs.add(JOB);
    expect(await call('Register', who)).toEqual({ code: 0, info: 'register success' });
    expect((await call('Register', { jobId: JOB, role: 'master agent' })).code).toBe(0);
    expect(t.stub.calls.filter((x) => x.method === 'Register')).toHaveLength(1);
    expect(t.server.recoverRegistry.entry(JOB)).toMatchObject({ registered: true, role: 'master agent', kind: 'master agent' });
  });

  it('Register: 500 OutOfMaxServeJobs once the served-job cap is reached', async () => {
    await t.close();
    const ids = ['job-a-0001', 'job-b-0002', 'job-c-0003'];
    t = await startStubServer({ limits: { maxServeJobs: 2 } }, ids);
    c = t.client();
    for (const jobId of ids) expect((await call('Init', { jobId, role: 'taskd' })).code).toBe(0);
    expect((await call('Register', { jobId: ids[0]!, role: 'taskd' })).code).toBe(0);
    expect((await call('Register', { jobId: ids[1]!, role: 'taskd' })).code).toBe(0);
    expect((await call('Register', { jobId: ids[2]!, role: 'taskd' })).code).toBe(Code.OutOfMaxServeJobs);
    expect((await call('Register', { jobId: ids[0]!, role: 'taskd' })).code).toBe(0); // already in
    t.server.forgetJob(ids[0]!);
    expect((await call('Register', { jobId: ids[2]!, role: 'taskd' })).code).toBe(0);
  });

  it('reports: 400 for an unregistered job, then the handler reply; a missing status counts as 0', async () => {
    const fr = [{ rankId: '8', faultType: '1' }];
    expect((await call('ReportProcessFault', { jobId: JOB, faultRanks: fr })).code).toBe(Code.UnRegistry);
    expect((await call('ReportStopComplete', { jobId: JOB })).code).toBe(Code.UnRegistry);
    await join();
    t.stub.uuid = 'U1';
    expect(await call('ReportProcessFault', { jobId: JOB, faultRanks: fr })).toEqual({ code: 0, info: 'receive ReportProcessFault' });
    expect(await call('ReportStopComplete', { jobId: JOB, faultRanks: fr })).toEqual({ code: 0, info: `jobId=${JOB}, uuid=U1, receive ReportStopComplete` });
    const stop = t.stub.calls.find((x) => x.method === 'ReportStopComplete');
    expect(stop?.request).toEqual({ jobId: JOB, status: { code: 0, info: '' }, faultRanks: fr });
    expect((await call('ReportRecoverStrategy', { jobId: JOB, faultRanks: fr, strategies: ['retry', 'recover'] })).code).toBe(0);
    expect((await call('ReportRecoverStatus', { jobId: JOB, status: { code: 201, info: 'x' }, strategy: 'downgrade', isolateRankIds: ['8'] })).code).toBe(0);
    expect(t.stub.calls.find((x) => x.method === 'ReportRecoverStatus')?.request).toEqual({
      jobId: JOB, status: { code: 201, info: 'x' }, strategy: 'downgrade', isolateRankIds: ['8'],
    });
  });

  it('reports: 409 when a list is absurdly long (our bound; ClusterD has none below 4 MiB)', async () => {
    await join();
    const strategies = Array.from({ length: 100_001 }, () => 'r');
    expect((await call('ReportRecoverStrategy', { jobId: JOB, faultRanks: [], strategies })).code).toBe(Code.InvalidReqParam);
  });

  it('HealthCheck needs no registration and keeps ClusterD\'s "HeathCheck" text', async () => {
    expect(await call('HealthCheck', { jobId: 'whatever', role: 'master agent' })).toEqual({ code: 0, info: 'jobId=whatever, receive HeathCheck' });
  });

  it('Subscribe: UNKNOWN "not registed" before Register', async () => {
    const s = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    expect(await s.done).toEqual({ code: GrpcStatus.UNKNOWN, details: `jobId=${JOB} not registed` });
    expect(t.records).toContainEqual({ method: '/Recover/SubscribeProcessManageSignal', grpcCode: 'UNKNOWN' });
  });

  it('Subscribe: signals reach the client; server end() finishes with status OK', async () => {
    await join();
    const s = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    const stream = await t.stub.waitForStream(JOB);
    const sig = processManageSignal({ jobId: JOB, uuid: 'U', signalType: 'stopTrain', actions: ['stop_train'], faultRanks: [{ rankId: '3', faultType: '0' }] });
    expect(await stream.send(sig)).toBe(true);
    await eventually(() => s.messages[0]);
    expect(s.messages[0]).toEqual(sig);
    stream.end();
    expect((await s.done).code).toBe(GrpcStatus.OK);
    expect(await stream.send(sig)).toBe(false);
    await t.stub.waitForClose((x) => x.streamId === stream.id && x.reason === 'server-ended');
  });

  it('a stream dropped by the client (mid-recovery) is reported to the handler', async () => {
    await join();
    const s = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    const stream = await t.stub.waitForStream(JOB);
    s.cancel();
    const closed = await t.stub.waitForClose((x) => x.streamId === stream.id);
    expect(closed.reason).toBe('client-cancelled');
    expect(stream.closed).toBe(true);
    expect(t.server.recoverRegistry.entry(JOB)?.streamId).toBeUndefined();
  });

  it('a TCP connection cut under an open stream is reported as client-cancelled too', async () => {
    await join();
    const proxy = await tcpProxy(t.server.port);
    const viaProxy = new Client(proxy.address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    const s = openStream(viaProxy, 'recover', 'SubscribeProcessManageSignal', who);
    const stream = await t.stub.waitForStream(JOB);
    proxy.dropAll(); // no RST_STREAM, no GOAWAY: the socket just dies
    const closed = await t.stub.waitForClose((x) => x.streamId === stream.id);
    expect(closed.reason).toBe('client-cancelled');
    expect((await s.done).code).toBe(GrpcStatus.UNAVAILABLE);
    viaProxy.close();
    await proxy.close();
  });

  it('a second subscriber replaces the first, whose stream ends with status OK', async () => {
    await join();
    const first = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    const s1 = await t.stub.waitForStream(JOB);
    const second = openStream(t.client(), 'recover', 'SubscribeProcessManageSignal', who);
    const s2 = await t.stub.waitForStream(JOB, s1.id);
    expect((await first.done).code).toBe(GrpcStatus.OK);
    expect(t.stub.closes).toContainEqual({ service: 'recover', jobId: JOB, streamId: s1.id, reason: 'replaced' });
    expect(s2.closed).toBe(false);
    expect(t.server.recoverRegistry.entry(JOB)).toMatchObject({ streamId: s2.id, subscriptions: 2 });
    second.cancel();
  });

  it('sends keep-alive signals with the current uuid', async () => {
    await t.close();
    t = await startStubServer({ limits: { keepAliveSignalMs: 30 } }, [JOB]);
    c = t.client();
    await join();
    t.stub.uuid = 'ABC-1';
    const s = openStream<{ signalType: string; uuid: string; jobId: string }>(c, 'recover', 'SubscribeProcessManageSignal', who);
    await eventually(() => (s.messages.length >= 2 ? true : undefined));
    expect(s.messages[0]).toMatchObject({ signalType: 'keep-alive', uuid: 'ABC-1', jobId: JOB, actions: [] });
    s.cancel();
  });

  it('forgetJob ends the stream and makes the job unregistered', async () => {
    await join();
    const s = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    const stream = await t.stub.waitForStream(JOB);
    t.server.forgetJob(JOB);
    expect((await s.done).code).toBe(GrpcStatus.OK);
    await t.stub.waitForClose((x) => x.streamId === stream.id && x.reason === 'forgotten');
    expect((await call('ReportProcessFault', { jobId: JOB })).code).toBe(Code.UnRegistry);
  });

  it('notify streams: UNKNOWN until registered, then held open and idle', async () => {
    const early = openStream(c, 'recover', 'SubscribeNotifySwitch', who);
    expect(await early.done).toEqual({ code: GrpcStatus.UNKNOWN, details: `jobId=${JOB} not registed, please wait agent register` });
    await join();
    const sw = openStream(c, 'recover', 'SubscribeNotifySwitch', who);
    const st = openStream(c, 'recover', 'SubscribeNotifyExecStressTest', who);
    await eventually(() => t.records.filter((r) => r.grpcCode === 'OK' && r.method.includes('SubscribeNotify')).length === 2 || undefined);
    t.server.forgetJob(JOB);
    expect((await sw.done).code).toBe(GrpcStatus.OK);
    expect((await st.done).code).toBe(GrpcStatus.OK);
  });

  it('without O&M handlers (no recovery controller) the O&M rpcs answer 413, the result streams UNKNOWN', async () => {
    await join();
    expect((await call('SwitchNicTrack', { jobID: JOB })).code).toBe(Code.OMParamInvalid);
    expect((await call('StressTest', { jobID: JOB })).code).toBe(Code.OMParamInvalid);
    expect((await call('ReplySwitchNicResult', { jobId: 'unknown-job' })).code).toBe(Code.UnRegistry);
    expect((await call('ReplyStressTestResult', { jobId: JOB })).code).toBe(Code.OMParamInvalid);
    expect((await openStream(c, 'recover', 'SubscribeSwitchNicSignal', { jobID: JOB }).done).code).toBe(GrpcStatus.UNKNOWN);
    expect((await openStream(c, 'recover', 'SubscribeStressTestResponse', { jobID: JOB }).done).code).toBe(GrpcStatus.UNKNOWN);
  });

  it('a handler that throws becomes gRPC UNKNOWN and the server keeps serving', async () => {
    await join();
    t.stub.recover.reportProcessFault = () => {
      throw new Error('boom');
    };
    const err = await unaryError(c, 'recover', 'ReportProcessFault', { jobId: JOB });
    expect(err.code).toBe(GrpcStatus.UNKNOWN);
    expect(t.logs.some((l) => l.level === 'error')).toBe(true);
    expect((await call('HealthCheck', who)).code).toBe(0);
  });

  it('counts every call by method, gRPC code and body code', async () => {
    await call('Init', { jobId: 'nope', role: 'taskd' });
    await call('Init', who);
    expect(t.records).toEqual([
      { method: '/Recover/Init', grpcCode: 'OK', code: 502 },
      { method: '/Recover/Init', grpcCode: 'OK', code: 0 },
    ]);
  });
});
