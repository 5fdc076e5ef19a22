/**
 * The gRPC surface of process-level recovery on the real apiserver (docs/grpc.md#transport, #fault-service, #pubfault-service, #server-behaviour): bad
 * and unknown job ids, a burst above the unary rate limit, an oversized message, a stream dropped
 * mid-recovery, the Fault subscription service and PubFault into the intake. Every case answers the
 * documented status and the server keeps serving.
 */
import { Client, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { Manager } from '../../controllers/manager.ts';
import type { FaultMsgSignal, FaultQueryResult } from '../../grpc/messages.ts';
import { openStream, unaryCall, unaryError } from '../../grpc/testing.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { codesIn, deviceEntry } from '../support/cluster-info-read.ts';
import { cleanUp, createJob, fakeNodes, rand, reportChipFault, startAgent, startManager, watchResetConfig } from './recovery-fixtures.ts';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Status = { code: number; info: string };

describe('Recover, Fault and PubFault services of the controller', () => {
  const admin = adminClient();
  let manager: Manager;
  let target: string;
  let c: Client;

  beforeAll(async () => {
    ({ manager, target } = await startManager(admin, ['--grpc-unary-qps=40']));
    c = new Client(target, credentials.createInsecure());
  }, 60_000);
  afterAll(async () => {
    c.close();
    await manager.stop();
  });

  const health = async (): Promise<void> => {
    expect((await unaryCall<Status>(c, 'recover', 'HealthCheck', { jobId: 'x', role: 'taskd' })).code).toBe(0);
  };

  it('answers a wrong or unknown job id with the documented codes', async () => {
    const unknown = 'f0e1d2c3-0000-1111-2222-333344445555';
    const init = await unaryCall<Status>(c, 'recover', 'Init', { jobId: unknown, role: 'taskd' });
    expect(init).toEqual({ code: 502, info: `jobId=${unknown} get pod group failed` });
    expect((await unaryCall<Status>(c, 'recover', 'Init', { jobId: '', role: 'taskd' })).code).toBe(502);
    expect((await unaryCall<Status>(c, 'recover', 'Register', { jobId: unknown, role: 'taskd' })).code).toBe(408);
    expect((await unaryCall<Status>(c, 'recover', 'ReportStopComplete', { jobId: unknown, status: { code: 0 } })).code).toBe(400);
    expect((await unaryCall<Status>(c, 'recover', 'ReportProcessFault', { jobId: unknown, faultRanks: [{ rankId: '1', faultType: '1' }] })).code).toBe(400);
    const sub = openStream(c, 'recover', 'SubscribeProcessManageSignal', { jobId: unknown, role: 'taskd' });
    expect(await sub.done).toEqual({ code: GrpcStatus.UNKNOWN, details: `jobId=${unknown} not registed` });
    expect((await unaryError(c, 'fault', 'Register', { jobId: unknown, role: 'platform' })).details).toBe(`jobId=${unknown} not exist and is not multi-instance`);

    // A job whose PodGroup has process recovery off and no hotSwitch: 403, and Register stays refused.
    const nodes = await fakeNodes(admin, `rgo-${rand()}`, 2);
    const job = await createJob(admin, { ns: await newNamespace(admin, 'rgo'), nodes });
    await eventually(() => manager.recovery.lookup(job.uid) !== undefined);
    expect((await unaryCall<Status>(c, 'recover', 'Init', { jobId: job.uid, role: 'taskd' })).code).toBe(403);
    expect((await unaryCall<Status>(c, 'recover', 'Register', { jobId: job.uid, role: 'taskd' })).code).toBe(408);
    expect(manager.recovery.isRegistered(job.uid)).toBe(false);
    await cleanUp(admin, job, nodes);
    await health();
  });

  it('refuses a burst above the unary rate limit with UNKNOWN "qps exceeded", and keeps serving', async () => {
    await new Promise((r) => setTimeout(r, 1_100)); // a full bucket
    const calls = Array.from({ length: 120 }, () =>
      unaryCall<Status>(c, 'recover', 'Init', { jobId: 'burst-job', role: 'taskd' }).then(() => 'ok', (e: { code: number; details: string }) => `${e.code}:${e.details}`));
    const results = await Promise.all(calls);
    const limited: string[] = results.filter((r) => r === `${GrpcStatus.UNKNOWN}:qps exceeded, method=/Recover/Init`);
    expect(limited.length).toBeGreaterThan(0);
    expect(results.filter((r) => r === 'ok').length).toBeGreaterThan(0);
    expect(results.every((r) => r === 'ok' || limited.includes(r))).toBe(true);
    await health(); // HealthCheck has its own bucket
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await unaryCall<Status>(c, 'recover', 'Init', { jobId: 'burst-job', role: 'taskd' })).code).toBe(502);
  });

  it('refuses a message above 4 MiB with RESOURCE_EXHAUSTED, and keeps serving', async () => {
    const err = await unaryError(c, 'recover', 'ReportProcessFault', { jobId: 'j'.repeat(5 * 1024 * 1024), faultRanks: [] });
    expect(err.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    await health();
  }, 30_000);

  it('a stream dropped mid-recovery resets the FSM and clears reset-config', async () => {
    const nodes = await fakeNodes(admin, `rgd-${rand()}`, 4);
    const ns = await newNamespace(admin, 'rgd');
    const job = await createJob(admin, { ns, nodes, labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': 'retry,recover' } });
    const resets = watchResetConfig(admin, job);
    await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 4);
    const agent = startAgent(target, job.uid, { stopCode: null });
    try {
      await agent.waitFor(() => (agent.subscribed && manager.recovery.phase(job.uid) === 'INIT' ? true : undefined), 15_000, 'subscription');
      // A too-long report of a registered job: 409, nothing fed.
      const many = Array.from({ length: 100_001 }, () => ({ rankId: '1', faultType: '1' }));
      expect((await unaryCall<Status>(c, 'recover', 'ReportProcessFault', { jobId: job.uid, faultRanks: many })).code).toBe(409);
      await agent.reportProcessFault([{ rankId: '3', faultType: '0' }]); // MindIO's business-plane report: a step-retry UCE
      await reportChipFault(admin, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
      await agent.waitForSignal((s) => s.signalType === 'stopTrain', 20_000);
      expect(manager.recovery.phase(job.uid)).toBe('WaitReportStopCompleteState');
      await eventually(() => resets.versions.some((v) => v.FaultFlushing));
      agent.stop(); // the TaskD goes away mid-recovery
      await eventually(() => manager.recovery.phase(job.uid) === 'INIT', 10_000);
      await eventually(() => resets.versions.at(-1)?.FaultFlushing === false, 10_000);
      expect(manager.recovery.memory.hold(job.uid)).toBeUndefined();
      // A late report of the lost recovery is answered (0) without starting anything.
      expect((await unaryCall<Status>(c, 'recover', 'ReportStopComplete', { jobId: job.uid, status: { code: 0, info: '' } })).code).toBe(0);
      expect(manager.recovery.phase(job.uid)).toBe('INIT');
      await health();
    } finally {
      agent.stop();
      resets.stop();
      await cleanUp(admin, job, nodes);
    }
  }, 60_000);

  it('Fault service: job subscribers get fault / normal messages; GetFaultMsgSignal answers 200', async () => {
    const nodes = await fakeNodes(admin, `rgf-${rand()}`, 2);
    // fault-scheduling off: the jobs pipeline leaves the pods alone, so the fault stays on the job.
    const job = await createJob(admin, { ns: await newNamespace(admin, 'rgf'), nodes, labels: { 'fault-scheduling': 'off' } });
    await eventually(() => manager.recovery.lookup(job.uid) !== undefined);
    expect(await unaryCall<Status>(c, 'fault', 'Register', { jobId: job.uid, role: 'mindie' })).toEqual({ code: 0, info: 'register success' });
    const s = openStream<FaultMsgSignal>(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: job.uid, role: 'mindie' });
    try {
      await reportChipFault(admin, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
      const fault = await eventually(() => s.messages.find((m) => m.signalType === 'fault'), 10_000);
      expect(fault.jobId).toBe(job.uid);
      expect(fault.nodeFaultInfo.map((n) => [n.nodeName, n.faultLevel])).toEqual([[nodes[1], 'UnHealthy']]);
      expect(fault.nodeFaultInfo[0]!.faultDevice).toEqual([expect.objectContaining({ deviceId: '1', deviceType: 'NPU', faultCodes: ['80E18402'], faultLevel: 'UnHealthy', faultLevels: ['SeparateNPU'] })]);
      const q = await unaryCall<FaultQueryResult>(c, 'fault', 'GetFaultMsgSignal', { jobId: job.uid, role: 'mindie' });
      expect(q.code).toBe(200);
      expect(q.faultSignal?.nodeFaultInfo[0]?.nodeName).toBe(nodes[1]);
      await reportChipFault(admin, nodes[1]!, 'Ascend910-1', '80E18402', 'NotHandleFault');
      await eventually(() => s.messages.find((m) => m.signalType === 'normal'), 10_000);
      const cleared = await unaryCall<FaultQueryResult>(c, 'fault', 'GetFaultMsgSignal', { jobId: job.uid, role: 'mindie' });
      expect(cleared.code).toBe(200);
      // A known job without faults: a normal, empty message, as ClusterD's GetFaultMsgSignal.
      expect([cleared.info, cleared.faultSignal?.signalType, cleared.faultSignal?.nodeFaultInfo ?? []]).toEqual(['all info returned', 'normal', []]);
    } finally {
      s.cancel();
      await cleanUp(admin, job, nodes);
    }
  }, 60_000);

  it('MindIE hold (docs/rules.md#filter.mindie-hold): a RestartRequest reaches the scheduler until the MindIE controller subscribes by its MindIE job id, is held while it stays subscribed, and is back when it leaves', async () => {
    const nodes = await fakeNodes(admin, `rgm-${rand()}`, 1);
    const ns = await newNamespace(admin, 'rgm');
    const mindieId = `mindie-${rand()}`;
    const server = { jobID: mindieId, app: 'mindie-ms-server' };
    const job = await createJob(admin, { ns, nodes, labels: { 'fault-scheduling': 'off', ...server }, podLabels: server });
    const controller = { jobID: mindieId, app: 'mindie-ms-controller' };
    const ctl = await createJob(admin, { ns, nodes, npusPerPod: 0, labels: { 'fault-scheduling': 'off', ...controller }, podLabels: controller, resetConfig: false });
    const node = nodes[0]!;
    // the scheduler view (cluster-info, vcjob-fault-npu-cm, decisions) of the job's chip
    const scheduled = (): boolean => manager.deviceFaults.effective(node).some((r) => r.code === '80C98008' && r.device === 'Ascend910-0');
    let s: ReturnType<typeof openStream<FaultMsgSignal>> | undefined;
    try {
      await eventually(() => manager.recovery.lookup(job.uid) !== undefined);
      await reportChipFault(admin, node, 'Ascend910-0', '80C98008', 'RestartRequest');
      await eventually(scheduled, 10_000); // not subscribed: reported at once
      // A subscription by the server job's own id is not the MindIE controller's: no hold (as ClusterD).
      expect(await unaryCall<Status>(c, 'fault', 'Register', { jobId: job.uid, role: 'mindie' })).toEqual({ code: 0, info: 'register success' });
      const own = openStream<FaultMsgSignal>(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: job.uid, role: 'mindie' });
      await eventually(() => (manager.grpc.faults.subscribed(job.uid) ? true : undefined), 5_000);
      await sleep(1_000);
      expect(scheduled()).toBe(true);
      own.cancel();
      expect(await unaryCall<Status>(c, 'fault', 'Register', { jobId: mindieId, role: 'mindie-ms-controller' })).toEqual({ code: 0, info: 'register success' });
      const t0 = Date.now();
      s = openStream<FaultMsgSignal>(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: mindieId, role: 'mindie-ms-controller' });
      await eventually(() => !scheduled(), 5_000);
      const held = Date.now() - t0;
      await eventually(async () => !codesIn(await deviceEntry(admin, node), 'Ascend910-0').includes('80C98008'), 5_000);
      // the job view (the fault service) still has it
      expect(manager.recovery.jobView(node).some((r) => r.code === '80C98008')).toBe(true);
      s.cancel();
      const t1 = Date.now();
      await eventually(scheduled, 5_000);
      await eventually(async () => codesIn(await deviceEntry(admin, node), 'Ascend910-0').includes('80C98008'), 5_000);
      console.log(`MindIE hold: scheduler view followed the subscription in ${held} ms, the unsubscription in ${Date.now() - t1} ms`);
    } finally {
      s?.cancel();
      await cleanUp(admin, ctl, []);
      await cleanUp(admin, job, nodes);
    }
  }, 60_000);

  it('PubFault: a valid public fault reaches the fault view; an unknown code answers 409', async () => {
    const [node] = await fakeNodes(admin, `rgp-${rand()}`, 1);
    const now = Date.now();
    const faultId = `fault-${rand()}-01`;
    const req = (code: string, assertion: string) => ({
      id: `pub-${rand()}-0001`, timestamp: now, version: '1.0', resource: 'CCAE',
      faults: [{ faultId, faultType: 'NPU', faultCode: code, faultTime: now, assertion, influence: [{ nodeName: node, deviceIds: [2] }], description: 'test' }],
    });
    expect(await unaryCall<Status>(c, 'pubFault', 'SendPublicFault', req('220001001', 'occur'))).toEqual({ code: 0, info: 'public fault send successfully' });
    await eventually(() => manager.deviceFaults.effective(node!).some((r) => r.source === 'public' && r.code === '220001001' && r.device === 'Ascend910-2'), 5_000);
    const bad = await unaryCall<Status>(c, 'pubFault', 'SendPublicFault', req('999999999', 'occur'));
    expect(bad.code).toBe(409);
    expect(bad.info).toContain('999999999');
    expect((await unaryCall<Status>(c, 'pubFault', 'SendPublicFault', req('220001001', 'recover'))).code).toBe(0);
    // Under 5 s old: ClusterD deletes it when it turns 5 s old.
    await eventually(() => !manager.deviceFaults.effective(node!).some((r) => r.source === 'public'), 10_000);
  }, 30_000);
});
