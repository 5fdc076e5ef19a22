/**
 * Which DecisionRecords to delete so the history stays bounded (not growing without end in etcd): records older than
 * the TTL, then per job (namespace and UID) all but the newest `perJob`, then cluster-wide all but the
 * newest `total`.
 * Pure: the pruning reconciler passes the index and the time.
 */
export interface HistoryEntry {
  readonly namespace: string;
  readonly name: string;
  readonly jobUid: string;
  readonly atMs: number;
}

export interface HistoryBounds {
  readonly perJob: number;
  readonly total: number;
  readonly ttlMs: number;
}

const newestFirst = (a: HistoryEntry, b: HistoryEntry): number => b.atMs - a.atMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function historyVictims(entries: Iterable<HistoryEntry>, bounds: HistoryBounds, nowMs: number): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  const kept: HistoryEntry[] = [];
  const byJob = new Map<string, HistoryEntry[]>();
  for (const e of entries) {
    if (nowMs - e.atMs > bounds.ttlMs) { out.push(e); continue; }
    // A job's records are in its own namespace: records elsewhere naming its UID are not its own
    // and never count against (or prune) its history.
    const job = `${e.namespace}/${e.jobUid}`;
    const list = byJob.get(job) ?? [];
    list.push(e);
    byJob.set(job, list);
  }
  for (const list of byJob.values()) {
    list.sort(newestFirst);
    kept.push(...list.slice(0, bounds.perJob));
    out.push(...list.slice(bounds.perJob));
  }
  kept.sort(newestFirst);
  out.push(...kept.slice(bounds.total));
  return out;
}

/** When the next record falls out of the TTL (undefined: no record). */
export function nextExpiryMs(entries: Iterable<HistoryEntry>, ttlMs: number): number | undefined {
  let oldest: number | undefined;
  for (const e of entries) if (oldest === undefined || e.atMs < oldest) oldest = e.atMs;
  return oldest === undefined ? undefined : oldest + ttlMs;
}
