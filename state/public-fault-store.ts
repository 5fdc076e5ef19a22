/**
 * Public faults held by the controller, as ClusterD holds them (application/publicfault
 * fault_collector.go dealFault, cache.go DealDelete; domain/publicfault/cache.go):
 * - one fault per node and `resource + faultId`, whichever ConfigMap or gRPC call sent it;
 * - `occur` adds it unless it is already there: a repeated occur keeps the first (its chips, code,
 *   time);
 * - `recover` deletes a fault at least 5 s old at once; a younger one when it turns 5 s old; for a
 *   fault not there it schedules a delete 5 s later, which removes whatever is there by then (so an
 *   occur right after such a recover is gone 5 s later);
 * - `once` adds the fault (unless there) and schedules its delete 5 s later;
 * - ages are counted in whole Unix seconds, as ClusterD's `FaultAddTime`.
 * Capped like ClusterD (AddPubFaultToCache: at 50,000 cached faults a new one is refused with an
 * error log; existing ones are still recovered). ClusterD's delete queue is FIFO, so a later delete
 * can wait behind an earlier one; ours runs each at its own time (the difference is at most 5 s in
 * a queue that only ever holds 5 s delays).
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { PublicFaultItem } from '../schemas/public-fault/public-fault-records.ts';
import type { StatisticNodeFault } from '../schemas/statistic-fault/statistic-fault.ts';
import type { PublicFaultLevel } from '../schemas/public-fault/public-fault-config.ts';
import type { BoundHits } from './bound-hits.ts';

/** ClusterD's maxPubFaultCacheNum (`--max-public-faults`). */
/** The `bound` label of telemetry/bounds.ts BOUNDS.publicFaults. */
const BOUND = 'public_faults';

export const DEFAULT_MAX_PUBLIC_FAULTS = 50_000;
/** The origin of faults reloaded from statistic-fault-info at start (their sender is not recorded there). */
export const RELOADED_ORIGIN = 'statistic-fault-info';
/** ClusterD's diffTime: the delay of a `recover` (of a young or unknown fault) and the life of a `once`. */
export const PUBLIC_FAULT_DELAY_S = 5;

/** One held public fault. */
export interface PublicFaultEntry {
  readonly node: string;
  readonly resource: string;
  readonly faultId: string;
  readonly faultType: string;
  readonly code: string;
  readonly level: PublicFaultLevel;
  /** Unix ms of the first occurrence (from the message; ClusterD keeps seconds). */
  readonly faultTimeMs: number;
  readonly devIds: readonly number[];
  /** ClusterD's FaultAddTime, Unix seconds. */
  readonly addedAtS: number;
  /** Who sent the occurrence held: the ConfigMap's `namespace/name`, `grpc-pubfault/<resource>`, or `statistic-fault-info` (reloaded). */
  readonly origin: string;
}

export interface PublicFaultStoreOptions {
  readonly maxFaults?: number;
  /** Where a refusal at the cap is counted and logged (clusterd_bound_hits_total{bound="public_faults"}). */
  readonly bounds?: BoundHits<typeof BOUND>;
}

interface ScheduledDelete { readonly atMs: number; readonly node: string; readonly key: string }

const seconds = (ms: number): number => Math.floor(ms / 1000);

export class PublicFaultStore {
  /** node -> resource + faultId -> fault (ClusterD's faultCache). */
  private readonly byNode = new Map<string, Map<string, PublicFaultEntry>>();
  private deletes: ScheduledDelete[] = [];
  private count = 0;
  private readonly max: number;
  private readonly bounds: BoundHits<typeof BOUND> | undefined;

  constructor(opts: PublicFaultStoreOptions = {}) {
    this.max = opts.maxFaults ?? DEFAULT_MAX_PUBLIC_FAULTS;
    this.bounds = opts.bounds;
  }

  /** Faults held (what the cap counts). */
  get size(): number { return this.count; }

  /** Applies one message's items in order (`source` only names it in logs); returns the nodes that changed. */
  apply(source: string, items: readonly PublicFaultItem[], nowMs: number): Set<string> {
    const changed = new Set<string>();
    const refused: string[] = [];
    const nowS = seconds(nowMs);
    for (const it of items) {
      const key = it.resource + it.faultId;
      const existing = this.byNode.get(it.node)?.get(key);
      switch (it.assertion) {
        case 'occur':
          if (existing === undefined && !this.add(it, nowS, refused, source)) continue;
          if (existing === undefined) changed.add(it.node);
          break;
        case 'recover':
          if (existing === undefined) this.schedule(nowMs, nowS + PUBLIC_FAULT_DELAY_S, it.node, key);
          else if (nowS - existing.addedAtS >= PUBLIC_FAULT_DELAY_S) { this.remove(it.node, key); changed.add(it.node); }
          else this.schedule(nowMs, existing.addedAtS + PUBLIC_FAULT_DELAY_S, it.node, key);
          break;
        case 'once':
          if (existing !== undefined || !this.add(it, nowS, refused, source)) continue;
          changed.add(it.node);
          this.schedule(nowMs, nowS + PUBLIC_FAULT_DELAY_S, it.node, key);
          break;
      }
    }
    if (refused.length > 0) {
      this.bounds?.hit(BOUND, 'public faults refused: the cluster-wide cap is reached (as ClusterD: existing faults are kept and still recover)', {
        source, refused: refused.length, held: this.count, maxPublicFaults: this.max, examples: refused.slice(0, 3),
      }, refused.length);
    }
    return changed;
  }

  /**
   * Faults read back from statistic-fault-info after a restart (ClusterD LoadFaultToCache): held as
   * occurrences added now, replacing what is there.
   */
  load(byNode: ReadonlyMap<string, readonly StatisticNodeFault[]>, level: (code: string) => PublicFaultLevel | undefined, nowMs: number): Set<string> {
    const changed = new Set<string>();
    const refused: string[] = [];
    for (const [node, faults] of byNode) {
      for (const f of faults) {
        const lv = level(f.faultCode) ?? (f.level as PublicFaultLevel);
        const item: PublicFaultItem = { assertion: 'occur', node, resource: f.resource, faultId: f.faultId, faultType: f.type, code: f.faultCode, level: lv, faultTimeMs: f.faultTime * 1000, devIds: f.devIds };
        const key = f.resource + f.faultId;
        if (this.byNode.get(node)?.has(key) === true) this.remove(node, key);
        if (this.add(item, seconds(nowMs), refused, RELOADED_ORIGIN)) changed.add(node);
      }
    }
    if (refused.length > 0) this.bounds?.hit(BOUND, 'public faults refused on reload: the cluster-wide cap is reached', { refused: refused.length, maxPublicFaults: this.max }, refused.length);
    return changed;
  }

  private add(it: PublicFaultItem, nowS: number, refused: string[], origin: string): boolean {
    if (this.count >= this.max) {
      refused.push(`${it.faultId}@${it.node}`);
      return false;
    }
    let m = this.byNode.get(it.node);
    if (m === undefined) { m = new Map(); this.byNode.set(it.node, m); }
    m.set(it.resource + it.faultId, {
      node: it.node, resource: it.resource, faultId: it.faultId, faultType: it.faultType, code: it.code, level: it.level,
      faultTimeMs: it.faultTimeMs, devIds: [...it.devIds], addedAtS: nowS, origin,
    });
    this.count++;
    return true;
  }

  /** ClusterD pops the delete and sleeps `deleteS - now.Unix()` whole seconds from the moment it is pushed. */
  private schedule(nowMs: number, deleteS: number, node: string, key: string): void {
    this.deletes.push({ atMs: nowMs + (deleteS - seconds(nowMs)) * 1000, node, key });
  }

  private remove(node: string, key: string): boolean {
    const m = this.byNode.get(node);
    if (m === undefined || !m.delete(key)) return false;
    this.count--;
    if (m.size === 0) this.byNode.delete(node);
    return true;
  }

  /** Runs the deletes that are due; `ran` counts them (ClusterD rewrites statistic-fault-info after each). */
  expire(nowMs: number): { changed: Set<string>; ran: number } {
    const changed = new Set<string>();
    const due = this.deletes.filter((d) => d.atMs <= nowMs);
    if (due.length === 0) return { changed, ran: 0 };
    this.deletes = this.deletes.filter((d) => d.atMs > nowMs);
    for (const d of due) if (this.remove(d.node, d.key)) changed.add(d.node);
    return { changed, ran: due.length };
  }

  nextExpiry(): number | undefined {
    return this.deletes.reduce<number | undefined>((m, d) => (m === undefined || d.atMs < m ? d.atMs : m), undefined);
  }

  *entries(): IterableIterator<PublicFaultEntry> {
    for (const m of this.byNode.values()) yield* m.values();
  }

  /**
   * The node's public faults, one record per chip named `<chipPrefix>-<id>` (ClusterD names them
   * with the device-info's device type: `Ascend910`, or `npu` under huawei.com/npu).
   */
  records(node: string, chipPrefix: string): FaultRecord[] {
    const out: FaultRecord[] = [];
    for (const e of this.byNode.get(node)?.values() ?? []) {
      for (const id of e.devIds) {
        out.push({ node, source: 'public', code: e.code, level: e.level, reportedLevel: e.level, firstSeenMs: e.faultTimeMs, detail: `${e.resource}/${e.faultId}`, device: `${chipPrefix}-${id}`, origin: e.origin });
      }
    }
    return out;
  }
}
