import { connect } from 'node:net';
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Metrics } from './metrics.ts';
import { silentLogger } from './logger.ts';
import { startHttpServer, type HealthSource, type Leadership } from './http-server.ts';

describe('http server: probes, /leaderz', () => {
  let server: Server | undefined;
  afterEach(async () => { await new Promise<void>((r) => (server === undefined ? r() : server.close(() => r()))); server = undefined; });

  async function serve(h: HealthSource): Promise<(path: string) => Promise<{ status: number; body: string }>> {
    server = await startHttpServer(0, '127.0.0.1', new Metrics({ processMetrics: false }), h, silentLogger);
    const port = (server.address() as AddressInfo).port;
    return async (path) => { const r = await fetch(`http://127.0.0.1:${port}${path}`); return { status: r.status, body: await r.text() }; };
  }

  const standby: Leadership = { leaderElection: true, leader: false, identity: 'pod-b', holder: 'pod-a', pod: 'mindx-dl/pod-b', podLabel: 'absent' };

  it('a synced standby is ready (leadership is information, not a condition) and answers 503 on /leaderz', async () => {
    const get = await serve({ liveness: () => [], readiness: () => [], leadership: () => standby });
    expect(await get('/readyz')).toEqual({ status: 200, body: 'ok\n' });
    const verbose = await get('/readyz?verbose');
    expect(verbose.status).toBe(200);
    expect(verbose.body.split('\n')).toEqual([
      '[+]informers synced',
      'leadership: standby (identity pod-b, lease holder pod-a, pod label absent); not a readiness condition',
      'readyz check passed', '',
    ]);
    const leaderz = await get('/leaderz');
    expect(leaderz.status).toBe(503);
    expect(JSON.parse(leaderz.body)).toEqual(standby);
  });

  it('the leader answers 200 on /leaderz; unsynced informers fail /readyz and are listed with ?verbose', async () => {
    const leader: Leadership = { ...standby, leader: true, identity: 'pod-a', pod: 'mindx-dl/pod-a', podLabel: 'set' };
    const get = await serve({ liveness: () => [], readiness: () => ['informer pods: not synced'], leadership: () => leader });
    expect((await get('/leaderz')).status).toBe(200);
    expect(await get('/readyz')).toEqual({ status: 503, body: 'informer pods: not synced\n' });
    const verbose = await get('/readyz?verbose');
    expect(verbose.status).toBe(503);
    expect(verbose.body).toMatch(/^\[-\]informer pods: not synced\nleadership: leader .*\nreadyz check failed\n$/);
    expect(await get('/healthz?verbose')).toEqual({ status: 200, body: '[+]informers in contact with the apiserver\nlivez check passed\n' });
  });

  it('without a leadership source there is no /leaderz', async () => {
    const get = await serve({ liveness: () => ['informer pods: no contact'], readiness: () => [] });
    expect((await get('/leaderz')).status).toBe(404);
    expect(await get('/')).toEqual({ status: 503, body: 'informer pods: no contact\n' });
  });
});

describe('http server: hostile requests never reach the process', () => {
  let server: Server | undefined;
  afterEach(async () => { await new Promise<void>((r) => (server === undefined ? r() : server.close(() => r()))); server = undefined; });
  const health: HealthSource = { liveness: () => [], readiness: () => [] };

  /** Sends raw bytes and returns what came back before the server closed or 2 s passed. */
  function raw(port: number, bytes: string | Buffer): Promise<string> {
    return new Promise((resolve) => {
      const s = connect(port, '127.0.0.1');
      let got = '';
      const done = (): void => { clearTimeout(t); s.destroy(); resolve(got); };
      const t = setTimeout(done, 2_000);
      s.on('data', (d) => { got += d.toString('latin1'); if (/\r\n\r\n/.test(got)) done(); });
      s.on('error', done);
      s.on('close', done);
      s.end(bytes); // half-close: an incomplete request ends at EOF instead of waiting for the header timeout
    });
  }

  async function start(): Promise<{ port: number; metrics: Metrics }> {
    const metrics = new Metrics({ processMetrics: false });
    server = await startHttpServer(0, '127.0.0.1', metrics, health, silentLogger);
    return { port: (server.address() as AddressInfo).port, metrics };
  }

  it('GET //x:99999 (the red team\'s crash) answers 400 and the server keeps answering', async () => {
    const { port, metrics } = await start();
    expect(await raw(port, 'GET //x:99999 HTTP/1.1\r\nhost: a\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw(port, 'GET http://[::1 HTTP/1.1\r\nhost: a\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect((await metrics.registry.getSingleMetric('clusterd_http_bad_requests_total')!.get()).values.find((v) => v.labels.reason === 'target')?.value).toBe(2);
  });

  it('malformed HTTP and other methods are refused with 400 / 405', async () => {
    const { port } = await start();
    expect(await raw(port, 'NOT HTTP AT ALL\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw(port, 'POST /metrics HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n')).toMatch(/^HTTP\/1\.1 405 /);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });

  it('fuzz: random request targets and raw bytes never stop the server (seed printed on failure)', async () => {
    const { port } = await start();
    const target = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.webUrl().map((u) => u.replace(/^https?:/, '')),
      fc.tuple(fc.constantFrom('/', '//', '/metrics?', '/readyz?verbose&', '%', '/%zz'), fc.string({ maxLength: 30 })).map(([a, b]) => a + b),
    ).map((t) => t.replace(/[\r\n ]/g, '_'));
    await fc.assert(fc.asyncProperty(target, fc.uint8Array({ maxLength: 64 }), async (t, junk) => {
      const reply = await raw(port, `GET ${t} HTTP/1.1\r\nhost: a\r\n\r\n`);
      expect(reply).toMatch(/^HTTP\/1\.1 \d{3} /);
      await raw(port, Buffer.from(junk));
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    }), { numRuns: 150, verbose: 1 });
  }, 60_000);
});
