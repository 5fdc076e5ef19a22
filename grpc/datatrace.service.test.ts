import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';

const ON = { CommunicationOperator: 'on', Step: 'on', SaveCheckpoint: 'off', FP: 'on', DataLoader: 'off' };
type Res = { message: string; code: number; profilingSwitch?: unknown };

describe('TrainingDataTrace (docs/grpc.md#trainingdatatrace-service)', () => {
  let t: StubServer;
  let c: Client;
  beforeEach(async () => {
    t = await startStubServer({ limits: { maxServeJobs: 2 } });
    c = t.client();
    for (const j of ['job-1', 'job-2', 'job-3']) t.stub.dataTraceJobs.add(j);
    t.stub.dataTraceNames.set('ns/train', 'job-1');
  });
  afterEach(() => t.close());

  const subscribe = (jobId: string, role = 'taskd') => openStream<Res>(c, 'trainingDataTrace', 'SubscribeDataTraceSwitch', { jobId, role });
  const modify = (jobNsName: string, profilingSwitch: object | undefined = ON) =>
    unaryCall<Res>(c, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName, ...(profilingSwitch ? { profilingSwitch } : {}) });

  it('refuses a subscription of an unknown job with UNKNOWN "jobId=<id> not registered, role=<role>"', async () => {
    const s = subscribe('nobody', 'taskd');
    expect(await s.done).toEqual({ code: GrpcStatus.UNKNOWN, details: 'jobId=nobody not registered, role=taskd' });
    expect(t.server.dataTraceRegistry.size).toBe(0);
  });

  it('holds a subscription silently, pushes a Modify of its running job, and a new one preempts it (status OK)', async () => {
    const first = subscribe('job-1');
    await eventually(() => (t.server.dataTraceRegistry.has('job-1') ? true : undefined));
    expect(await modify('ns/train')).toEqual({ message: 'successfully changed profiling marker enable status', code: 200 });
    await eventually(() => (first.messages.length === 1 ? true : undefined));
    expect(first.messages[0]).toEqual({ message: 'update profiling switch', code: 200, profilingSwitch: ON });
    const second = subscribe('job-1');
    expect(await first.done).toEqual({ code: GrpcStatus.OK, details: 'OK' });
    await modify('ns/train', { ...ON, FP: 'off' });
    await eventually(() => (second.messages.length === 1 ? true : undefined));
    expect(first.messages).toHaveLength(1);
    second.cancel();
  });

  it('Modify without a subscriber or with a malformed jobNsName answers UNKNOWN with ClusterD\'s error text', async () => {
    await expect(unaryError(c, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: 'ns/train', profilingSwitch: ON }))
      .resolves.toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'notify subscribe err publisher for job job-1 not found' });
    for (const bad of ['train', 'a/b/c', '']) {
      await expect(unaryError(c, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: bad }))
        .resolves.toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'the format of jobNsName is not namespace/jobName' });
    }
  });

  it('Get with a malformed jobNsName is status OK with code 300; otherwise the handler\'s answer', async () => {
    expect(await unaryCall<Res>(c, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: 'x' }))
      .toEqual({ message: 'the format of jobNsName is not namespace/jobName', code: 300, profilingSwitch: null });
    await expect(unaryError(c, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: 'ns/train' }))
      .resolves.toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'configmaps "data-trace-job" not found' });
    t.stub.dataTraceGet = { reply: { message: 'successfully get the status of job[ns/train]', profilingSwitch: ON, code: 200 } };
    expect(await unaryCall<Res>(c, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: 'ns/train' }))
      .toEqual({ message: 'successfully get the status of job[ns/train]', code: 200, profilingSwitch: ON });
  });

  it('serves at most maxServeJobs jobs (a held job may still resubscribe)', async () => {
    const a = subscribe('job-1');
    const b = subscribe('job-2');
    await eventually(() => (t.server.dataTraceRegistry.size === 2 ? true : undefined));
    expect(await subscribe('job-3').done).toEqual({ code: GrpcStatus.UNKNOWN, details: 'jobId=job-3 not registered, role=taskd' });
    const again = subscribe('job-1');
    expect(await a.done).toMatchObject({ code: GrpcStatus.OK });
    again.cancel();
    b.cancel();
    await eventually(() => (t.server.dataTraceRegistry.size === 0 ? true : undefined));
  });
});

describe('TrainingDataTrace caller check', () => {
  it('refuses a subscription from an address that is no pod of the job (PERMISSION_DENIED)', async () => {
    const t = await startStubServer({ callerCheck: (_job, ip) => ip === '127.0.0.7' });
    t.stub.dataTraceJobs.add('job-1');
    try {
      const denied = openStream(t.clientFrom('127.0.0.8'), 'trainingDataTrace', 'SubscribeDataTraceSwitch', { jobId: 'job-1', role: 'taskd' });
      expect((await denied.done).code).toBe(GrpcStatus.PERMISSION_DENIED);
      const ok = openStream(t.clientFrom('127.0.0.7'), 'trainingDataTrace', 'SubscribeDataTraceSwitch', { jobId: 'job-1', role: 'taskd' });
      await eventually(() => (t.server.dataTraceRegistry.has('job-1') ? true : undefined));
      ok.cancel();
    } finally {
      await t.close();
    }
  });
});
