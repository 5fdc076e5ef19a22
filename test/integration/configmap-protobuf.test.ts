/**
 * ConfigMaps written as protobuf (runtime/configmap-protobuf.ts) against the real kube-apiserver:
 * the stored object, read back as JSON, is exactly what the same write sent as JSON stores, for
 * creates and updates, with the metadata our writes carry (labels, annotations, owners,
 * finalizers, generateName, immutable) and data that JSON must escape. An object with a field the
 * encoder does not cover goes as JSON and keeps it.
 */
import { isConflict, paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { ConfigMapWriter } from '../../runtime/configmap-writer.ts';
import { adminClient, newNamespace } from '../support/cluster.ts';

const client = adminClient();
const awkward = {
  'cluster-info-device-0': JSON.stringify({ 'mindx-dl-deviceinfo-n1': { DeviceList: { 'huawei.com/Ascend910-Fault': '[{"fault_code":["80C98009"]}]' }, UpdateTime: 1764140000 } }),
  quotes: 'a "b" \\c\\ \n\t\r \u0000 end',
  unicode: 'héllo — 故障 😀 \u2028',
  empty: '',
};

/** What is compared: the object as stored, minus what the server sets per object. */
function stored(o: KubeObject): unknown {
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, managedFields: _m, name: _n, ...meta } = o.metadata ?? {};
  return { ...o, metadata: meta };
}

describe('ConfigMaps written as protobuf', () => {
  let ns: string;
  let owner: KubeObject;
  beforeAll(async () => {
    ns = await newNamespace(client);
    owner = await client.create<KubeObject>(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: ns } });
  });

  it('stores what JSON stores, on create and on update, and sends protobuf', async () => {
    const pb = new ConfigMapWriter(client);
    const json = new ConfigMapWriter(client, { protobuf: false });
    const target = (name: string) => ({
      namespace: ns, name, labels: { 'mx-consumer-cim': 'true', 'a.b/c': 'd' }, annotations: { note: 'x "y"', 'clusterd-ts.io/n': '{"a":1}' }, data: awkward,
    });
    const a = await pb.ensure('t', target('pb'), undefined);
    const b = await json.ensure('t', target('json'), undefined);
    expect(pb.encodings.get('protobuf')).toBe(1);
    expect(json.encodings.get('protobuf')).toBeUndefined();
    const readBoth = async (): Promise<[ConfigMap, ConfigMap]> =>
      [await client.get<ConfigMap>(paths.configMap(ns, 'pb')), await client.get<ConfigMap>(paths.configMap(ns, 'json'))];
    let [x, y] = await readBoth();
    expect(stored(x)).toEqual(stored(y));
    expect(x.data).toEqual(awkward);
    expect(a.obj?.metadata?.resourceVersion).toBe(x.metadata?.resourceVersion);
    // A next write from the writer's own copy (the informer not caught up yet) goes as protobuf too.
    await pb.ensure('t', { ...target('pb'), data: { ...awkward, once: 'more' } }, undefined);
    expect(pb.encodings.get('protobuf')).toBe(2);
    [x] = await readBoth();
    expect(x.data).toEqual({ ...awkward, once: 'more' });
    await json.ensure('t', { ...target('json'), data: { ...awkward, once: 'more' } }, undefined);
    [x, y] = await readBoth();
    expect(stored(x)).toEqual(stored(y));

    // Updates from a cached copy that carries owners, finalizers, generateName and immutable=false,
    // as someone else's edit may leave them.
    for (const name of ['pb', 'json']) {
      await client.patch(paths.configMap(ns, name), { metadata: {
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid!, controller: false, blockOwnerDeletion: false }],
        finalizers: ['clusterd-ts.io/test'], generateName: 'gen-',
      }, immutable: false }, 'merge');
    }
    [x, y] = await readBoth();
    // As the informer hands them over (runtime/reflector.ts drops managedFields).
    for (const o of [x, y]) delete o.metadata!.managedFields;
    const next = { ...target(''), data: { ...awkward, more: 'v2 "quoted"' }, annotations: { note: 'changed' } };
    await pb.ensure('t', { ...next, name: 'pb' }, x);
    await json.ensure('t', { ...next, name: 'json' }, y);
    expect(pb.encodings.get('protobuf')).toBe(3);
    [x, y] = await readBoth();
    expect(stored(x)).toEqual(stored(y));
    expect(x.metadata?.ownerReferences).toHaveLength(1);
    expect(x.metadata?.finalizers).toEqual(['clusterd-ts.io/test']);
    expect(x.metadata?.annotations).toEqual({ note: 'changed', 'clusterd-ts.io/n': '{"a":1}' });
    void b;

    // Optimistic concurrency holds: a stale resourceVersion is a 409.
    const stale = { ...x, metadata: { ...x.metadata, resourceVersion: String(Number(x.metadata!.resourceVersion) - 1) } };
    const err = await new ConfigMapWriter(client).ensure('t', { ...next, name: 'pb', data: { only: '1' } }, stale).then(() => undefined, (e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    for (const name of ['pb', 'json']) await client.patch(paths.configMap(ns, name), { metadata: { finalizers: null } }, 'merge');
  });

  it('sends JSON, and keeps the field, when the object holds one the encoder does not cover', async () => {
    const made = await client.create<ConfigMap>(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bin', namespace: ns }, binaryData: { blob: Buffer.from([0, 1, 2, 255]).toString('base64') }, data: { a: '1' } } as ConfigMap);
    const w = new ConfigMapWriter(client);
    await w.ensure('t', { namespace: ns, name: 'bin', data: { a: '2' } }, made);
    expect(w.encodings.get('json')).toBe(1);
    expect(w.encodings.get('protobuf')).toBeUndefined();
    const back = await client.get<ConfigMap & { binaryData?: Record<string, string> }>(paths.configMap(ns, 'bin'));
    expect(back.data).toEqual({ a: '2' });
    expect(back.binaryData).toEqual({ blob: 'AAEC/w==' });
  });
});
