import { breakerReset, sourceLines } from './breaker.ts';
import { CliError, EXIT } from './errors.ts';
import { ApiError, type KubeClient } from '../runtime/kube-client.ts';

const PATH = '/api/v1/namespaces/mindx-dl/configmaps/clusterd-ts-breaker';
const state = JSON.stringify({
  windowSeconds: 600,
  scopes: [
    { scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 },
    { scope: 'rack-7', tripped: true, trippedAt: '2026-01-02T03:04:05Z', reason: '9 nodes', held: 3 },
  ],
});

function client(data: Record<string, string> | undefined): { c: KubeClient; patches: unknown[] } {
  const patches: unknown[] = [];
  const c = {
    get: async (path: string) => {
      if (path !== PATH || data === undefined) throw new ApiError('GET', path, 404, {});
      return { metadata: { resourceVersion: '5' }, data };
    },
    patch: async (_path: string, body: unknown) => { patches.push(body); return {}; },
  };
  return { c: c as unknown as KubeClient, patches };
}
const code = async (f: () => unknown): Promise<number | undefined> => { try { await f(); return undefined; } catch (e) { return (e as CliError).code; } };

describe('kubectl clusterd breaker reset: only what is tripped', () => {
  it('refuses an unknown scope, a scope not tripped and `all` with nothing tripped (exit 3, nothing written)', async () => {
    const k = client({ state });
    expect(await code(() => breakerReset(k.c, 'mindx-dl', 'rack-9', 'alice', 't'))).toBe(EXIT.notFound);
    expect(await code(() => breakerReset(k.c, 'mindx-dl', 'cluster', 'alice', 't'))).toBe(EXIT.notFound);
    expect(await code(() => breakerReset(k.c, 'mindx-dl', '../x', 'alice', 't'))).toBe(EXIT.usage);
    const calm = client({ state: JSON.stringify({ scopes: [{ scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 }] }) });
    expect(await code(() => breakerReset(calm.c, 'mindx-dl', 'all', 'alice', 't'))).toBe(EXIT.notFound);
    expect(await code(() => breakerReset(client(undefined).c, 'mindx-dl', 'all', 'alice', 't'))).toBe(EXIT.notFound);
    expect([...k.patches, ...calm.patches]).toEqual([]);
  });

  it('a tripped scope (or all): the request, on the resourceVersion checked', async () => {
    const k = client({ state });
    await breakerReset(k.c, 'mindx-dl', 'rack-7', 'alice', '2026-01-02T04:00:00Z');
    await breakerReset(k.c, 'mindx-dl', 'all', 'alice', '2026-01-02T04:00:00Z');
    expect(k.patches).toEqual([
      { metadata: { resourceVersion: '5', annotations: { 'clusterd-ts.io/breaker-reset': '{"scope":"rack-7","by":"alice","at":"2026-01-02T04:00:00Z"}' } } },
      { metadata: { resourceVersion: '5', annotations: { 'clusterd-ts.io/breaker-reset': '{"scope":"all","by":"alice","at":"2026-01-02T04:00:00Z"}' } } },
    ]);
  });
});

describe('kubectl clusterd breaker status: where the counts came from', () => {
  it('lists per scope and kind the sources, largest first; nothing when the state has none', () => {
    expect(sourceLines([
      { scope: 'cluster', tripped: true, trippedAt: null, reason: '', held: 0, sources: { chips: { 'device-info': 41, 'public-fault tenant-a/pf-flood': 600 }, nodes: {}, jobs: { 'device-info': 1 } } },
      { scope: 'superpod-1', tripped: false, trippedAt: null, reason: '', held: 0 },
    ])).toBe('counted by source:\n  cluster chips: public-fault tenant-a/pf-flood 600, device-info 41\n  cluster jobs: device-info 1\n');
    expect(sourceLines([{ scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 }])).toBe('');
  });
});
