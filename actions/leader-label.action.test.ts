import { ApiError, type KubeClient, type KubeObject } from '../runtime/kube-client.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { LEADER_LABEL, LeaderLabeler } from './leader-label.action.ts';
import { realClock } from '../runtime/clock.ts';

const NS = 'mindx-dl';
const RELEASE = { 'app.kubernetes.io/name': 'clusterd-ts', 'app.kubernetes.io/instance': 'cts' };

/** Pods in one namespace with resourceVersions; merge patches honour metadata.resourceVersion. */
class FakePods {
  readonly pods = new Map<string, KubeObject>();
  private rv = 1;
  /** Next n requests fail with no answer; `beforePatch` runs before a patch is applied (races). */
  failNext = 0;
  beforePatch: ((name: string) => void) | undefined;
  patches: Array<{ name: string; value: string | null }> = [];

  add(name: string, labels: Record<string, string>): void {
    this.pods.set(name, { metadata: { name, namespace: NS, resourceVersion: String(this.rv++), labels: { ...labels } } });
  }

  touch(name: string, labels: Record<string, string | null>): void {
    const p = this.pods.get(name)!;
    const next: Record<string, string> = { ...p.metadata!.labels };
    for (const [k, v] of Object.entries(labels)) if (v === null) delete next[k]; else next[k] = v;
    p.metadata = { ...p.metadata, labels: next, resourceVersion: String(this.rv++) };
  }

  labelled(): string[] { return [...this.pods.values()].filter((p) => p.metadata?.labels?.[LEADER_LABEL] === 'true').map((p) => p.metadata!.name!).sort(); }

  private maybeFail(method: string, path: string): void {
    if (this.failNext > 0) { this.failNext--; throw new Error(`connect ECONNREFUSED: ${method} ${path}`); }
  }

  client(): KubeClient {
    const name = (path: string): string => path.split('/').pop()!;
    const fake = {
      getOrUndefined: async (path: string) => { this.maybeFail('GET', path); const p = this.pods.get(name(path)); return p === undefined ? undefined : structuredClone(p); },
      list: async (path: string, q: { labelSelector?: string } = {}) => {
        this.maybeFail('LIST', path);
        const want = (q.labelSelector ?? '').split(',').filter(Boolean).map((kv) => kv.split('='));
        return { items: [...this.pods.values()].filter((p) => want.every(([k, v]) => p.metadata?.labels?.[k!] === v)).map((p) => structuredClone(p)) };
      },
      patch: async (path: string, body: { metadata: { resourceVersion?: string; labels: Record<string, string | null> } }) => {
        this.maybeFail('PATCH', path);
        const n = name(path);
        this.beforePatch?.(n);
        const p = this.pods.get(n);
        if (p === undefined) throw new ApiError('PATCH', path, 404, { reason: 'NotFound' });
        if (body.metadata.resourceVersion !== undefined && body.metadata.resourceVersion !== p.metadata!.resourceVersion) throw new ApiError('PATCH', path, 409, { reason: 'Conflict' });
        this.touch(n, body.metadata.labels);
        this.patches.push({ name: n, value: body.metadata.labels[LEADER_LABEL] ?? null });
        return structuredClone(this.pods.get(n)!);
      },
    };
    return fake as unknown as KubeClient;
  }
}

async function settle(l: LeaderLabeler, until: () => boolean, ms = 2_000): Promise<void> {
  const end = Date.now() + ms;
  while (!until()) {
    if (Date.now() > end) throw new Error('not settled');
    await new Promise((r) => setTimeout(r, 5));
  }
  void l;
}

async function changes(m: Metrics): Promise<Record<string, number>> {
  return Object.fromEntries((await m.leaderLabelChanges.get()).values.map((v) => [`${v.labels.change}/${v.labels.result}`, v.value]));
}

function setup(self = 'a'): { pods: FakePods; metrics: Metrics; labeler: LeaderLabeler } {
  const pods = new FakePods();
  const metrics = new Metrics({ processMetrics: false });
  const labeler = new LeaderLabeler({ client: pods.client(), pod: { name: self, namespace: NS }, log: silentLogger, metrics, resyncMs: 60_000, retryMinMs: 10, retryMaxMs: 40, clock: realClock });
  return { pods, metrics, labeler };
}

describe('LeaderLabeler', () => {
  it('claim labels the own pod and clears the release\'s other labelled pods, not other releases\'', async () => {
    const { pods, metrics, labeler } = setup();
    pods.add('a', RELEASE);
    pods.add('old', { ...RELEASE, [LEADER_LABEL]: 'true' });
    pods.add('other-release', { ...RELEASE, 'app.kubernetes.io/instance': 'someone-else', [LEADER_LABEL]: 'true' });
    labeler.claim();
    await settle(labeler, () => pods.labelled().join() === 'a,other-release');
    expect(labeler.ownLabel).toBe('set');
    // Own label first, so the Service is never empty on our account.
    expect(pods.patches).toEqual([{ name: 'a', value: 'true' }, { name: 'old', value: null }]);
    expect(await changes(metrics)).toEqual({ 'set/success': 1, 'clear/success': 1 });
    await labeler.stop();
  });

  it('release removes the own label; a pod already without it is not written', async () => {
    const { pods, metrics, labeler } = setup();
    pods.add('a', { ...RELEASE, [LEADER_LABEL]: 'true' });
    labeler.release();
    await settle(labeler, () => labeler.ownLabel === 'absent');
    expect(pods.labelled()).toEqual([]);
    labeler.release();
    await labeler.stop();
    expect(pods.patches).toEqual([{ name: 'a', value: null }]);
    expect(await changes(metrics)).toEqual({ 'remove/success': 1 });
  });

  it('a write based on a stale read answers 409, is counted, and the next pass converges', async () => {
    const { pods, metrics, labeler } = setup();
    pods.add('a', RELEASE);
    let raced = false;
    // Someone (the kubelet, a user) changes the pod between our read and our patch, once.
    pods.beforePatch = (n) => { if (!raced && n === 'a') { raced = true; pods.touch('a', { unrelated: 'x' }); } };
    labeler.claim();
    await settle(labeler, () => pods.labelled().join() === 'a');
    expect(pods.pods.get('a')!.metadata!.labels).toEqual({ ...RELEASE, unrelated: 'x', [LEADER_LABEL]: 'true' });
    expect(await changes(metrics)).toEqual({ 'set/conflict': 1, 'set/success': 1 });
    await labeler.stop();
  });

  it('apiserver errors are retried with backoff and never thrown', async () => {
    const { pods, metrics, labeler } = setup();
    pods.add('a', RELEASE);
    pods.failNext = 3;
    labeler.claim();
    await settle(labeler, () => pods.labelled().join() === 'a');
    expect(pods.failNext).toBe(0);
    expect(await changes(metrics)).toEqual({ 'set/success': 1 });
    await labeler.stop();
  });

  it('standing down during a claim ends with the own pod unlabelled', async () => {
    const { pods, labeler } = setup();
    pods.add('a', RELEASE);
    labeler.claim();
    labeler.release();
    await labeler.stop();
    expect(pods.labelled()).toEqual([]);
    expect(labeler.ownLabel).toBe('absent');
  });

  it('re-labels on resync while leading (label removed by hand)', async () => {
    const pods = new FakePods();
    const metrics = new Metrics({ processMetrics: false });
    const labeler = new LeaderLabeler({ client: pods.client(), pod: { name: 'a', namespace: NS }, log: silentLogger, metrics, resyncMs: 20, clock: realClock });
    pods.add('a', RELEASE);
    labeler.claim();
    await settle(labeler, () => pods.labelled().join() === 'a');
    pods.touch('a', { [LEADER_LABEL]: null });
    await settle(labeler, () => pods.labelled().join() === 'a');
    expect(await changes(metrics)).toEqual({ 'set/success': 2 });
    await labeler.stop();
  });

  it('a missing own pod is reported, not retried in a loop, and nothing else is touched', async () => {
    const { pods, labeler } = setup('ghost');
    pods.add('old', { ...RELEASE, [LEADER_LABEL]: 'true' });
    labeler.claim();
    await labeler.stop();
    expect(labeler.ownLabel).toBe('unknown');
    expect(pods.labelled()).toEqual(['old']);
  });
});
