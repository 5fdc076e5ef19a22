import type { KubeClient, KubeObject } from '../runtime/kube-client.ts';
import type { PodGroup } from '../runtime/kube-objects.ts';
import type { ReconcileContext } from '../runtime/reconciler.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { FakeStore, podGroupOf } from '../test/support/job-fakes.ts';
import { recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { JOB_IDENTITY_REFUSED_REASON, jobIdentityReconciler } from './job-identity.reconciler.ts';

const T0 = Date.UTC(2026, 0, 1);
const created = (pg: KubeObject, atMs: number): PodGroup => ({ ...pg, metadata: { ...pg.metadata, creationTimestamp: new Date(atMs).toISOString() } }) as PodGroup;

function setup() {
  const groups = new FakeStore<PodGroup>();
  const vcJobs = new FakeStore<KubeObject>();
  vcJobs.put({ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { namespace: 'team-a', name: 'llama', uid: 'u1' } });
  const events: KubeObject[] = [];
  const client = { create: async (_path: string, body: KubeObject) => { events.push(body); return body; } } as unknown as KubeClient;
  const metrics = new Metrics({ processMetrics: false });
  const lines: LogLine[] = [];
  let now = T0;
  const r = jobIdentityReconciler({ podGroup: (k) => groups.get(k), jobs: { vcJobs, ascendJobs: new FakeStore<KubeObject>() }, client, metrics, dryRun: false, graceMs: 10_000 });
  const ctx = (): ReconcileContext => ({ log: recordingLogger(lines), signal: new AbortController().signal, now: () => now });
  const refused = async (): Promise<Record<string, number>> => Object.fromEntries((await metrics.jobIdentityRefused.get()).values.map((v) => [String(v.labels.reason), v.value]));
  return { groups, vcJobs, events, lines, refused, run: (key: string) => r.reconcile(key, ctx()), at: (ms: number) => { now = T0 + ms; } };
}

describe('job identity reconciler', () => {
  it('reports a PodGroup claiming another namespace\'s job once it is older than the grace: a log line, the metric and an Event', async () => {
    const s = setup();
    s.groups.put(created(podGroupOf('tenant', 'llama', 'u1'), T0));
    expect(await s.run('tenant/llama-u1')).toEqual({ requeueAfterMs: 10_000 });
    expect(s.events).toEqual([]);
    s.at(10_000);
    expect(await s.run('tenant/llama-u1')).toEqual({});
    await s.run('tenant/llama-u1');
    expect(await s.refused()).toEqual({ owner_other_namespace: 1 });
    expect(s.lines.filter((l) => l.msg.startsWith('job identity refused')).map((l) => l.detail)).toEqual(['tenant/llama-u1 claims Volcano Job tenant/llama uid u1, but that UID is team-a/llama\'s']);
    expect(s.events.map((e) => (e as { reason?: string }).reason)).toEqual([JOB_IDENTITY_REFUSED_REASON]);
  });

  it('says nothing about a verified job, nor once its owner went first (the job is being deleted)', async () => {
    const s = setup();
    s.groups.put(created(podGroupOf('team-a', 'llama', 'u1'), T0));
    s.at(60_000);
    await s.run('team-a/llama-u1');
    s.vcJobs.store.clear();
    await s.run('team-a/llama-u1');
    expect(await s.refused()).toEqual({});
    expect(s.events).toEqual([]);
  });
});
