import { isConflict, paths, type KubeObject, type WatchEventType } from '../../../runtime/kube-client.ts';
import { LeaderElector } from '../../../runtime/leader-election.ts';
import { ManualClock, settle } from '../manual-clock.ts';
import { CONTRACT_CASES } from './apiserver-contract.ts';
import { MemoryApiServer, WRITE_VERBS } from './memory-apiserver.ts';
import { realClock } from '../../../runtime/clock.ts';

const cm = (ns: string, name: string, data: Record<string, string> = {}, labels?: Record<string, string>): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, data });

describe('in-memory apiserver: the contract the real one is held to (test/integration/apiserver-contract.test.ts)', () => {
  for (const c of CONTRACT_CASES) {
    it(c.name, async () => {
      const server = new MemoryApiServer();
      let n = 0;
      const side = {
        client: server.client(),
        newNamespace: async () => `ns-${++n}`,
        forget: async (rv: string) => server.compact(rv),
      };
      expect(await c.run(side)).toEqual(c.expected);
    });
  }
});

/** A watch's events as `TYPE name rv`, and how it ended. */
function recorder() {
  const seen: string[] = [];
  let done: unknown = 'open';
  return {
    seen,
    get done() { return done; },
    onEvent: (type: WatchEventType, obj: KubeObject & { code?: number }) => { seen.push(type === 'ERROR' ? `ERROR ${obj.code}` : `${type} ${obj.metadata?.name ?? ''} ${obj.metadata?.resourceVersion}`); },
    onDone: (err: unknown) => { done = err === null ? 'closed' : err; },
  };
}

describe('in-memory apiserver: semantics beyond the contract', () => {
  it('one resourceVersion across kinds; a list answers the global version', async () => {
    const s = new MemoryApiServer();
    const c = s.client();
    const a = await c.create(paths.configMaps('x'), cm('x', 'a'));
    const n = await c.create<KubeObject>(paths.nodes(), { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
    const l = await c.list(paths.configMaps('x'));
    expect([a.metadata?.resourceVersion, n.metadata?.resourceVersion, l.metadata?.resourceVersion]).toEqual(['1', '2', '2']);
    expect(n.metadata?.namespace).toBeUndefined();
  });

  it('delivers watch events after the writer\'s call, never inside it', async () => {
    const s = new MemoryApiServer();
    const c = s.client();
    const r = recorder();
    await c.watch(paths.configMaps('x'), { resourceVersion: '0' }, r.onEvent, r.onDone);
    const p = c.create(paths.configMaps('x'), cm('x', 'a'));
    expect(r.seen).toEqual([]);
    await p;
    await settle();
    expect(r.seen).toEqual(['ADDED a 1']);
  });

  it('a watch from "" or "0" starts with the objects that exist; bookmarks only when asked', async () => {
    const s = new MemoryApiServer();
    const c = s.client();
    await c.create(paths.configMaps('x'), cm('x', 'a'));
    await c.create(paths.configMaps('y'), cm('y', 'b'));
    const all = recorder();
    const marks = recorder();
    await c.watch(paths.configMaps(), {}, all.onEvent, all.onDone);
    await c.watch(paths.configMaps('y'), { resourceVersion: '2', allowWatchBookmarks: true }, marks.onEvent, marks.onDone);
    s.bookmark();
    await settle();
    expect(all.seen).toEqual(['ADDED a 1', 'ADDED b 2']);
    expect(marks.seen).toEqual(['BOOKMARK  2']);
  });

  it('failNext: the next n matching writes fail with the status; reads and other paths are untouched', async () => {
    const s = new MemoryApiServer();
    const c = s.client();
    const statuses: string[] = [];
    c.onRequest = (m, st) => statuses.push(`${m} ${st}`);
    s.failNext(2, { status: 500 }, { verbs: WRITE_VERBS, path: /\/configmaps/ });
    await expect(c.create(paths.configMaps('x'), cm('x', 'a'))).rejects.toMatchObject({ statusCode: 500, reason: 'InternalError' });
    await c.get(paths.configMap('x', 'a')).catch(() => undefined);
    await c.create(paths.leases('x'), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l' } });
    await expect(c.create(paths.configMaps('x'), cm('x', 'a'))).rejects.toMatchObject({ statusCode: 500 });
    await c.create(paths.configMaps('x'), cm('x', 'a'));
    s.failNext(1, { status: 409 });
    expect(await c.get(paths.configMap('x', 'a')).then(() => false, isConflict)).toBe(true);
    expect(statuses).toEqual(['POST 500', 'GET 404', 'POST 201', 'POST 500', 'POST 201', 'GET 409']);
  });

  it('a timeout answers after the clock moved; an applied one wrote anyway', async () => {
    const clock = new ManualClock(0);
    const s = new MemoryApiServer({ clock });
    const c = s.client();
    s.failNext(1, { timeout: true, applied: true }, { verbs: ['create'] });
    let err: unknown;
    const p = c.create(paths.configMaps('x'), cm('x', 'a')).catch((e: unknown) => { err = e; });
    await clock.run(29_999);
    expect(err).toBeUndefined();
    await clock.run(1);
    await p;
    expect((err as Error).name).toBe('TimeoutError');
    expect((await c.get(paths.configMap('x', 'a'))).metadata?.name).toBe('a');
  });

  it('dropWatches ends them with an error; expireWatches with ERROR 410 and a clean end; a severed client fails and loses its watches', async () => {
    const s = new MemoryApiServer();
    const c = s.client('one');
    const other = s.client('two');
    const [a, b, d] = [recorder(), recorder(), recorder()];
    await c.watch(paths.configMaps('x'), { resourceVersion: '0' }, a.onEvent, a.onDone);
    await c.watch(paths.pods(), { resourceVersion: '0' }, b.onEvent, b.onDone);
    await other.watch(paths.pods(), { resourceVersion: '0' }, d.onEvent, d.onDone);
    expect(s.dropWatches({ path: paths.configMaps('x') })).toBe(1);
    expect(s.expireWatches({ client: other })).toBe(1);
    await settle();
    expect(String(a.done)).toMatch(/reset/);
    expect([d.seen, d.done]).toEqual([['ERROR 410'], 'closed']);
    c.sever();
    await settle();
    expect(String(b.done)).toMatch(/severed/);
    await expect(c.get(paths.node('n'))).rejects.toThrow(/ECONNREFUSED/);
    expect(s.watches.size).toBe(0);
  });

  it('pause and delay: events queue in order and arrive on the clock', async () => {
    const clock = new ManualClock(0);
    const s = new MemoryApiServer({ clock });
    const c = s.client();
    const r = recorder();
    await c.watch(paths.configMaps('x'), { resourceVersion: '0' }, r.onEvent, r.onDone);
    s.watchDelayMs = 1_000;
    await c.create(paths.configMaps('x'), cm('x', 'a'));
    s.pauseWatches();
    await c.create(paths.configMaps('x'), cm('x', 'b'));
    await clock.run(2_000);
    expect(r.seen).toEqual([]);
    s.resumeWatches();
    await settle();
    expect(r.seen).toEqual(['ADDED a 1', 'ADDED b 2']);
  });

  it('timeoutSeconds closes a watch cleanly; the inactivity limit aborts a silent one', async () => {
    const clock = new ManualClock(0);
    const s = new MemoryApiServer({ clock });
    const c = s.client();
    const [t, i] = [recorder(), recorder()];
    await c.watch(paths.pods(), { resourceVersion: '0', timeoutSeconds: 5 }, t.onEvent, t.onDone);
    await c.watch(paths.nodes(), { resourceVersion: '0' }, i.onEvent, i.onDone, { inactivityTimeoutMs: 3_000 });
    await clock.run(3_000);
    expect((i.done as Error).name).toBe('TimeoutError');
    expect(t.done).toBe('open');
    await clock.run(2_000);
    expect(t.done).toBe('closed');
  });

  it('watchTimeouts: false leaves timeoutSeconds unenforced (a replay independent of the reflector\'s random timeout)', async () => {
    const clock = new ManualClock(0);
    const s = new MemoryApiServer({ clock, watchTimeouts: false });
    const r = recorder();
    await s.client().watch(paths.pods(), { resourceVersion: '0', timeoutSeconds: 5 }, r.onEvent, r.onDone);
    await clock.run(60_000);
    expect(r.done).toBe('open');
  });

  it('leader election over a Lease: one leader; a severed leader is replaced once its lease expires', async () => {
    const s = new MemoryApiServer();
    const events: string[] = [];
    const elector = (id: string) => {
      const client = s.client(id);
      const e = new LeaderElector(client, {
        namespace: 'x', name: 'lease', identity: id, leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100, clock: realClock,
        onStartedLeading: () => events.push(`${id} leads`), onStoppedLeading: () => events.push(`${id} stopped`),
      });
      return { client, e };
    };
    const a = elector('a');
    a.e.start();
    await new Promise((r) => setTimeout(r, 300));
    const b = elector('b');
    b.e.start();
    await new Promise((r) => setTimeout(r, 500));
    expect(events).toEqual(['a leads']);
    a.client.sever();
    for (let i = 0; i < 160 && !events.includes('b leads'); i++) await new Promise((r) => setTimeout(r, 50));
    a.e.abandon();
    await b.e.stop();
    expect(events).toEqual(['a leads', 'a stopped', 'b leads']);
  }, 10_000);

  it('a bound pod deleted with a grace period terminates until its kubelet confirms; finalizers hold deletion', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const s = new MemoryApiServer({ clock });
    const c = s.client();
    const pod = (name: string, nodeName?: string): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'x' }, spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'i' }] } });
    await c.create(paths.pods('x'), pod('bound', 'n1'));
    await c.create(paths.pods('x'), pod('pending'));
    await c.delete(paths.pod('x', 'bound'), { preconditions: { uid: (await c.get(paths.pod('x', 'bound'))).metadata?.uid } });
    await c.delete(paths.pod('x', 'pending'));
    const terminating = await c.get(paths.pod('x', 'bound'));
    expect(terminating.metadata?.deletionTimestamp).toBe('2023-11-14T22:13:50Z');
    await expect(c.get(paths.pod('x', 'pending'))).rejects.toMatchObject({ statusCode: 404 });
    expect(s.completePodTermination()).toBe(1);
    await expect(c.get(paths.pod('x', 'bound'))).rejects.toMatchObject({ statusCode: 404 });

    const held = await c.create<KubeObject>(paths.configMaps('x'), { ...cm('x', 'f'), metadata: { name: 'f', finalizers: ['x.io/keep'] } });
    await c.delete(paths.configMap('x', 'f'));
    const marked = await c.get(paths.configMap('x', 'f'));
    expect(marked.metadata?.deletionTimestamp).toBeDefined();
    await c.patch(paths.configMap('x', 'f'), { metadata: { finalizers: null } });
    await expect(c.get(paths.configMap('x', 'f'))).rejects.toMatchObject({ statusCode: 404 });
    expect(Number(held.metadata?.resourceVersion)).toBeGreaterThan(0);
  });

  it('status subresource: the object keeps its status on update, /status changes only status', async () => {
    const s = new MemoryApiServer();
    const c = s.client();
    await c.create(paths.nodes(), { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } });
    await c.patch(paths.nodeStatus('n1'), { status: { conditions: [{ type: 'Ready', status: 'True' }, { type: 'Disk', status: 'False' }] } }, 'strategic');
    await c.patch(paths.nodeStatus('n1'), { status: { conditions: [{ type: 'Ready', status: 'Unknown' }] }, spec: { unschedulable: true } }, 'strategic');
    await c.patch(paths.node('n1'), { spec: { unschedulable: true }, status: { conditions: [] } }, 'merge');
    const n = await c.get<KubeObject & { spec?: { unschedulable?: boolean }; status?: { conditions?: unknown[] } }>(paths.node('n1'));
    expect(n.spec?.unschedulable).toBe(true);
    await expect(c.patch(`${paths.configMap('x', 'a')}/status`, { status: {} })).rejects.toMatchObject({ statusCode: 404 });
    expect(n.status?.conditions).toEqual([{ type: 'Ready', status: 'Unknown' }, { type: 'Disk', status: 'False' }]);
  });

  it('a list continuation older than the retained history answers 410', async () => {
    const s = new MemoryApiServer({ historyLimit: 3 });
    const c = s.client();
    for (const n of ['a', 'b', 'c']) await c.create(paths.configMaps('x'), cm('x', n));
    const p1 = await c.list(paths.configMaps('x'), { limit: 1 });
    for (const n of ['d', 'e', 'f', 'g']) await c.create(paths.configMaps('x'), cm('x', n));
    await expect(c.list(paths.configMaps('x'), { limit: 1, continue: p1.metadata?.continue })).rejects.toMatchObject({ statusCode: 410, reason: 'Expired' });
  });

  it('is deterministic: the same operations give the same objects, names and versions', async () => {
    const run = async (): Promise<unknown> => {
      const clock = new ManualClock(0);
      const s = new MemoryApiServer({ clock });
      const c = s.client();
      const out: unknown[] = [];
      for (let i = 0; i < 5; i++) out.push(await c.create(paths.configMaps('x'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'g-' } }));
      await clock.run(1_000);
      out.push(await c.list(paths.configMaps()));
      return out;
    };
    expect(await run()).toEqual(await run());
  });
});
