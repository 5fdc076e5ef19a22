import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Metrics } from './metrics.ts';
import { startHttpServer, type HealthSource, type Leadership } from './http-server.ts';

describe('http server: probes, /leaderz', () => {
  let server: Server | undefined;
  afterEach(async () => { await new Promise<void>((r) => (server === undefined ? r() : server.close(() => r()))); server = undefined; });

  async function serve(h: HealthSource): Promise<(path: string) => Promise<{ status: number; body: string }>> {
    server = await startHttpServer(0, '127.0.0.1', new Metrics({ processMetrics: false }), h);
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
