/**
 * The watch layer against a real kube-apiserver + etcd: exact event order, apiserver crash while a
 * watch is open, 410 Gone after etcd compaction, and a long-idle watch.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpKubeClient, paths, type KubeObject } from '../../runtime/kube-client.ts';
import { Reflector, type WatchEvent } from '../../runtime/reflector.ts';
import { ControlPlane, kubeconfigYaml } from '../../tools/control-plane/control-plane.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

type CM = KubeObject & { data?: Record<string, string> };
const cm = (ns: string, name: string, data: Record<string, string>): CM => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data });

function record(r: Reflector<CM>): Array<[string, string]> {
  const seen: Array<[string, string]> = [];
  r.events$.subscribe({ next: (e: WatchEvent<CM>) => seen.push([e.type, `${e.obj.metadata?.name}:${e.obj.data?.v ?? ''}`]) });
  return seen;
}

describe('reflector on the shared control plane', () => {
  const client = adminClient();

  it('sees a ConfigMap created, updated twice and deleted as exactly those four events, in order', async () => {
    const ns = await newNamespace(client);
    const r = new Reflector<CM>(client, { clock: realClock, name: 'cm', path: paths.configMaps(ns) });
    const seen = record(r);
    r.start();
    try {
      await r.waitForSync();
      const created = await client.create(paths.configMaps(ns), cm(ns, 'a', { v: '1' }));
      const up1 = await client.replace(paths.configMap(ns, 'a'), { ...created, data: { v: '2' } });
      await client.replace(paths.configMap(ns, 'a'), { ...up1, data: { v: '3' } });
      await client.delete(paths.configMap(ns, 'a'));
      await eventually(() => seen.length >= 4);
      await new Promise((res) => setTimeout(res, 300)); // nothing more may arrive
      expect(seen).toEqual([['add', 'a:1'], ['update', 'a:2'], ['update', 'a:3'], ['delete', 'a:3']]);
      expect(r.store.size).toBe(0);
      expect(r.get(`${ns}/a`)).toBeUndefined();
      expect(r.health().synced).toBe(true);
    } finally {
      r.stop();
    }
  });

  it('strips managedFields from cached objects', async () => {
    const ns = await newNamespace(client);
    await client.create(paths.configMaps(ns), cm(ns, 'm', { v: '1' }));
    const r = new Reflector<CM>(client, { clock: realClock, name: 'cm', path: paths.configMaps(ns) });
    r.start();
    try {
      await r.waitForSync();
      expect(r.get(`${ns}/m`)?.metadata?.managedFields).toBeUndefined();
      expect(r.get(`${ns}/m`)?.metadata?.creationTimestamp).toEqual(expect.any(String));
    } finally {
      r.stop();
    }
  });

  it('delivers a change within 2 s after the watch sat idle for 60 s', async () => {
    const ns = await newNamespace(client);
    const r = new Reflector<CM>(client, { clock: realClock, name: 'cm', path: paths.configMaps(ns) });
    const seen = record(r);
    r.start();
    try {
      await r.waitForSync();
      await new Promise((res) => setTimeout(res, 60_000));
      const t0 = Date.now();
      await client.create(paths.configMaps(ns), cm(ns, 'late', { v: 'x' }));
      await eventually(() => seen.some(([t, n]) => t === 'add' && n === 'late:x'), 2_000, 5);
      const delay = Date.now() - t0;
      process.stdout.write(`idle-watch delivery delay after 60 s idle: ${delay} ms\n`);
      expect(delay).toBeLessThan(2_000);
    } finally {
      r.stop();
    }
  }, 90_000);
});

describe('reflector across apiserver outages (private control plane with two apiservers)', () => {
  let cp: ControlPlane;
  let writer: HttpKubeClient; // talks to apiserver 1, which stays up
  let reader: HttpKubeClient; // talks to apiserver 0, which we kill
  const ns = 'outage';

  beforeAll(async () => {
    const binDir = process.env.CLUSTERD_TS_BIN_DIR;
    if (binDir === undefined) throw new Error('CLUSTERD_TS_BIN_DIR not set by global setup');
    cp = await ControlPlane.start({ binDir, workDir: join(tmpdir(), `clusterd-ts-outage-${process.pid}`), apiservers: 2 });
    writer = HttpKubeClient.fromString(kubeconfigYaml(cp.servers[1]!, cp.adminToken));
    reader = HttpKubeClient.fromString(kubeconfigYaml(cp.servers[0]!, cp.adminToken));
    await writer.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  }, 120_000);

  afterAll(async () => {
    const pids = (await import('node:fs')).readFileSync(join(cp.dir, 'pids'), 'utf8').trim().split('\n').map((l) => Number(l.split(' ')[1]));
    await cp.stop();
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(); // no process left behind
  }, 60_000);

  async function truth(): Promise<string[]> {
    const list = await writer.list<CM>(paths.configMaps(ns));
    return list.items.map((i) => `${i.metadata?.name}:${i.data?.v}`).sort();
  }
  const cached = (r: Reflector<CM>): string[] => [...r.store.values()].map((i) => `${i.metadata?.name}:${i.data?.v}`).sort();

  it('sees the changes made while its apiserver was down, without restarting the process', async () => {
    await writer.create(paths.configMaps(ns), cm(ns, 'keep', { v: '1' }));
    await writer.create(paths.configMaps(ns), cm(ns, 'gone', { v: '1' }));
    const r = new Reflector<CM>(reader, { clock: realClock, name: 'cm', path: paths.configMaps(ns) });
    const seen = record(r);
    r.start();
    try {
      await r.waitForSync();
      await cp.stopApiserver(0);
      const keep = await writer.get<CM>(paths.configMap(ns, 'keep'));
      await writer.replace(paths.configMap(ns, 'keep'), { ...keep, data: { v: '2' } });
      await writer.delete(paths.configMap(ns, 'gone'));
      await writer.create(paths.configMaps(ns), cm(ns, 'new', { v: '1' }));
      await eventually(() => r.health().restarts > 0 || r.health().connected === false, 10_000);
      await cp.startApiserver(0);
      await eventually(async () => JSON.stringify(cached(r)) === JSON.stringify(await truth()), 30_000);
      expect(seen).toEqual(expect.arrayContaining([['update', 'keep:2'], ['delete', 'gone:1'], ['add', 'new:1']]));
    } finally {
      r.stop();
    }
  }, 120_000);

  it('relists after etcd is compacted past its resourceVersion (410 Gone) and misses no delete', async () => {
    for (const n of ['x', 'y', 'z']) await writer.create(paths.configMaps(ns), cm(ns, n, { v: '1' }));
    const r = new Reflector<CM>(reader, { clock: realClock, name: 'cm', path: paths.configMaps(ns) });
    const seen = record(r);
    r.start();
    try {
      await r.waitForSync();
      const relistsBefore = r.health().relists;
      await cp.stopApiserver(0);
      await writer.delete(paths.configMap(ns, 'y'));
      for (let i = 0; i < 20; i++) {
        const z = await writer.get<CM>(paths.configMap(ns, 'z'));
        await writer.replace(paths.configMap(ns, 'z'), { ...z, data: { v: String(i + 2) } });
      }
      const rev = await cp.compactEtcd();
      expect(rev).toBeGreaterThan(0);
      await cp.startApiserver(0);
      await eventually(async () => JSON.stringify(cached(r)) === JSON.stringify(await truth()), 30_000);
      expect(r.health().relists).toBeGreaterThan(relistsBefore);
      expect(seen).toContainEqual(['delete', 'y:1']);
      expect(r.get(`${ns}/z`)?.data?.v).toBe('21');
    } finally {
      r.stop();
    }
  }, 120_000);
});
