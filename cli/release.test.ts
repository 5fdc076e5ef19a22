import { checkReleaseArgs, release } from './release.ts';
import { CliError, EXIT } from './errors.ts';
import { ApiError, type KubeClient } from '../runtime/kube-client.ts';

const code = async (f: () => unknown): Promise<number | undefined> => { try { await f(); return undefined; } catch (e) { return (e as CliError).code; } };

/** Records the requests; answers GETs from `objects` (404 otherwise). No apiserver: the checks run before any write. */
function client(objects: Record<string, unknown>): { c: KubeClient; writes: string[] } {
  const writes: string[] = [];
  const c = {
    getOrUndefined: async (path: string) => objects[path],
    get: async (path: string) => { if (objects[path] === undefined) throw new ApiError('GET', path, 404, {}); return objects[path]; },
    patch: async (path: string) => { writes.push(`patch ${path}`); return {}; },
    create: async (path: string) => { writes.push(`create ${path}`); return {}; },
  };
  return { c: c as unknown as KubeClient, writes };
}

const at = '2026-01-02T03:04:05.000Z';
const opts = (node: string, npus: string[]) => ({ node, npus, clusterSystemNamespace: 'cluster-system', by: 'alice', at });
const DI = '/api/v1/namespaces/kube-system/configmaps/mindx-dl-deviceinfo-node-1';

describe('kubectl clusterd release: checks before any write', () => {
  it('refuses a path in the node name, bad NPU names and more than 64 NPUs (usage, exit 2)', () => {
    expect(() => checkReleaseArgs('node-000/../../../mindx-dl/configmaps/rt-target', ['Ascend910-0'])).toThrow(expect.objectContaining({ code: EXIT.usage }));
    expect(() => checkReleaseArgs('node-1', ['Ascend910-0', '../x'])).toThrow(expect.objectContaining({ code: EXIT.usage }));
    const many = Array.from({ length: 20_000 }, (_, i) => `Ascend910-${i}`);
    expect(() => checkReleaseArgs('node-1', many)).toThrow(/20000 NPUs in one release; at most 64/);
    expect(checkReleaseArgs('node-1', ['Ascend910-1', 'Ascend910-1', 'Ascend910-2'])).toEqual(['Ascend910-1', 'Ascend910-2']);
  });

  it('refuses an unknown node and NPUs the node does not have (exit 3), writing nothing', async () => {
    const none = client({});
    expect(await code(() => release(none.c, opts('node-1', ['Ascend910-0'])))).toBe(EXIT.notFound);
    expect(none.writes).toEqual([]);
    const known = client({ [DI]: { metadata: { resourceVersion: '1' }, data: { ManuallySeparateNPU: 'Ascend910-3' } } });
    expect(await code(() => release(known.c, opts('node-1', ['Ascend910-3', 'Ascend910-99'])))).toBe(EXIT.notFound);
    expect(known.writes).toEqual([]);
  });

  it('an unreadable request list is not replaced (exit 1): the audit list is never lost', async () => {
    const k = client({
      [DI]: { metadata: { resourceVersion: '1' }, data: { ManuallySeparateNPU: '' } },
      '/api/v1/namespaces/cluster-system/configmaps/clusterd-ts-release-requests': { metadata: { resourceVersion: '2' }, data: { requests: '[{"node":' } },
    });
    // Ascend910-3 is unknown here (no device list): first make it known through the manual-info Total.
    k.c.getOrUndefined = (async (path: string) => (path.endsWith('/clusterd-manual-info-cm')
      ? { metadata: {}, data: { 'node-1': '{"Total":["Ascend910-3"],"Detail":{}}' } }
      : path === DI ? { metadata: { resourceVersion: '1' }, data: {} } : undefined)) as never;
    expect(await code(() => release(k.c, opts('node-1', ['Ascend910-3'])))).toBe(EXIT.error);
    expect(k.writes.filter((w) => w.includes('release-requests'))).toEqual([]);
  });
});
