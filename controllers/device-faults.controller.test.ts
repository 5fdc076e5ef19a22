import { BehaviorSubject } from 'rxjs';
import { Metrics } from '../telemetry/metrics.ts';
import type { KubeObject } from '../runtime/kube-client.ts';
import { encodePublicFault, PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS } from '../schemas/public-fault/public-fault.ts';
import { publicFaultPayload } from '../tools/simulator/public-fault.ts';
import { ManualClock, recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { FakeSource } from '../test/support/fault-filters-fakes.ts';
import type { Sources } from './sources/sources.ts';
import { DeviceFaultsController } from './device-faults.controller.ts';

/** An informer stand-in whose first list is done. */
class SyncedSource<T extends KubeObject> extends FakeSource<T> {
  readonly synced$ = new BehaviorSubject(true);
  health(): { synced: boolean } { return { synced: true }; }
}

function setup() {
  const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5)); // the public-fault format wants a time after 2025
  const lines: LogLine[] = [];
  const publicFaults = new SyncedSource<KubeObject>();
  const sources = { deviceInfo: new SyncedSource(), nodeInfo: new SyncedSource(), publicFaults, nodes: new SyncedSource() } as unknown as Sources;
  const changes: string[][] = [];
  let messages = 0;
  const c = new DeviceFaultsController({
    sources, log: recordingLogger(lines), metrics: new Metrics({ processMetrics: false }), clock, now: () => clock.now(),
    onChange: (ch) => changes.push([...ch.nodes]), onPublicFaultMessage: () => { messages++; },
  });
  c.start();
  return { c, clock, publicFaults, changes, messages: () => messages };
}

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
