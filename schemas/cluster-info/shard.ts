/**
 * Size-based sharding of cluster-info-device-N / cluster-info-switch-N (docs/formats.md#cluster-info, ClusterD
 * SplitMapToSafeChunks): chunks of <= 800 KiB serialised JSON; surplus shards of an earlier, larger
 * cluster are blanked (high-water mark), never deleted.
 */
import { compareUtf8, goJson, goQuote } from '../go-json.ts';
import { CLUSTER_INFO_MAX_SHARD_BYTES, clusterInfoEntryWire, type ClusterInfoEntry } from './cluster-info.ts';

/**
 * One encoded entry of a cluster-info value, `"<key>":<entry JSON>`, and its UTF-8 size: the unit
 * shards are cut from. Kept per node by the cluster-info reconciler so a pass re-encodes only the
 * nodes that changed.
 */
export interface EncodedEntry {
  readonly key: string;
  readonly text: string;
  readonly bytes: number;
}

export function encodeEntry(key: string, entry: ClusterInfoEntry): EncodedEntry {
  const text = `${goQuote(key)}:${goJson(clusterInfoEntryWire(entry))}`;
  return { key, text, bytes: Buffer.byteLength(text, 'utf8') };
}

/**
 * Where shards are cut, as `[start, end)` runs over entries already in Go key order (byte-wise
 * sorted keys): each shard the longest run whose value (braces, entries, commas) fits in `maxBytes`
 * UTF-8 bytes; an entry larger than `maxBytes` gets a shard of its own (it cannot be split).
 */
export function shardRanges(sorted: ReadonlyArray<{ readonly bytes: number }>, maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES): Array<readonly [number, number]> {
  const ranges: Array<readonly [number, number]> = [];
  let start = 0;
  let size = 2; // the braces
  for (let i = 0; i < sorted.length; i++) {
    const bytes = sorted[i]!.bytes;
    if (i > start && size + 1 + bytes > maxBytes) { // 1: the comma
      ranges.push([start, i]);
      start = i;
      size = 2;
    }
    size += i === start ? bytes : bytes + 1;
  }
  if (sorted.length > start) ranges.push([start, sorted.length]);
  return ranges;
}

/** One shard value: the entries `[start, end)` as a Go map. */
export const joinRange = (sorted: readonly EncodedEntry[], start: number, end: number): string =>
  `{${sorted.slice(start, end).map((e) => e.text).join(',')}}`;

/**
 * Shard values from entries in Go key order, cut by `shardRanges`. No entries -> `[""]` (shard 0
 * says "no data"). With `maxBytes = Infinity` this is the one-value encoding of cluster-info-node-cm.
 */
export function joinShards(sorted: readonly EncodedEntry[], maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES): string[] {
  const ranges = shardRanges(sorted, maxBytes);
  return ranges.length === 0 ? [''] : ranges.map(([start, end]) => joinRange(sorted, start, end));
}

/** Encoded shard values, deterministic: entries in Go key order, cut as `joinShards` does. */
export function shardClusterInfo(entries: Readonly<Record<string, ClusterInfoEntry>>, maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES): string[] {
  return joinShards(Object.keys(entries).sort(compareUtf8).map((k) => encodeEntry(k, entries[k]!)), maxBytes);
}

/** Shard CM names for `count` shards. */
export const shardNames = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

/**
 * High-water mark: the shard names in [shardCount, highWater) that must be written with `""`, and
 * the new mark (never lowered).
 */
export function surplusShards(prefix: string, shardCount: number, highWater: number): { readonly blank: readonly string[]; readonly highWater: number } {
  const blank: string[] = [];
  for (let i = shardCount; i < highWater; i++) blank.push(`${prefix}${i}`);
  return { blank, highWater: Math.max(shardCount, highWater) };
}
