import { status as GrpcStatus } from '@grpc/grpc-js';
import { CallerGate, normalizeIp, peerIp } from './peer.ts';
import { silentLogger } from './handlers.ts';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';

const JOB = '0a0b0c0d-1234-5678-9abc-def012345678';
const POD_IP = '127.0.0.7';
const STRANGER = '127.0.0.9';
/** A pod in the job's namespace, not of the job (a MindIE controller beside its server job). */
const NEIGHBOUR = '127.0.0.8';
const taskd = { jobId: JOB, role: 'taskd' };

describe('peerIp / normalizeIp', () => {
  it('reads the IP of grpc-js getPeer() in every form it takes', () => {
    expect(peerIp('10.1.2.3:40000')).toBe('10.1.2.3');
    expect(peerIp('::ffff:127.0.0.7:5555')).toBe('127.0.0.7');
    expect(peerIp('fd00::1:8899')).toBe('fd00::1');
    expect(peerIp('[fd00::1]:8899')).toBe('fd00::1');
    expect(peerIp('10.1.2.3')).toBe('10.1.2.3');
    expect(peerIp('unknown')).toBe('');
    expect(peerIp('')).toBe('');
    expect(normalizeIp('FD00::A')).toBe('fd00::a');
  });
});

describe('caller gate: calls that name a namespace', () => {
  const who = { '10.0.0.1': { system: false, namespaces: new Set(['team-a']) }, '10.0.0.2': { system: true, namespaces: new Set(['mindx-dl']) } } as const;
  const check = { onJob: () => false, whois: (ip: string) => who[ip as keyof typeof who] ?? { system: false, namespaces: new Set<string>() } };
  const gate = (on: boolean, refused: string[] = []) => new CallerGate(on ? check : undefined, silentLogger, (m) => void refused.push(m), () => 0);

  it('a pod in the namespace or a system caller passes; others are refused and counted', () => {
    const refused: string[] = [];
    const g = gate(true, refused);
    expect(g.namespaceRefusal('/m', ['team-a'], '10.0.0.1:5000')).toBeUndefined();
    expect(g.namespaceRefusal('/m', ['team-b', 'team-a'], '10.0.0.1:5000')).toBeUndefined();
    expect(g.namespaceRefusal('/m', ['team-b'], '10.0.0.2:5000')).toBeUndefined();
    expect(g.namespaceRefusal('/m', ['team-b'], '10.0.0.1:5000')).toBe('caller 10.0.0.1 is neither a system caller nor a pod in namespace team-b');
    expect(g.namespaceRefusal('/m', ['team-b'], 'unknown')).toBe('caller unknown is neither a system caller nor a pod in namespace team-b');
    expect(g.strangerRefusal('/s', '10.0.0.1:5000')).toBeUndefined();
    expect(g.strangerRefusal('/s', '10.0.0.2:5000')).toBeUndefined();
    expect(g.strangerRefusal('/s', '10.0.0.9:5000')).toBe('caller 10.0.0.9 is neither a pod nor a system caller');
    expect(refused).toEqual(['/m', '/m', '/s']);
    const sees = g.visibility('10.0.0.1:5000');
    expect([sees('team-a'), sees('team-b')]).toEqual([true, false]);
    expect(g.visibility('10.0.0.2:5000')('team-b')).toBe(true);
    expect(g.visibility('unknown')('team-a')).toBe(false);
  });

  it('without a check (--grpc-caller-check=off) every caller sees and acts on every namespace, as ClusterD', () => {
    const refused: string[] = [];
    const g = gate(false, refused);
    expect(g.namespaceRefusal('/m', ['team-b'], '10.0.0.9:5000')).toBeUndefined();
    expect(g.namespaceRefusal('/m', [], '10.0.0.9:5000')).toBeUndefined();
    expect(g.strangerRefusal('/s', 'unknown')).toBeUndefined();
    expect(g.visibility('10.0.0.9:5000')('team-b')).toBe(true);
    expect(refused).toEqual([]);
  });
});

describe('caller gate: a call on a job only from an address of one of its pods', () => {
  let t: StubServer | undefined;
  const refusedMethods: string[] = [];
  const start = async (check: boolean): Promise<StubServer> => {
    refusedMethods.length = 0;
    t = await startStubServer({
      ...(check ? { callerCheck: {
        onJob: (jobId: string, ip: string, scope: string) => jobId === JOB && (ip === POD_IP || (scope === 'namespace' && ip === NEIGHBOUR)),
        whois: () => ({ system: false, namespaces: new Set<string>() }),
      } } : {}),
      onCallerRefused: (m) => void refusedMethods.push(m),
    }, [JOB]);
    return t;
  };
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a stranger is refused PERMISSION_DENIED on Init, Register, the subscriptions, reports and fault.Fault of the job; nothing is registered', async () => {
    const s = await start(true);
    const c = s.clientFrom(STRANGER);
    const denied = await unaryError(c, 'recover', 'Init', taskd);
    expect(denied).toMatchObject({ code: GrpcStatus.PERMISSION_DENIED, details: `caller ${STRANGER} is not a pod of job ${JOB}` });
    expect((await unaryError(c, 'recover', 'Register', taskd)).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect((await openStream(c, 'recover', 'SubscribeProcessManageSignal', taskd).done).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect((await openStream(c, 'recover', 'SubscribeNotifySwitch', taskd).done).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect((await unaryError(c, 'recover', 'ReportProcessFault', { jobId: JOB, faultRankIds: [] })).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect((await unaryError(c, 'fault', 'Register', { jobId: JOB, role: 'mindie' })).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(s.stub.calls.filter((x) => x.method === 'Init' || x.method === 'Register')).toEqual([]);
    expect(s.server.recoverRegistry.entries()).toEqual([]);
    expect(s.server.faultRegistry.size()).toBe(0);
    expect(refusedMethods).toEqual(['/Recover/Init', '/Recover/Register', '/Recover/SubscribeProcessManageSignal', '/Recover/SubscribeNotifySwitch', '/Recover/ReportProcessFault', '/fault.Fault/Register']);
    expect(s.records.filter((r) => r.grpcCode === 'PERMISSION_DENIED')).toHaveLength(6);
    // one warn line a minute per method, not one per call
    await unaryError(c, 'recover', 'Init', taskd);
    expect(s.logs.filter((l) => l.level === 'warn' && l.msg.startsWith('grpc call refused: the caller')).map((l) => l.fields?.method)).toEqual(refusedMethods.slice(0, 6));
    // cluster-wide fault.Fault (jobId '' = -1) and HealthCheck name no job: open
    expect((await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: '', role: 'mindie-controller' })).code).toBe(0);
    expect((await unaryCall<{ code: number }>(c, 'recover', 'HealthCheck', taskd)).code).toBe(0);
  });

  it('the job\'s own pod is served: Init, Register, subscription', async () => {
    const s = await start(true);
    const c = s.clientFrom(POD_IP);
    expect((await unaryCall<{ code: number }>(c, 'recover', 'Init', taskd)).code).toBe(0);
    expect((await unaryCall<{ code: number }>(c, 'recover', 'Register', taskd)).code).toBe(0);
    const sub = openStream(c, 'recover', 'SubscribeProcessManageSignal', taskd);
    await s.stub.waitForStream(JOB);
    // a stranger still cannot report for it, nor take its stream over
    const other = s.clientFrom(STRANGER);
    expect((await unaryError(other, 'recover', 'ReportStopComplete', { jobId: JOB, status: { code: 0, info: '' }, faultRanks: [] })).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect((await openStream(other, 'recover', 'SubscribeProcessManageSignal', taskd).done).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(s.stub.closes).toEqual([]);
    sub.cancel();
    await eventually(() => s.stub.closes[0]);
  });

  it('fault.Fault for a job: also from a pod in the job\'s namespace; Recover only from a pod of the job', async () => {
    const s = await start(true);
    const c = s.clientFrom(NEIGHBOUR);
    expect(await unaryCall(c, 'fault', 'Register', { jobId: JOB, role: 'mindie-controller' })).toEqual({ code: 0, info: 'register success' });
    const sub = openStream(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: JOB, role: 'mindie-controller' });
    await eventually(() => s.stub.faultStreams.get(`${JOB}/mindie-controller`));
    expect(await unaryError(c, 'recover', 'Init', taskd)).toMatchObject({ code: GrpcStatus.PERMISSION_DENIED, details: `caller ${NEIGHBOUR} is not a pod of job ${JOB}` });
    expect(await unaryError(s.clientFrom(STRANGER), 'fault', 'Register', { jobId: JOB, role: 'x' })).toMatchObject({
      code: GrpcStatus.PERMISSION_DENIED, details: `caller ${STRANGER} is not a pod in the namespace of job ${JOB}`,
    });
    sub.cancel();
  });

  it('without a check (--grpc-caller-check=off) any address acts on any job, as ClusterD', async () => {
    const s = await start(false);
    const c = s.clientFrom(STRANGER);
    expect((await unaryCall<{ code: number }>(c, 'recover', 'Init', taskd)).code).toBe(0);
    expect((await unaryCall<{ code: number }>(c, 'recover', 'Register', taskd)).code).toBe(0);
    expect(refusedMethods).toEqual([]);
  });
});
