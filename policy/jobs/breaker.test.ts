import { admit, autoReset, prune, reset, DEFAULT_BREAKER_CONFIG, type BreakerConfig } from './breaker.ts';
import { EMPTY_BREAKER_STATE, encodeBreakerState, parseBreakerState, parseResetRequest, type BreakerState } from '../../schemas/breaker-state/breaker-state.ts';

const S = 1000;
const cfg: BreakerConfig = { windowMs: 60 * S, domain: { chips: 4, nodes: 2, jobs: 3 }, cluster: { chips: 100, nodes: 5, jobs: 100 }, autoResetMs: 0 };

/** Admits nodes n0..n(k-1) of domain `d` at times t0, t0+1 ms, ... */
function isolate(state: BreakerState, d: string, names: readonly string[], t0: number, c = cfg) {
  let s = state;
  const verdicts: boolean[] = [];
  names.forEach((n, i) => { const r = admit(s, { kind: 'nodes', key: n, domains: [d] }, t0 + i, c); s = r.state; verdicts.push(r.allowed); });
  return { state: s, verdicts };
}

describe('breaker policy', () => {
  it('a switch storm trips its domain at the threshold + 1st isolation and holds every later one there, not elsewhere', () => {
    const r = isolate(EMPTY_BREAKER_STATE, 'sp1', ['a', 'b', 'c', 'd'], 0);
    expect(r.verdicts).toEqual([true, true, false, false]);
    const sp1 = r.state.scopes.sp1!;
    expect(sp1).toMatchObject({ tripped: true, trippedAtMs: 2, held: 2 });
    expect(sp1.reason).toMatch(/^3 nodes isolated within 60 s > 2 \(last: c\)/);
    expect(sp1.window.nodes.map((w) => w.key)).toEqual(['a', 'b']); // held ones are not counted
    expect(r.state.scopes.cluster!.tripped).toBe(false);
    // Another domain is not affected; a job rescheduled with faults in sp1 is held.
    expect(admit(r.state, { kind: 'nodes', key: 'x', domains: ['sp2'] }, 10, cfg).allowed).toBe(true);
    const job = admit(r.state, { kind: 'jobs', key: 'uid/g1', domains: ['sp1', 'sp2'] }, 10, cfg);
    expect(job.allowed).toBe(false);
    expect(job.heldBy.map((h) => h.scope)).toEqual(['sp1']);
  });

  it('the cluster scope trips on isolations spread over domains', () => {
    let s = EMPTY_BREAKER_STATE;
    const allowed = ['d1', 'd2', 'd3', 'd4', 'd5', 'd6'].map((d, i) => { const r = admit(s, { kind: 'nodes', key: `n${i}`, domains: [d] }, i, cfg); s = r.state; return r.allowed; });
    expect(allowed).toEqual([true, true, true, true, true, false]);
    expect(s.scopes.cluster!.tripped).toBe(true);
    expect(Object.values(s.scopes).filter((x) => x.tripped).map((x) => x.scope)).toEqual(['cluster']);
  });

  it('isolations spaced wider than the window never trip (sliding window)', () => {
    let s = EMPTY_BREAKER_STATE;
    for (let i = 0; i < 20; i++) {
      const r = admit(s, { kind: 'nodes', key: `n${i}`, domains: ['sp1'] }, i * 31 * S, cfg);
      expect(r.allowed).toBe(true);
      s = r.state;
    }
    expect(s.scopes.sp1!.window.nodes.length).toBeLessThanOrEqual(2);
  });

  it('the same key counts once (retries, the force step of an admitted restart), even after the scope tripped', () => {
    let s = admit(EMPTY_BREAKER_STATE, { kind: 'jobs', key: 'u/g1', domains: ['sp1'] }, 0, cfg).state;
    for (let i = 0; i < 5; i++) s = admit(s, { kind: 'jobs', key: 'u/g1', domains: ['sp1'] }, i, cfg).state;
    expect(s.scopes.sp1!.window.jobs).toHaveLength(1);
    s = isolate(s, 'sp1', ['a', 'b', 'c'], 10).state;
    expect(s.scopes.sp1!.tripped).toBe(true);
    expect(admit(s, { kind: 'jobs', key: 'u/g1', domains: ['sp1'] }, 20, cfg).allowed).toBe(true);
    expect(admit(s, { kind: 'jobs', key: 'u/g2', domains: ['sp1'] }, 20, cfg).allowed).toBe(false);
  });

  it('chips are counted and trip, but are never held', () => {
    let s = EMPTY_BREAKER_STATE;
    const out = [0, 1, 2, 3, 4, 5].map((i) => { const r = admit(s, { kind: 'chips', key: `n/${i}`, domains: ['sp1'] }, i, cfg, false); s = r.state; return r; });
    expect(out.every((r) => r.allowed)).toBe(true);
    expect(out.map((r) => r.tripped.length)).toEqual([0, 0, 0, 0, 1, 0]);
    expect(s.scopes.sp1!.tripped).toBe(true);
    expect(admit(s, { kind: 'nodes', key: 'z', domains: ['sp1'] }, 9, cfg).allowed).toBe(false);
  });

  it('reset: only a request newer than the trip resets; windows are cleared so acting resumes', () => {
    const tripped = isolate(EMPTY_BREAKER_STATE, 'sp1', ['a', 'b', 'c'], 1_000).state;
    const stale = reset(tripped, { scope: 'sp1', by: 'alice', atMs: 500 });
    expect(stale).toMatchObject({ reset: [], stale: ['sp1'] });
    expect(stale.state.scopes.sp1!.tripped).toBe(true);
    const r = reset(tripped, { scope: 'sp1', by: 'alice', atMs: 5_000 });
    expect(r.reset).toEqual(['sp1']);
    expect(r.state.scopes.sp1).toMatchObject({ tripped: false, held: 0, reason: 'reset by alice' });
    expect(r.state.scopes.sp1!.window.nodes).toEqual([]);
    expect(admit(r.state, { kind: 'nodes', key: 'c', domains: ['sp1'] }, 6_000, cfg).allowed).toBe(true);
    expect(reset(tripped, { scope: 'all', by: 'bob', atMs: 5_000 }).reset).toEqual(['sp1']);
    expect(reset(tripped, { scope: 'other', by: 'bob', atMs: 5_000 }).reset).toEqual([]);
  });

  it('auto-reset after the configured time, with the next due time before', () => {
    const c = { ...cfg, autoResetMs: 300 * S };
    const s = isolate(EMPTY_BREAKER_STATE, 'sp1', ['a', 'b', 'c'], 0, c).state;
    expect(autoReset(s, 299 * S, c)).toMatchObject({ reset: [], nextAtMs: 300 * S + 2 });
    const r = autoReset(s, 300 * S + 2, c);
    expect(r.reset).toEqual(['sp1']);
    expect(r.state.scopes.sp1!.tripped).toBe(false);
    expect(autoReset(s, 10_000 * S, cfg).reset).toEqual([]); // 0 = operator only
  });

  it('prune drops idle scopes; the encoded state round-trips (restart) and names the window counts', () => {
    const s = isolate(EMPTY_BREAKER_STATE, 'sp1', ['a', 'b', 'c'], 0).state;
    const withIdle = admit(s, { kind: 'nodes', key: 'q', domains: ['sp9'] }, 0, cfg).state;
    const later = prune(withIdle, 120 * S, cfg);
    expect(Object.keys(later.scopes).sort()).toEqual(['sp1']); // tripped stays, idle domain and empty cluster go
    const text = encodeBreakerState(s);
    const j = JSON.parse(text) as { scopes: Array<{ scope: string; tripped: boolean; trippedAt: string | null; counts: Record<string, number> }> };
    expect(j.scopes.map((x) => x.scope)).toEqual(['cluster', 'sp1']);
    expect(j.scopes[1]).toMatchObject({ tripped: true, trippedAt: new Date(2).toISOString(), counts: { chips: 0, nodes: 2, jobs: 0 } });
    expect(j.scopes[0]!.trippedAt).toBeNull();
    const back = parseBreakerState(text);
    expect(back.ok && back.value).toEqual(s);
  });

  it('bad state and bad reset requests are refused with a reason, never thrown', () => {
    expect(parseBreakerState('{').ok).toBe(false);
    expect(parseBreakerState('{"scopes":[{"scope":"x"}]}')).toMatchObject({ ok: false, kind: 'schema' });
    expect(parseBreakerState('{"scopes":[{"scope":"x","tripped":true,"trippedAt":"yesterday"}]}').ok).toBe(false);
    expect(parseResetRequest('{"scope":"all","by":"ops","at":"2025-01-01T00:00:00Z"}')).toEqual({ ok: true, value: { scope: 'all', by: 'ops', atMs: Date.UTC(2025, 0, 1) } });
    expect(parseResetRequest('{"scope":"all"}')).toMatchObject({ ok: false });
    expect(parseResetRequest('reset please')).toMatchObject({ ok: false, kind: 'malformed_json' });
  });

  it('defaults: a normal day at 16,000 nodes never trips (30 node faults/day, 2/h chips, 10 min window)', () => {
    // 16,000 nodes in 2,000 domains of 8; a heavy day: 30 node isolations, 200 chips, 100 restarts,
    // bunched up in 3 bursts in the same hour across random domains, and one rack losing 4 nodes.
    let s = EMPTY_BREAKER_STATE;
    let seed = 7;
    const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    const events: Array<{ t: number; kind: 'nodes' | 'jobs' | 'chips'; key: string; d: string }> = [];
    for (let i = 0; i < 30; i++) events.push({ t: rnd(3) * 1_200 * S + rnd(600) * S, kind: 'nodes', key: `node${i}`, d: `sp${rnd(2000)}` });
    for (let i = 0; i < 200; i++) events.push({ t: rnd(3) * 1_200 * S + rnd(600) * S, kind: 'chips', key: `c${i}`, d: `sp${rnd(2000)}` });
    for (let i = 0; i < 100; i++) events.push({ t: rnd(3) * 1_200 * S + rnd(600) * S, kind: 'jobs', key: `j${i}`, d: `sp${rnd(2000)}` });
    for (let i = 0; i < 4; i++) events.push({ t: 100 * S + i, kind: 'nodes', key: `rack${i}`, d: 'sp42' });
    for (const e of events.sort((a, b) => a.t - b.t)) {
      const r = admit(s, { kind: e.kind, key: e.key, domains: [e.d] }, e.t, DEFAULT_BREAKER_CONFIG, e.kind !== 'chips');
      expect(r.tripped).toEqual([]);
      s = r.state;
    }
    // ...while a switch storm (all 8 nodes of one domain) trips that domain.
    const storm = isolate(EMPTY_BREAKER_STATE, 'sp7', Array.from({ length: 9 }, (_, i) => `s${i}`), 0, DEFAULT_BREAKER_CONFIG);
    expect(storm.verdicts.filter((v) => !v)).toHaveLength(1);
  });
});

describe('breaker state: sources', () => {
  it('each stamp\'s source round-trips; the state shows counts by source; old stamps without one read as before', () => {
    const s = admit(EMPTY_BREAKER_STATE, { kind: 'chips', key: 'n1/Ascend910-0', domains: [], source: 'public-fault mindx-dl/pf' }, 0, cfg, false).state;
    const text = encodeBreakerState(s);
    expect(JSON.parse(text).scopes[0].sources).toEqual({ chips: { 'public-fault mindx-dl/pf': 1 }, nodes: {}, jobs: {} });
    const back = parseBreakerState(text);
    expect(back.ok && back.value.scopes.cluster!.window.chips).toEqual([{ key: 'n1/Ascend910-0', atMs: 0, source: 'public-fault mindx-dl/pf' }]);
    const old = parseBreakerState('{"scopes":[{"scope":"cluster","tripped":false,"window":{"chips":[{"key":"a","at":"2026-01-01T00:00:00Z"}]}}]}');
    expect(old.ok && old.value.scopes.cluster!.window.chips).toEqual([{ key: 'a', atMs: Date.UTC(2026, 0, 1) }]);
    expect(parseBreakerState('{"scopes":[{"scope":"cluster","tripped":false,"window":{"chips":[{"key":"a","at":"2026-01-01T00:00:00Z","source":7}]}}]}').ok).toBe(false);
  });
});
