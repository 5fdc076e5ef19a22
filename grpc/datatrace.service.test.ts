import { status as GrpcStatus, type Client } from '@grpc/grpc-js';
import { eventually } from './stub-handlers.ts';
import { fakeCallerCheck, openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';

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
    const t = await startStubServer({ callerCheck: fakeCallerCheck({}, { 'job-1': ['127.0.0.7'] }) });
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

describe('TrainingDataTrace Modify / Get: only a pod in the job\'s namespace or a system caller', () => {
  const POD_A = '127.0.0.21';
  const POD_B = '127.0.0.22';
  const SYSTEM = '127.0.0.23';
  let t: StubServer;
  const refused: string[] = [];
  beforeEach(async () => {
    refused.length = 0;
    t = await startStubServer({
      callerCheck: fakeCallerCheck({ [POD_A]: { namespaces: ['team-a'] }, [POD_B]: { namespaces: ['team-b'] }, [SYSTEM]: { system: true, namespaces: ['mindx-dl'] } }),
      onCallerRefused: (m) => void refused.push(m),
    });
    t.stub.dataTraceNames.set('team-b/train', 'job-b');
    t.stub.dataTraceGet = { reply: { message: 'successfully get the status of job[team-b/train]', profilingSwitch: ON, code: 200 } };
  });
  afterEach(() => t.close());
  const handled = (): string[] => t.stub.calls.map((x) => x.method);

  it('another namespace\'s pod is refused PERMISSION_DENIED before the handler runs (nothing written, nothing revealed), counted and logged', async () => {
    const a = t.clientFrom(POD_A);
    expect(await unaryError(a, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: 'team-b/train', profilingSwitch: ON }))
      .toMatchObject({ code: GrpcStatus.PERMISSION_DENIED, details: `caller ${POD_A} is neither a system caller nor a pod in namespace team-b` });
    // an unknown job of that namespace: the same answer (no existence oracle)
    expect((await unaryError(a, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: 'team-b/nothing', profilingSwitch: ON })).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect((await unaryError(a, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: 'team-b/train' })).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(handled()).toEqual([]);
    expect(refused).toEqual(['/TrainingDataTrace/ModifyTrainingDataTraceSwitch', '/TrainingDataTrace/ModifyTrainingDataTraceSwitch', '/TrainingDataTrace/GetTrainingDataTraceSwitch']);
    expect(t.logs.filter((l) => l.level === 'warn' && l.msg.startsWith('grpc call refused')).map((l) => l.fields?.method))
      .toEqual(['/TrainingDataTrace/ModifyTrainingDataTraceSwitch', '/TrainingDataTrace/GetTrainingDataTraceSwitch']);
    // the format answer depends on the request alone: ClusterD's, whoever asks
    expect(await unaryError(a, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: 'bad' })).toMatchObject({ code: GrpcStatus.UNKNOWN });
    // an address that is no pod at all is refused too
    expect((await unaryError(t.clientFrom('127.0.0.29'), 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: 'team-b/train' })).code).toBe(GrpcStatus.PERMISSION_DENIED);
  });

  it('a pod in the namespace and a system caller are served', async () => {
    for (const ip of [POD_B, SYSTEM]) {
      const c = t.clientFrom(ip);
      await expect(unaryError(c, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: 'team-b/train', profilingSwitch: ON }))
        .resolves.toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'notify subscribe err publisher for job job-b not found' });
      expect((await unaryCall<Res>(c, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: 'team-b/train' })).code).toBe(200);
    }
    expect(handled()).toEqual(['ModifyTrainingDataTraceSwitch', 'GetTrainingDataTraceSwitch', 'ModifyTrainingDataTraceSwitch', 'GetTrainingDataTraceSwitch']);
    expect(refused).toEqual([]);
  });
});
