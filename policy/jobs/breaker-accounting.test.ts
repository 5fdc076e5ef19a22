import { admit, DEFAULT_BREAKER_CONFIG, CLUSTER_SCOPE } from './breaker.ts';
import { bySource, restartCountKey, sourceKind, sourceOf, sourcesOf, type CountedCause } from './breaker-accounting.ts';
import { decisionIdOf } from './job-decision-id.ts';
import { EMPTY_BREAKER_STATE, type BreakerState } from '../../schemas/breaker-state/breaker-state.ts';

const S = 1000;
const chip: CountedCause = { origin: 'npu', node: 'n1', device: 'Ascend910-3', code: '80E18402' };

describe('breaker accounting: a job restarted over and over', () => {
  it('one fault on a chip the job is placed on again, 250 generations in 10 min: counted once (the generation key counted each and tripped the cluster at 201)', () => {
    const cfg = DEFAULT_BREAKER_CONFIG; // cluster: 200 jobs per 10 min
    let perFault: BreakerState = EMPTY_BREAKER_STATE;
    let perGeneration: BreakerState = EMPTY_BREAKER_STATE;
    let heldBefore = 0;
    for (let g = 1; g <= 250; g++) {
      const t = g * 2 * S;
      const a = admit(perFault, { kind: 'jobs', key: restartCountKey('uid-1', [chip]), domains: [], source: 'device-info' }, t, cfg);
      expect(a.allowed).toBe(true);
      perFault = a.state;
      // What the reconciler counted before: `<uid>/g<generation>` (the decision id's restart part).
      const old = admit(perGeneration, { kind: 'jobs', key: decisionIdOf('uid-1', g, 'start', 'fp').split('/').slice(0, 2).join('/'), domains: [] }, t, cfg);
      if (!old.allowed) heldBefore++;
      perGeneration = old.state;
    }
    expect(perFault.scopes[CLUSTER_SCOPE]!.window.jobs).toEqual([{ key: restartCountKey('uid-1', [chip]), atMs: 2 * S, source: 'device-info' }]);
    expect(perFault.scopes[CLUSTER_SCOPE]!.tripped).toBe(false);
    expect(perGeneration.scopes[CLUSTER_SCOPE]!.tripped).toBe(true);
    expect(heldBefore).toBe(50);
  });

  it('the key is per job and fault set: another fault or another job counts again; a failed pod by its reason, not its name or node', () => {
    const k = restartCountKey('uid-1', [chip]);
    expect(restartCountKey('uid-1', [chip, chip])).toBe(k);
    expect(restartCountKey('uid-1', [{ ...chip, device: 'Ascend910-4' }])).not.toBe(k);
    expect(restartCountKey('uid-2', [chip])).not.toBe(k);
    expect(restartCountKey('uid-1', [{ origin: 'pod', node: 'n1', code: 'PodFailed' }])).toBe(restartCountKey('uid-1', [{ origin: 'pod', node: 'n7', code: 'PodFailed' }]));
    expect(k).toMatch(/^uid-1\/f[0-9a-f]{16}$/);
  });
});

describe('breaker accounting: sources', () => {
  it('names a public fault by its ConfigMap or gRPC sender, other faults by their writer', () => {
    expect(sourceOf({ source: 'public', origin: 'tenant-a/pf-flood' })).toBe('public-fault tenant-a/pf-flood');
    expect(sourceOf({ source: 'public' })).toBe('public-fault unknown');
    expect(sourceOf({ source: 'npu' })).toBe('device-info');
    expect(sourceOf({ source: 'network' })).toBe('device-info');
    expect(sourceOf({ source: 'node' })).toBe('node-info');
    expect(sourceOf({ source: 'pod' })).toBe('pod');
    expect(sourcesOf([{ source: 'public', origin: 'mindx-dl/pf' }, { source: 'npu' }, { source: 'npu' }])).toBe('device-info, public-fault mindx-dl/pf');
    expect(sourceKind('device-info, public-fault mindx-dl/pf')).toBe('device-info+public-fault');
    expect(sourceKind('')).toBe('unknown');
    expect(bySource([{ source: 'a' }, { source: 'b' }, { source: 'b' }, {}])).toBe('b: 2, a: 1, unknown: 1');
  });

  it('a trip says how many of the counted came from which source, and each stamp keeps its source', () => {
    const cfg = { ...DEFAULT_BREAKER_CONFIG, cluster: { chips: 3, nodes: 0, jobs: 0 } };
    let s = EMPTY_BREAKER_STATE;
    const put = (key: string, source: string) => { const r = admit(s, { kind: 'chips', key, domains: [], source }, 0, cfg, false); s = r.state; return r; };
    put('n1/Ascend910-0', 'public-fault t/pf');
    put('n1/Ascend910-1', 'public-fault t/pf');
    put('n2/Ascend910-0', 'device-info');
    const r = put('n2/Ascend910-1', 'public-fault t/pf');
    expect(r.tripped.map((t) => t.reason)).toEqual(['4 chips isolated within 600 s > 3 (last: n2/Ascend910-1 from public-fault t/pf); by source: public-fault t/pf: 3, device-info: 1']);
    expect(s.scopes[CLUSTER_SCOPE]!.window.chips.map((w) => w.source)).toEqual(['public-fault t/pf', 'public-fault t/pf', 'device-info', 'public-fault t/pf']);
  });
});
