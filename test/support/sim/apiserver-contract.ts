/**
 * The apiserver behaviour the controller relies on, as cases that run the same operations through a
 * `KubeClient` and answer a plain outcome. test/integration/apiserver-contract.test.ts runs every case
 * on the real kube-apiserver and on the in-memory one and expects the same outcome from both (and the
 * one written here); test/support/sim/memory-apiserver.test.ts runs them on the in-memory one alone.
 */
import { ApiError, paths, type KubeClient, type KubeObject, type WatchEventType } from '../../../runtime/kube-client.ts';

/** What a case may ask of the side it runs on. */
export interface ContractSide {
  readonly client: KubeClient;
  /** A namespace of its own (created). */
  newNamespace(): Promise<string>;
  /**
   * Forgets the history up to `rv`, so a watch from an older version answers 410: compaction on the
   * in-memory side; on the real side etcd's compaction and an apiserver restart (its watch cache then
   * starts after the compacted versions), on a control plane of its own.
   */
  forget(rv: string): Promise<void>;
}

export interface ContractCase {
  readonly name: string;
  run(side: ContractSide): Promise<unknown>;
  /** The outcome both sides must answer. */
  readonly expected: unknown;
  /** Calls `forget`: the real side runs it on a control plane of its own, whose etcd it may compact. */
  readonly forgets?: true;
}

type Cm = KubeObject & { data?: Record<string, string> };

const cm = (ns: string, name: string, data: Record<string, string> = {}, labels?: Record<string, string>): Cm =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, data });

/** The status and reason of a failed call, or `ok`. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try { await p; return 'ok'; } catch (e) {
    if (e instanceof ApiError) return `${e.statusCode} ${e.reason}`;
    throw e;
  }
}

const rvOf = (o: KubeObject | undefined): number => Number(o?.metadata?.resourceVersion);

interface Seen { readonly type: WatchEventType; readonly name: string; readonly rv: number; readonly code?: number }

/** Opens a watch and collects its events (names and versions) until `stop`. */
async function collect(client: KubeClient, path: string, query: Parameters<KubeClient['watch']>[1]) {
  const seen: Seen[] = [];
  let ended: unknown = 'open';
  const ctl = await client.watch(path, query, (type, obj) => {
    if (type === 'BOOKMARK') return;
    seen.push({ type, name: obj.metadata?.name ?? '', rv: rvOf(obj), ...(type === 'ERROR' ? { code: obj.code } : {}) });
  }, (err) => { ended = err === null ? 'closed' : ((err as { statusCode?: number }).statusCode ?? String(err)); });
  return {
    seen,
    get ended() { return ended; },
    /** Waits until `n` events arrived (or the watch ended), at most 10 s. */
    async until(n: number): Promise<void> {
      for (let i = 0; i < 500 && seen.length < n && ended === 'open'; i++) await new Promise((r) => setTimeout(r, 20));
    },
    stop: () => ctl.abort(),
  };
}

export const CONTRACT_CASES: readonly ContractCase[] = [
  {
    name: 'create twice: 409 AlreadyExists; get of a missing object: 404 NotFound',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const first = await outcome(client.create(paths.configMaps(ns), cm(ns, 'a')));
      const again = await outcome(client.create(paths.configMaps(ns), cm(ns, 'a')));
      const missing = await outcome(client.get(paths.configMap(ns, 'nope')));
      const patchMissing = await outcome(client.patch(paths.configMap(ns, 'nope'), { data: { x: '1' } }));
      const replaceMissing = await outcome(client.replace(paths.configMap(ns, 'nope'), cm(ns, 'nope')));
      const deleteMissing = await outcome(client.delete(paths.configMap(ns, 'nope')));
      const orUndefined = await client.getOrUndefined(paths.configMap(ns, 'nope'));
      return { first, again, missing, patchMissing, replaceMissing, deleteMissing, orUndefined: orUndefined === undefined };
    },
    expected: { first: 'ok', again: '409 AlreadyExists', missing: '404 NotFound', patchMissing: '404 NotFound', replaceMissing: '404 NotFound', deleteMissing: '404 NotFound', orUndefined: true },
  },
  {
    name: 'server fields on create; generateName',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a'));
      const g = await client.create<KubeObject>(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'gen-', namespace: ns } });
      const listed = await client.list<Cm>(paths.configMaps(ns));
      return {
        uid: typeof a.metadata?.uid === 'string' && a.metadata.uid.length > 0,
        rv: rvOf(a) > 0, created: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(a.metadata?.creationTimestamp ?? ''),
        generated: /^gen-[a-z0-9]{5}$/.test(g.metadata?.name ?? ''),
        listRvNotOlder: Number(listed.metadata?.resourceVersion) >= rvOf(g),
        itemsWithoutKind: listed.items.every((i) => i.kind === undefined && i.apiVersion === undefined),
      };
    },
    expected: { uid: true, rv: true, created: true, generated: true, listRvNotOlder: true, itemsWithoutKind: true },
  },
  {
    name: 'replace: a stale resourceVersion is 409 Conflict, none is unconditional, an identical one writes nothing',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a', { v: '1' }));
      const b = await client.replace(paths.configMap(ns, 'a'), { ...a, data: { v: '2' } });
      const stale = await outcome(client.replace(paths.configMap(ns, 'a'), { ...a, data: { v: '3' } }));
      const { resourceVersion: _rv, ...noRv } = b.metadata!;
      const c = await client.replace<Cm>(paths.configMap(ns, 'a'), { ...b, metadata: noRv, data: { v: '4' } });
      const same = await client.replace<Cm>(paths.configMap(ns, 'a'), c);
      const otherUid = await outcome(client.replace(paths.configMap(ns, 'a'), { ...c, metadata: { ...c.metadata, uid: '00000000-0000-0000-0000-000000000000' } }));
      return { newer: rvOf(b) > rvOf(a), stale, unconditional: c.data, sameRv: rvOf(same) === rvOf(c), otherUid };
    },
    expected: { newer: true, stale: '409 Conflict', unconditional: { v: '4' }, sameRv: true, otherUid: '409 Conflict' },
  },
  {
    name: 'delete preconditions: another uid or resourceVersion is 409 Conflict; the right ones delete',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a'));
      const b = await client.replace(paths.configMap(ns, 'a'), { ...a, data: { v: '2' } });
      const wrongUid = await outcome(client.delete(paths.configMap(ns, 'a'), { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } }));
      const staleRv = await outcome(client.delete(paths.configMap(ns, 'a'), { preconditions: { uid: a.metadata?.uid, resourceVersion: a.metadata?.resourceVersion } }));
      const right = await outcome(client.delete(paths.configMap(ns, 'a'), { preconditions: { uid: b.metadata?.uid, resourceVersion: b.metadata?.resourceVersion } }));
      const after = await outcome(client.get(paths.configMap(ns, 'a')));
      return { wrongUid, staleRv, right, after };
    },
    expected: { wrongUid: '409 Conflict', staleRv: '409 Conflict', right: 'ok', after: '404 NotFound' },
  },
  {
    name: 'merge patch: keys set and removed (null); a stale resourceVersion in the patch is 409 Conflict, another uid 422 Invalid',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a', { keep: '1', drop: '2' }, { l1: 'a', l2: 'b' }));
      const p = await client.patch<Cm>(paths.configMap(ns, 'a'), { metadata: { labels: { l2: null, l3: 'c' }, annotations: { n: 'x' } }, data: { drop: null, add: '3' } }, 'merge');
      const stale = await outcome(client.patch(paths.configMap(ns, 'a'), { metadata: { resourceVersion: a.metadata?.resourceVersion }, data: { x: '1' } }, 'merge'));
      const current = await outcome(client.patch(paths.configMap(ns, 'a'), { metadata: { resourceVersion: p.metadata?.resourceVersion }, data: { x: '1' } }, 'merge'));
      const otherUid = await outcome(client.patch(paths.configMap(ns, 'a'), { metadata: { uid: '00000000-0000-0000-0000-000000000000' }, data: { y: '1' } }, 'merge'));
      const sameUid = await outcome(client.patch(paths.configMap(ns, 'a'), { metadata: { uid: a.metadata?.uid }, data: { y: '1' } }, 'merge'));
      const noop = await client.patch(paths.configMap(ns, 'a'), { data: { y: '1' } }, 'merge');
      const final = await client.get<Cm>(paths.configMap(ns, 'a'));
      return { labels: p.metadata?.labels, annotations: p.metadata?.annotations, data: p.data, stale, current, otherUid, sameUid, noopSameRv: rvOf(noop) === rvOf(final), final: final.data };
    },
    expected: {
      labels: { l1: 'a', l3: 'c' }, annotations: { n: 'x' }, data: { keep: '1', add: '3' }, stale: '409 Conflict', current: 'ok',
      otherUid: '422 Invalid', sameUid: 'ok', noopSameRv: true, final: { keep: '1', add: '3', x: '1', y: '1' },
    },
  },
  {
    name: 'a pod patch carrying the uid of a pod since replaced (same name): refused, the new pod untouched',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'w-0', namespace: ns }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
      const old = await client.create<KubeObject>(paths.pods(ns), pod);
      await client.delete(paths.pod(ns, 'w-0'), { gracePeriodSeconds: 0, preconditions: { uid: old.metadata?.uid } });
      const fresh = await client.create<KubeObject>(paths.pods(ns), pod);
      const stale = await outcome(client.patch(paths.pod(ns, 'w-0'), { metadata: { uid: old.metadata?.uid, annotations: { a: 'b' } } }, 'merge'));
      const current = await outcome(client.patch(paths.pod(ns, 'w-0'), { metadata: { uid: fresh.metadata?.uid, annotations: { a: 'c' } } }, 'merge'));
      const after = await client.get(paths.pod(ns, 'w-0'));
      return { stale, current, annotations: after.metadata?.annotations };
    },
    expected: { stale: '422 Invalid', current: 'ok', annotations: { a: 'c' } },
  },
  {
    name: 'status subresource: a created pod starts Pending, writes to the pod keep its status, /status writes change it',
    async run({ client, newNamespace }) {
      // No scheduler serves this pod: on the shared control plane kube-scheduler would bind it to
      // another file's kwok node, and kwok would set it Running.
      const ns = await newNamespace();
      type PodObj = KubeObject & { status?: { phase?: string; qosClass?: string } };
      const created = await client.create<PodObj>(paths.pods(ns), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: ns }, spec: { schedulerName: 'contract-unscheduled', containers: [{ name: 'c', image: 'busybox' }] }, status: { phase: 'Running' } });
      const main = await client.patch<PodObj>(paths.pod(ns, 'p'), { metadata: { labels: { a: 'b' } }, status: { phase: 'Failed' } }, 'merge');
      const status = await client.patch<PodObj>(paths.podStatus(ns, 'p'), { status: { phase: 'Running' } }, 'merge');
      const noStatus = await outcome(client.patch(`${paths.configMaps(ns)}/nope/status`, { status: {} }, 'merge'));
      return { created: [created.status?.phase, created.status?.qosClass], main: [main.status?.phase, main.metadata?.labels], status: status.status?.phase, noStatus };
    },
    expected: { created: ['Pending', 'BestEffort'], main: ['Pending', { a: 'b' }], status: 'Running', noStatus: '404 NotFound' },
  },
  {
    name: 'graceful deletion: a bound pod terminates (deletionTimestamp) until deleted with grace 0; an unbound one goes at once',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const pod = (name: string, nodeName?: string): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec: { ...(nodeName ? { nodeName } : { schedulerName: 'contract-unscheduled' }), containers: [{ name: 'c', image: 'busybox' }] } });
      await client.create(paths.pods(ns), pod('bound', 'contract-no-such-node'));
      await client.create(paths.pods(ns), pod('unbound'));
      await client.delete(paths.pod(ns, 'bound'));
      await client.delete(paths.pod(ns, 'unbound'));
      const terminating = await client.get(paths.pod(ns, 'bound'));
      const again = await outcome(client.delete(paths.pod(ns, 'bound')));
      const force = await outcome(client.delete(paths.pod(ns, 'bound'), { gracePeriodSeconds: 0 }));
      return {
        terminating: terminating.metadata?.deletionTimestamp !== undefined, grace: terminating.metadata?.deletionGracePeriodSeconds, again, force,
        bound: await outcome(client.get(paths.pod(ns, 'bound'))), unbound: await outcome(client.get(paths.pod(ns, 'unbound'))),
      };
    },
    expected: { terminating: true, grace: 30, again: 'ok', force: 'ok', bound: '404 NotFound', unbound: '404 NotFound' },
  },
  {
    name: 'JSON patch: add, replace, remove, test; a failing test or a missing path changes nothing',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      await client.create(paths.configMaps(ns), cm(ns, 'a', { a: '1', b: '2' }));
      const p = await client.patch<Cm>(paths.configMap(ns, 'a'), [
        { op: 'test', path: '/data/a', value: '1' }, { op: 'add', path: '/data/c', value: '3' },
        { op: 'replace', path: '/data/a', value: '9' }, { op: 'remove', path: '/data/b' },
        { op: 'add', path: '/metadata/labels', value: { 'x.io/k': 'v' } },
      ], 'json');
      const failedTest = await outcome(client.patch(paths.configMap(ns, 'a'), [{ op: 'test', path: '/data/a', value: '1' }, { op: 'add', path: '/data/z', value: '0' }], 'json'));
      const missing = await outcome(client.patch(paths.configMap(ns, 'a'), [{ op: 'remove', path: '/data/nope' }], 'json'));
      const final = await client.get<Cm>(paths.configMap(ns, 'a'));
      return { data: p.data, labels: p.metadata?.labels, failedTest, missing, final: final.data };
    },
    expected: { data: { a: '9', c: '3' }, labels: { 'x.io/k': 'v' }, failedTest: '422 Invalid', missing: '422 Invalid', final: { a: '9', c: '3' } },
  },
  {
    name: 'strategic merge patch: labels merge; refused on a custom resource (415)',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      await client.create(paths.configMaps(ns), cm(ns, 'a', {}, { l1: 'a' }));
      const p = await client.patch(paths.configMap(ns, 'a'), { metadata: { labels: { l2: 'b' } } }, 'strategic');
      await client.create(paths.podGroups(ns), { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: 'pg', namespace: ns }, spec: { minMember: 1 } });
      const crd = await outcome(client.patch(paths.podGroup(ns, 'pg'), { metadata: { labels: { a: 'b' } } }, 'strategic'));
      return { labels: p.metadata?.labels, crd };
    },
    expected: { labels: { l1: 'a', l2: 'b' }, crd: '415 UnsupportedMediaType' },
  },
  {
    name: 'custom resources: generation follows spec, an update without resourceVersion is 422, list items keep their kind',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const pg = await client.create<KubeObject>(paths.podGroups(ns), { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: 'pg', namespace: ns }, spec: { minMember: 1 } });
      const labelled = await client.patch(paths.podGroup(ns, 'pg'), { metadata: { labels: { a: 'b' } } }, 'merge');
      const spec = await client.patch(paths.podGroup(ns, 'pg'), { spec: { minMember: 2 } }, 'merge');
      const { resourceVersion: _rv, ...noRv } = spec.metadata!;
      const unconditional = await outcome(client.replace(paths.podGroup(ns, 'pg'), { ...spec, metadata: noRv }));
      const listed = await client.list<KubeObject>(paths.podGroups(ns));
      return {
        generations: [pg.metadata?.generation, labelled.metadata?.generation, spec.metadata?.generation], unconditional,
        listKind: listed.items.map((i) => i.kind),
      };
    },
    expected: { generations: [1, 1, 2], unconditional: '422 Invalid', listKind: ['PodGroup'] },
  },
  {
    name: 'label and field selectors',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      await client.create(paths.configMaps(ns), cm(ns, 'a', {}, { app: 'x', tier: 'web' }));
      await client.create(paths.configMaps(ns), cm(ns, 'b', {}, { app: 'y' }));
      await client.create(paths.configMaps(ns), cm(ns, 'c'));
      for (const [name, node] of [['p1', 'n1'], ['p2', 'n2']] as const) {
        await client.create(paths.pods(ns), { apiVersion: 'v1', kind: 'Pod', metadata: { name: name, namespace: ns }, spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }] } });
      }
      const names = async (path: string, q: Parameters<KubeClient['list']>[1]): Promise<string[]> =>
        (await client.list<KubeObject>(path, q)).items.map((i) => i.metadata?.name ?? '');
      return {
        eq: await names(paths.configMaps(ns), { labelSelector: 'app=x' }),
        neq: await names(paths.configMaps(ns), { labelSelector: 'app!=x' }),
        in: await names(paths.configMaps(ns), { labelSelector: 'app in (x,y)' }),
        notin: await names(paths.configMaps(ns), { labelSelector: 'app notin (x)' }),
        exists: await names(paths.configMaps(ns), { labelSelector: 'tier' }),
        absent: await names(paths.configMaps(ns), { labelSelector: '!app' }),
        both: await names(paths.configMaps(ns), { labelSelector: 'app=x,tier=web' }),
        byName: await names(paths.configMaps(ns), { fieldSelector: 'metadata.name=b' }),
        byNode: await names(paths.pods(ns), { fieldSelector: 'spec.nodeName=n2' }),
        badLabel: await outcome(client.list(paths.configMaps(ns), { labelSelector: 'a b c' })),
        badField: await outcome(client.list(paths.configMaps(ns), { fieldSelector: 'data.x=1' })),
        otherNs: (await client.list<KubeObject>(paths.configMaps(), { labelSelector: 'app=x', fieldSelector: `metadata.namespace=${ns}` })).items.map((i) => `${i.metadata?.namespace === ns}/${i.metadata?.name}`),
      };
    },
    expected: {
      eq: ['a'], neq: ['b', 'c'], in: ['a', 'b'], notin: ['b', 'c'], exists: ['a'], absent: ['c'], both: ['a'], byName: ['b'], byNode: ['p2'],
      badLabel: '400 BadRequest', badField: '400 BadRequest', otherNs: ['true/a'],
    },
  },
  {
    name: 'list paging: limit and continue at one snapshot (a write between pages is not in later pages)',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      for (const n of ['a', 'b', 'c', 'd', 'e']) await client.create(paths.configMaps(ns), cm(ns, n));
      const p1 = await client.list<KubeObject>(paths.configMaps(ns), { limit: 2 });
      await client.create(paths.configMaps(ns), cm(ns, 'f'));
      const p2 = await client.list<KubeObject>(paths.configMaps(ns), { limit: 2, continue: p1.metadata?.continue });
      const p3 = await client.list<KubeObject>(paths.configMaps(ns), { limit: 2, continue: p2.metadata?.continue });
      const names = (l: { items: KubeObject[] }): string[] => l.items.map((i) => i.metadata?.name ?? '');
      return {
        pages: [names(p1), names(p2), names(p3)], lastHasNoContinue: (p3.metadata?.continue ?? '') === '',
        sameRv: p1.metadata?.resourceVersion === p2.metadata?.resourceVersion && p2.metadata?.resourceVersion === p3.metadata?.resourceVersion,
      };
    },
    expected: { pages: [['a', 'b'], ['c', 'd'], ['e']], lastHasNoContinue: true, sameRv: true },
  },
  {
    name: 'watch from a resourceVersion: ADDED, MODIFIED, DELETED in commit order, versions increasing',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const start = await client.list<KubeObject>(paths.configMaps(ns));
      const w = await collect(client, paths.configMaps(ns), { resourceVersion: start.metadata?.resourceVersion, allowWatchBookmarks: true });
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a'));
      const a2 = await client.replace(paths.configMap(ns, 'a'), { ...a, data: { v: '2' } });
      await client.create(paths.configMaps(ns), cm(ns, 'b'));
      await client.delete(paths.configMap(ns, 'a'));
      await w.until(4);
      w.stop();
      const rvs = w.seen.map((s) => s.rv);
      return {
        events: w.seen.map((s) => `${s.type} ${s.name}`), increasing: rvs.every((v, i) => i === 0 || v > rvs[i - 1]!),
        modifiedRv: w.seen[1]?.rv === rvOf(a2), deletedNewerThanLastWrite: (w.seen[3]?.rv ?? 0) > rvOf(a2),
      };
    },
    expected: { events: ['ADDED a', 'MODIFIED a', 'ADDED b', 'DELETED a'], increasing: true, modifiedRv: true, deletedNewerThanLastWrite: true },
  },
  {
    name: 'list then watch from the list version: only later writes; a selector change is ADDED or DELETED for that watch',
    async run({ client, newNamespace }) {
      const ns = await newNamespace();
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a', {}, { pick: 'yes' }));
      const b = await client.create(paths.configMaps(ns), cm(ns, 'b', {}, { pick: 'no' }));
      const list = await client.list<KubeObject>(paths.configMaps(ns), { labelSelector: 'pick=yes' });
      const w = await collect(client, paths.configMaps(ns), { resourceVersion: list.metadata?.resourceVersion, labelSelector: 'pick=yes' });
      await client.patch(paths.configMap(ns, 'b'), { metadata: { labels: { pick: 'yes' } } });
      await client.patch(paths.configMap(ns, 'a'), { metadata: { labels: { pick: 'no' } } });
      await client.patch(paths.configMap(ns, 'a'), { data: { ignored: '1' } });
      await client.patch(paths.configMap(ns, 'b'), { data: { seen: '1' } });
      await w.until(3);
      w.stop();
      return { listed: list.items.map((i) => i.metadata?.name), events: w.seen.map((s) => `${s.type} ${s.name}`), before: rvOf(b) > rvOf(a) };
    },
    expected: { listed: ['a'], events: ['ADDED b', 'DELETED a', 'MODIFIED b'], before: true },
  },
  {
    name: 'watch from a version older than the retained history: ERROR 410 Expired, then the end',
    forgets: true,
    async run({ client, newNamespace, forget }) {
      const ns = await newNamespace();
      const a = await client.create(paths.configMaps(ns), cm(ns, 'a'));
      const b = await client.replace(paths.configMap(ns, 'a'), { ...a, data: { v: '2' } });
      await forget(b.metadata!.resourceVersion!);
      const w = await collect(client, paths.configMaps(ns), { resourceVersion: '1' });
      await w.until(1);
      for (let i = 0; i < 250 && w.ended === 'open'; i++) await new Promise((r) => setTimeout(r, 20));
      w.stop();
      return { events: w.seen.map((s) => `${s.type} ${s.code}`), ended: w.ended };
    },
    expected: { events: ['ERROR 410'], ended: 'closed' },
  },
];
