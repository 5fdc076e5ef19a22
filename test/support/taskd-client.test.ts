import { Code, status } from '../../grpc/codes.ts';
import type { ProcessManageSignal } from '../../vocabulary/process-manage-signal.ts';
import { processManageSignal } from '../../grpc/messages.ts';
import { eventually } from '../../grpc/stub-handlers.ts';
import { startStubServer, type StubServer } from '../../grpc/testing.ts';
import { TaskdClient, clusterdTarget, type TaskdClientOptions } from './taskd-client.ts';

const JOB = '11111111-2222-3333-4444-555555555555';
const ranks = [{ rankId: '8', faultType: '0' }, { rankId: '9', faultType: '0' }];
const SCALE = 0.02; // 1 s of TaskD time = 20 ms

describe('TaskdClient against the real server', () => {
  let t: StubServer;
  const clients: TaskdClient[] = [];
  const start = (o: TaskdClientOptions = {}): TaskdClient => {
    const c = new TaskdClient({ target: t.server.address, jobId: JOB, timeScale: SCALE, ...o }).start();
    clients.push(c);
    return c;
  };
  beforeEach(async () => {
    t = await startStubServer({ limits: { keepAliveSignalMs: 30 } }, [JOB]);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.stop();
    await t.close();
  });
  const push = async (s: Partial<ProcessManageSignal> & { signalType: string }): Promise<void> => {
    const stream = await t.stub.waitForStream(JOB);
    expect(await stream.send(processManageSignal({ jobId: JOB, uuid: 'U1', ...s }))).toBe(true);
  };

  it('taskd: Init -> Register -> Subscribe, keep-alives, and the §9.4 recover exchange', async () => {
    const c = start({ script: { strategies: ['retry', 'recover', 'dump'] } });
    await c.waitFor(() => (c.subscribed && c.keepAlives > 0 ? true : undefined));
    expect(t.stub.calls.slice(0, 3).map((x) => x.method)).toEqual(['Init', 'Register', 'Subscribe']);
    expect(t.stub.calls[0]?.request).toEqual({ jobId: JOB, role: 'taskd' });

    await push({ signalType: 'preExitProcess', actions: ['pre exit process'], faultRanks: ranks, nodeRankIds: ['1'] });
    await t.stub.waitForCall((x) => x.method === 'ReportProcessFault');
    expect(t.stub.calls.find((x) => x.method === 'ReportProcessFault')?.request).toEqual({ jobId: JOB, faultRanks: ranks.map((r) => ({ ...r, faultType: '1' })) });

    await push({ signalType: 'stopTrain', actions: ['stop_train'], faultRanks: ranks });
    const stop = await t.stub.waitForCall((x) => x.method === 'ReportStopComplete');
    expect(stop.request).toEqual({ jobId: JOB, status: { code: 0, info: 'stop' }, faultRanks: ranks });

    await push({ signalType: 'globalFault', actions: ['on_global_rank', 'fault_nodes_exit'], faultRanks: ranks, nodeRankIds: ['1'] });
    const strat = await t.stub.waitForCall((x) => x.method === 'ReportRecoverStrategy');
    expect(strat.request).toEqual({ jobId: JOB, faultRanks: ranks, strategies: ['retry', 'recover', 'dump'] });

    await push({ signalType: 'changeStrategy', actions: ['change_strategy'], changeStrategy: 'recover', faultRanks: ranks, nodeRankIds: ['1'] });
    const done = await t.stub.waitForCall((x) => x.method === 'ReportRecoverStatus');
    expect(done.request).toEqual({ jobId: JOB, status: { code: 0, info: '' }, strategy: 'recover', isolateRankIds: [] });
    expect(c.received.map((s) => s.signalType)).toEqual(['preExitProcess', 'stopTrain', 'globalFault', 'changeStrategy']);
    // The server records a call before its answer reaches the client: wait for every report's
    // answer, then check each was 0 (Go TaskD retries a report up to 4 times on transport errors).
    await c.waitFor(() => (c.reports.every((r) => r.reply !== undefined || r.error !== undefined) ? true : undefined));
    expect(c.reports.map((r) => r.reply?.code)).toEqual(c.reports.map(() => 0));
    expect(c.reports.every((r) => r.attempts >= 1 && r.attempts <= 4)).toBe(true);
  });

  it('taskd: after the controller reset ends the stream (status OK) it redoes Init and Register, which are no-ops', async () => {
    const c = start();
    const first = await t.stub.waitForStream(JOB);
    first.end();
    const second = await t.stub.waitForStream(JOB, first.id);
    expect(second.id).toBeGreaterThan(first.id);
    expect(c.counters).toMatchObject({ init: 2, register: 2, subscribe: 2, streamEnds: 1 });
    expect(t.stub.calls.filter((x) => x.method === 'Init' || x.method === 'Register')).toHaveLength(2);
  });

  it('taskd: a job forgotten by the server is re-initialised and re-registered from scratch', async () => {
    start();
    const first = await t.stub.waitForStream(JOB);
    t.server.forgetJob(JOB);
    await t.stub.waitForStream(JOB, first.id);
    expect(t.stub.calls.filter((x) => x.method === 'Init')).toHaveLength(2);
  });

  it('taskd: polls Init every second while the server answers 403', async () => {
    t.stub.initAnswer = () => status(Code.ProcessRecoverEnableOff, 'off');
    const c = start();
    await c.waitFor(() => (c.counters.init >= 3 ? true : undefined));
    expect(c.counters.register).toBe(0);
    t.stub.initAnswer = () => status(0, 'ok');
    await t.stub.waitForStream(JOB);
  });

  it('taskd: answers pause_train, saveAndExit, downgrade (201 + isolate ranks) and hot switch as scripted', async () => {
    const c = start({
      script: { pauseCode: 499, hotSwitchStrategies: ['exit'], recoverStatus: (s) => (s === 'downgrade' ? { code: 201, isolateRankIds: ['8'] } : { code: 0 }) },
    });
    await push({ signalType: 'stopTrain', actions: ['pause_train'], timeout: 900 });
    expect((await c.waitForReport('ReportStopComplete')).request).toMatchObject({ status: { code: 499 } });
    await push({ signalType: 'saveAndExit', actions: ['save_and_exit'], faultRanks: ranks });
    expect((await c.waitForReport('ReportRecoverStatus')).request).toMatchObject({ strategy: 'dump' });
    const from = c.reports.length;
    await push({ signalType: 'changeStrategy', actions: ['change_strategy'], changeStrategy: 'downgrade', extraParams: '{"scale-in-strategy": "DP"}' });
    expect((await c.waitForReport('ReportRecoverStatus', 5_000, from)).request).toEqual({ jobId: JOB, status: { code: 201, info: '' }, strategy: 'downgrade', isolateRankIds: ['8'] });
    await push({ signalType: 'hot-switch', actions: ['hot switch'], faultRanks: ranks });
    expect((await c.waitForReport('ReportRecoverStrategy')).request).toMatchObject({ strategies: ['exit'] });
    const before = c.reports.length;
    for (const s of ['killMaster', 'faultNodesExit', 'pauseStartAgent'] as const) await push({ signalType: s });
    await push({ signalType: 'changeStrategy', changeStrategy: 'exit', extraParams: 'dump_exit' });
    await c.waitFor(() => (c.received.length === 8 ? true : undefined));
    expect(c.reports).toHaveLength(before);
  });

  it('taskd: each report uses a fresh connection, 4 immediate attempts, then gives up', async () => {
    const port = t.server.port;
    await t.close();
    const c = new TaskdClient({ target: `127.0.0.1:${port}`, jobId: JOB, timeScale: SCALE });
    const r = await c.reportProcessFault(ranks);
    expect(r).toMatchObject({ rpc: 'ReportProcessFault', attempts: 4 });
    expect(r.error).toMatch(/UNAVAILABLE|14/);
    t = await startStubServer({}, [JOB]);
  });

  it('taskd: the reply code is ignored (400 for an unregistered job still counts as delivered)', async () => {
    const c = new TaskdClient({ target: t.server.address, jobId: JOB });
    const r = await c.reportStopComplete(0, 'ok', ranks);
    expect(r).toMatchObject({ reply: { code: Code.UnRegistry }, attempts: 1 });
    expect(t.server.recoverRegistry.isRegistered(JOB)).toBe(false);
  });

  it('taskd: side streams are retried until registration and then held open', async () => {
    const c = start({ sideStreams: true });
    await t.stub.waitForStream(JOB);
    await eventually(() => (t.records.filter((r) => r.method === '/Recover/SubscribeNotifySwitch' && r.grpcCode === 'OK').length > 0 ? true : undefined));
    // The two side streams are retried independently: wait for the second too, don't assume order.
    await eventually(() => (t.records.filter((r) => r.method === '/Recover/SubscribeNotifyExecStressTest' && r.grpcCode === 'OK').length > 0 ? true : undefined));
    await eventually(() => (t.records.filter((r) => r.method === '/TrainingDataTrace/SubscribeDataTraceSwitch').length >= 2 ? true : undefined));
    c.stop();
  });

  it('master agent: stops for good on Init 403', async () => {
    t.stub.initAnswer = () => status(Code.ProcessRecoverEnableOff, 'off');
    const c = start({ role: 'master agent' });
    await c.waitFor(() => c.stoppedReason);
    expect(c.stoppedReason).toMatch(/403/);
    await new Promise((r) => setTimeout(r, 150));
    expect(c.counters.init).toBe(1);
  });

  it('master agent: HealthCheck loop, foreign signals dropped, re-Register + resend on a non-zero code, no isolateRankIds', async () => {
    const c = start({ role: 'master agent' });
    await t.stub.waitForStream(JOB);
    expect(t.stub.calls[0]?.request).toEqual({ jobId: JOB, role: 'master agent' });
    await c.waitFor(() => (c.counters.healthChecks >= 2 ? true : undefined));
    await push({ signalType: 'stopTrain', jobId: 'someone-else', actions: ['stop_train'] });
    await c.waitFor(() => c.discarded[0]);
    let first = true;
    const original = t.stub.recover.reportStopComplete;
    t.stub.recover.reportStopComplete = (r) => (first ? ((first = false), status(Code.UnRegistry, 'not registered')) : original(r));
    await push({ signalType: 'stopTrain', actions: ['stop_train'], faultRanks: ranks });
    const stop = await c.waitForReport('ReportStopComplete');
    expect(stop).toMatchObject({ attempts: 2, reply: { code: 0 } });
    expect(c.counters.register).toBeGreaterThanOrEqual(3);
    await push({ signalType: 'changeStrategy', actions: ['change_strategy'], changeStrategy: 'retry' });
    const rs = await t.stub.waitForCall((x) => x.method === 'ReportRecoverStatus');
    expect(rs.request).toEqual({ jobId: JOB, status: { code: 0, info: '' }, strategy: 'retry', isolateRankIds: [] });
    expect(c.reports.find((r) => r.rpc === 'ReportRecoverStatus')?.request).not.toHaveProperty('isolateRankIds');
    await push({ signalType: 'killMaster' });
    await c.waitFor(() => (c.stoppedReason === 'killMaster' ? true : undefined));
  });

  it('signals() yields the signals in order', async () => {
    const c = start({ autoRespond: false });
    await t.stub.waitForStream(JOB);
    const it = c.signals();
    await push({ signalType: 'faultNodesExit', actions: ['fault_nodes_exit'], nodeRankIds: ['2'] });
    await push({ signalType: 'killMaster' });
    expect((await it.next()).value).toMatchObject({ signalType: 'faultNodesExit', nodeRankIds: ['2'] });
    expect((await it.next()).value).toMatchObject({ signalType: 'killMaster' });
    c.stop();
    expect((await it.next()).done).toBe(true);
    expect(c.reports).toEqual([]);
  });
});

describe('clusterdTarget (docs/grpc.md#client-discovery)', () => {
  it('uses MINDX_SERVER_IP:8899, brackets IPv6, and 127.0.0.1 with LOCAL_PROXY_ENABLE=on', () => {
    expect(clusterdTarget({ MINDX_SERVER_IP: '10.96.0.12' })).toBe('10.96.0.12:8899');
    expect(clusterdTarget({ MINDX_SERVER_IP: 'fd00::12' })).toBe('[fd00::12]:8899');
    expect(clusterdTarget({ MINDX_SERVER_IP: 'clusterd-grpc-svc.mindx-dl.svc.cluster.local' })).toBe('clusterd-grpc-svc.mindx-dl.svc.cluster.local:8899');
    expect(clusterdTarget({ MINDX_SERVER_IP: '10.96.0.12', LOCAL_PROXY_ENABLE: 'on' })).toBe('127.0.0.1:8899');
    expect(() => clusterdTarget({})).toThrow(/MINDX_SERVER_IP/);
  });
});
