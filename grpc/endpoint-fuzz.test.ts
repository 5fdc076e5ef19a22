/**
 * Fuzz of the gRPC endpoint (hostile input must not crash or wedge it): raw TCP bytes, raw HTTP/2 frames, gRPC requests with hostile
 * headers and framing, oversized and truncated messages, unknown methods, and random protobuf payloads
 * (valid wire encoding with random fields, and field-name-shaped objects) sent to every method of every
 * service the server registers. After each case the server must still answer a valid call, on a
 * connection opened before the fuzz and on a new one; at the end every fuzz connection is closed.
 *
 * Seeds are printed; replay one with GRPC_FUZZ_SEED=<seed>.
 */
import { connect as tcpConnect } from 'node:net';
import { connect as h2Connect, constants as H2 } from 'node:http2';
import { Client, status as GrpcStatus, type MethodDefinition } from '@grpc/grpc-js';
import fc from 'fast-check';
import { eventually } from './stub-handlers.ts';
import { startStubServer, unaryCall, unaryError, type StubServer } from './testing.ts';
import { SERVICE_NAMES, type ServiceKey } from './protos.ts';
import { PREFACE, frame, fuzzSeed, grpcMessage, messageObject, protoBytes, varint } from './fuzz-kit.ts';

const JOB = '0a0b0c0d-1234-5678-9abc-def012345678';
const who = { jobId: JOB, role: 'taskd' };
const SEED = fuzzSeed();

interface Method { readonly path: string; readonly def: MethodDefinition<unknown, unknown> }

describe(`gRPC endpoint fuzz (seed ${SEED})`, () => {
  let t: StubServer;
  let steady: Client; // opened before the fuzz; must keep working throughout
  let methods: Method[];
  const params = (numRuns: number): fc.Parameters<unknown> => ({ seed: SEED, numRuns, endOnFailure: true });

  beforeAll(async () => {
    process.stdout.write(`gRPC fuzz seed ${SEED} (replay: GRPC_FUZZ_SEED=${SEED})\n`);
    // Real limits except the rate buckets: the fuzz would otherwise just drain them.
    t = await startStubServer({ limits: { unaryQps: 1e9, healthCheckQps: 1e9, pubFaultBurst: 1e9, pubFaultRefillPerSec: 1e9, faultQueryQps: 1e9, faultQueryBurst: 1e9 } }, [JOB]);
    steady = t.client();
    methods = (Object.keys(SERVICE_NAMES) as ServiceKey[]).flatMap((k) =>
      Object.values(t.services[k]).map((def) => ({ path: def.path, def: def as MethodDefinition<unknown, unknown> })));
    expect(methods.length).toBeGreaterThan(20);
    expect((await unaryCall<{ code: number }>(steady, 'recover', 'HealthCheck', who)).code).toBe(0);
  });

  afterAll(async () => { await t.close(); });

  /** The server answers a valid call, on the old connection and (every 10th time) on a new one. */
  let checks = 0;
  async function stillAnswers(): Promise<void> {
    expect((await unaryCall<{ code: number }>(steady, 'recover', 'HealthCheck', who)).code).toBe(0);
    if (checks++ % 10 !== 0) return;
    const fresh = t.client();
    try { expect((await unaryCall<{ code: number }>(fresh, 'recover', 'HealthCheck', who)).code).toBe(0); } finally { fresh.close(); }
  }

  /** Writes bytes on a raw TCP connection; resolves when the server closes it or after `waitMs`. */
  function rawTcp(chunks: readonly Uint8Array[], waitMs = 100): Promise<Buffer> {
    return new Promise((resolve) => {
      const s = tcpConnect(t.server.port, '127.0.0.1');
      const got: Buffer[] = [];
      const done = (): void => { clearTimeout(timer); s.destroy(); resolve(Buffer.concat(got)); };
      const timer = setTimeout(done, waitMs);
      s.on('data', (d: Buffer) => got.push(d));
      s.on('error', done);
      s.on('close', done);
      s.on('connect', () => { for (const c of chunks) s.write(c); s.end(); }); // half-close: the server sees EOF at once
    });
  }

  /**
   * One gRPC request over node:http2 with the given path, headers and body chunks; resolves with the
   * response headers/trailers (or what went wrong on the client side) within `waitMs`.
   */
  function h2Request(path: string, headers: Record<string, string>, body: readonly Uint8Array[], opts: { endStream?: boolean; reset?: boolean; waitMs?: number } = {}): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      const session = h2Connect(`http://${t.server.address}`);
      const out: Record<string, unknown> = {};
      const done = (): void => { clearTimeout(timer); session.destroy(); resolve(out); };
      const timer = setTimeout(done, opts.waitMs ?? 100);
      session.on('error', (e) => { out.sessionError = e.message; done(); });
      let req;
      try {
        req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers }, { endStream: false });
      } catch (e) { out.requestError = (e as Error).message; done(); return; }
      req.on('response', (h) => { out.status = h[':status']; out.grpcStatus = h['grpc-status']; });
      req.on('trailers', (h) => { out.grpcStatus = h['grpc-status']; out.message = h['grpc-message']; });
      req.on('data', () => {});
      req.on('error', (e) => { out.streamError = e.message; });
      req.on('close', done);
      for (const c of body) req.write(c);
      if (opts.reset === true) req.close(H2.NGHTTP2_CANCEL);
      else if (opts.endStream !== false) req.end();
    });
  }

  it('random bytes on a raw TCP connection (with and without the HTTP/2 preface)', async () => {
    await fc.assert(fc.asyncProperty(fc.boolean(), fc.array(fc.uint8Array({ minLength: 1, maxLength: 2_048 }), { minLength: 1, maxLength: 4 }), async (preface, junk) => {
      await rawTcp(preface ? [PREFACE, ...junk] : junk);
      await stillAnswers();
    }), params(100));
  }, 60_000);

  it('random HTTP/2 frames after a valid preface and SETTINGS', async () => {
    const anyFrame = fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 255 }), fc.oneof(fc.constantFrom(0, 1, 3, 2 ** 31 - 1), fc.nat()), fc.uint8Array({ maxLength: 300 }))
      .map(([type, flags, id, payload]) => frame(type, flags, id, payload));
    await fc.assert(fc.asyncProperty(fc.array(anyFrame, { minLength: 1, maxLength: 8 }), async (frames) => {
      await rawTcp([PREFACE, frame(4, 0, 0, new Uint8Array()), ...frames]);
      await stillAnswers();
    }), params(150));
  }, 60_000);

  it('gRPC requests with hostile paths, headers and framing', async () => {
    const path = fc.oneof(
      fc.constantFrom(...methods.map((m) => m.path)),
      fc.constantFrom('/Recover/Nope', '/nope.Service/Method', '/', '//', '/Recover/', '/fault.Fault/GetFaultMsgSignal/x'),
      fc.string({ minLength: 1, maxLength: 40 }).map((s) => `/${s.replace(/[^\u0020-\u007e]/g, '_')}`),
    );
    const headers = fc.record({
      'content-type': fc.constantFrom('application/grpc', 'application/grpc+proto', 'application/json', 'text/plain', 'application/grpc+json'),
      'grpc-encoding': fc.constantFrom('identity', 'gzip', 'deflate', 'snappy', 'br'),
      'grpc-timeout': fc.constantFrom('1S', '100m', '99999999H', '0n', 'x', '-1S', '1'),
      'grpc-accept-encoding': fc.constantFrom('identity', 'gzip', 'zzz'),
      te: fc.constantFrom('trailers', 'gzip'),
      'user-agent': fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, '_')),
    }, { requiredKeys: [] });
    const body = fc.array(fc.oneof(
      fc.tuple(protoBytes, fc.constantFrom(0, 0, 0, 1, 2, 255)).map(([b, compressed]) => grpcMessage(b, { compressed })),
      fc.tuple(protoBytes, fc.nat({ max: 2 ** 32 - 1 })).map(([b, declared]) => grpcMessage(b, { declared })), // lying length prefix
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)), // not even a gRPC frame
    ), { maxLength: 3 });
    const mode = fc.constantFrom({}, { endStream: false }, { reset: true });
    await fc.assert(fc.asyncProperty(path, headers, body, mode, async (p, h, b, m) => {
      await h2Request(p, h as Record<string, string>, b, m);
      await stillAnswers();
    }), params(150));
  }, 90_000);

  it('random protobuf payloads to every method of every service', async () => {
    const payload = fc.oneof(
      protoBytes.map((b) => ({ bytes: Buffer.from(b) })),
      messageObject([JOB]).map((o) => ({ object: o })),
      fc.uint8Array({ maxLength: 200 }).map((b) => ({ bytes: Buffer.from(b) })),
    );
    await fc.assert(fc.asyncProperty(fc.constantFrom(...methods), payload, async (m, p) => {
      let body: Buffer;
      if ('object' in p) {
        try { body = m.def.requestSerialize(p.object); } catch { body = Buffer.from(JSON.stringify(p.object)); }
      } else body = p.bytes;
      const c = steady;
      if (m.def.responseStream) {
        const call = c.makeServerStreamRequest(m.path, (x: Buffer) => x, (x: Buffer) => x, body);
        call.on('data', () => {});
        call.on('error', () => {});
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => { call.cancel(); resolve(); }, 50); // streams may stay open: cancel them
          call.on('status', () => { clearTimeout(timer); resolve(); });
        });
      } else {
        await new Promise<void>((resolve) => c.makeUnaryRequest(m.path, (x: Buffer) => x, (x: Buffer) => x, body, () => resolve()));
      }
      await stillAnswers();
    }), params(200));
  }, 90_000);

  it('oversized, truncated and unknown-method calls are refused and the server keeps answering', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024 + 16, 0x41);
    // A real message above 4 MiB, through a well-behaved client: RESOURCE_EXHAUSTED.
    const err = await new Promise<{ code: number }>((resolve) =>
      steady.makeUnaryRequest('/Recover/HealthCheck', (x: Buffer) => x, (x: Buffer) => x, Buffer.concat([Buffer.from([0x0a]), Buffer.from(varint(BigInt(big.length))), big]), (e) => resolve(e ?? { code: 0 })));
    expect(err.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    // Declared 4 GiB, nothing sent; declared 4 MiB + 1 with a few bytes; then the client goes away.
    for (const declared of [2 ** 32 - 1, 4 * 1024 * 1024 + 1]) {
      const r = await h2Request('/Recover/HealthCheck', {}, [grpcMessage(Buffer.from('abc'), { declared })], { waitMs: 500 });
      expect(r.sessionError).toBeUndefined();
      await stillAnswers();
    }
    const truncated = await h2Request('/Recover/HealthCheck', {}, [grpcMessage(Buffer.from('abcdef'), { declared: 100 })], { waitMs: 1_000 });
    expect(truncated.grpcStatus).not.toBe('0'); // half a message is never a valid request
    // Unknown methods answer UNIMPLEMENTED.
    for (const p of ['/Recover/Nope', '/nope.Service/Method']) {
      const r = await h2Request(p, {}, [grpcMessage(Buffer.from([]))], { waitMs: 1_000 });
      expect(String(r.grpcStatus)).toBe(String(GrpcStatus.UNIMPLEMENTED));
    }
    // More concurrent streams than the server's limit on one connection: the excess waits or is refused.
    const many = Array.from({ length: 100 }, () => {
      const call = steady.makeServerStreamRequest('/Recover/SubscribeProcessManageSignal', (x: Buffer) => x, (x: Buffer) => x, Buffer.from([0x0a, 0x01, 0x78]));
      call.on('data', () => {});
      call.on('error', () => {});
      return call;
    });
    await new Promise((r) => setTimeout(r, 200));
    for (const call of many) call.cancel();
    await stillAnswers();
  }, 60_000);

  it('a connection that never completes the HTTP/2 handshake is closed (grpc-go: ConnectionTimeout); a real client is not', async () => {
    const s = await startStubServer({ limits: { handshakeTimeoutMs: 600, maxConnectionsPerIp: 4 } });
    try {
      const client = s.client();
      expect((await unaryCall<{ code: number }>(client, 'recover', 'HealthCheck', who)).code).toBe(0);
      // Three silent or half-handshaken sockets fill the per-IP cap of 4 (with the real client's)...
      const silent = [Buffer.alloc(0), PREFACE.subarray(0, 10), PREFACE].map((bytes) => {
        const sock = tcpConnect(s.server.port, '127.0.0.1');
        sock.on('error', () => {});
        const t0 = Date.now();
        const connected = new Promise<void>((r) => sock.on('connect', () => { if (bytes.length > 0) sock.write(bytes); r(); }));
        const closed = new Promise<number>((resolve) => sock.on('close', () => resolve(Date.now() - t0)));
        const closedAfterMs = Promise.race([closed, new Promise<number>((r) => setTimeout(() => { sock.destroy(); r(Infinity); }, 3_000))]);
        return { connected, closedAfterMs };
      });
      await Promise.all(silent.map((x) => x.connected));
      await eventually(() => (s.server.connections() === 4 ? true : undefined), 2_000, 'four connections');
      // ...so a new client is locked out while they hold their slots,
      expect((await unaryError(s.client(), 'recover', 'HealthCheck', who)).code).toBe(GrpcStatus.UNAVAILABLE);
      // until the handshake timeout closes them (without it, for ever).
      const closedAfter = await Promise.all(silent.map((x) => x.closedAfterMs));
      for (const ms of closedAfter) { expect(ms).toBeGreaterThanOrEqual(550); expect(ms).toBeLessThan(3_000); }
      expect(s.logs.filter((l) => l.msg === 'grpc connection closed: no HTTP/2 handshake')).toHaveLength(3);
      expect((await unaryCall<{ code: number }>(client, 'recover', 'HealthCheck', who)).code).toBe(0); // the real client's connection stayed
      expect((await unaryCall<{ code: number }>(s.client(), 'recover', 'HealthCheck', who)).code).toBe(0); // and a new one gets a slot
    } finally { await s.close(); }
  }, 20_000);

  it('every fuzz connection is gone afterwards (none leaked), and a full Recover flow still works', async () => {
    await eventually(() => (t.server.connections() <= 1 ? true : undefined), 5_000, `connections back to the steady one (now ${t.server.connections()})`);
    expect((await unaryCall<{ code: number }>(steady, 'recover', 'Init', who)).code).toBe(0);
    expect((await unaryCall<{ code: number }>(steady, 'recover', 'Register', who)).code).toBe(0);
    await stillAnswers();
  });
});
