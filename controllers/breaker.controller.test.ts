/**
 * The breaker's state ConfigMap is written for real changes only (no write per stamp in an idle cluster): stamps ageing out of
 * the sliding window are no change (every reader prunes on load), so an idle cluster sees no breaker
 * writes; the next admission writes the state, without the aged stamps.
 */
import { Subject } from 'rxjs';
import { Metrics } from '../telemetry/metrics.ts';
import type { KubeClient, KubeObject } from '../runtime/kube-client.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import { fakeConfigMaps, ManualClock, recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { FakeSource } from '../test/support/fault-filters-fakes.ts';
import { BREAKER_CM_NAME, BREAKER_NAMESPACE, parseBreakerState } from '../schemas/breaker-state/breaker-state.ts';
import type { Sources } from './sources/sources.ts';
import { BreakerController } from './breaker.controller.ts';

const S = 1000;
const KEY = `${BREAKER_NAMESPACE}/${BREAKER_CM_NAME}`;

function setup(limits = { jobs: 100, autoResetMs: 0 }) {
  const clock = new ManualClock();
  const cms = new FakeSource<ConfigMap>();
  const sources = { mindxDlConfigMaps: cms, nodes: new FakeSource<KubeObject>() } as unknown as Sources;
  const cluster = fakeConfigMaps();
  const c = new BreakerController({
    sources, writer: cluster.writer, client: {} as KubeClient, domainLabel: '',
    config: { windowMs: 60 * S, domain: { chips: 0, nodes: 0, jobs: limits.jobs }, cluster: { chips: 0, nodes: 0, jobs: limits.jobs }, autoResetMs: limits.autoResetMs },
    superPodOf: () => undefined, faultsOf: () => [], onReset: () => undefined,
    log: recordingLogger([]), metrics: new Metrics({ processMetrics: false }), clock,
  });
  c.start(new Subject<readonly string[]>());
  c.startActing();
  /** The informer catches up with what is on the server (as the watch echoes our own writes). */
  const echo = (): void => { const cm = cluster.objects.get(KEY); if (cm !== undefined) cms.put(cm); };
  const stored = () => {
    const p = parseBreakerState(cluster.objects.get(KEY)?.data?.state);
    if (!p.ok) throw new Error(p.reason);
    return p.value;
  };
  return { c, clock, cluster, echo, stored };
}

describe('BreakerController: persisted state', () => {
  it('writes each admission, nothing when its stamps age out of the window (no requeue for it), and the next admission without the aged stamps', async () => {
    const s = setup();
    await s.c.loop.idle();
    expect(s.cluster.writes).toEqual([]); // nothing counted: no object
    expect(s.c.admit('jobs', 'uid-1', ['n1']).allowed).toBe(true);
    await s.c.loop.idle();
    await s.clock.run(10 * S);
    expect(s.c.admit('jobs', 'uid-2', ['n1']).allowed).toBe(true);
    await s.c.loop.idle();
    s.echo();
    await s.c.loop.idle();
    expect(s.cluster.writes.map((w) => w.verb)).toEqual(['create', 'update']);
    expect(s.stored().scopes.cluster?.window.jobs.map((w) => w.key)).toEqual(['uid-1', 'uid-2']);

    // Both stamps leave the 60 s window; passes triggered meanwhile (the watch) write nothing.
    await s.clock.run(120 * S);
    await s.c.loop.idle();
    s.echo();
    await s.c.loop.idle();
    expect(s.cluster.writes.length).toBe(2);
    expect(s.clock.pending).toBe(0); // no timer armed for the window's expiry
    expect(s.c.admit('jobs', 'uid-2', ['n1']).allowed).toBe(true); // aged out: counted afresh

    await s.c.loop.idle();
    expect(s.cluster.writes.map((w) => w.verb)).toEqual(['create', 'update', 'update']);
    expect(s.stored().scopes.cluster?.window.jobs.map((w) => w.key)).toEqual(['uid-2']);
    expect(s.stored().windowMs).toBe(60 * S); // readers prune by it
    await s.c.stop();
  });

  it('a persisted state from before windowSeconds (or another window) is rewritten once with it, then left alone', async () => {
    const s = setup();
    expect(s.c.admit('jobs', 'uid-1', ['n1']).allowed).toBe(true);
    await s.c.loop.idle();
    const cm = s.cluster.objects.get(KEY)!;
    const old = JSON.parse(cm.data!.state!) as Record<string, unknown>;
    delete old.windowSeconds;
    await s.cluster.writer.ensure('test', { namespace: BREAKER_NAMESPACE, name: BREAKER_CM_NAME, data: { state: JSON.stringify(old) } }, cm);
    s.echo();
    await s.c.loop.idle();
    expect(s.stored().windowMs).toBe(60 * S);
    const n = s.cluster.writes.length;
    s.echo();
    await s.c.loop.idle();
    expect(s.cluster.writes.length).toBe(n);
    await s.c.stop();
  });

  it('keeps the requeue for the auto-reset: a tripped scope is reset and written when its time comes, with no other event', async () => {
    const s = setup({ jobs: 1, autoResetMs: 30 * S });
    expect(s.c.admit('jobs', 'uid-1', ['n1']).allowed).toBe(true);
    expect(s.c.admit('jobs', 'uid-2', ['n1']).allowed).toBe(false); // trips cluster
    await s.c.loop.idle();
    await s.clock.run(2 * S); // the persist window's trailing pass
    await s.c.loop.idle();
    expect(s.stored().scopes.cluster?.tripped).toBe(true);
    await s.clock.run(28 * S);
    await s.c.loop.idle();
    expect(s.stored().scopes.cluster).toMatchObject({ tripped: false, reason: 'auto-reset after 30 s' });
    await s.c.stop();
  });
});

describe('BreakerController: what chips count, from which source', () => {
  it('counts chips of real nodes only, each with the writer of its fault (the ConfigMap of a public fault); the metric by source kind', async () => {
    const clock = new ManualClock();
    const nodes = new FakeSource<KubeObject>();
    nodes.store.set('n1', { metadata: { name: 'n1' } });
    const sources = { mindxDlConfigMaps: new FakeSource<ConfigMap>(), nodes } as unknown as Sources;
    const cluster = fakeConfigMaps();
    const metrics = new Metrics({ processMetrics: false });
    const lines: LogLine[] = [];
    const chip = (node: string, i: number, r: Partial<FaultRecord>): FaultRecord => ({ node, device: `Ascend910-${i}`, source: 'npu', code: '80E18402', level: 'SeparateNPU', reportedLevel: 'SeparateNPU', firstSeenMs: 0, ...r });
    const faults = new Map<string, FaultRecord[]>();
    const c = new BreakerController({
      sources, writer: cluster.writer, client: {} as KubeClient, domainLabel: '',
      config: { windowMs: 60 * S, domain: { chips: 0, nodes: 0, jobs: 0 }, cluster: { chips: 10, nodes: 0, jobs: 0 }, autoResetMs: 0 },
      superPodOf: () => undefined, faultsOf: (n) => faults.get(n) ?? [], onReset: () => undefined,
      log: recordingLogger(lines), metrics, clock,
    });
    const changed = new Subject<readonly string[]>();
    c.start(changed);
    c.startActing();
    // After the start (chips already out then are the baseline, not counted).
    faults.set('n1', [chip('n1', 0, {}), chip('n1', 1, { source: 'public', code: '220001001', origin: 'mindx-dl/pf' })]);
    faults.set('ghost', Array.from({ length: 32 }, (_, i) => chip('ghost', i, { source: 'public', code: '220001001', origin: 'tenant/pf' })));
    changed.next(['ghost', 'n1']);
    changed.next(['ghost']);
    await clock.run(2 * S);
    await c.loop.idle();
    const p = parseBreakerState(cluster.objects.get(KEY)?.data?.state);
    if (!p.ok) throw new Error(p.reason);
    expect(p.value.scopes.cluster!.window.chips.map((w) => [w.key, w.source])).toEqual([['n1/Ascend910-0', 'device-info'], ['n1/Ascend910-1', 'public-fault mindx-dl/pf']]);
    expect(JSON.parse(cluster.objects.get(KEY)!.data!.state!).scopes[0].sources.chips).toEqual({ 'device-info': 1, 'public-fault mindx-dl/pf': 1 });
    expect((await metrics.breakerCounted.get()).values.map((v) => [v.labels, v.value])).toEqual([[{ kind: 'chips', source: 'device-info' }, 1], [{ kind: 'chips', source: 'public-fault' }, 1]]);
    expect(lines.filter((l) => l.msg.startsWith('breaker: chips of a node with no Node object'))).toEqual([expect.objectContaining({ node: 'ghost', sources: 'public-fault tenant/pf' })]);
    await c.stop();
  });
});
