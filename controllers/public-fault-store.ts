/**
 * Public faults held by the controller, one entry per (source, fault id, node) as ClusterD's cache
 * holds one per (node, resource + fault id) with the device ids inside it, and capped like it
 * (ClusterD pkg/domain/publicfault/cache.go AddPubFaultToCache: at 50,000 cached faults a new one is
 * refused with an error log; existing ones are still updated and recovered). The cap counts entries,
 * not chips, so an entry keeps its chips as a list and is expanded into per-chip records only when a
 * node's records are read: memory stays proportional to the entries.
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { PublicFaultRecord } from '../schemas/public-fault/public-fault-records.ts';
import { BOUNDS, type BoundReporter } from '../telemetry/bounds.ts';

/** ClusterD's maxPubFaultCacheNum (`--max-public-faults`). */
export const DEFAULT_MAX_PUBLIC_FAULTS = 50_000;
/** A public fault with assertion `once` clears itself after this long. */
export const PUBLIC_FAULT_ONCE_MS = 10_000;

interface Entry {
  /** The node-wide record (no device). */
  readonly record: FaultRecord;
  /** Chips named by the influence; undefined = the fault is node-wide. */
  readonly devices: readonly string[] | undefined;
  readonly expiresAtMs: number | undefined;
  /** ClusterD's statistic-fault-info keys a fault by resource + faultId and names its type. */
  readonly resource: string;
  readonly faultId: string;
  readonly faultType: string;
}

/** One held public fault, for readers that need more than the node's records (statistic-fault-info). */
export interface PublicFaultEntry {
  readonly record: FaultRecord;
  readonly devices: readonly string[] | undefined;
  readonly resource: string;
  readonly faultId: string;
  readonly faultType: string;
}

export interface PublicFaultStoreOptions {
  readonly maxFaults?: number;
  /** Where a refusal at the cap is counted and logged (clusterd_bound_hits_total{bound="public_faults"}). */
  readonly bounds?: BoundReporter;
}

export class PublicFaultStore {
  private readonly byNode = new Map<string, Map<string, Entry>>();
  private readonly expiring = new Set<string>();
  private count = 0;
  private readonly max: number;
  private readonly bounds: BoundReporter | undefined;

  constructor(opts: PublicFaultStoreOptions = {}) {
    this.max = opts.maxFaults ?? DEFAULT_MAX_PUBLIC_FAULTS;
    this.bounds = opts.bounds;
  }

  /** Entries held (what the cap counts). */
  get size(): number { return this.count; }

  /**
   * Applies the records of one payload from `source` (CM `ns/name`, or the gRPC resource).
   * `occur` adds or replaces, `once` adds for PUBLIC_FAULT_ONCE_MS, `recover` removes. Returns the
   * nodes whose faults changed.
   */
  apply(source: string, records: readonly PublicFaultRecord[], nowMs: number): Set<string> {
    const groups = new Map<string, { pf: PublicFaultRecord; devices: string[] | undefined }>();
    for (const pf of records) {
      const key = `${source}|${pf.faultId}|${pf.record.node}`;
      const g = groups.get(key);
      if (g === undefined) groups.set(key, { pf, devices: pf.record.device === undefined ? undefined : [pf.record.device] });
      else if (pf.record.device === undefined) g.devices = undefined;
      else g.devices?.push(pf.record.device);
    }
    const changed = new Set<string>();
    let refused = 0;
    const refusedExample: string[] = [];
    for (const [key, { pf, devices }] of groups) {
      const node = pf.record.node;
      const onNode = this.byNode.get(node);
      const existing = onNode?.get(key);
      if (pf.assertion === 'recover') {
        if (existing !== undefined) { this.remove(node, key); changed.add(node); }
        continue;
      }
      if (existing === undefined && this.count >= this.max) {
        refused++;
        if (refusedExample.length < 3) refusedExample.push(`${pf.faultId}@${node}`);
        continue;
      }
      const { device: _device, ...nodeWide } = pf.record;
      const expiresAtMs = pf.assertion === 'once' ? nowMs + PUBLIC_FAULT_ONCE_MS : undefined;
      const m = onNode ?? new Map<string, Entry>();
      if (onNode === undefined) this.byNode.set(node, m);
      if (existing === undefined) this.count++;
      m.set(key, { record: nodeWide, devices: devices === undefined ? undefined : [...new Set(devices)], expiresAtMs, resource: pf.resource, faultId: pf.faultId, faultType: pf.faultType });
      if (expiresAtMs === undefined) this.expiring.delete(key);
      else this.expiring.add(key);
      changed.add(node);
    }
    if (refused > 0) {
      this.bounds?.hit(BOUNDS.publicFaults, 'public faults refused: the cluster-wide cap is reached (as ClusterD: existing faults are kept and still recover)', {
        source, refused, held: this.count, maxPublicFaults: this.max, examples: refusedExample,
      }, refused);
    }
    return changed;
  }

  private remove(node: string, key: string): void {
    const m = this.byNode.get(node);
    if (m === undefined || !m.delete(key)) return;
    this.count--;
    this.expiring.delete(key);
    if (m.size === 0) this.byNode.delete(node);
  }

  /** Drops expired `once` faults; returns the nodes that changed. */
  expire(nowMs: number): Set<string> {
    const changed = new Set<string>();
    for (const key of this.expiring) {
      const node = nodeOfKey(key);
      const e = this.byNode.get(node)?.get(key);
      if (e?.expiresAtMs !== undefined && e.expiresAtMs <= nowMs) { this.remove(node, key); changed.add(node); }
    }
    return changed;
  }

  nextExpiry(): number | undefined {
    let next: number | undefined;
    for (const key of this.expiring) {
      const t = this.byNode.get(nodeOfKey(key))?.get(key)?.expiresAtMs;
      if (t !== undefined && (next === undefined || t < next)) next = t;
    }
    return next;
  }

  /** Every held entry (node-wide record, its chips). */
  *entries(): IterableIterator<PublicFaultEntry> {
    for (const m of this.byNode.values()) yield* m.values();
  }

  /** The node's public faults, one record per chip (or one node-wide record). */
  records(node: string): FaultRecord[] {
    const out: FaultRecord[] = [];
    for (const e of this.byNode.get(node)?.values() ?? []) {
      if (e.devices === undefined) out.push(e.record);
      else for (const device of e.devices) out.push({ ...e.record, device });
    }
    return out;
  }
}

/** The node is the last `|` field of a key (`source|faultId|node`; fault ids and node names have no `|`). */
const nodeOfKey = (key: string): string => key.slice(key.lastIndexOf('|') + 1);
