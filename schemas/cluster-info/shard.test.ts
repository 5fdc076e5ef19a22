/**
 * The pieces the cluster-info reconciler's cache builds shards from (encodeEntry, joinShards) give
 * the same bytes as shardClusterInfo / encodeClusterInfo of the whole map.
 */
import { compareUtf8 } from '../go-json.ts';
import { encodeClusterInfo, type ClusterInfoEntry } from './cluster-info.ts';
import { RandomEntries } from '../../test/support/cluster-info-test-kit.ts';
import { encodeEntry, joinShards, shardClusterInfo } from './shard.ts';

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
