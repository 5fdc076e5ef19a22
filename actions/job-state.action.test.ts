import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { FakeConfigMaps } from '../test/support/job-fakes.ts';
import { JobStateStore } from './job-state.action.ts';
import {
  JOB_JOURNAL_SHARD_CHARS, JOB_STATE_KEY, JOB_STATE_LABELS, JOB_STATE_VERSION, encodeJobState, jobStateCmName, journalCmName, parseJobState,
  type PendingDecision,
} from '../schemas/job-state/job-state.ts';
import type { JobRescheduleState } from '../vocabulary/job-decision-state.ts';
import { realClock } from '../runtime/clock.ts';

const NS = 'mindx-dl';
const state = (uid: string, acted: string[] = [`${uid}/g1/job`]): JobRescheduleState => ({ jobUid: uid, generation: 1, acted });
const pending = (uid: string): PendingDecision => ({
  decisionId: `${uid}/g1/job`, atMs: 1, kind: 'job', phase: 'start', chain: 'c', faultSinceMs: 0,
  actions: [{ type: 'forceDeletePods', pods: [{ name: 'p', uid: `pod-${uid}` }], reasons: [] }],
});

function setup(opts: { gapMs?: number } = {}) {
  const cms = new FakeConfigMaps();
  const replays: string[] = [];
  const expedited: number[] = [];
  /** Jobs the store queued: a write-ahead written (its pass acts), a put not written (its pass fails, then decides again). */
  const written: string[] = [];
  const notWritten: string[] = [];
  const writer = new ConfigMapWriter(cms.client());
  // The controller arms a work-queue key (controllers/jobs.controller.ts); a plain timer here.
  const store: JobStateStore = new JobStateStore({
    cached: (name) => cms.get(NS, name), cachedNames: () => [...cms.objects.values()].map((c) => c.metadata?.name ?? ''),
    writer, client: cms.client(), dryRun: false, commitGapMs: opts.gapMs ?? 100, lazyMs: 60_000, now: realClock.now,
    wake: (ms) => { setTimeout(() => void store.commitDue(), ms); },
    expediteHold: () => expedited.push(Date.now()),
    onHoldFailed: (key) => replays.push(key),
    onWritten: (key) => written.push(key), onPutFailed: (key) => notWritten.push(key),
  });
  const journal = (shard = 0) => cms.get(NS, journalCmName(shard))?.data ?? {};
  return { cms, store, journal, replays, expedited, written, notWritten };
}

describe('job state journal', () => {
  it('nobody waits for a commit: a put is staged (seen, unwritten), and the commit names the job whose write-ahead it wrote', async () => {
    const { cms, store, written, notWritten } = setup({ gapMs: 0 });
    void store.put('ns/a', state('a'), pending('a'));
    const seen = store.get('a');
    expect(seen?.ok === true && seen.value.pending?.decisionId).toBe('a/g1/job');
    expect(store.unwritten('a')).toBe(true);
    expect(cms.writes).toHaveLength(0);
    await store.flush();
    await new Promise((r) => setImmediate(r));
    expect(store.unwritten('a')).toBe(false);
    expect(written).toEqual(['ns/a']); // its next pass carries it out
    void store.put('ns/b', state('b', ['b/g1/job', 'b/g1/wait'])).catch(() => undefined); // no pending decision: nobody to queue
    cms.failWrites = new Error('apiserver down');
    void store.put('ns/c', state('c'), pending('c')).catch(() => undefined);
    await store.flush().catch(() => undefined);
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual(['ns/a']);
    expect(notWritten.sort()).toEqual(['ns/b', 'ns/c']);
    expect(store.get('c')).toBeUndefined(); // forgotten: never carried out
    expect(String(store.takeFailure('c'))).toContain('apiserver down'); // the job's next pass fails with it once
    expect(store.takeFailure('c')).toBeUndefined();
  });

  it('writes the write-aheads of one burst in one ConfigMap write, and each is durable when its put resolves', async () => {
    const { cms, store, journal } = setup();
    await store.put('ns/a', state('a'), pending('a')); // a quiet journal: at once
    expect(Object.keys(journal())).toEqual(['a']);
    // Decided within the commit gap after it: they wait for the gap and share one write.
    await Promise.all(['b', 'c', 'd', 'e'].map((u) => store.put(`ns/${u}`, state(u), pending(u))));
    expect(cms.writes.map((w) => w.verb)).toEqual(['create', 'replace']); // 5 decisions, 2 writes
    for (const u of ['a', 'b', 'c', 'd', 'e']) {
      const r = parseJobState(journal()[u]);
      expect(r.ok && r.value.pending?.decisionId).toBe(`${u}/g1/job`);
    }
  });

  it('a clear is seen at once but written with the next commit (or on flush)', async () => {
    const { cms, store, journal } = setup({ gapMs: 0 });
    await store.put('ns/a', state('a'), pending('a'));
    expect(store.clear('ns/a', state('a'))).toBe(true);
    const seen = store.get('a');
    expect(seen?.ok === true && seen.value.pending).toBeUndefined();
    expect(cms.writes).toHaveLength(1);
    const durable = parseJobState(journal().a);
    expect(durable.ok && durable.value.pending).toBeDefined(); // a crash now replays it (idempotent)
    await store.put('ns/b', state('b'), pending('b')); // the clear rides along
    expect(cms.writes).toHaveLength(2);
    const after = parseJobState(journal().a);
    expect(after.ok && after.value.pending).toBeUndefined();
  });

  it('a failed commit rejects its puts and forgets them: nothing not written ahead is seen as pending', async () => {
    const { cms, store } = setup({ gapMs: 0 });
    await store.put('ns/a', state('a'), pending('a'));
    store.clear('ns/a', state('a'));
    cms.failWrites = new Error('apiserver down');
    await expect(store.put('ns/b', state('b'), pending('b'))).rejects.toThrow('apiserver down');
    expect(store.get('b')).toBeUndefined();
    const a = store.get('a'); // the lazy clear stays staged for the next commit
    expect(a?.ok === true && a.value.pending).toBeUndefined();
    cms.failWrites = undefined;
    await store.flush();
    const written = parseJobState(cms.get(NS, journalCmName(0))?.data?.a);
    expect(written.ok && written.value.pending).toBeUndefined();
  });

  it('never overwrites a record another writer changed: a lazy change is dropped, an eager put fails', async () => {
    const { cms, store, journal } = setup({ gapMs: 0 });
    await store.put('ns/a', state('a'), pending('a'));
    store.clear('ns/a', state('a'));
    // Another writer (a leader this one did not know of) writes a's next decision meanwhile.
    const theirs = encodeJobState({ version: JOB_STATE_VERSION, jobKey: 'ns/a', jobUid: 'a', state: state('a', ['a/g1/job', 'a/g2/job']), pending: { ...pending('a'), decisionId: 'a/g2/job' } });
    const cur = cms.get(NS, journalCmName(0))!;
    await cms.client().replace(`/api/v1/namespaces/${NS}/configmaps/${journalCmName(0)}`, { ...cur, data: { ...cur.data, a: theirs } });
    await store.flush();
    expect(journal().a).toBe(theirs);
    const b = parseJobState(journal().a);
    expect(b.ok && b.value.pending?.decisionId).toBe('a/g2/job');
    await expect(store.put('ns/a', state('a', ['a/g1/job', 'a/g3/job']), { ...pending('a'), decisionId: 'a/g3/job' })).resolves.toBe(true); // against theirs: fine
    const mine = parseJobState(journal().a);
    expect(mine.ok && mine.value.pending?.decisionId).toBe('a/g3/job');
  });

  it('reads a per-job ConfigMap of an older version (its pending decision is finished, not decided again)', async () => {
    const { cms, store, journal } = setup({ gapMs: 0 });
    const old = encodeJobState({ version: JOB_STATE_VERSION, jobKey: 'ns/a', jobUid: 'a', state: state('a'), pending: pending('a') });
    await cms.client().create(`/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: jobStateCmName('a'), namespace: NS, labels: { ...JOB_STATE_LABELS } }, data: { [JOB_STATE_KEY]: old } });
    const r = store.get('a');
    expect(r?.ok === true && r.value.pending?.decisionId).toBe('a/g1/job');
    expect(store.all().map((x) => x.jobUid)).toEqual(['a']);
    store.clear('ns/a', state('a'));
    await store.flush();
    const now = store.get('a');
    expect(now?.ok === true && now.value.pending).toBeUndefined();
    expect(parseJobState(journal().a).ok).toBe(true);
    await store.remove('a');
    expect(cms.get(NS, jobStateCmName('a'))).toBeUndefined();
    await store.flush();
    expect(cms.get(NS, journalCmName(0))).toBeUndefined(); // the journal emptied: deleted
  });

  it('a record that no longer fits its shard moves to a higher one, and the highest shard wins', async () => {
    const { store, journal } = setup({ gapMs: 0 });
    await store.put('ns/a', state('a'), pending('a'));
    await store.put('ns/b', state('b'), pending('b'));
    // A 12,000-pod restart: its pending deletions no longer fit beside the others in shard 0.
    const pods = Array.from({ length: Math.ceil(JOB_JOURNAL_SHARD_CHARS / 55) }, (_, i) => ({ name: `pod-${i}`, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}` }));
    await store.put('ns/b', state('b', ['b/g1/job', 'b/g2/job']), { ...pending('b'), decisionId: 'b/g2/job', actions: [{ type: 'forceDeletePods', pods, reasons: [] }] });
    expect(Object.keys(journal(0))).toEqual(['a']);
    expect(Object.keys(journal(1))).toEqual(['b']);
    const b = store.get('b');
    expect(b?.ok === true && b.value.pending?.decisionId).toBe('b/g2/job');
  });

  describe('a clear held by the decision\'s reason record (written later by its own store)', () => {
    const deferred = () => { let resolve!: () => void; let reject!: (e: unknown) => void; const promise = new Promise<void>((a, b) => { resolve = a; reject = b; }); return { promise, resolve, reject }; };
    const pendingIn = (text: string | undefined) => { const r = parseJobState(text); return r.ok ? r.value.pending?.decisionId : 'unreadable'; };

    it('is seen at once, is not written before the record landed, and is written after it', async () => {
      const { store, journal } = setup({ gapMs: 0 });
      await store.put('ns/a', state('a'), pending('a'));
      const record = deferred();
      store.clear('ns/a', state('a'), record.promise);
      const seen = store.get('a');
      expect(seen?.ok === true && seen.value.pending).toBeUndefined(); // no replay in this process
      await store.put('ns/b', state('b'), pending('b')); // a commit: the held clear does not ride along
      await store.flush();
      expect(pendingIn(journal().a)).toBe('a/g1/job'); // a crash now replays it and adds the record
      record.resolve();
      await new Promise((r) => setImmediate(r));
      await store.flush();
      expect(pendingIn(journal().a)).toBeUndefined();
    });

    it('a record that failed leaves the decision pending and queues the job to replay it', async () => {
      const { store, journal, replays } = setup({ gapMs: 0 });
      await store.put('ns/a', state('a'), pending('a'));
      const record = deferred();
      store.clear('ns/a', state('a'), record.promise);
      record.reject(new Error('apiserver gone'));
      await new Promise((r) => setImmediate(r));
      await store.flush();
      expect(pendingIn(journal().a)).toBe('a/g1/job');
      const read = store.get('a');
      expect(read?.ok === true && read.value.pending?.decisionId).toBe('a/g1/job'); // the next pass replays
      expect(replays).toEqual(['ns/a']);
    });

    it('a put of the job is staged behind the record: not written before it landed (its writer asked to write now), written after; it fails with it', async () => {
      const { store, journal, expedited, replays } = setup({ gapMs: 0 });
      await store.put('ns/a', state('a'), pending('a'));
      const record = deferred();
      store.clear('ns/a', state('a'), record.promise);
      expect(expedited).toHaveLength(0); // a held clear alone waits for the store's own pace
      let done = false;
      const next = store.put('ns/a', state('a', ['a/g1/job', 'a/g2/job']), { ...pending('a'), decisionId: 'a/g2/job' }).then(() => { done = true; });
      await new Promise((r) => setTimeout(r, 20));
      expect(done).toBe(false);
      expect(store.unwritten('a')).toBe(true); // its pass acts on nothing yet
      expect(pendingIn(journal().a)).toBe('a/g1/job');
      expect(expedited).toHaveLength(1); // the decision waiting on it is not held for the store's gap
      record.resolve();
      await next;
      expect(pendingIn(journal().a)).toBe('a/g2/job');

      await store.put('ns/c', state('c'), pending('c'));
      const failed = deferred();
      store.clear('ns/c', state('c'), failed.promise);
      const put = store.put('ns/c', state('c', ['c/g1/job', 'c/g1/complete']));
      failed.reject(new Error('409'));
      await expect(put).rejects.toThrow(/reason record/);
      expect(pendingIn(journal().c)).toBe('c/g1/job'); // replayed by the job's next pass
      expect(replays).toContain('ns/c');
      expect(String(store.takeFailure('c'))).toMatch(/reason record/); // ... which fails first (its backoff)
      expect(store.takeFailure('c')).toBeUndefined();
    });
  });
});

describe('job state journal: when commits go (manual clock)', () => {
  /** The store on a manual clock: `wake` records when the journal key is due; `advance` runs it then. */
  function clocked(gapMs = 0) {
    const cms = new FakeConfigMaps();
    let t = 0;
    const due: number[] = [];
    const store = new JobStateStore({
      cached: (name) => cms.get(NS, name), cachedNames: () => [...cms.objects.values()].map((c) => c.metadata?.name ?? ''),
      writer: new ConfigMapWriter(cms.client()), client: cms.client(), dryRun: false, now: () => t,
      commitGapMs: gapMs, coalesceMs: 200, lazyMs: 2000, lazyMaxMs: 10_000,
      wake: (ms) => { due.push(t + ms); }, expediteHold: () => undefined,
    });
    /** Moves the clock to `to`, running the journal key at each armed time on the way (as the work queue does). */
    const advance = async (to: number): Promise<void> => {
      for (;;) {
        const next = Math.min(...due);
        if (!(next <= to)) break;
        due.splice(due.indexOf(next), 1);
        t = Math.max(t, next);
        await store.commitDue();
        await new Promise((r) => setImmediate(r));
      }
      t = to;
    };
    const pendingIn = (uid: string) => { const r = parseJobState(cms.get(NS, journalCmName(0))?.data?.[uid]); return r.ok ? r.value.pending?.decisionId : 'unreadable'; };
    return { cms, store, advance, pendingIn, at: (ms: number) => { t = ms; } };
  }
  const complete = (uid: string): PendingDecision => ({ ...pending(uid), decisionId: `${uid}/g1/complete`, phase: 'complete', actions: [] });

  it('a storm\'s clears, released over seconds, share one write once no other came for lazyMs', async () => {
    const { cms, store, advance, pendingIn, at } = clocked();
    const puts = ['a', 'b', 'c'].map((u) => store.put(`ns/${u}`, state(u), pending(u)));
    await advance(0);
    await Promise.all(puts);
    expect(cms.writes).toHaveLength(1); // the write-aheads: at once, one write
    store.clear('ns/a', state('a'));
    at(1500);
    store.clear('ns/b', state('b')); // a later clear pushes the lazy write back
    await advance(2500);
    expect(cms.writes).toHaveLength(1); // 2 s after the first clear: not yet, another came since
    expect(pendingIn('a')).toBe('a/g1/job'); // a crash now replays a (idempotent)
    store.clear('ns/c', state('c'));
    await advance(4499);
    expect(cms.writes).toHaveLength(1);
    await advance(4500);
    expect(cms.writes).toHaveLength(2); // all three clears in one write
    for (const u of ['a', 'b', 'c']) expect(pendingIn(u)).toBeUndefined();
  });

  it('clears that keep coming are written lazyMaxMs after the oldest', async () => {
    const { cms, store, advance } = clocked();
    const uids = Array.from({ length: 12 }, (_, i) => `j${i}`);
    const puts = uids.map((u) => store.put(`ns/${u}`, state(u), pending(u)));
    await advance(0);
    await Promise.all(puts);
    for (const [i, u] of uids.entries()) { await advance(i * 1000); store.clear(`ns/${u}`, state(u)); }
    await advance(10_000);
    expect(cms.writes).toHaveLength(2); // the oldest clear waited 10 s, not for the trickle to end
  });

  it('a put nobody\'s pods wait for (a restart\'s completion) rides with the next write-ahead, or goes coalesceMs later', async () => {
    const { cms, store, advance, pendingIn } = clocked();
    let doneA = false;
    const a = store.put('ns/a', state('a', ['a/g1/job', 'a/g1/complete']), complete('a')).then(() => { doneA = true; });
    await advance(100);
    expect(cms.writes).toHaveLength(0);
    expect(doneA).toBe(false);
    const b = store.put('ns/b', state('b'), pending('b')); // a fault's write-ahead: at once, a rides along
    await advance(100);
    await Promise.all([a, b]);
    expect(cms.writes).toHaveLength(1);
    expect(pendingIn('a')).toBe('a/g1/complete');
    expect(pendingIn('b')).toBe('b/g1/job');

    const c = store.put('ns/c', state('c', ['c/g1/job', 'c/g1/complete']), complete('c'));
    const d = store.put('ns/d', state('d', ['d/g1/job', 'd/g1/complete']), complete('d'));
    await advance(299);
    expect(cms.writes).toHaveLength(1);
    await advance(300);
    await Promise.all([c, d]);
    expect(cms.writes).toHaveLength(2); // alone: 200 ms after the first, both in one write
  });

  it('in a burst a write-ahead waits until commitGapMs after the previous write-ahead\'s commit; after a quiet spell, or after a completion\'s commit, it goes at once', async () => {
    const { cms, store, advance, pendingIn, at } = clocked(100);
    const a = store.put('ns/a', state('a'), pending('a'));
    await advance(0);
    await a;
    expect(cms.writes).toHaveLength(1); // the first: at once
    at(30);
    const b = store.put('ns/b', state('b'), pending('b'));
    at(60);
    const c = store.put('ns/c', state('c'), pending('c'));
    await advance(99);
    expect(cms.writes).toHaveLength(1);
    await advance(100);
    await Promise.all([b, c]);
    expect(cms.writes).toHaveLength(2); // b and c: one write, 100 ms after a's
    at(150);
    const d = store.put('ns/d', state('d', ['d/g1/job', 'd/g1/complete']), complete('d'));
    await advance(350);
    await d;
    expect(cms.writes).toHaveLength(3);
    at(400); // 50 ms after the completion's commit, 300 ms after the last write-ahead's
    const e = store.put('ns/e', state('e'), pending('e'));
    await advance(400);
    await e;
    expect(cms.writes).toHaveLength(4);
    expect(pendingIn('e')).toBe('e/g1/job');
  });
});

describe('job state journal: one job\'s failing write never fails another\'s', () => {
  it('a uid that cannot be a data key never enters a shared write: its state stays in memory, the other jobs share their commit', async () => {
    const { cms, store, journal } = setup({ gapMs: 0 });
    const bad = 'bad uid !';
    cms.rejectData = (data) => Object.keys(data).some((k) => !/^[-._a-zA-Z0-9]+$/.test(k)); // what the apiserver does
    const results = await Promise.allSettled([store.put('ns/bad', state(bad), pending(bad)), store.put('ns/a', state('a'), pending('a')), store.put('ns/b', state('b'), pending('b'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(Object.keys(journal()).sort()).toEqual(['a', 'b']);
    expect(cms.writes.every((w) => !Object.keys((w.obj as { data?: object } | undefined)?.data ?? {}).includes(bad))).toBe(true);
    const kept = store.get(bad);
    expect(kept?.ok === true && kept.value.pending?.decisionId).toBe(`${bad}/g1/job`);
    expect(store.clear('ns/bad', state(bad))).toBe(true);
    await store.remove(bad);
    await store.flush();
    expect(store.get(bad)).toBeUndefined();
    expect(Object.keys(journal()).sort()).toEqual(['a', 'b']);
  });

  it('a change the apiserver refuses (422) fails alone: the other jobs of the same commit are written, their puts resolve', async () => {
    const { cms, store, journal } = setup({ gapMs: 100 });
    await store.put('ns/a', state('a'), pending('a'));
    cms.rejectData = (data) => data.c !== undefined;
    const results = await Promise.allSettled(['b', 'c', 'd'].map((u) => store.put(`ns/${u}`, state(u), pending(u))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/422/);
    expect(Object.keys(journal()).sort()).toEqual(['a', 'b', 'd']);
    expect(store.get('c')).toBeUndefined(); // not written ahead: not carried out
    cms.rejectData = undefined;
    await store.put('ns/c', state('c'), pending('c')); // its own retry succeeds
    expect(Object.keys(journal()).sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a move whose write to the higher shard is refused leaves the record where it was (its removal there does not go alone)', async () => {
    const { cms, store, journal } = setup({ gapMs: 0 });
    await store.put('ns/a', state('a'), pending('a'));
    await store.put('ns/b', state('b'), pending('b'));
    const pods = Array.from({ length: Math.ceil(JOB_JOURNAL_SHARD_CHARS / 55) }, (_, i) => ({ name: `pod-${i}`, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}` }));
    cms.rejectData = (data) => data.b !== undefined && data.b.length > JOB_JOURNAL_SHARD_CHARS / 2; // the grown record is refused
    await expect(store.put('ns/b', state('b', ['b/g1/job', 'b/g2/job']), { ...pending('b'), decisionId: 'b/g2/job', actions: [{ type: 'forceDeletePods', pods, reasons: [] }] })).rejects.toThrow(/422/);
    expect(Object.keys(journal(0)).sort()).toEqual(['a', 'b']);
    const b = parseJobState(journal(0).b);
    expect(b.ok && b.value.pending?.decisionId).toBe('b/g1/job');
    const read = store.get('b');
    expect(read?.ok === true && read.value.pending?.decisionId).toBe('b/g1/job');
  });
});

describe('job state journal: a failing lazy change backs off on its own key (manual clock)', () => {
  it('its retries are spaced by its own backoff and capped; the other jobs\' clears are written on time', async () => {
    const cms = new FakeConfigMaps();
    let t = 0;
    const due: number[] = [];
    const store = new JobStateStore({
      cached: (name) => cms.get(NS, name), cachedNames: () => [...cms.objects.values()].map((c) => c.metadata?.name ?? ''),
      writer: new ConfigMapWriter(cms.client()), client: cms.client(), dryRun: false, now: () => t,
      commitGapMs: 0, coalesceMs: 200, lazyMs: 2000, lazyMaxMs: 10_000,
      wake: (ms) => { due.push(t + ms); }, expediteHold: () => undefined,
    });
    const advance = async (to: number): Promise<void> => {
      for (;;) {
        const next = Math.min(...due);
        if (!(next <= to)) break;
        due.splice(due.indexOf(next), 1);
        t = Math.max(t, next);
        await store.commitDue();
        await new Promise((r) => setImmediate(r));
      }
      t = to;
    };
    const pendingIn = (uid: string) => { const r = parseJobState(cms.get(NS, journalCmName(0))?.data?.[uid]); return r.ok ? r.value.pending?.decisionId : r.reason; };
    for (const u of ['a', 'b']) { const p = store.put(`ns/${u}`, state(u), pending(u)); await advance(t); await p; }
    // b's clear is refused every time (a content the apiserver rejects); a's clear rides the same commits.
    const refusedAt: number[] = [];
    cms.rejectData = (data) => { const bad = data.b !== undefined && !data.b.includes('"pending"'); if (bad) refusedAt.push(t); return bad; };
    store.clear('ns/a', state('a'));
    store.clear('ns/b', state('b'));
    await advance(2_000);
    expect(pendingIn('a')).toBeUndefined(); // written at lazyMs, b's failure notwithstanding
    expect(pendingIn('b')).toBe('b/g1/job');
    expect(refusedAt).toEqual([2_000, 2_000]); // the shared write, then b's change alone
    await advance(60_000);
    // b alone, after 0.5, 1, 2, 4, 8, 16 s of its own backoff, then dropped (the decision replays, idempotent).
    expect(refusedAt.slice(2)).toEqual([2_500, 3_500, 5_500, 9_500, 17_500, 33_500]);
    const b = store.get('b');
    expect(b?.ok === true && b.value.pending?.decisionId).toBe('b/g1/job');
    // Another job's clear now is written at its own lazyMs, not delayed by b's backoff.
    const p = store.put('ns/c', state('c'), pending('c')); await advance(t); await p;
    store.clear('ns/c', state('c'));
    await advance(t + 2_000);
    expect(pendingIn('c')).toBeUndefined();
  });
});
