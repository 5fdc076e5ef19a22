/**
 * A digest of a ConfigMap's data map, so a cache can keep the fingerprint of content the controller
 * already holds (cluster-info shards: the reconciler keeps what it last wrote) instead of a second
 * copy, and the writer can still tell "equal, no write" from "changed or edited by someone else".
 */
import { hash } from 'node:crypto';

/** sha1 over the keys in sorted order and their values; the separators cannot occur in keys. */
export function dataDigest(data: Readonly<Record<string, string>> | undefined): string {
  const keys = Object.keys(data ?? {}).sort();
  let text = '';
  for (const k of keys) text += `${k}\u0000${data![k]!.length}\u0000${data![k]!}\u0000`;
  return hash('sha1', text);
}
