/**
 * The ConfigMap writer against the real apiserver: create, no write when nothing changed, and its
 * memory of its own last write standing in for an informer that has not caught up yet (so a stale
 * cache costs neither a 409 nor a duplicate write).
 */
import { paths } from '../../runtime/kube-client.ts';
import { ConfigMapWriter } from '../../runtime/configmap-writer.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { adminClient, newNamespace } from '../support/cluster.ts';

describe('ConfigMapWriter', () => {
  const admin = adminClient();

  it('creates, skips identical data, and updates from its own last write while the cache is stale', async () => {
    const ns = await newNamespace(admin, 'cmw');
    const w = new ConfigMapWriter(admin);
    const target = (v: string) => ({ namespace: ns, name: 'x', labels: { a: 'b' }, data: { k: v } });

    const created = await w.ensure('t', target('1'), undefined);
    expect(created.written).toBe(true);
    // The informer has not delivered it yet (cache: undefined): no second create, no write.
    expect((await w.ensure('t', target('1'), undefined)).written).toBe(false);

    // A caller that hands the writer's own copy back must not make it forget that copy.
    const mine = w.fresher(ns, 'x', undefined);
    expect(mine?.metadata?.resourceVersion).toBe(created.obj?.metadata?.resourceVersion);
    expect(w.fresher(ns, 'x', mine)).toBe(mine);
    expect(w.fresher(ns, 'x', undefined)).toBe(mine);

    // An update while the cache is still empty goes to the object it created (no 409, no create).
    const updated = await w.ensure('t', target('2'), undefined);
    expect(updated.written).toBe(true);
    const live = await admin.get<ConfigMap>(paths.configMap(ns, 'x'));
    expect(live.data).toEqual({ k: '2' });
    expect(live.metadata?.labels).toEqual({ a: 'b' });
    expect(w.writes.get('t')).toBe(2);

    // Once the informer's copy is as new, it wins and the writer's memory is let go.
    expect(w.fresher(ns, 'x', live)).toBe(live);
    expect((await w.ensure('t', target('2'), live)).written).toBe(false);
  });

  it('throws a 409 back when someone else changed the object after the cached copy', async () => {
    const ns = await newNamespace(admin, 'cmw');
    const w = new ConfigMapWriter(admin);
    const first = await admin.create<ConfigMap>(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'y', namespace: ns }, data: { k: '0' } });
    await admin.replace<ConfigMap>(paths.configMap(ns, 'y'), { ...first, data: { k: 'other' } });
    await expect(w.ensure('t', { namespace: ns, name: 'y', data: { k: '1' } }, first)).rejects.toMatchObject({ statusCode: 409 });
    expect(w.writes.get('t')).toBeUndefined();
  });

  it('removes an annotation named in removeAnnotations (left by an older version), keeps the others, then writes nothing', async () => {
    const ns = await newNamespace(admin, 'cmw');
    const w = new ConfigMapWriter(admin);
    const old = await admin.create<ConfigMap>(paths.configMaps(ns), {
      apiVersion: 'v1', kind: 'ConfigMap', data: { k: 'v' },
      metadata: { name: 'z', namespace: ns, annotations: { 'clusterd-ts.io/refreshed-at': '2026-01-01T00:00:00.000Z', keep: 'me' } },
    });
    const target = { namespace: ns, name: 'z', data: { k: 'v' }, removeAnnotations: ['clusterd-ts.io/refreshed-at'] };
    const res = await w.ensure('t', target, old);
    expect(res.written).toBe(true);
    const live = await admin.get<ConfigMap>(paths.configMap(ns, 'z'));
    expect(live.metadata?.annotations).toEqual({ keep: 'me' });
    expect((await w.ensure('t', target, live)).written).toBe(false);
  });
});
