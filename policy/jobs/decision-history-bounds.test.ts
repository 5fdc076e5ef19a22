import { historyVictims, nextExpiryMs, type HistoryEntry } from './decision-history-bounds.ts';

const e = (job: string, i: number, atMs: number): HistoryEntry => ({ namespace: 'ns', name: `${job}-${i}`, jobUid: job, atMs });
const names = (xs: readonly HistoryEntry[]): string[] => xs.map((x) => x.name).sort();

describe('decision history bounds', () => {
  it('deletes records past the TTL, then all but the newest per job, then all but the newest in total', () => {
    const now = 1_000_000;
    const entries = [
      e('a', 0, now - 5_000), e('a', 1, now - 4_000), e('a', 2, now - 3_000), e('a', 3, now - 2_000), // a: 4 records
      e('b', 0, now - 100_000), // b: expired
      e('c', 0, now - 1_000), e('c', 1, now - 500),
    ];
    expect(names(historyVictims(entries, { perJob: 10, total: 100, ttlMs: 50_000 }, now))).toEqual(['b-0']);
    expect(names(historyVictims(entries, { perJob: 2, total: 100, ttlMs: 50_000 }, now))).toEqual(['a-0', 'a-1', 'b-0']);
    // total 3 of the per-job survivors (a-2, a-3, c-0, c-1): the oldest one goes too.
    expect(names(historyVictims(entries, { perJob: 2, total: 3, ttlMs: 50_000 }, now))).toEqual(['a-0', 'a-1', 'a-2', 'b-0']);
  });

  it('counts a job\'s records in its own namespace only: records elsewhere naming its UID never prune its history', () => {
    const now = 1_000_000;
    const victim = { namespace: 'team-a', name: 'victim-0', jobUid: 'u1', atMs: now - 5_000 };
    const forged = [1, 2, 3].map((i) => ({ namespace: 'tenant', name: `forged-${i}`, jobUid: 'u1', atMs: now - 1_000 + i }));
    expect(names(historyVictims([victim, ...forged], { perJob: 1, total: 100, ttlMs: 50_000 }, now))).toEqual(['forged-1', 'forged-2']);
  });

  it('keeps everything within bounds and says when the oldest record expires', () => {
    const entries = [e('a', 0, 100), e('a', 1, 200)];
    expect(historyVictims(entries, { perJob: 2, total: 2, ttlMs: 1_000 }, 500)).toEqual([]);
    expect(nextExpiryMs(entries, 1_000)).toBe(1_100);
    expect(nextExpiryMs([], 1_000)).toBeUndefined();
  });
});
