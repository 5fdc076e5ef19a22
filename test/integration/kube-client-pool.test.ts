/**
 * KubeClient's connection pool against the real kube-apiserver: a DELETE that carries DeleteOptions
 * (UID preconditions, as every pod deletion does) leaves its socket to the next request. undici
 * closes the socket after a DELETE with a body unless told otherwise, so a job restart's 8 pod
 * DELETEs used to open 8 new TCP + TLS connections, which cost single-fault latency.
 */
import diagnostics from 'node:diagnostics_channel';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { adminClient, newNamespace } from '../support/cluster.ts';

describe('KubeClient connection pool', () => {
  let connects = 0;
  const onConnect = (): void => { connects++; };
  beforeAll(() => diagnostics.subscribe('undici:client:connected', onConnect));
  afterAll(() => diagnostics.unsubscribe('undici:client:connected', onConnect));

  it('reuses its sockets after parallel DELETEs with preconditions (no new connection)', async () => {
    const client = adminClient(); // its own pool
    const ns = await newNamespace(client);
    const names = Array.from({ length: 8 }, (_, i) => `cm-${i}`);
    // undici checks an idle socket for a close from the server for one turn of the event loop before
    // reusing it; requests sent in the same turn as the last answers open new sockets meanwhile.
    const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 20));
    // Warm the pool with 8 concurrent requests (8 sockets), then create the objects over them.
    await Promise.all(names.map(() => client.get(`/api/v1/namespaces/${ns}`)));
    await pause();
    const created = await Promise.all(names.map((name) => client.create<KubeObject>(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } })));
    const before = connects;
    await pause();
    await Promise.all(created.map((o) => client.delete(paths.configMap(ns, o.metadata!.name!), { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: o.metadata!.uid } })));
    await pause();
    await Promise.all(names.map(() => client.get(`/api/v1/namespaces/${ns}`)));
    expect(connects - before).toBe(0);
    const left = await client.list(paths.configMaps(ns));
    expect(left.items).toHaveLength(0);
  });
});
