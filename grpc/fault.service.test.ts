import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { Code } from './codes.ts';
import type { FaultMsgSignal } from './messages.ts';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';

const JOB = 'b7f0c3d2-1111-2222-3333-444455556666';

describe('fault.Fault service (docs/grpc.md#fault-service)', () => {
  let t: StubServer;
  let c: Client;
  beforeEach(async () => {
    t = await startStubServer({ limits: { faultQueryQps: 2, faultQueryBurst: 2, faultQueryQueue: 3 } }, [JOB]);
    c = t.client();
  });
  afterEach(() => t.close());

  it('Register: UNKNOWN for an empty role or an unknown job; 0 for a known job and for "" (= -1)', async () => {
    expect((await unaryError(c, 'fault', 'Register', { jobId: JOB, role: '' })).code).toBe(GrpcStatus.UNKNOWN);
    const unknown = await unaryError(c, 'fault', 'Register', { jobId: 'missing-job', role: 'mindie' });
    expect(unknown.code).toBe(GrpcStatus.UNKNOWN);
    expect(unknown.details).toBe('jobId=missing-job not exist and is not multi-instance');
    expect(await unaryCall(c, 'fault', 'Register', { jobId: JOB, role: 'mindie' })).toEqual({ code: 0, info: 'register success' });
    expect((await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: '', role: 'platform' })).code).toBe(0);
    expect(t.server.faultRegistry.isRegistered('-1', 'platform')).toBe(true);
  });

  it('Subscribe: UNKNOWN before Register; re-Register ends the previous stream', async () => {
    const early = openStream(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: JOB, role: 'mindie' });
    expect(await early.done).toEqual({ code: GrpcStatus.UNKNOWN, details: `jobId=${JOB} not registered, role=mindie` });
    await unaryCall(c, 'fault', 'Register', { jobId: JOB, role: 'mindie' });
    const s = openStream<FaultMsgSignal>(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: JOB, role: 'mindie' });
    const stream = await eventually(() => t.stub.faultStreams.get(`${JOB}/mindie`));
    const msg: FaultMsgSignal = {
      uuid: 'u', jobId: JOB, signalType: 'fault',
      nodeFaultInfo: [{ nodeName: 'n1', nodeIP: '10.0.0.1', nodeSN: 'SN1', faultLevel: 'UnHealthy', faultDevice: [{
        deviceId: '3', deviceType: 'NPU', faultCodes: ['80E18005'], faultLevel: 'UnHealthy', faultType: ['CardUnhealthy'],
        faultReason: [], switchFaultInfos: [], faultLevels: ['SeparateNPU'] }] }],
    };
    await stream.send(msg);
    await eventually(() => s.messages[0]);
    expect(s.messages[0]).toEqual(msg);
    await unaryCall(c, 'fault', 'Register', { jobId: JOB, role: 'mindie' });
    expect((await s.done).code).toBe(GrpcStatus.OK);
    await t.stub.waitForClose((x) => x.service === 'fault' && x.reason === 'replaced');
  });

  it('GetFaultMsgSignal: 200 with the view and ClusterD\'s texts, or an empty faultSignal for a job without one', async () => {
    expect(await unaryCall(c, 'fault', 'GetFaultMsgSignal', { jobId: JOB, role: 'x' })).toEqual({ code: 200, info: `job with jobId: ${JOB} not found fault info`, faultSignal: null });
    t.stub.faultView = (jobId) => ({ uuid: '', jobId, signalType: 'normal', nodeFaultInfo: [] });
    expect(await unaryCall(c, 'fault', 'GetFaultMsgSignal', { jobId: JOB, role: 'x' })).toMatchObject({ code: 200, info: 'all info returned', faultSignal: { jobId: JOB, signalType: 'normal' } });
    expect(await unaryCall(c, 'fault', 'GetFaultMsgSignal', { jobId: '', role: 'x' })).toMatchObject({ code: 200, info: 'Succeed', faultSignal: { jobId: '-1', signalType: 'normal' } });
  });

  it('GetFaultMsgSignal: UNKNOWN for a jobId outside 8-128 chars or with CJK', async () => {
    for (const jobId of ['short', 'x'.repeat(129), '任务任务任务任务任务']) {
      const err = await unaryError(c, 'fault', 'GetFaultMsgSignal', { jobId, role: 'x' });
      expect(err.code).toBe(GrpcStatus.UNKNOWN);
      expect(err.details).toBe(`job with jobId: ${jobId.length > 64 ? `${jobId.slice(0, 64)}…(${jobId.length})` : jobId} is invalid`);
    }
  });

  it('GetFaultMsgSignal: a burst beyond burst + queue gets UNKNOWN "rate limited" (429 never reaches the client)', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 9 }, () => unaryCall(c, 'fault', 'GetFaultMsgSignal', { jobId: JOB, role: 'x' })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as { code: number; details: string }] : []));
    expect(ok).toHaveLength(5); // 2 immediate + 3 queued (served at 2/s)
    expect(refused).toHaveLength(4);
    for (const e of refused) expect(e).toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'rate limited, there is too many requests, please retry later' });
  });

  it('Register: 500 in the body beyond the served-job cap', async () => {
    await t.close();
    t = await startStubServer({ limits: { maxServeJobs: 1 } }, ['job-one-0001', 'job-two-0002']);
    c = t.client();
    expect((await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: 'job-one-0001', role: 'a' })).code).toBe(0);
    expect((await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: 'job-one-0001', role: 'b' })).code).toBe(0);
    expect((await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: 'job-two-0002', role: 'a' })).code).toBe(Code.OutOfMaxServeJobs);
  });
});
