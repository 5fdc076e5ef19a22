import { jobStatisticReconciler } from './job-statistic.reconciler.ts';
import { fakeConfigMaps } from '../test/support/fault-policy-test-kit.ts';
import type { ReconcileContext } from '../runtime/reconciler.ts';
import { silentLogger } from '../telemetry/logger.ts';
import type { TimedStatEvent } from '../policy/jobs/job-statistic.ts';

const ctx = (now: number): ReconcileContext => ({ log: silentLogger, signal: new AbortController().signal, now: () => now });
const KEY = 'mindx-dl/current-job-statistic';

describe('current-job-statistic reconciler (ClusterD JobOutput / LoadConfigMapToCache)', () => {
  it('nothing written while nothing moved (no ConfigMap on an idle cluster); a 3 s tick', async () => {
    const c = fakeConfigMaps();
    const r = jobStatisticReconciler({ namespace: 'mindx-dl', actual: () => c.objects.get(KEY), writer: c.writer, drain: () => [], podGroupJobs: () => new Set(), onInvalid: () => {}, onRefused: () => {}, limits: true, onOmitted: () => {} });
    expect(await r.reconcile('k', ctx(0))).toEqual({ requeueAfterMs: 3000 });
    expect(c.writes).toEqual([]);
  });

  it('loads the last process\'s entries of jobs with a PodGroup, rewrites them (no labels), then writes again only when an event moved the statistic', async () => {
    const c = fakeConfigMaps();
    c.objects.set(KEY, { metadata: { name: 'current-job-statistic', namespace: 'mindx-dl', labels: { someone: 'else' }, resourceVersion: '1' }, data: { data: '[{"id":"u1","podFirstRunTime":10},{"id":"gone"}]', totalJob: '2' } });
    let inbox: TimedStatEvent[] = [];
    const r = jobStatisticReconciler({
      namespace: 'mindx-dl', actual: () => c.objects.get(KEY), writer: c.writer, drain: () => inbox.splice(0),
      podGroupJobs: () => new Set(['u1']), onInvalid: () => {}, onRefused: () => {}, limits: true, onOmitted: () => {},
    });
    inbox = [{ event: { kind: 'job_add', key: 'u2', name: 'b', namespace: 'ns', customId: '' }, atSec: 5 }];
    await r.reconcile('k', ctx(0));
    expect(c.objects.get(KEY)!.data).toEqual({ data: '[{"id":"u1","podFirstRunTime":10},{"id":"u2"}]', totalJob: '2' });
    expect(c.objects.get(KEY)!.metadata?.labels).toBeUndefined();
    await r.reconcile('k', ctx(3000));
    expect(c.writes.map((w) => w.verb)).toEqual(['update']);
    inbox = [{ event: { kind: 'job_delete', key: 'u2' }, atSec: 6 }];
    await r.reconcile('k', ctx(6000));
    expect(c.objects.get(KEY)!.data).toEqual({ data: '[{"id":"u1","podFirstRunTime":10}]', totalJob: '1' });
  });

  it('an unreadable ConfigMap is not loaded (metric), and stays until the statistic moves', async () => {
    const c = fakeConfigMaps();
    c.objects.set(KEY, { metadata: { name: 'current-job-statistic', namespace: 'mindx-dl', resourceVersion: '1' }, data: { data: '[{"id":"u1","cardNum":"8"}]', totalJob: '1' } });
    const invalid: string[] = [];
    let inbox: TimedStatEvent[] = [];
    const r = jobStatisticReconciler({ namespace: 'mindx-dl', actual: () => c.objects.get(KEY), writer: c.writer, drain: () => inbox.splice(0), podGroupJobs: () => new Set(['u1']), onInvalid: (x) => invalid.push(x), onRefused: () => {}, limits: true, onOmitted: () => {} });
    await r.reconcile('k', ctx(0));
    expect(invalid).toEqual(['type']);
    expect(c.writes).toEqual([]);
    inbox = [{ event: { kind: 'job_add', key: 'u3', name: 'c', namespace: 'ns', customId: 'x' }, atSec: 1 }];
    await r.reconcile('k', ctx(3000));
    expect(c.objects.get(KEY)!.data).toEqual({ data: '[{"id":"u3","customID":"x"}]', totalJob: '1' });
  });

  it('past a ConfigMap\'s 1 MiB: entries left out of the write (stopped jobs first, reported) and the rest still written; without the limits everything is sent, as ClusterD', async () => {
    const big = 'i'.repeat(250);
    const adds = (n: number, from = 0): TimedStatEvent[] => Array.from({ length: n }, (_, i) => ({ event: { kind: 'job_add', key: `u${from + i}`, name: `j${from + i}`, namespace: 'ns', customId: big }, atSec: 1 }));
    const c = fakeConfigMaps();
    const omitted: string[][] = [];
    let inbox = adds(4_000);
    const r = jobStatisticReconciler({
      namespace: 'mindx-dl', actual: () => c.objects.get(KEY), writer: c.writer, drain: () => inbox.splice(0),
      podGroupJobs: () => new Set(), onInvalid: () => {}, onRefused: () => {}, limits: true, onOmitted: (ids) => omitted.push([...ids]),
    });
    await r.reconcile('k', ctx(0));
    const data = c.objects.get(KEY)!.data!;
    const bytes = Object.entries(data).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(bytes).toBeLessThanOrEqual(1024 * 1024);
    const written = JSON.parse(data.data!) as Array<{ id: string }>;
    expect(written.length + omitted[0]!.length).toBe(4_000);
    expect(data.totalJob).toBe(String(written.length));
    // Nothing stopped: the earliest added go first; a new job is written.
    expect(omitted[0]![0]).toBe('u0');
    inbox = [{ event: { kind: 'job_delete', key: 'u3999' }, atSec: 2 }, ...adds(1, 5_000)];
    await r.reconcile('k', ctx(3000));
    expect((JSON.parse(c.objects.get(KEY)!.data!.data!) as Array<{ id: string }>).some((e) => e.id === 'u5000')).toBe(true);

    const sent: Array<Record<string, string>> = [];
    const clusterd = jobStatisticReconciler({
      namespace: 'mindx-dl', actual: () => undefined, writer: { ensure: async (_k: string, t: { data: Record<string, string> }) => { sent.push(t.data); return { written: true }; } } as never,
      drain: () => adds(4_000), podGroupJobs: () => new Set(), onInvalid: () => {}, onRefused: () => {}, limits: false, onOmitted: () => { throw new Error('not with the limits off'); },
    });
    await clusterd.reconcile('k', ctx(0));
    expect(sent[0]!.totalJob).toBe('4000');
  });
});
