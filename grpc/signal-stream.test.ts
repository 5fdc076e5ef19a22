import { connect, constants as http2 } from 'node:http2';
import type { FaultMsgSignal } from './messages.ts';
import { loadClusterdServices } from './protos.ts';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, type StubServer } from './testing.ts';

const JOB = 'b7f0c3d2-1111-2222-3333-444455556666';

/** A fault message of about `kib` KiB. */
const bigMessage = (kib: number): FaultMsgSignal => ({
  uuid: 'u', jobId: '-1', signalType: 'fault',
  nodeFaultInfo: Array.from({ length: kib * 8 }, (_, i) => ({ nodeName: `node-${String(i).padStart(6, '0')}`, nodeIP: '10.0.0.1', nodeSN: 'SN'.repeat(40), faultLevel: 'UnHealthy', faultDevice: [] })),
});

describe('a server stream whose client does not read is dropped, not buffered for', () => {
  let t: StubServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('at maxStreamPendingWrites queued writes: RST_STREAM CANCEL, closed as slow-consumer, bound hit counted', async () => {
    const hits: Array<{ bound: string; fields: Record<string, unknown> }> = [];
    t = await startStubServer({ limits: { maxStreamPendingWrites: 8 }, onBoundHit: (bound, _m, fields) => void hits.push({ bound, fields }) }, [JOB]);
    const c = t.client();
    expect((await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: '', role: 'never-reads' })).code).toBe(0);
    // A raw HTTP/2 client that opens the stream and never reads from it (its window is never given back).
    const def = loadClusterdServices().fault.SubscribeFaultMsgSignal!;
    const body = def.requestSerialize({ jobId: '', role: 'never-reads' });
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), body]);
    frame.writeUInt32BE(body.length, 1);
    const session = connect(`http://${t.server.address}`);
    const req = session.request({ ':method': 'POST', ':path': def.path, 'content-type': 'application/grpc', te: 'trailers' });
    req.end(frame);
    req.pause();
    const closed = new Promise<number>((resolve) => req.on('close', () => resolve(req.rstCode ?? -1)));
    const stream = await eventually(() => t!.stub.faultStreams.get('-1/never-reads'));
    const sent: Array<Promise<boolean>> = [];
    for (let i = 0; i < 40 && !stream.closed; i++) sent.push(stream.send(bigMessage(16)));
    expect(stream.closed).toBe(true);
    expect(stream.signal.reason).toBe('slow-consumer');
    expect(await closed).toBe(http2.NGHTTP2_CANCEL);
    expect((await Promise.all(sent)).filter((ok) => !ok).length).toBeGreaterThanOrEqual(8);
    expect(hits).toEqual([{ bound: 'grpc_stream_pending_writes', fields: expect.objectContaining({ jobId: '-1', role: 'never-reads', pendingWrites: 8 }) }]);
    await t.stub.waitForClose((x) => x.reason === 'slow-consumer');
    expect(t.server.faultRegistry.streamCount()).toBe(0);
    session.destroy();
  });

  it('a client that reads gets every message', async () => {
    t = await startStubServer({ limits: { maxStreamPendingWrites: 8 } }, [JOB]);
    const c = t.client();
    await unaryCall(c, 'fault', 'Register', { jobId: '', role: 'reads' });
    const s = openStream<FaultMsgSignal>(c, 'fault', 'SubscribeFaultMsgSignal', { jobId: '', role: 'reads' });
    const stream = await eventually(() => t!.stub.faultStreams.get('-1/reads'));
    for (let i = 0; i < 40; i++) expect(await stream.send(bigMessage(16))).toBe(true);
    await eventually(() => (s.messages.length === 40 ? true : undefined));
    expect(stream.closed).toBe(false);
    s.cancel();
  });
});

describe('fault.Fault caps: roles per job, publishers per client and in total', () => {
  let t: StubServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a client inventing roles is refused RESOURCE_EXHAUSTED past its cap; the registry stays bounded', async () => {
    const hits: string[] = [];
    t = await startStubServer({ limits: { maxFaultRolesPerJob: 3, maxFaultPublishersPerClient: 5, maxFaultPublishers: 100 }, onBoundHit: (b) => void hits.push(b) }, [JOB]);
    const c = t.client();
    const results: number[] = [];
    for (let i = 0; i < 10; i++) {
      results.push(await unaryCall<{ code: number }>(c, 'fault', 'Register', { jobId: JOB, role: `role-${i}` }).then((r) => r.code, (e: { code: number }) => -e.code));
    }
    expect(results).toEqual([0, 0, 0, -8, -8, -8, -8, -8, -8, -8]); // 8 = RESOURCE_EXHAUSTED
    for (let i = 0; i < 10; i++) {
      await unaryCall(c, 'fault', 'Register', { jobId: '', role: `cluster-${i}` }).catch(() => undefined);
    }
    expect(t.server.faultRegistry.size()).toBe(5);
    expect(t.server.faultRegistry.clientCount('127.0.0.1')).toBe(5);
    expect(hits.filter((h) => h === 'grpc_fault_roles_per_job')).toHaveLength(7);
    expect(hits.filter((h) => h === 'grpc_fault_publishers_per_client')).toHaveLength(8);
    // another address still registers
    expect((await unaryCall<{ code: number }>(t.clientFrom('127.0.0.5'), 'fault', 'Register', { jobId: '', role: 'mindie' })).code).toBe(0);
  });

  it('SubscribeNotifySwitch: at most maxSideStreamsPerJob idle streams per job', async () => {
    t = await startStubServer({ limits: { maxSideStreamsPerJob: 2 } }, [JOB]);
    const c = t.client();
    await unaryCall(c, 'recover', 'Init', { jobId: JOB, role: 'taskd' });
    await unaryCall(c, 'recover', 'Register', { jobId: JOB, role: 'taskd' });
    const open = [openStream(c, 'recover', 'SubscribeNotifySwitch', { jobId: JOB, role: 'taskd' }), openStream(c, 'recover', 'SubscribeNotifySwitch', { jobId: JOB, role: 'taskd' })];
    await eventually(() => (t!.server.recoverRegistry.sideStreamCount(JOB) === 2 ? true : undefined));
    const third = openStream(c, 'recover', 'SubscribeNotifyExecStressTest', { jobId: JOB, role: 'taskd' });
    expect((await third.done).code).toBe(8);
    expect(t.server.recoverRegistry.sideStreamCount(JOB)).toBe(2);
    for (const s of open) s.cancel();
  });
});
