/**
 * The pieces the cluster-info reconciler's cache builds shards from (encodeEntry, joinShards) give
 * the same bytes as shardClusterInfo / encodeClusterInfo of the whole map.
 */
import { compareUtf8 } from '../go-json.ts';
import { encodeClusterInfo, type ClusterInfoEntry } from './cluster-info.ts';
import { RandomEntries } from '../../test/support/cluster-info-test-kit.ts';
import { encodeEntry, joinShards, rangeBytes, shardClusterInfo, stableShardRanges } from './shard.ts';

function randomMap(r: RandomEntries, n: number): Record<string, ClusterInfoEntry> {
  const out: Record<string, ClusterInfoEntry> = {};
  for (let i = 0; i < n; i++) {
    const node = r.nodeName();
    out[`mindx-dl-deviceinfo-${node}`] = r.device(node, r.int(300));
  }
  return out;
}

describe('encodeEntry + joinShards', () => {
  it('one entry is `"key":value` of the Go map encoding, with its UTF-8 size', () => {
    const r = new RandomEntries(1);
    const map = { 'mindx-dl-deviceinfo-n-中<': r.device('n-中<', 20) };
    const e = encodeEntry('mindx-dl-deviceinfo-n-中<', map['mindx-dl-deviceinfo-n-中<']);
    expect(`{${e.text}}`).toBe(encodeClusterInfo(map));
    expect(e.bytes).toBe(Buffer.byteLength(e.text));
    expect(e.bytes).toBeGreaterThan(e.text.length); // multi-byte characters counted as bytes
  });

  it.each([1, 2, 3, 4, 5])('equals shardClusterInfo on random maps and limits (seed %i)', (seed) => {
    const r = new RandomEntries(seed);
    for (let round = 0; round < 20; round++) {
      const map = randomMap(r, r.int(60));
      const max = 200 + r.int(4000);
      const sorted = Object.keys(map).sort(compareUtf8).map((k) => encodeEntry(k, map[k]!));
      const shards = joinShards(sorted, max);
      expect(shards).toEqual(shardClusterInfo(map, max));
      // Every entry once, in Go key order, across the shards.
      // (The kit's nested payloads are size filler, not decodable lists: read the keys only.)
      const keys = shards.flatMap((s) => (s === '' ? [] : Object.keys(JSON.parse(s) as object)));
      expect(keys).toEqual(Object.keys(map).sort(compareUtf8));
      expect(joinShards(sorted, Infinity)).toEqual([encodeClusterInfo(map)]);
    }
  });

  it('no entries: one blank shard, at any limit', () => {
    expect(joinShards([])).toEqual(['']);
    expect(joinShards([], Infinity)).toEqual(['']);
  });

  it('cuts where adding the next entry and its comma would pass the limit', () => {
    const e = (key: string, bytes: number) => ({ key, text: 'x'.repeat(bytes), bytes });
    // {a,b} = 2 + 3 + 1 + 3 = 9 bytes fits 9; a third entry needs 4 more.
    expect(joinShards([e('a', 3), e('b', 3), e('c', 3)], 9)).toEqual(['{xxx,xxx}', '{xxx}']);
    expect(joinShards([e('a', 3), e('b', 3), e('c', 3)], 8)).toEqual(['{xxx}', '{xxx}', '{xxx}']);
    expect(joinShards([e('a', 20), e('b', 1)], 8)).toEqual([`{${'x'.repeat(20)}}`, '{x}']);
  });
});

describe('stableShardRanges (docs/rules.md#ingest.cluster-info-shards)', () => {
  const e = (key: string, bytes: number) => ({ key, bytes });
  const keysOf = (sorted: ReadonlyArray<{ key: string }>, ranges: ReadonlyArray<readonly [number, number]>) => ranges.map(([s, t]) => sorted.slice(s, t).map((x) => x.key).join(''));
  // 10 entries of 9 bytes: a shard of 3 is 2 + 27 + 2 = 31 bytes.
  const ten = (grow: Record<string, number> = {}) => 'abcdefghij'.split('').map((k) => e(k, 9 + (grow[k] ?? 0)));
  const o = { maxBytes: 100, targetBytes: 31, keysChanged: false };

  it('a first layout is cut greedily at the target; a value within the target is one shard', () => {
    const first = stableShardRanges(ten(), undefined, o);
    expect(keysOf(ten(), first.ranges)).toEqual(['abc', 'def', 'ghi', 'j']);
    expect(first).toMatchObject({ cuts: ['d', 'g', 'j'], recut: 'first' });
    expect(stableShardRanges(ten().slice(0, 3), undefined, o)).toEqual({ ranges: [[0, 3]], cuts: [], recut: 'first' });
  });

  it('an entry that grows keeps every cut while its shard stays within the limit: only its shard changes', () => {
    const { cuts } = stableShardRanges(ten(), undefined, o);
    const grown = ten({ b: 60 }); // shard abc: 31 -> 91 bytes, over the target, under the limit
    const next = stableShardRanges(grown, cuts, o);
    expect(keysOf(grown, next.ranges)).toEqual(['abc', 'def', 'ghi', 'j']);
    expect(next.recut).toBeUndefined();
    // The greedy cut would have moved every later shard.
    expect(keysOf(grown, stableShardRanges(grown, undefined, o).ranges)).toEqual(['a', 'b', 'cde', 'fgh', 'ij']);
  });

  it('a shard past the limit is cut again at the target, the others keep their keys', () => {
    const { cuts } = stableShardRanges(ten(), undefined, o);
    const grown = ten({ e: 80 }); // def: 111 bytes > 100
    const next = stableShardRanges(grown, cuts, o);
    expect(keysOf(grown, next.ranges)).toEqual(['abc', 'd', 'e', 'f', 'ghi', 'j']);
    expect(next.recut).toBe('overflow');
    for (const [s, t] of next.ranges) expect(t - s === 1 || rangeBytes(grown, s, t) <= o.maxBytes).toBe(true);
  });

  it('new keys join the shard whose range holds them; a shard they push past the target is cut again', () => {
    const { cuts } = stableShardRanges(ten(), undefined, o);
    const plus = [...ten(), e('ga', 1)].sort((x, y) => compareUtf8(x.key, y.key));
    const quiet = stableShardRanges(plus, cuts, o); // no key change said: ghi + ga (33 bytes) stays one shard
    expect(quiet.recut).toBeUndefined();
    const added = stableShardRanges(plus, cuts, { ...o, keysChanged: true });
    expect(keysOf(plus, added.ranges)).toEqual(['abc', 'def', 'ggah', 'i', 'j']);
    expect(added.recut).toBe('grown');
  });

  it('an emptied shard is dropped, and a value back within the target is one shard again', () => {
    const { cuts } = stableShardRanges(ten(), undefined, o);
    const gone = ten().filter((x) => !'def'.includes(x.key));
    const next = stableShardRanges(gone, cuts, { ...o, keysChanged: true });
    expect(keysOf(gone, next.ranges)).toEqual(['abc', 'ghi', 'j']);
    expect(next).toMatchObject({ cuts: ['g', 'j'], recut: 'emptied' });
    const few = ten().slice(0, 2);
    expect(stableShardRanges(few, cuts, { ...o, keysChanged: true })).toEqual({ ranges: [[0, 2]], cuts: [], recut: 'single' });
    expect(stableShardRanges([], cuts, o)).toEqual({ ranges: [], cuts: [], recut: 'emptied' });
  });
});
