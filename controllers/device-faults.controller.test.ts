import { BehaviorSubject } from 'rxjs';
import { Metrics } from '../telemetry/metrics.ts';
import type { KubeObject } from '../runtime/kube-client.ts';
import { encodePublicFault, PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS, type PubFaultInfo } from '../schemas/public-fault/public-fault.ts';
import { publicFaultPayload } from '../tools/simulator/public-fault.ts';
import { ManualClock, recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { FakeSource } from '../test/support/fault-filters-fakes.ts';
import type { Sources } from './sources/sources.ts';
import { DeviceFaultsController, OPEN_PUBLIC_FAULT_SENDERS, type PublicFaultSenders } from './device-faults.controller.ts';

/** An informer stand-in whose first list is done. */
class SyncedSource<T extends KubeObject> extends FakeSource<T> {
  readonly synced$ = new BehaviorSubject(true);
  health(): { synced: boolean } { return { synced: true }; }
}

function setup(senders: PublicFaultSenders = OPEN_PUBLIC_FAULT_SENDERS) {
  const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5)); // the public-fault format wants a time after 2025
  const lines: LogLine[] = [];
  const publicFaults = new SyncedSource<KubeObject>();
  const nodes = new SyncedSource<KubeObject>();
  const sources = { deviceInfo: new SyncedSource(), nodeInfo: new SyncedSource(), publicFaults, nodes } as unknown as Sources;
  const changes: string[][] = [];
  let messages = 0;
  const metrics = new Metrics({ processMetrics: false });
  const c = new DeviceFaultsController({
    sources, log: recordingLogger(lines), metrics, clock,
    onChange: (ch) => changes.push([...ch.nodes]), onPublicFaultMessage: () => { messages++; }, publicFaultSenders: senders,
  });
  c.start();
  /** A Node object (cluster-scoped: the informer keys it by name). */
  const addNode = (name: string): void => { nodes.store.set(name, { metadata: { name } }); };
  const removeNode = (name: string): void => { nodes.store.delete(name); };
  const refused = async (reason: string, via: string): Promise<number> => (await metrics.publicFaultsRefused.get()).values.find((v) => v.labels.reason === reason && v.labels.via === via)?.value ?? 0;
  return { c, clock, publicFaults, changes, messages: () => messages, lines, addNode, removeNode, refused, metrics };
}

const STRICT: PublicFaultSenders = { namespaceAllowed: (ns) => ns === 'mindx-dl', namespaces: 'mindx-dl', unknownNodes: false };
const cm = (namespace: string, name: string, info: PubFaultInfo): KubeObject & { data: Record<string, string> } => ({
  metadata: { name, namespace, labels: { ...PUBLIC_FAULT_LABELS } }, data: { [PUBLIC_FAULT_DATA_KEY]: encodePublicFault(info) },
});

describe('DeviceFaultsController: public-fault senders', () => {
  it('a ConfigMap outside the sender namespaces is refused whole: nothing held, one log line, counted', async () => {
    const s = setup(STRICT);
    s.addNode('n1');
    s.publicFaults.put(cm('tenant-a', 'pf', publicFaultPayload({ code: '220001001', faultId: 'pf-00000001', targets: [{ node: 'n1', npus: [0, 1] }] }, s.clock.now())));
    expect(s.c.store.publicFaults.size).toBe(0);
    expect(s.messages()).toBe(0);
    expect(await s.refused('namespace', 'configmap')).toBe(1);
    expect(s.lines.find((l) => l.msg.startsWith('public-fault ConfigMap refused'))).toMatchObject({ level: 'warn', object: 'tenant-a/pf', senderNamespaces: 'mindx-dl' });
    // From a sender namespace, for a node that exists: taken, and its records name the ConfigMap.
    s.publicFaults.put(cm('mindx-dl', 'pf', publicFaultPayload({ code: '220001001', faultId: 'pf-00000001', targets: [{ node: 'n1', npus: [0] }] }, s.clock.now())));
    expect(s.c.store.records('n1').map((r) => [r.device, r.origin])).toEqual([['Ascend910-0', 'mindx-dl/pf']]);
    s.c.stop();
  });

  it('faults for nodes with no Node object are refused (the others of the message taken); a recover always applies; the gRPC path answers the rejection', async () => {
    const s = setup(STRICT);
    s.addNode('n1');
    const now = s.clock.now();
    s.publicFaults.put(cm('mindx-dl', 'pf', publicFaultPayload({ code: '220001001', faultId: 'pf-00000002', targets: [{ node: 'n1', npus: [2] }, { node: 'ghost-1', npus: [0, 1] }, { node: 'ghost-2', npus: [0] }] }, now)));
    expect([...s.c.store.publicFaultStatistics().keys()]).toEqual(['n1']);
    expect(await s.refused('unknown_node', 'configmap')).toBe(2);
    expect(s.lines.find((l) => l.msg.startsWith('part of an input rejected'))).toMatchObject({ kind: 'unknown_node', reason: 'no Node named ghost-1, ghost-2: 2 fault-node pairs refused' });
    // Over gRPC (the intake's other public-fault input): only unknown nodes = the whole message refused.
    const r = s.c.submitPublicFault({ origin: 'grpc-pubfault/CCAE', info: publicFaultPayload({ code: '220001001', faultId: 'pf-00000003', targets: [{ node: 'ghost-3', npus: [0] }] }, now) });
    expect(r).toMatchObject({ kind: 'unknown_node', reason: expect.stringContaining('no Node named ghost-3') });
    expect(await s.refused('unknown_node', 'grpc')).toBe(1);
    expect(s.c.store.records('ghost-3')).toEqual([]);
    // A Node that appears later does not get the refused fault (it was not held).
    s.addNode('ghost-1');
    expect(s.c.store.records('ghost-1')).toEqual([]);
    // A fault of a node deleted since still recovers.
    s.removeNode('n1');
    await s.clock.run(6_000);
    s.c.submitPublicFault({ origin: 'grpc-pubfault/CCAE', info: publicFaultPayload({ code: '220001001', faultId: 'pf-00000002', assertion: 'recover', targets: [{ node: 'n1', npus: [2] }] }, s.clock.now()) });
    expect(s.c.store.publicFaults.size).toBe(0);
    s.c.stop();
  });

  it('with ClusterD\'s rules (any namespace, any node name) both are taken', async () => {
    const s = setup(OPEN_PUBLIC_FAULT_SENDERS);
    s.publicFaults.put(cm('tenant-a', 'pf', publicFaultPayload({ code: '220001001', faultId: 'pf-00000004', targets: [{ node: 'ghost-1', npus: [0] }] }, s.clock.now())));
    expect([...s.c.store.publicFaultStatistics().keys()]).toEqual(['ghost-1']);
    expect(await s.refused('namespace', 'configmap') + await s.refused('unknown_node', 'configmap')).toBe(0);
    s.c.stop();
  });

  it('a reload from statistic-fault-info leaves out nodes that no longer exist', async () => {
    const s = setup(STRICT);
    s.addNode('n1');
    const faults = [{ resource: 'CCAE', devIds: [0], faultId: 'f-00000001', type: 'NPU', faultCode: '220001001', level: 'SeparateNPU', faultTime: 1_767_000_000 }];
    s.c.loadPublicFaults({ metadata: { name: 'statistic-fault-info', namespace: 'cluster-system' }, data: { PublicFaults: JSON.stringify({ n1: faults, gone: faults }) } });
    expect([...s.c.store.publicFaultStatistics().keys()]).toEqual(['n1']);
    expect(await s.refused('unknown_node', 'reload')).toBe(1);
    expect(s.lines.find((l) => l.msg === 'public faults not reloaded')).toMatchObject({ object: 'gone', kind: 'unknown_node' });
    s.c.stop();
  });
});

describe('DeviceFaultsController: delayed public-fault deletes', () => {
  it('a `once` fault is deleted at the first 250 ms poll point 5 s after it arrived, from the delete key alone, and statistic-fault-info is asked for again', async () => {
    const s = setup(); // started on a whole second: the poll points are .000, .250, ...
    await s.clock.run(100);
    const now = s.clock.now(); // the delete is due 5 s later (whole seconds, as ClusterD): at .100, polled at .250
    const payload = publicFaultPayload({ code: '220001001', faultId: 'pf-00000001', assertion: 'once', targets: [{ node: 'n1', npus: [1] }] }, now);
    s.publicFaults.put({ metadata: { name: 'pf', namespace: 'default', labels: { ...PUBLIC_FAULT_LABELS } }, data: { [PUBLIC_FAULT_DATA_KEY]: encodePublicFault(payload) } });
    expect([...s.c.store.publicFaultStatistics().keys()]).toEqual(['n1']);
    expect(s.messages()).toBe(1);
    s.changes.length = 0;
    await s.clock.run(5_149);
    expect([...s.c.store.publicFaultStatistics().keys()]).toEqual(['n1']);
    await s.clock.run(1);
    expect([...s.c.store.publicFaultStatistics().keys()]).toEqual([]);
    expect(s.changes).toEqual([['n1']]);
    expect(s.messages()).toBe(2);
    expect(s.clock.pending).toBe(0); // nothing left to delete: no key armed
    s.c.stop();
  });
});
