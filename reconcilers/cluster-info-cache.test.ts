/**
 * The cluster-info reconciler's per-node cache: a pass renders only the nodes it was told about, and
 * what it writes holds byte for byte the full render's entries, in Go order, through random changes,
 * node removals and shard cuts; a shard is rewritten only when one of its entries changed or its cut
 * had to move (docs/rules.md#ingest.cluster-info-shards). The refresh renders everything and names
 * nodes whose entry was stale.
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter, ConfigMapTarget } from '../runtime/configmap-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import { RandomEntries } from '../test/support/cluster-info-test-kit.ts';
import type { DeviceInfoEntry, NodeInfoEntry, SwitchInfoEntry } from '../schemas/cluster-info/cluster-info.ts';
import { ClusterInfoCache, clusterInfoReconciler, desiredShards, REFRESHED_AT_ANNOTATION, type ClusterInfoDeps, type ClusterInfoView } from './cluster-info.reconciler.ts';
import { shardClusterInfo } from '../schemas/cluster-info/shard.ts';
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_MAX_SHARD_BYTES, CLUSTER_INFO_NODE_CM, CLUSTER_INFO_SWITCH_PREFIX, encodeClusterInfo } from '../schemas/cluster-info/cluster-info.ts';

/** A kind's shards joined into one value, in shard order (what Volcano's informer merges). */
function joined(shards: ReadonlyMap<string, string>, prefix: string): string {
  const parts = [...shards].filter(([k, v]) => k.startsWith(prefix) && v !== '')
    .sort(([a], [b]) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length))).map(([, v]) => v.slice(1, -1));
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/**
 * The shards hold exactly the full view's entries, in Go order (so each key in one shard), no shard
 * is an empty map, and none passes `max` unless it holds a single entry.
 */
function expectHolds(shards: ReadonlyMap<string, string>, view: ClusterInfoView, max = CLUSTER_INFO_MAX_SHARD_BYTES): void {
  expect(joined(shards, CLUSTER_INFO_DEVICE_PREFIX)).toBe(shardClusterInfo(view.device, Infinity)[0]);
  expect(joined(shards, CLUSTER_INFO_SWITCH_PREFIX)).toBe(shardClusterInfo(view.switch, Infinity)[0]);
  expect(shards.get(CLUSTER_INFO_NODE_CM) ?? '').toBe(encodeClusterInfo(view.node)); // created after 5 s quiet when empty
  for (const [name, v] of shards) {
    if (name === CLUSTER_INFO_NODE_CM || v === '') continue;
    expect(v).not.toBe('{}');
    if (Buffer.byteLength(v) > max) expect(Object.keys(JSON.parse(v) as object)).toHaveLength(1);
  }
}

interface NodeTruth {
  device?: DeviceInfoEntry;
  switch?: SwitchInfoEntry;
  node?: NodeInfoEntry;
  /** A node-info without `updateTime`: its UpdateTime is the render time. */
  nodeInfoWithoutTime?: boolean;
}

/** The cluster's "real" view, which renderNode reads like the manager reads the store. */
class World {
  readonly nodes = new Map<string, NodeTruth>();
  readonly rendered: string[] = [];

  view(node: string, nowMs: number): ClusterInfoView {
    const t = this.nodes.get(node);
    const v: { device: Record<string, DeviceInfoEntry>; switch: Record<string, SwitchInfoEntry>; node: Record<string, NodeInfoEntry> } = { device: {}, switch: {}, node: {} };
    if (t?.device) v.device[t.device.CmName] = t.device;
    if (t?.switch) v.switch[t.switch.CmName] = t.switch;
    if (t?.node) v.node[t.node.CmName] = t.nodeInfoWithoutTime ? { ...t.node, UpdateTime: nowMs } : t.node;
    return v;
  }

  full(nowMs: (node: string) => number): ClusterInfoView {
    const out: ClusterInfoView = { device: {}, switch: {}, node: {} };
    for (const n of this.nodes.keys()) {
      const v = this.view(n, nowMs(n));
      Object.assign(out.device, v.device);
      Object.assign(out.switch, v.switch);
      Object.assign(out.node, v.node);
    }
    return out;
  }

  randomNode(r: RandomEntries, node: string, pad: number): NodeTruth {
    return {
      ...(r.rand() < 0.9 ? { device: r.device(node, pad) } : {}),
      ...(r.rand() < 0.3 ? { switch: r.switch(node) } : {}),
      ...(r.rand() < 0.3 ? { node: r.nodeInfo(node) } : {}),
    };
  }
}

/** ConfigMaps as the apiserver (and the informer cache) would hold them; counts real writes. */
function fakeCluster() {
  const cms = new Map<string, ConfigMap>();
  const targets: ConfigMapTarget[] = [];
  let writes = 0;
  const writer = {
    ensure: async (_kind: string, t: ConfigMapTarget, actual: ConfigMap | undefined) => {
      const same = actual !== undefined && actual.data?.[t.name] === t.data[t.name]
        && actual.metadata?.annotations?.[REFRESHED_AT_ANNOTATION] === t.annotations?.[REFRESHED_AT_ANNOTATION];
      if (same) return { written: false, obj: actual };
      targets.push(t);
      const obj: ConfigMap = { metadata: { name: t.name, namespace: t.namespace, labels: t.labels, annotations: t.annotations }, data: t.data };
      cms.set(t.name, obj);
      writes++;
      return { written: true, obj };
    },
  } as unknown as ConfigMapWriter;
  const data = (): Map<string, string> => new Map([...cms].map(([k, cm]) => [k, cm.data![k]!]));
  return { cms, writer, data, targets, writes: () => writes };
}

function captureLog() {
  const warnings: Array<{ msg: string; fields?: object }> = [];
  const log: Logger = {
    debug: () => undefined, info: () => undefined, error: () => undefined,
    warn: (msg, fields) => { warnings.push({ msg, fields }); },
    child: () => log,
  };
  return { log, warnings };
}

const T0 = 1_732_182_160_000;

function setup(opts: { refreshMs?: number; minIntervalMs?: number; burst?: number; burstQuietMs?: number; refreshAnnotation?: boolean; peers?: ClusterInfoDeps['peers']; renderNode?: ClusterInfoDeps['renderNode'] } = {}) {
  const world = new World();
  const cluster = fakeCluster();
  const { log, warnings } = captureLog();
  let now = T0;
  const reconciler = clusterInfoReconciler({
    nodes: () => world.nodes.keys(),
    renderNode: opts.renderNode ?? ((node, nowMs) => { world.rendered.push(node); return world.view(node, nowMs); }),
    ...(opts.peers === undefined ? {} : { peers: opts.peers }),
    actual: (name) => cluster.cms.get(name),
    actualNames: () => [...cluster.cms.keys()],
    writer: cluster.writer,
    refreshMs: opts.refreshMs ?? 30_000,
    minIntervalMs: opts.minIntervalMs ?? 200,
    ...(opts.burst === undefined ? {} : { burst: opts.burst }),
    ...(opts.burstQuietMs === undefined ? {} : { burstQuietMs: opts.burstQuietMs }),
    ...(opts.refreshAnnotation === undefined ? {} : { refreshAnnotation: opts.refreshAnnotation }),
  });
  const ctx = { log, signal: new AbortController().signal, now: () => now };
  const pass = async (advanceMs = 1000) => { now += advanceMs; world.rendered.length = 0; return reconciler.reconcile('cluster-info', ctx); };
  return { world, cluster, reconciler, warnings, pass, now: () => now };
}

describe('ClusterInfoCache', () => {
  it.each([11, 12, 13, 14])('shards hold the full view through random changes, and only changed shards move (seed %i)', (seed) => {
    const r = new RandomEntries(seed);
    const world = new World();
    const max = 3000 + r.int(3000);
    const cache = new ClusterInfoCache(max, 1500);
    const existing = new Set<string>();
    for (let i = 0; i < 80; i++) { const n = r.nodeName(); world.nodes.set(n, world.randomNode(r, n, r.int(400))); }
    for (const n of world.nodes.keys()) cache.put(n, world.view(n, T0), T0);
    let last = cache.shards([]);
    // A first layout is the stateless cut.
    expect(last).toEqual(desiredShards(world.full(() => T0), [], max, 1500));
    let stable = 0;
    for (let round = 0; round < 40; round++) {
      const touched = new Set<string>();
      for (let k = r.int(6); k >= 0; k--) {
        const names = [...world.nodes.keys()];
        const op = r.rand();
        const node = op < 0.3 || names.length === 0 ? r.nodeName() : r.pick(names);
        if (op < 0.3) world.nodes.set(node, world.randomNode(r, node, r.int(400))); // new node (or replaced)
        else if (op < 0.45) world.nodes.delete(node); // gone: its entries must leave
        else world.nodes.set(node, world.randomNode(r, node, r.rand() < 0.2 ? 2000 : r.int(400))); // changed, size may jump
        touched.add(node);
      }
      for (const n of touched) cache.put(n, world.view(n, T0), T0);
      const shards = cache.shards([...existing]);
      expectHolds(shards, world.full(() => T0), max);
      // No cut moved: every shard that changed holds a touched node.
      if (cache.recuts.length === 0) {
        stable++;
        const nodesIn = (v: string | undefined): string[] => (v === undefined || v === '' ? [] : Object.keys(JSON.parse(v) as object).map((k) => k.replace(/^mindx-dl-[a-z]+-/, '')));
        for (const [name, v] of shards) if (v !== last.get(name)) expect([...nodesIn(v), ...nodesIn(last.get(name))].some((n) => touched.has(n))).toBe(true);
      }
      last = shards;
      for (const k of shards.keys()) existing.add(k); // high-water: surplus shards come back blank
    }
    expect(stable).toBeGreaterThan(0);
  });

  it('put reports what changed: nothing, only UpdateTime values, or content', () => {
    const r = new RandomEntries(3);
    const cache = new ClusterInfoCache();
    const v = { device: { 'mindx-dl-deviceinfo-a': r.device('a', 5) }, switch: {}, node: {} };
    expect(cache.put('a', v, T0)).toBe('content');
    expect(cache.put('a', { device: { ...v.device }, switch: {}, node: {} }, T0 + 5)).toBe('none');
    const dev = v.device['mindx-dl-deviceinfo-a'];
    const later = { ...dev, UpdateTime: dev.UpdateTime + 300 };
    expect(cache.put('a', { device: { 'mindx-dl-deviceinfo-a': later }, switch: {}, node: {} }, T0)).toBe('timestamps');
    expect(cache.put('a', { device: { 'mindx-dl-deviceinfo-a': { ...later, RackID: later.RackID + 1 } }, switch: {}, node: {} }, T0)).toBe('content');
    expect(cache.put('a', { device: {}, switch: {}, node: {} }, T0)).toBe('content');
    expect(cache.nodeCount).toBe(0);
    // ClusterD (resource/report.go) creates no device or switch shard for an empty map, only the node CM;
    // a shard that exists is blanked.
    expect(cache.shards([])).toEqual(new Map([['cluster-info-node-cm', '']]));
    expect(cache.shards(['cluster-info-device-0'])).toEqual(new Map([['cluster-info-device-0', ''], ['cluster-info-node-cm', '']]));
  });
});

describe('clusterInfoReconciler with the per-node cache', () => {
  it.each([21, 22, 23])('writes exactly the full render, rendering only dirty nodes (seed %i)', async (seed) => {
    const r = new RandomEntries(seed);
    const s = setup({ refreshMs: 0 });
    // Big entries so the device map needs several 800 KiB shards and changes move the cuts.
    for (let i = 0; i < 300; i++) { const n = `node-${i}`; s.world.nodes.set(n, s.world.randomNode(r, n, 8000)); }
    await s.pass();
    expect(s.world.rendered).toHaveLength(300);
    expect(s.cluster.data()).toEqual(desiredShards(s.world.full(() => T0 + 1000), []));
    expect(s.cluster.cms.has('cluster-info-device-1')).toBe(true);
    for (let round = 0; round < 15; round++) {
      const touched = new Set<string>();
      for (let k = 1 + r.int(4); k > 0; k--) {
        const names = [...s.world.nodes.keys()];
        const op = r.rand();
        const node = op < 0.2 ? `node-new-${round}-${k}` : r.pick(names);
        if (op < 0.35 && op >= 0.2) s.world.nodes.delete(node);
        else s.world.nodes.set(node, s.world.randomNode(r, node, r.rand() < 0.3 ? 16_000 : 8000));
        touched.add(node);
      }
      s.reconciler.markDirty(touched);
      await s.pass();
      expect(new Set(s.world.rendered)).toEqual(touched);
      // node-info entries here carry their own UpdateTime, so the full render is time independent.
      expectHolds(s.cluster.data(), s.world.full(() => T0 + 1000));
    }
    expect(s.reconciler.stats.fullRenders).toBe(1);
  });

  it('a fault on one node rewrites its own shard only, not the shards after it (docs/rules.md#ingest.cluster-info-shards)', async () => {
    const r = new RandomEntries(24);
    const s = setup({ refreshMs: 0 });
    // About 2.4 MB of device entries: several shards whatever the cut.
    const names = Array.from({ length: 300 }, (_, i) => `node-${String(i).padStart(3, '0')}`);
    for (const n of names) s.world.nodes.set(n, { device: r.device(n, 8000) });
    await s.pass();
    const before = s.cluster.data();
    const writes = s.cluster.writes();
    expect([...before.keys()].filter((k) => k.startsWith(CLUSTER_INFO_DEVICE_PREFIX)).length).toBeGreaterThan(2);
    // The first node's entry grows by more than an entry (its fault's records): the shard it is in is the only write.
    s.world.nodes.set(names[0]!, { device: r.device(names[0]!, 16_000) });
    s.reconciler.markDirty([names[0]!]);
    await s.pass();
    expect(s.cluster.writes() - writes).toBe(1);
    const changed = [...s.cluster.data()].filter(([k, v]) => before.get(k) !== v).map(([k]) => k);
    expect(changed).toEqual(['cluster-info-device-0']);
    expectHolds(s.cluster.data(), s.world.full(() => T0));
  });

  it('creates the empty cluster-info-node-cm only after 5 s without a write, as ClusterD\'s cycle report', async () => {
    const r = new RandomEntries(4);
    const s = setup({ refreshMs: 5000 });
    s.world.nodes.set('a', { device: r.device('a', 10) });
    const first = await s.pass();
    expect([...s.cluster.cms.keys()]).toEqual(['cluster-info-device-0']);
    expect(first.requeueAfterMs).toBeLessThanOrEqual(5000);
    // A device change 3 s later is a report: the 5 s start again.
    s.world.nodes.set('a', { device: r.device('a', 10) });
    s.reconciler.markDirty(['a']);
    await s.pass(3000);
    expect(s.cluster.writes()).toBe(2);
    await s.pass(4000);
    expect(s.cluster.cms.has('cluster-info-node-cm')).toBe(false);
    await s.pass(1000);
    expect(s.cluster.data().get('cluster-info-node-cm')).toBe('');
  });

  it('a node-info fault creates cluster-info-node-cm at once', async () => {
    const r = new RandomEntries(4);
    const s = setup({ refreshMs: 5000 });
    s.world.nodes.set('a', { device: r.device('a', 10) });
    await s.pass();
    s.world.nodes.set('b', { node: r.nodeInfo('b') });
    s.reconciler.markDirty(['b']);
    await s.pass(1000);
    expect(s.cluster.data().get('cluster-info-node-cm')).toContain('mindx-dl-nodeinfo-b');
  });

  it('writes nothing when nothing changed, and nothing when a dirty node renders the same', async () => {
    const r = new RandomEntries(5);
    const s = setup({ refreshMs: 0 });
    for (const n of ['a', 'b', 'c']) s.world.nodes.set(n, { device: r.device(n, 10), node: r.nodeInfo(n) });
    await s.pass();
    const first = s.cluster.writes();
    expect(first).toBe(2); // device-0 and node-cm; no switch entry, so no switch-0 (as ClusterD)
    await s.pass();
    s.reconciler.markDirty(['b']);
    await s.pass();
    expect(s.world.rendered).toEqual(['b']);
    expect(s.cluster.writes()).toBe(first);
  });

  it('a deleted node leaves the view', async () => {
    const r = new RandomEntries(6);
    const s = setup({ refreshMs: 0 });
    for (const n of ['a', 'b']) s.world.nodes.set(n, { device: r.device(n, 10), switch: r.switch(n), node: r.nodeInfo(n) });
    await s.pass();
    expect(s.cluster.data().get('cluster-info-switch-0')).toContain('mindx-dl-switchinfo-a');
    s.world.nodes.delete('a');
    s.reconciler.markDirty(['a']);
    await s.pass();
    for (const v of s.cluster.data().values()) expect(v).not.toMatch(/-a"/);
    expect(s.cluster.data()).toEqual(desiredShards(s.world.full(() => T0), [...s.cluster.cms.keys()]));
  });

  it('the refresh renders every node and names a node whose entry changed without a notification', async () => {
    const r = new RandomEntries(7);
    const s = setup({ refreshMs: 30_000 });
    for (const n of ['a', 'b', 'c']) s.world.nodes.set(n, { device: r.device(n, 10) });
    await s.pass();
    s.world.nodes.set('b', { device: r.device('b', 10) }); // no markDirty: a missed invalidation
    s.world.nodes.set('c', { device: r.device('c', 10) });
    s.reconciler.markDirty(['c']);
    await s.pass();
    expect(s.world.rendered).toEqual(['c']);
    expect(s.cluster.data().get('cluster-info-device-0')).not.toBe(desiredShards(s.world.full(() => T0), []).get('cluster-info-device-0'));
    s.world.nodes.set('a', { device: r.device('a', 10) }); // pending when the refresh comes: not stale
    s.reconciler.markDirty(['a']);
    await s.pass(30_000);
    expect(s.world.rendered.sort()).toEqual(['a', 'b', 'c']);
    expect(s.reconciler.stats).toMatchObject({ fullRenders: 2, staleEntries: 1 });
    expect(s.warnings).toHaveLength(1);
    expect(s.warnings[0]!.fields).toEqual({ node: 'b' });
    expect(s.cluster.data().get('cluster-info-device-0')).toBe(desiredShards(s.world.full(() => T0), []).get('cluster-info-device-0'));
  });

  it('a removal the refresh finds is stale too', async () => {
    const r = new RandomEntries(8);
    const s = setup({ refreshMs: 30_000 });
    for (const n of ['a', 'b']) s.world.nodes.set(n, { device: r.device(n, 10) });
    await s.pass();
    s.world.nodes.delete('a');
    await s.pass(30_000);
    expect(s.warnings.map((w) => w.fields)).toEqual([{ node: 'a' }]);
    expect(s.cluster.data().get('cluster-info-device-0')).not.toContain('deviceinfo-a"');
  });

  it('a node-info without updateTime keeps the UpdateTime of its last change through refreshes', async () => {
    const r = new RandomEntries(9);
    const s = setup({ refreshMs: 30_000 });
    s.world.nodes.set('a', { node: r.nodeInfo('a'), nodeInfoWithoutTime: true });
    await s.pass();
    const first = s.now();
    const updateTime = () => (JSON.parse(s.cluster.data().get('cluster-info-node-cm')!) as Record<string, NodeInfoEntry>)['mindx-dl-nodeinfo-a']!.UpdateTime;
    expect(updateTime()).toBe(first);
    await s.pass(30_000);
    expect(s.reconciler.stats.staleEntries).toBe(0);
    expect(updateTime()).toBe(first);
    // NodeD rewrote it unchanged: only its UpdateTime (the render time) moves, which waits for the refresh
    s.reconciler.markDirty(['a']);
    await s.pass();
    const rewrittenAt = s.now();
    expect(updateTime()).toBe(first);
    await s.pass(30_000);
    expect(updateTime()).toBe(rewrittenAt);
  });

  it('a pass that changes only UpdateTime values writes nothing; the next real change or the refresh carries them', async () => {
    const r = new RandomEntries(13);
    const s = setup({ refreshMs: 30_000 });
    for (const n of ['a', 'b']) s.world.nodes.set(n, { device: r.device(n, 10), node: r.nodeInfo(n) });
    await s.pass();
    const writes = s.cluster.writes();
    const bump = (n: string, by: number): void => {
      const t = s.world.nodes.get(n)!;
      s.world.nodes.set(n, { device: { ...t.device!, UpdateTime: t.device!.UpdateTime + by }, node: { ...t.node!, UpdateTime: t.node!.UpdateTime + by * 1000 } });
    };
    bump('a', 300); // the device plugin's and NodeD's periodic rewrites
    s.reconciler.markDirty(['a']);
    await s.pass();
    expect(s.world.rendered).toEqual(['a']);
    expect(s.cluster.writes()).toBe(writes);
    expect(s.reconciler.stats.timestampOnlyPasses).toBe(1);
    expect(s.cluster.data()).not.toEqual(desiredShards(s.world.full(() => T0), [...s.cluster.cms.keys()]));
    // someone deletes a shard meanwhile: put back as last written
    const before = s.cluster.data().get('cluster-info-device-0');
    s.cluster.cms.delete('cluster-info-device-0');
    await s.pass();
    expect(s.cluster.data().get('cluster-info-device-0')).toBe(before);
    // a real change on b goes out with a's newer UpdateTime
    s.world.nodes.set('b', { ...s.world.nodes.get('b')!, device: r.device('b', 10) });
    s.reconciler.markDirty(['b']);
    await s.pass();
    expect(s.cluster.data()).toEqual(desiredShards(s.world.full(() => T0), [...s.cluster.cms.keys()]));
    // and the refresh carries a later bump that nothing else did
    bump('b', 300);
    s.reconciler.markDirty(['b']);
    await s.pass();
    expect(s.cluster.data()).not.toEqual(desiredShards(s.world.full(() => T0), [...s.cluster.cms.keys()]));
    await s.pass(30_000);
    expect(s.cluster.data()).toEqual(desiredShards(s.world.full(() => T0), [...s.cluster.cms.keys()]));
    expect(s.reconciler.stats.staleEntries).toBe(0);
  });

  it('default refresh (ClusterD, 5 s): no annotation, an idle refresh writes nothing, UpdateTime-only changes go out within 5 s without a full render', async () => {
    const r = new RandomEntries(21);
    const s = setup({ refreshMs: 5_000 });
    for (const n of ['a', 'b']) s.world.nodes.set(n, { device: r.device(n, 10) });
    await s.pass();
    expect(s.cluster.targets.every((t) => t.annotations === undefined && t.removeAnnotations?.includes(REFRESHED_AT_ANNOTATION))).toBe(true);
    await s.pass(5_000); // the empty node CM, with the first quiet cycle
    const writes = s.cluster.writes();
    for (let i = 0; i < 12; i++) await s.pass(5_000); // one idle minute of refreshes
    expect(s.cluster.writes()).toBe(writes);
    const t = s.world.nodes.get('a')!;
    s.world.nodes.set('a', { device: { ...t.device!, UpdateTime: t.device!.UpdateTime + 300 } }); // the device plugin's periodic rewrite
    s.reconciler.markDirty(['a']);
    await s.pass(1_000);
    expect(s.cluster.writes()).toBe(writes); // waits for the refresh
    const full = s.reconciler.stats.fullRenders;
    await s.pass(5_000);
    expect(s.world.rendered).toEqual([]);
    expect(s.reconciler.stats.fullRenders).toBe(full);
    expect(s.cluster.writes()).toBe(writes + 1);
    expect(s.cluster.data()).toEqual(desiredShards(s.world.full(() => T0), [...s.cluster.cms.keys()]));
  });

  it('with refreshAnnotation (extension) every full render bumps clusterd-ts.io/refreshed-at', async () => {
    const r = new RandomEntries(22);
    const s = setup({ refreshMs: 30_000, refreshAnnotation: true });
    s.world.nodes.set('a', { device: r.device('a', 10) });
    await s.pass();
    const writes = s.cluster.writes();
    await s.pass(30_000);
    expect(s.cluster.writes()).toBe(writes + 2); // device and node shards (no switch entry: no switch shard), data unchanged
    expect(s.cluster.cms.get('cluster-info-node-cm')?.metadata?.annotations?.[REFRESHED_AT_ANNOTATION]).toBe(new Date(s.now()).toISOString());
  });

  it('keeps the throttle: a pass too soon renders nothing and the dirty node waits for the next one', async () => {
    const r = new RandomEntries(10);
    const s = setup({ refreshMs: 0, minIntervalMs: 200 });
    s.world.nodes.set('a', { device: r.device('a', 10) });
    await s.pass();
    s.reconciler.markDirty(['a']);
    expect(await s.pass(50)).toEqual({ requeueAfterMs: 150 });
    expect(s.world.rendered).toEqual([]);
    await s.pass(150);
    expect(s.world.rendered).toEqual(['a']);
  });

  it('with a write burst (ClusterD: 5 at once), a change right after a write goes out at once; a pass that writes nothing costs no token', async () => {
    const r = new RandomEntries(13);
    const s = setup({ refreshMs: 0, minIntervalMs: 200, burst: 3 });
    for (const n of ['a', 'b']) s.world.nodes.set(n, { device: r.device(n, 10) });
    await s.pass(); // primes and writes: 2 tokens left
    for (let i = 0; i < 10; i++) { // passes with nothing to write (pod events): no token spent
      s.reconciler.markDirty(['a']);
      await s.pass(1);
      expect(s.world.rendered).toEqual(['a']);
    }
    const writes = s.cluster.writes();
    s.world.nodes.set('a', { device: r.device('a', 10) });
    s.reconciler.markDirty(['a']);
    await s.pass(1); // written at once, 1 token left
    expect(s.cluster.writes()).toBe(writes + 1);
    s.world.nodes.set('b', { device: r.device('b', 10) });
    s.reconciler.markDirty(['b']);
    await s.pass(1); // written at once, 0 left
    expect(s.cluster.writes()).toBe(writes + 2);
    s.world.nodes.set('a', { device: r.device('a', 10) });
    s.reconciler.markDirty(['a']);
    const held = await s.pass(1);
    expect(held.requeueAfterMs).toBeGreaterThan(150); // the bucket is empty: the change waits for a token
    expect(s.world.rendered).toEqual([]);
    await s.pass(held.requeueAfterMs);
    expect(s.world.rendered).toEqual(['a']);
    expect(s.cluster.writes()).toBe(writes + 3);
  });

  it('burst coalescing: a lone change goes out at once; changes right after a write wait until the burst is quiet (at most 1 s)', async () => {
    const r = new RandomEntries(14);
    const s = setup({ refreshMs: 0, minIntervalMs: 200, burst: 5, burstQuietMs: 50 });
    const names = Array.from({ length: 200 }, (_, i) => `node-${String(i).padStart(3, '0')}`);
    for (const n of names) s.world.nodes.set(n, { device: r.device(n, 8000) }); // several shards
    await s.pass();
    const change = (n: string): void => { s.world.nodes.set(n, { device: r.device(n, 8000) }); s.reconciler.markDirty([n]); };
    let writes = s.cluster.writes();
    change(names[0]!);
    await s.pass(1000); // quiet: at once
    expect(s.cluster.writes()).toBe(writes + 1);
    // A storm over every shard: its nodes arrive 10 ms apart after that write.
    writes = s.cluster.writes();
    for (const n of names.filter((_, i) => i % 20 === 5)) {
      change(n);
      const out = await s.pass(10);
      expect(s.cluster.writes()).toBe(writes);
      expect(out.requeueAfterMs).toBe(50);
      expect(s.reconciler.settling?.()).toBe(true); // held work: ControllerLoop.idle waits for it
    }
    expect(s.world.rendered).toEqual([]);
    const before = s.cluster.data();
    await s.pass(50); // quiet for 50 ms: one pass writes every shard the burst touched, each once
    expect(s.reconciler.settling?.()).toBe(false);
    const changed = [...s.cluster.data()].filter(([k, v]) => before.get(k) !== v);
    expect(changed).toHaveLength(10); // 12 nodes a shard: each burst node in a shard of its own
    expect(s.cluster.writes() - writes).toBe(10);
    // Changes that never stop are written within 1 s of the first one held.
    writes = s.cluster.writes();
    change(names[1]!);
    await s.pass(1);
    const heldFrom = s.now();
    for (let i = 0; i < 40 && s.cluster.writes() === writes; i++) { change(names[2 + i]!); await s.pass(30); }
    expect(s.cluster.writes()).toBeGreaterThan(writes);
    expect(s.now() - heldFrom).toBeLessThanOrEqual(1000 + 30);
    expect(s.now() - heldFrom).toBeGreaterThanOrEqual(1000);
  });

  it('re-renders the peers of dirty nodes', async () => {
    const r = new RandomEntries(11);
    const s = setup({ refreshMs: 0, peers: (nodes) => (nodes.includes('a') ? ['b'] : []) });
    for (const n of ['a', 'b', 'c']) s.world.nodes.set(n, { device: r.device(n, 10) });
    await s.pass();
    s.reconciler.markDirty(['a']);
    await s.pass();
    expect(s.world.rendered.sort()).toEqual(['a', 'b']);
  });

  it('after a render error the next pass renders every node', async () => {
    const r = new RandomEntries(12);
    let fail = false;
    const world = new World();
    const s = setup({ refreshMs: 0, renderNode: (n, t) => { if (fail && n === 'a') throw new Error('boom'); world.rendered.push(n); return world.view(n, t); } });
    for (const n of ['a', 'b']) world.nodes.set(n, { device: r.device(n, 10) });
    s.world.nodes.set('a', {}); // nodes() comes from s.world
    s.world.nodes.set('b', {});
    await s.pass();
    world.nodes.set('b', { device: r.device('b', 10) });
    fail = true;
    s.reconciler.markDirty(['a', 'b']);
    await expect(s.pass()).rejects.toThrow('boom');
    fail = false;
    world.rendered.length = 0;
    await s.pass();
    expect(world.rendered.sort()).toEqual(['a', 'b']);
    await s.pass(5_000); // the empty node CM, with the first quiet cycle
    expect(s.cluster.data()).toEqual(desiredShards(world.full(() => T0), [...s.cluster.cms.keys()]));
  });
});
