/**
 * Size-based sharding of cluster-info-device-N / cluster-info-switch-N (formats.md 3.1, ClusterD
 * SplitMapToSafeChunks): chunks of <= 800 KiB serialised JSON; surplus shards of an earlier, larger
 * cluster are blanked (high-water mark), never deleted.
 */
import { compareUtf8, goJson, goQuote } from '../go-json.ts';
import { CLUSTER_INFO_MAX_SHARD_BYTES, clusterInfoEntryWire, type ClusterInfoEntry } from './cluster-info.ts';

/**
 * Encoded shard values, deterministic: entries in Go key order, each shard the longest run that fits
 * in `maxBytes` (UTF-8 bytes of the whole value). A single entry larger than `maxBytes` gets a shard of
 * its own (it cannot be split). No entries -> `[""]` (shard 0 says "no data").
 */
export function shardClusterInfo(entries: Readonly<Record<string, ClusterInfoEntry>>, maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES): string[] {
  const keys = Object.keys(entries).sort(compareUtf8);
  if (keys.length === 0) return [''];
  const shards: string[] = [];
  let parts: string[] = [];
  let size = 2; // the braces
  const flush = (): void => {
    shards.push(`{${parts.join(',')}}`);
    parts = [];
    size = 2;
  };
  for (const k of keys) {
    const part = `${goQuote(k)}:${goJson(clusterInfoEntryWire(entries[k]!))}`;
    const bytes = Buffer.byteLength(part, 'utf8');
    const added = parts.length === 0 ? bytes : bytes + 1;
    if (parts.length > 0 && size + added > maxBytes) flush();
    size += parts.length === 0 ? bytes : bytes + 1;
    parts.push(part);
  }
  flush();
  return shards;
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
