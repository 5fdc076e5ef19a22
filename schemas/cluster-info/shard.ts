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
export function shardRanges(sorted: ReadonlyArray<{ readonly bytes: number }>, maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES, from = 0, to = sorted.length): Array<readonly [number, number]> {
  const ranges: Array<readonly [number, number]> = [];
  let start = from;
  let size = 2; // the braces
  for (let i = from; i < to; i++) {
    const bytes = sorted[i]!.bytes;
    if (i > start && size + 1 + bytes > maxBytes) { // 1: the comma
      ranges.push([start, i]);
      start = i;
      size = 2;
    }
    size += i === start ? bytes : bytes + 1;
  }
  if (to > start) ranges.push([start, to]);
  return ranges;
}

/** The UTF-8 size of the shard value of entries `[start, end)`: braces, entries, commas. */
export function rangeBytes(sorted: ReadonlyArray<{ readonly bytes: number }>, start: number, end: number): number {
  let size = 2 + Math.max(0, end - start - 1);
  for (let i = start; i < end; i++) size += sorted[i]!.bytes;
  return size;
}

/** Why a layout moved its cuts (logged; docs/rules.md#ingest.cluster-info-shards). */
export type ShardRecut = 'first' | 'single' | 'overflow' | 'grown' | 'emptied';

export interface ShardLayout {
  readonly ranges: ReadonlyArray<readonly [number, number]>;
  /** The first key of every shard but the first: where the next pass cuts again. */
  readonly cuts: readonly string[];
  /** Why cuts moved; undefined when they stayed where they were. */
  readonly recut?: ShardRecut;
}

/**
 * Stable shard cuts (docs/rules.md#ingest.cluster-info-shards): a shard keeps the keys it has, so
 * an entry that changes rewrites its own shard and no other. Cuts are kept as keys (the first key
 * of each shard after the first) and move only when they must: the first layout, and a shard that
 * outgrew `maxBytes`, are cut greedily at `targetBytes` (the headroom up to `maxBytes` absorbs
 * entries growing with faults); after keys were added or removed (`keysChanged`) a shard beyond
 * `targetBytes` is cut again the same way, and an emptied shard is dropped. A value that fits in
 * `targetBytes` is one shard, as ClusterD's is when it fits its limit.
 */
export function stableShardRanges(sorted: ReadonlyArray<{ readonly key: string; readonly bytes: number }>, cuts: readonly string[] | undefined, o: { readonly maxBytes: number; readonly targetBytes: number; readonly keysChanged: boolean }): ShardLayout {
  const n = sorted.length;
  const target = Math.min(o.targetBytes, o.maxBytes);
  if (n === 0) return { ranges: [], cuts: [], ...(cuts !== undefined && cuts.length > 0 ? { recut: 'emptied' as const } : {}) };
  if (rangeBytes(sorted, 0, n) <= target) return { ranges: [[0, n]], cuts: [], ...(cuts === undefined || cuts.length > 0 ? { recut: cuts === undefined ? 'first' as const : 'single' as const } : {}) };
  const keyed = (ranges: ReadonlyArray<readonly [number, number]>): string[] => ranges.slice(1).map(([s]) => sorted[s]!.key);
  if (cuts === undefined) {
    const ranges = shardRanges(sorted, target);
    return { ranges, cuts: keyed(ranges), recut: 'first' };
  }
  // Each cut key's position: the first entry at or after it (keys are in Go order).
  const starts = [0];
  for (const cut of cuts) {
    let lo = starts[starts.length - 1]!;
    let hi = n;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (compareUtf8(sorted[mid]!.key, cut) < 0) lo = mid + 1; else hi = mid; }
    starts.push(lo);
  }
  const ranges: Array<readonly [number, number]> = [];
  let recut: ShardRecut | undefined;
  for (let i = 0; i < starts.length; i++) {
    const s = starts[i]!;
    const e = starts[i + 1] ?? n;
    if (e <= s) { recut ??= 'emptied'; continue; }
    const size = rangeBytes(sorted, s, e);
    if (size > o.maxBytes || (o.keysChanged && size > target)) {
      recut = size > o.maxBytes ? 'overflow' : (recut ?? 'grown');
      ranges.push(...shardRanges(sorted, target, s, e));
    } else ranges.push([s, e]);
  }
    return { ranges, cuts: keyed(ranges), ...(recut === undefined ? {} : { recut }) };
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
