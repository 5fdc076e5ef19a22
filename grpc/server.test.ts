import { readFileSync } from 'node:fs';
import { connect } from 'node:http2';
import { connect as tcpConnect } from 'node:net';
import { credentials, status as GrpcStatus } from '@grpc/grpc-js';
import { DEFAULT_LIMITS, GRPC_PORT } from './server.ts';
import { eventually } from './stub-handlers.ts';
import { openStream, startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';
import { realClock } from '../runtime/clock.ts';

const JOB = '0a0b0c0d-1234-5678-9abc-def012345678';
const who = { jobId: JOB, role: 'taskd' };
const cert = readFileSync(new URL('./testdata/localhost.crt', import.meta.url));
const key = readFileSync(new URL('./testdata/localhost.key', import.meta.url));

describe('gRPC transport (docs/grpc.md#transport)', () => {
  let t: StubServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('defaults mirror ClusterD: port 8899, 4 MiB in, 8 MiB out, 64 streams, 60 s / 5 s keepalive, 1000 and 10000 qps', () => {
    expect(GRPC_PORT).toBe(8899);
    expect(DEFAULT_LIMITS).toMatchObject({
      maxReceiveMessageBytes: 4 * 1024 * 1024, maxSendMessageBytes: 8 * 1024 * 1024, maxConcurrentStreams: 64,
      maxConnections: 1024, maxConnectionsPerIp: 512, keepAliveTimeMs: 60_000, keepAliveTimeoutMs: 5_000,
      unaryQps: 1000, healthCheckQps: 10_000, faultQueryQps: 10, faultQueryQueue: 50, maxServeJobs: 10_000,
    });
  });

  it('advertises max concurrent streams 64 in its HTTP/2 SETTINGS', async () => {
    t = await startStubServer();
    const session = connect(`http://${t.server.address}`);
    const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) => session.once('remoteSettings', resolve));
    expect(settings.maxConcurrentStreams).toBe(64);
    session.destroy();
  });

  it('a message above 4 MiB is refused with RESOURCE_EXHAUSTED; the connection keeps working', async () => {
    t = await startStubServer();
    const c = t.client();
    const err = await unaryError(c, 'recover', 'HealthCheck', { jobId: 'x'.repeat(4 * 1024 * 1024 + 1), role: 'taskd' });
    expect(err.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect((await unaryCall<{ code: number }>(c, 'recover', 'HealthCheck', who)).code).toBe(0);
  });

  it('unary burst above the shared bucket: UNKNOWN "qps exceeded, method=..."; HealthCheck has its own bucket', async () => {
    t = await startStubServer({ limits: { unaryQps: 5, healthCheckQps: 50 }, clock: { ...realClock, now: () => 1_000 } }, [JOB]);
    const c = t.client();
    for (let i = 0; i < 5; i++) await unaryCall(c, 'recover', 'Init', who);
    const err = await unaryError(c, 'recover', 'Register', who);
    expect(err).toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'qps exceeded, method=/Recover/Register' });
    expect((await unaryError(c, 'pubFault', 'SendPublicFault', {})).details).toBe('qps exceeded, method=/PubFault/SendPublicFault');
    for (let i = 0; i < 50; i++) expect((await unaryCall<{ code: number }>(c, 'recover', 'HealthCheck', who)).code).toBe(0);
    expect((await unaryError(c, 'recover', 'HealthCheck', who)).details).toBe('qps exceeded, method=/Recover/HealthCheck');
    expect(t.records.filter((r) => r.grpcCode === 'UNKNOWN')).toHaveLength(3);
    // streams are not limited
    const s = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    expect((await s.done).details).toBe(`jobId=${JOB} not registed`);
  });

  it('job.Job, config.Config and TrainingDataTrace are served', async () => {
    t = await startStubServer();
    const c = t.client();
    expect(await unaryCall(c, 'job', 'Register', { role: 'CCAgent' })).toMatchObject({ code: 200, info: 'registration successful' });
    expect(await unaryCall(c, 'config', 'Register', who)).toEqual({ code: 0, info: 'register success' });
    expect((await openStream(c, 'trainingDataTrace', 'SubscribeDataTraceSwitch', who).done).code).toBe(GrpcStatus.UNKNOWN);
    expect(t.records).toContainEqual({ method: '/TrainingDataTrace/SubscribeDataTraceSwitch', grpcCode: 'UNKNOWN' });
  });

  it('listener cap: connections above the per-IP limit are refused', async () => {
    const refused: string[] = [];
    t = await startStubServer({ limits: { maxConnectionsPerIp: 1 }, onConnectionRefused: (cap) => refused.push(cap) });
    const first = t.client();
    expect((await unaryCall<{ code: number }>(first, 'recover', 'HealthCheck', who)).code).toBe(0);
    expect(t.server.connections('127.0.0.1')).toBe(1);
    const second = t.client();
    expect((await unaryError(second, 'recover', 'HealthCheck', who)).code).toBe(GrpcStatus.UNAVAILABLE);
    expect(t.logs.some((l) => l.msg === 'grpc connection refused: listener cap')).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set(['grpc_connections_per_ip']));
    first.close();
    await eventually(() => (t?.server.connections() === 0 ? true : undefined));
    expect((await unaryCall<{ code: number }>(t.client(), 'recover', 'HealthCheck', who)).code).toBe(0);
  });

  it('TLS on: a TLS client works, a plaintext client does not', async () => {
    t = await startStubServer({ tls: { cert, key } });
    expect(t.server.tls).toBe(true);
    const secure = t.client({ 'grpc.ssl_target_name_override': 'localhost' }, credentials.createSsl(cert));
    expect((await unaryCall<{ code: number }>(secure, 'recover', 'HealthCheck', who)).code).toBe(0);
    expect((await unaryError(t.client(), 'recover', 'HealthCheck', who)).code).toBe(GrpcStatus.UNAVAILABLE);
  });

  it('TLS off (the default, as ClusterD): plaintext works, a TLS client does not', async () => {
    t = await startStubServer();
    expect(t.server.tls).toBe(false);
    expect((await unaryCall<{ code: number }>(t.client(), 'recover', 'HealthCheck', who)).code).toBe(0);
    expect((await unaryError(t.client({ 'grpc.ssl_target_name_override': 'localhost' }, credentials.createSsl(cert)), 'recover', 'HealthCheck', who)).code).toBe(GrpcStatus.UNAVAILABLE);
  });

  it('shutdown ends open streams with status OK and tells the handlers why', async () => {
    t = await startStubServer({}, [JOB]);
    const c = t.client();
    await unaryCall(c, 'recover', 'Init', who);
    await unaryCall(c, 'recover', 'Register', who);
    const s = openStream(c, 'recover', 'SubscribeProcessManageSignal', who);
    const stream = await t.stub.waitForStream(JOB);
    await t.server.shutdown(1_000);
    expect((await s.done).code).toBe(GrpcStatus.OK);
    expect(t.stub.closes).toContainEqual({ service: 'recover', jobId: JOB, streamId: stream.id, reason: 'shutdown' });
  });

  it('shutdown does not wait for a client that never closes its half of the connection', async () => {
    t = await startStubServer();
    // An HTTP/2 client that completes the handshake (preface, SETTINGS, the ACK of the server's),
    // then stalls: it never answers the server's GOAWAY and FIN (a hung TaskD, a frozen node).
    const sock = tcpConnect({ host: '127.0.0.1', port: t.server.port, allowHalfOpen: true });
    sock.on('error', () => undefined);
    const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    const ack = Buffer.from([0, 0, 0, 4, 1, 0, 0, 0, 0]);
    sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), settings]));
    await new Promise((r) => sock.once('data', r));
    sock.write(ack);
    sock.pause();
    await eventually(() => (t!.server.connections() === 1 ? true : undefined));
    const t0 = Date.now();
    await t.server.shutdown(200);
    expect(Date.now() - t0).toBeLessThan(3_000);
    sock.destroy();
  }, 15_000);

  it('binding a busy port rejects', async () => {
    t = await startStubServer();
    await expect(startStubServer({ port: t.server.port })).rejects.toThrow(/EADDRINUSE/);
  });
});
