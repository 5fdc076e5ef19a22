import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { FakeConfigMaps } from '../test/support/job-fakes.ts';
import { parseRescheduleHistory } from '../schemas/job-reschedule-reason/job-reschedule-reason.ts';
import { RescheduleReasonStore } from './job-reschedule-reason.reconciler.ts';
import { realClock } from '../runtime/clock.ts';

const task = { RescheduleReason: 'CardUnhealthy' as const, PodName: 'llama-worker-2', NodeName: 'node-2', NodeRankIndex: '2' };

function setup(live: string[]) {
  const cms = new FakeConfigMaps();
  const store = new RescheduleReasonStore({
    cached: () => cms.get('mindx-dl', 'job-reschedule-reason'), writer: new ConfigMapWriter(cms.client()),
    liveJobKeys: () => new Set(live), log: silentLogger, now: realClock.now,
  });
  const history = () => {
    const p = parseRescheduleHistory(cms.get('mindx-dl', 'job-reschedule-reason')?.data?.['recent-reschedule-records'] ?? '');
    if (!p.ok) throw new Error(p.reason);
    return p.value;
  };
  return { cms, store, history };
}

describe('job-reschedule-reason store', () => {
  it('adds one record per restart, skips a replayed record already written, prunes jobs that left', async () => {
    const live = ['ns/llama-u1'];
    const { cms, store, history } = setup(live);
    await store.add({ jobKey: 'ns/llama-u1', jobUid: 'u1', atMs: 1_732_183_400_500, tasks: [task], replay: false });
    await store.add({ jobKey: 'ns/llama-u1', jobUid: 'u1', atMs: 1_732_183_400_500, tasks: [task], replay: true });
    expect(history().get('ns/llama-u1')).toEqual({
      JobID: 'ns/llama-u1', TotalRescheduleTimes: 1,
      RescheduleRecords: [{ LogFileFormatTime: 'I1121 10:03:20', RescheduleTimeStamp: 1_732_183_400, ReasonOfTask: [task] }],
    });
    expect(cms.writes).toHaveLength(1);
    await store.add({ jobKey: 'ns/llama-u1', jobUid: 'u1', atMs: 1_732_183_400_900, tasks: [task], replay: false });
    expect(history().get('ns/llama-u1')?.TotalRescheduleTimes).toBe(2);
    live.pop();
    await store.sync();
    expect(history().size).toBe(0);
    await store.sync();
    expect(cms.writes).toHaveLength(3);
  });

  it('serializes concurrent adds (no lost update)', async () => {
    const { store, history } = setup(['ns/a-u1', 'ns/b-u2']);
    await Promise.all([
      store.add({ jobKey: 'ns/a-u1', jobUid: 'u1', atMs: 1_000, tasks: [task], replay: false }),
      store.add({ jobKey: 'ns/b-u2', jobUid: 'u2', atMs: 2_000, tasks: [task], replay: false }),
    ]);
    expect([...history().keys()].sort()).toEqual(['ns/a-u1', 'ns/b-u2']);
  });
  it('groups records that arrive together into one write, each record in it', async () => {
    const jobs = ['a', 'b', 'c', 'd', 'e'];
    const { cms, store, history } = setup(jobs.map((j, i) => `ns/${j}-u${i}`));
    const results = await Promise.all(jobs.map((j, i) => store.add({ jobKey: `ns/${j}-u${i}`, jobUid: `u${i}`, atMs: 1_000 + i, tasks: [task], replay: false })));
    expect(results).toEqual([true, true, true, true, true]);
    expect(cms.writes).toHaveLength(1);
    expect([...history().keys()].sort()).toEqual(jobs.map((j, i) => `ns/${j}-u${i}`));
    // a record added after that write goes out in a write of its own, on top of the first
    expect(await store.add({ jobKey: 'ns/a-u0', jobUid: 'u0', atMs: 9_000, tasks: [task], replay: false })).toBe(true);
    expect(cms.writes).toHaveLength(2);
    expect(history().get('ns/a-u0')?.TotalRescheduleTimes).toBe(2);
  });

  it('a failed write rejects every record of its group; the next add starts a fresh group', async () => {
    const { cms, store, history } = setup(['ns/a-u1', 'ns/b-u2']);
    cms.failWrites = new Error('apiserver down');
    const both = [
      store.add({ jobKey: 'ns/a-u1', jobUid: 'u1', atMs: 1_000, tasks: [task], replay: false }),
      store.add({ jobKey: 'ns/b-u2', jobUid: 'u2', atMs: 2_000, tasks: [task], replay: false }),
    ];
    for (const p of both) await expect(p).rejects.toThrow('apiserver down');
    cms.failWrites = undefined;
    expect(await store.add({ jobKey: 'ns/b-u2', jobUid: 'u2', atMs: 2_000, tasks: [task], replay: false })).toBe(true);
    expect([...history().keys()]).toEqual(['ns/b-u2']);
  });

  it('with a gap: the first record of a quiet spell is written at once, a storm\'s later ones share a write once the gap passed', async () => {
    const cms = new FakeConfigMaps();
    let now = 10_000;
    const armed: number[] = [];
    const keys = ['ns/a-u1', 'ns/b-u2', 'ns/c-u3', 'ns/d-u4'];
    const store = new RescheduleReasonStore({
      cached: () => cms.get('mindx-dl', 'job-reschedule-reason'), writer: new ConfigMapWriter(cms.client()),
      liveJobKeys: () => new Set(keys), log: silentLogger, gapMs: 1000, now: () => now, wake: (ms) => armed.push(ms),
    });
    const add = (k: string) => store.add({ jobKey: k, jobUid: k.slice(-2), atMs: now, tasks: [task], replay: false });
    expect(await add('ns/a-u1')).toBe(true);
    expect(cms.writes).toHaveLength(1);
    now += 300;
    const later = Promise.all(keys.slice(1).map(add)); // nobody needs to wait for these
    await new Promise((r) => setImmediate(r));
    expect({ writes: cms.writes.length, armed }).toEqual({ writes: 1, armed: [700] });
    now += 200;
    await store.flushDue(); // woken early: not due, armed again
    expect({ writes: cms.writes.length, armed }).toEqual({ writes: 1, armed: [700, 500] });
    now += 500;
    await store.flushDue();
    expect(await later).toEqual([true, true, true]);
    expect(cms.writes).toHaveLength(2); // 4 restarts, 2 writes
  });

  it('expedite: records a decision waits on are written at once, not at the end of the gap', async () => {
    const cms = new FakeConfigMaps();
    const now = 10_000;
    const store = new RescheduleReasonStore({
      cached: () => cms.get('mindx-dl', 'job-reschedule-reason'), writer: new ConfigMapWriter(cms.client()),
      liveJobKeys: () => new Set(['ns/a-u1', 'ns/b-u2']), log: silentLogger, gapMs: 1000, now: () => now, wake: () => undefined,
    });
    const add = (k: string) => store.add({ jobKey: k, jobUid: k.slice(-2), atMs: now, tasks: [task], replay: false });
    expect(await add('ns/a-u1')).toBe(true);
    const held = add('ns/b-u2'); // within the gap: armed for later
    await new Promise((r) => setImmediate(r));
    expect(cms.writes).toHaveLength(1);
    store.expedite();
    expect(await held).toBe(true);
    expect(cms.writes).toHaveLength(2);
    store.expedite(); // nothing queued: no write
    await new Promise((r) => setImmediate(r));
    expect(cms.writes).toHaveLength(2);
  });

  it('records queued when the loops stop are not written by this process (the next leader replays them)', async () => {
    const cms = new FakeConfigMaps();
    let now = 10_000;
    const store = new RescheduleReasonStore({
      cached: () => cms.get('mindx-dl', 'job-reschedule-reason'), writer: new ConfigMapWriter(cms.client()),
      liveJobKeys: () => new Set(['ns/a-u1', 'ns/b-u2', 'ns/c-u3']), log: silentLogger, gapMs: 1000, now: () => now, wake: () => undefined,
    });
    await store.add({ jobKey: 'ns/a-u1', jobUid: 'u1', atMs: now, tasks: [task], replay: false });
    const queued = store.add({ jobKey: 'ns/b-u2', jobUid: 'u2', atMs: now, tasks: [task], replay: false });
    store.abandon();
    await expect(queued).rejects.toThrow(/not acting/);
    store.resume();
    now += 5_000; // leading again later: a new record goes out at once, without the abandoned one
    await store.add({ jobKey: 'ns/c-u3', jobUid: 'u3', atMs: now, tasks: [task], replay: false });
    const p = parseRescheduleHistory(cms.get('mindx-dl', 'job-reschedule-reason')?.data?.['recent-reschedule-records'] ?? '');
    expect(p.ok && [...p.value.keys()].sort()).toEqual(['ns/a-u1', 'ns/c-u3']);
  });
});
