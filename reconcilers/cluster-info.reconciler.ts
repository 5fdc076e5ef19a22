/**
 * Makes `mindx-dl/cluster-info-device-N`, `cluster-info-switch-N` and `cluster-info-node-cm` (label
 * mx-consumer-volcano=true, data key = CM name) match the fault view: the contract with Volcano's
 * ascend plugin (docs/formats.md#cluster-info). One key, `cluster-info`, so a burst of node changes costs one
 * pass. Shards are cut at a 64 KiB target with stable cuts, never past 800 KiB, so a fault rewrites
 * one shard; a burst's changes after its first write are coalesced (docs/rules.md#ingest.cluster-info-shards).
 * Surplus shards from a larger past are blanked, never deleted.
 *
 * A pass costs what changed, not the cluster's size: each node's entries are kept encoded
 * (ClusterInfoCache), the intake's change notifications mark nodes dirty (`markDirty`), a pass
 * re-renders only those and builds the shards by joining the cached strings. The periodic refresh
 * renders every node again and warns about any node whose cached entry was stale (a change that
 * reached the view without a notification).
 *
 * Change detection ignores `UpdateTime`, as ClusterD's does (docs/rules.md#ingest.change-detection): a pass whose only
 * changes are newer `UpdateTime`s (the device plugin's and NodeD's periodic rewrites) writes nothing;
 * the new times go out with the next real change or the periodic refresh.
 *
 * Refresh, as ClusterD (application/resource/report.go cycleReport: the current content rewritten at
 * least every 5 s; an unchanged rewrite is a no-op for the apiserver, so no watch event): every
 * `refreshMs` the current content is written if it differs from what was written (we skip the
 * identical PUT altogether), no annotation. Volcano's staleness guard (ascend-for-volcano
 * common/k8s/cmmgr.go setNeedRestartInformer) looks at the time its informer last delivered an
 * event for a node (CacheUpdateTime) and restarts the informer, at most every 10 min, after 60 s
 * without one; with ClusterD that happens on an idle cluster too. The `clusterd-ts.io/refreshed-at`
 * annotation (bumped every full render, so Volcano always sees events) is an extension behind
 * `refreshAnnotation`; without it the annotation is removed from ConfigMaps that still carry it.
 */
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_LABELS, CLUSTER_INFO_MAX_SHARD_BYTES, CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_SHARD_TARGET_BYTES, CLUSTER_INFO_NODE_CM, CLUSTER_INFO_SWITCH_PREFIX, encodeClusterInfo, type ClusterInfoEntry, type ClusterInfoView } from '../schemas/cluster-info/cluster-info.ts';
import { mergeDeviceFaults, recomputeDeviceList } from '../schemas/cluster-info/device-list.ts';
import { encodeEntry, joinRange, shardClusterInfo, stableShardRanges, type EncodedEntry, type ShardRecut } from '../schemas/cluster-info/shard.ts';
import { compareUtf8 } from '../schemas/go-json.ts';
import { switchEntryInfo, withholdSwitchFaults } from '../schemas/cluster-info/switch-view.ts';
import { deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { switchInfoCmName } from '../schemas/device-info/switch-info.ts';
import { nodeInfoCmName } from '../schemas/node-info/node-info.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultStore } from '../state/fault-store.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapTarget, ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import { RULE } from '../vocabulary/rule-ids.ts';

export const CLUSTER_INFO_KEY = 'cluster-info';
/** Bumped on each periodic refresh so Volcano's informer sees fresh data (an identical PUT is a no-op). */
/** Extension (refreshAnnotation): bumped on each full render so Volcano's informer gets an event. */
export const REFRESHED_AT_ANNOTATION = 'clusterd-ts.io/refreshed-at';

export type { ClusterInfoView };

/**
 * Builds the entries Volcano reads from the store and the records after policy. Device entries are
 * recomputed by ClusterD's rules from the device plugin's lists plus every effective chip fault
 * (including public faults and policy escalations).
 *
 * `effective` is the scheduler view (after the per-job filters, docs/rules.md#filter.custom to #filter.stress-test, #filter.two-views);
 * `withheld` gives what those filters hid or dropped on the node, read right after `effective(node)`.
 * A withheld fault leaves every list Volcano reads: its chip leaves the device plugin's
 * `-Unhealthy` / `-NetworkUnhealthy` unless a visible non-normal fault keeps it there (ClusterD
 * DelFaultAndFix), and a withheld UB switch code leaves the switch entry, whose level is recomputed.
 * The device plugin's `ManuallySeparateNPU` chips stay where it put them.
 *
 * `nodes` limits the view to those nodes (one node's entries for the reconciler's cache); a node the
 * store does not know has no entries. `nowMs` is the UpdateTime of a node-info without `updateTime`.
 */
export function renderClusterInfo(
  store: FaultStore,
  effective: (node: string) => readonly FaultRecord[],
  nowMs: number,
  withheld: (node: string) => readonly FaultRecord[] = () => [],
  nodes?: Iterable<string>,
): ClusterInfoView {
  const view: ClusterInfoView = { device: {}, node: {}, switch: {} };
  for (const node of nodes ?? store.nodeNames().sort()) {
    const s = store.nodeState(node);
    if (s === undefined) continue;
    const records = effective(node);
    const hidden = withheld(node);
    if (s.device !== undefined) {
      const { cfg, lists } = s.device.data;
      const DeviceList = recomputeDeviceList({
        prefix: lists.prefix, available: lists.available, unhealthy: lists.unhealthy,
        networkUnhealthy: lists.networkUnhealthy, recovering: lists.recovering,
        faults: mergeDeviceFaults(records),
        ...(hidden.length === 0 ? {} : { withheld: mergeDeviceFaults(hidden), pinned: s.device.data.manuallySeparateNpu }),
      });
      view.device[deviceInfoCmName(node)] = {
        DeviceList, UpdateTime: cfg.DeviceInfo.UpdateTime, CmName: deviceInfoCmName(node),
        SuperPodID: cfg.SuperPodID, RackID: cfg.RackID ?? 0, ServerIndex: cfg.ServerIndex,
      };
      // ClusterD writes one switch entry per device-info that carries SwitchInfoCfg, the empty default too.
      const sw = s.device.data.switchInfo;
      if (sw?.ok === true) {
        const codes = new Set(hidden.filter((r) => r.source === 'switch').map((r) => r.code));
        const entry = switchEntryInfo(sw.value);
        const info = codes.size === 0 ? entry : withholdSwitchFaults(entry, codes, sw.value);
        view.switch[switchInfoCmName(node)] = { ...info, CmName: switchInfoCmName(node) };
      }
    }
    if (s.nodeInfo !== undefined) {
      const cm = s.nodeInfo.data.cm;
      view.node[nodeInfoCmName(node)] = {
        FaultDevList: cm.NodeInfo.FaultDevList, NodeStatus: cm.NodeInfo.NodeStatus,
        CmName: nodeInfoCmName(node), UpdateTime: s.nodeInfo.data.updateTimeMs ?? nowMs,
      };
    }
  }
  return view;
}

export interface ClusterInfoDeps {
  /** Every node that can have entries (what a full render covers). */
  readonly nodes: () => Iterable<string>;
  /**
   * One node's entries as Volcano must read them (every policy step applied), an empty view when it
   * has none. `nowMs`: UpdateTime of a node-info without its own (renderClusterInfo).
   */
  readonly renderNode: (node: string, nowMs: number) => ClusterInfoView;
  /** Nodes whose entries read these nodes' faults, re-rendered with them (default: none). */
  readonly peers?: (nodes: readonly string[]) => Iterable<string>;
  /** Cached ConfigMaps of mindx-dl (our own writes come back through the informer). */
  readonly actual: (name: string) => ConfigMap | undefined;
  readonly actualNames: () => readonly string[];
  readonly writer: ConfigMapWriter;
  /**
   * Write the current content (newer `UpdateTime`s included) at least this often (ClusterD: 5 s);
   * 0 = only on change. Every `max(refreshMs, AUDIT_INTERVAL_MS)` a pass also renders every node
   * again to check the cache.
   */
  readonly refreshMs: number;
  /**
   * Extension (--cluster-info-refresh-annotation, default off): bump `clusterd-ts.io/refreshed-at`
   * on every full render, so each one is a watch event for Volcano's informers.
   */
  readonly refreshAnnotation?: boolean;
  /**
   * The write budget, a token bucket: `burst` passes at once, then one per `minIntervalMs`. A pass
   * takes a token before it renders (a pass without one waits for the next token, and the dirty
   * nodes coalesce into it) and gives it back when it wrote nothing, so passes that change nothing
   * Volcano reads (pod events, policy re-notifications) never delay a fault. The manager follows
   * ClusterD's reporter (report.go limitRate: every report at once, but after 5 within one second it
   * sleeps a second): burst 5 (CLUSTER_INFO_WRITE_BURST), 5 a second sustained. The default burst,
   * 1, is a fixed minimum interval between passes.
   */
  readonly minIntervalMs?: number;
  readonly burst?: number;
  /**
   * Burst coalescing (docs/rules.md#ingest.cluster-info-shards): a change that comes while a write
   * is less than `burstQuietMs` old is part of a burst and waits until no new node has changed for
   * `burstQuietMs`, at most `burstMaxHoldMs`, so a storm spread over many shards writes each shard
   * about once after its first write; a lone change is written at once. 0 = off.
   */
  readonly burstQuietMs?: number;
  readonly burstMaxHoldMs?: number;
}

export const CLUSTER_INFO_MIN_INTERVAL_MS = 200;
/** A change within this long of the last write (or of the burst's last change) is coalesced with the burst. */
export const CLUSTER_INFO_BURST_QUIET_MS = 50;
/** The longest a burst's changes wait (ClusterD's report cycle: 1 s). */
export const CLUSTER_INFO_BURST_MAX_HOLD_MS = 1000;
/** Passes that may write back to back before `minIntervalMs` spaces them (ClusterD: maxTimePerSecond 5). */
export const CLUSTER_INFO_WRITE_BURST = 5;
/**
 * ClusterD creates an empty cluster-info-node-cm only with its cycle report, once this long has
 * passed without any cluster-info write (report.go cycleReport: atLeastReportCycle, counted from the
 * reporter's start and from every report); a node-info fault creates it at once (its own report).
 */
export const NODE_CM_QUIET_MS = 5000;
/** Shortest interval between full renders (the cache check), whatever the refresh interval. */
export const AUDIT_INTERVAL_MS = 30_000;
/** Shard writes of one pass in flight at once. */
const SHARD_WRITES_IN_FLIGHT = 8;
/** Stale entries found by one refresh that are logged by node name (the rest are counted). */
const MAX_STALE_NAMED = 20;

/** Every shard's value from the encoded shards, plus blanks for surplus shards already in the cluster. */
function assembleShards(device: readonly string[], sw: readonly string[], node: string, existing: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const put = (prefix: string, shards: readonly string[]): void => {
    // No entry of this kind: ClusterD creates no shard (SplitMapToSafeChunks gives none); one that
    // exists is blanked below like any surplus shard.
    if (shards.length === 1 && shards[0] === '') shards = [];
    shards.forEach((v, i) => out.set(`${prefix}${i}`, v));
    for (const name of existing) {
      if (!name.startsWith(prefix) || out.has(name)) continue;
      if (/^\d+$/.test(name.slice(prefix.length))) out.set(name, '');
    }
  };
  put(CLUSTER_INFO_DEVICE_PREFIX, device);
  put(CLUSTER_INFO_SWITCH_PREFIX, sw);
  out.set(CLUSTER_INFO_NODE_CM, node);
  return out;
}

/**
 * Every shard's desired value, including blanks for surplus shards already in the cluster, cut as
 * a first layout is (greedily at the target size; docs/rules.md#ingest.cluster-info-shards).
 */
export function desiredShards(view: ClusterInfoView, existing: readonly string[], maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES, targetBytes: number = CLUSTER_INFO_SHARD_TARGET_BYTES): Map<string, string> {
  const cut = Math.min(maxBytes, targetBytes);
  return assembleShards(shardClusterInfo(view.device, cut), shardClusterInfo(view.switch, cut), encodeClusterInfo(view.node), existing);
}

const KINDS = ['device', 'switch', 'node'] as const;
type Kind = typeof KINDS[number];
interface CachedEntry { readonly kind: Kind; readonly entry: EncodedEntry }
interface NodeSlot { readonly entries: readonly CachedEntry[]; readonly atMs: number }
interface BuiltShard { readonly start: number; readonly end: number; readonly value: string }

/** What `ClusterInfoCache.put` changed: nothing, only `UpdateTime` values, or what Volcano acts on. */
export type EntryChange = 'none' | 'timestamps' | 'content';

/**
 * An encoded entry with its `UpdateTime` values zeroed. Inside string values every quote is escaped,
 * so an unescaped `"UpdateTime":` is always one of the entry's own keys.
 */
const withoutUpdateTime = (text: string): string => text.replace(/"UpdateTime":-?\d+/g, '"UpdateTime":0');

/**
 * Each node's encoded cluster-info entries; shards are joined from them (same entry encoding, same
 * Go key order as `desiredShards` of the full view). The cuts are stable (stableShardRanges): a
 * changed entry rewrites its own shard only, whatever the cluster's size. A shard whose entries and
 * cut did not move since the last `shards` is reused as is (the same string, so the writer's
 * comparison with what it wrote last is cheap too).
 */
export class ClusterInfoCache {
  private readonly byNode = new Map<string, NodeSlot>();
  private readonly byKind: Record<Kind, Map<string, EncodedEntry>> = { device: new Map(), switch: new Map(), node: new Map() };
  /** Entries in Go key order per kind, updated in place; rebuilt when the key set changes (rare). */
  private readonly ordered: Partial<Record<Kind, { readonly entries: EncodedEntry[]; readonly index: ReadonlyMap<string, number> }>> = {};
  /** Keys whose encoded entry changed since the last `shards`. */
  private readonly changed: Record<Kind, Set<string>> = { device: new Set(), switch: new Set(), node: new Set() };
  /** The last shards per kind; dropped with `ordered` (their index ranges no longer name the same keys). */
  private readonly built: Partial<Record<Kind, readonly BuiltShard[]>> = {};
  /** Where each kind's shards start (their first keys after shard 0); kept across key set changes. */
  private readonly cuts: Partial<Record<Kind, readonly string[]>> = {};
  /** The key set changed since the last layout (a new or removed entry). */
  private readonly keysChanged: Record<Kind, boolean> = { device: false, switch: false, node: false };
  private readonly maxBytes: number;
  private readonly targetBytes: number;
  /** Why the cuts of a kind moved in the last `shards` (logged by the reconciler). */
  recuts: Array<{ readonly kind: Kind; readonly reason: ShardRecut; readonly shards: number }> = [];

  constructor(maxBytes: number = CLUSTER_INFO_MAX_SHARD_BYTES, targetBytes: number = CLUSTER_INFO_SHARD_TARGET_BYTES) {
    this.maxBytes = maxBytes;
    this.targetBytes = Math.min(targetBytes, maxBytes);
  }

  get nodeCount(): number { return this.byNode.size; }
  nodes(): IterableIterator<string> { return this.byNode.keys(); }
  /** When the node's entries were rendered (the UpdateTime of a node-info without one). */
  renderedAt(node: string): number | undefined { return this.byNode.get(node)?.atMs; }

  /** Replaces one node's entries by `view` (that node's entries only); says what changed. */
  put(node: string, view: ClusterInfoView, atMs: number): EntryChange {
    const fresh: CachedEntry[] = [];
    for (const kind of KINDS) {
      const entries: Readonly<Record<string, ClusterInfoEntry>> = view[kind];
      for (const key of Object.keys(entries)) fresh.push({ kind, entry: encodeEntry(key, entries[key]!) });
    }
    const old = this.byNode.get(node)?.entries ?? [];
    let change: EntryChange = old.length !== fresh.length ? 'content' : 'none';
    for (const o of old) {
      if (fresh.some((f) => f.kind === o.kind && f.entry.key === o.entry.key)) continue;
      this.byKind[o.kind].delete(o.entry.key);
      this.keySetChanged(o.kind);
      change = 'content';
    }
    for (const f of fresh) {
      const m = this.byKind[f.kind];
      const prev = m.get(f.entry.key);
      if (prev?.text === f.entry.text) continue;
      m.set(f.entry.key, f.entry);
      if (prev === undefined || withoutUpdateTime(prev.text) !== withoutUpdateTime(f.entry.text)) change = 'content';
      else if (change === 'none') change = 'timestamps';
      const o = this.ordered[f.kind];
      if (prev === undefined || o === undefined) { this.keySetChanged(f.kind); continue; }
      o.entries[o.index.get(f.entry.key)!] = f.entry;
      this.changed[f.kind].add(f.entry.key);
    }
    if (fresh.length === 0) this.byNode.delete(node);
    else this.byNode.set(node, { entries: fresh, atMs });
    return change;
  }

  clear(): void {
    this.byNode.clear();
    for (const kind of KINDS) { this.byKind[kind].clear(); this.keySetChanged(kind); delete this.cuts[kind]; }
  }

  private keySetChanged(kind: Kind): void {
    delete this.ordered[kind];
    delete this.built[kind];
    this.changed[kind].clear();
    this.keysChanged[kind] = true;
  }

  private kindShards(kind: Kind, maxBytes: number): string[] {
    const changed = this.changed[kind];
    let built = this.built[kind];
    if (built === undefined || changed.size > 0) {
      let o = this.ordered[kind];
      if (o === undefined) {
        const m = this.byKind[kind];
        const keys = [...m.keys()].sort(compareUtf8);
        o = { entries: keys.map((k) => m.get(k)!), index: new Map(keys.map((k, i) => [k, i])) };
        this.ordered[kind] = o;
      }
      const { entries } = o;
      const touched = [...changed].map((k) => o.index.get(k)!).sort((a, b) => a - b);
      const prev = built;
      let j = 0;
      // A shard is joined again when one of its entries changed or its cut moved; the others are
      // the strings of the last pass.
      const layout = maxBytes === Infinity ? { ranges: entries.length === 0 ? [] : [[0, entries.length] as const], cuts: [] }
        : stableShardRanges(entries, this.cuts[kind], { maxBytes, targetBytes: this.targetBytes, keysChanged: this.keysChanged[kind] });
      this.cuts[kind] = layout.cuts;
      this.keysChanged[kind] = false;
      if ('recut' in layout && layout.recut !== undefined) this.recuts.push({ kind, reason: layout.recut, shards: layout.ranges.length });
      built = layout.ranges.map(([start, end], i): BuiltShard => {
        while (j < touched.length && touched[j]! < start) j++;
        const p = prev?.[i];
        if (p !== undefined && p.start === start && p.end === end && !(j < touched.length && touched[j]! < end)) return p;
        return { start, end, value: joinRange(entries, start, end) };
      });
      this.built[kind] = built;
      changed.clear();
    }
    return built.length === 0 ? [''] : built.map((b) => b.value);
  }

  /** The shard values of the cached view (a first layout is `desiredShards`'), blanks for surplus shards. */
  shards(existing: readonly string[]): Map<string, string> {
    this.recuts = [];
    const node = this.kindShards('node', Infinity)[0]!; // never sharded
    return assembleShards(this.kindShards('device', this.maxBytes), this.kindShards('switch', this.maxBytes), node, existing);
  }
}

export interface ClusterInfoStats {
  /** Passes that rendered every node (the first one, refreshes, after an error). */
  fullRenders: number;
  /** Node renders, full and incremental. */
  nodesRendered: number;
  /** Nodes a refresh found stale although no notification named them (missed invalidations). */
  staleEntries: number;
  /** Passes that changed only `UpdateTime` values and so wrote nothing. */
  timestampOnlyPasses: number;
}

export interface ClusterInfoReconciler extends Reconciler {
  /** These nodes' entries may have changed: the next pass renders them again. */
  markDirty(nodes: Iterable<string>): void;
  readonly stats: Readonly<ClusterInfoStats>;
}

export function clusterInfoReconciler(deps: ClusterInfoDeps): ClusterInfoReconciler {
  let lastFullWriteMs = 0;
  let lastAuditMs = 0;
  const auditMs = Math.max(deps.refreshMs, AUDIT_INTERVAL_MS);
  const minInterval = deps.minIntervalMs ?? CLUSTER_INFO_MIN_INTERVAL_MS;
  const burst = Math.max(1, deps.burst ?? 1);
  let tokens = burst;
  /** A pass returned early to wait (write tokens, a burst's hold): its work is still to do. */
  let putOff = false;
  const quietMs = deps.burstQuietMs ?? 0;
  const maxHoldMs = deps.burstMaxHoldMs ?? CLUSTER_INFO_BURST_MAX_HOLD_MS;
  /** When the last pass that wrote ended. */
  let lastWriteMs = -Infinity;
  /** A burst being held: since when, when a new node last joined it, how many nodes it had then. */
  let hold: { sinceMs: number; changedMs: number; nodes: number } | undefined;
  /** How long the pass must wait for the burst it belongs to; 0 = write now. */
  const burstWait = (now: number): number => {
    if (quietMs <= 0 || !primed || dirty.size === 0) return 0;
    if (hold === undefined) {
      if (now - lastWriteMs >= quietMs) return 0; // a lone change: at once
      hold = { sinceMs: now, changedMs: now, nodes: dirty.size };
    } else if (dirty.size > hold.nodes) {
      hold.changedMs = now;
      hold.nodes = dirty.size;
    }
    const wait = Math.min(hold.changedMs + quietMs, hold.sinceMs + maxHoldMs) - now;
    return wait > 0 ? Math.ceil(wait) : 0;
  };
  let refilledMs = -Infinity;
  /** Takes a write token; answers the wait until one is there when there is none. */
  const take = (now: number): number => {
    if (minInterval <= 0) return 0;
    tokens = Math.min(burst, tokens + (now - refilledMs) / minInterval);
    refilledMs = now;
    if (tokens >= 1) { tokens -= 1; return 0; }
    return Math.ceil((1 - tokens) * minInterval);
  };
  const cache = new ClusterInfoCache();
  let primed = false;
  let dirty = new Set<string>();
  const stats: ClusterInfoStats = { fullRenders: 0, nodesRendered: 0, staleEntries: 0, timestampOnlyPasses: 0 };
  /** A change Volcano acts on is in the cache but not yet written (set on render, cleared by a full write). */
  let unwritten = false;
  /** The shards of the last pass that wrote from the cache. */
  let lastShards: Map<string, string> | undefined;
  /** ClusterD's reportTime: the first pass, then every pass that wrote (NODE_CM_QUIET_MS). */
  let lastReportMs: number | undefined;
  /** cluster-info-node-cm exists (seen in the cache or written by us): from then on it is written as any shard. */
  let nodeCmExists = false;

  const render = (node: string, atMs: number): EntryChange => {
    stats.nodesRendered++;
    const change = cache.put(node, deps.renderNode(node, atMs), atMs);
    if (change === 'content') unwritten = true;
    return change;
  };

  /**
   * Renders every node; returns the nodes whose cached entries were stale without being dirty. A
   * clean node keeps its render time, so a node-info without `updateTime` keeps its UpdateTime.
   */
  const renderAll = (now: number, pending: ReadonlySet<string>): string[] => {
    stats.fullRenders++;
    const stale: string[] = [];
    const seen = new Set<string>();
    for (const node of deps.nodes()) {
      seen.add(node);
      const atMs = pending.has(node) ? now : (cache.renderedAt(node) ?? now);
      if (render(node, atMs) !== 'none' && !pending.has(node)) stale.push(node);
    }
    for (const node of [...cache.nodes()]) {
      if (seen.has(node)) continue;
      if (cache.put(node, { device: {}, node: {}, switch: {} }, now) !== 'none' && !pending.has(node)) stale.push(node);
      unwritten = true;
    }
    return stale;
  };

  /** The annotation part of a shard's target: bumped on full renders (extension), else removed if left over. */
  const refreshAnnotation = (actual: ConfigMap | undefined, audit: boolean, stamp: string): Pick<ConfigMapTarget, 'annotations' | 'removeAnnotations'> => {
    if (deps.refreshAnnotation !== true) return { removeAnnotations: [REFRESHED_AT_ANNOTATION] };
    const keep = actual?.metadata?.annotations?.[REFRESHED_AT_ANNOTATION];
    return { annotations: { [REFRESHED_AT_ANNOTATION]: audit || keep === undefined ? stamp : keep } };
  };

  return {
    name: 'cluster_info',
    get stats() { return stats; },
    settling: () => putOff,
    markDirty(nodes: Iterable<string>): void {
      for (const n of nodes) dirty.add(n);
    },
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const now = ctx.now();
      putOff = false;
      const held = burstWait(now);
      if (held > 0) { putOff = true; return { requeueAfterMs: held }; }
      const burstOf = hold;
      hold = undefined;
      const wait = take(now);
      if (wait > 0) { putOff = true; return { requeueAfterMs: wait }; }
      const refresh = deps.refreshMs > 0 && now - lastFullWriteMs >= deps.refreshMs;
      const audit = refresh && now - lastAuditMs >= auditMs;
      const pending = dirty;
      dirty = new Set();
      try {
        if (!primed) {
          cache.clear();
          renderAll(now, pending);
          primed = true;
          lastAuditMs = now;
        } else if (audit) {
          lastAuditMs = now;
          const stale = renderAll(now, pending);
          if (stale.length > 0) {
            stats.staleEntries += stale.length;
            for (const node of stale.slice(0, MAX_STALE_NAMED)) ctx.log.warn('cluster-info entry was stale: its view changed without a change notification (missed invalidation); rewritten', { node });
            if (stale.length > MAX_STALE_NAMED) ctx.log.warn('more stale cluster-info entries', { count: stale.length, named: MAX_STALE_NAMED });
          }
        } else {
          const nodes = [...pending];
          for (const peer of deps.peers?.(nodes) ?? []) pending.add(peer);
          let timestamps = false;
          for (const node of pending) timestamps = render(node, now) === 'timestamps' || timestamps;
          if (timestamps && !unwritten) {
            stats.timestampOnlyPasses++;
            ctx.log.debug('cluster-info: only UpdateTime values changed; they go out with the next change or refresh', { nodes: pending.size });
          }
        }
      } catch (e) {
        primed = false; // some dirty nodes may not have been rendered: render all next time
        throw e;
      }
      // Nothing Volcano acts on changed since the last write: keep what was written (a ConfigMap
      // deleted or edited by someone else is still put back), newer UpdateTimes wait.
      const shards = unwritten || refresh || lastShards === undefined ? cache.shards(deps.actualNames()) : lastShards;
      // Cuts move only when they must (docs/rules.md#ingest.cluster-info-shards): say when and why.
      for (const r of cache.recuts) ctx.log.info('cluster-info shards cut', { rule: RULE.ingest.clusterInfoShards, kind: r.kind, reason: r.reason, shards: r.shards });
      cache.recuts = [];
      let written = 0;
      const stamp = new Date(now).toISOString();
      lastReportMs ??= now;
      nodeCmExists ||= deps.actual(CLUSTER_INFO_NODE_CM) !== undefined;
      let holdNodeCmMs = 0;
      const writes: Array<{ readonly target: ConfigMapTarget; readonly actual: ConfigMap | undefined }> = [];
      for (const [name, value] of shards) {
        const actual = deps.actual(name);
        if (name === CLUSTER_INFO_NODE_CM && !nodeCmExists && value === '') {
          // No node fault and no node CM yet: ClusterD creates the empty one with its first quiet cycle.
          const quietFor = now - lastReportMs;
          if (quietFor < NODE_CM_QUIET_MS) { holdNodeCmMs = NODE_CM_QUIET_MS - quietFor; continue; }
        }
        writes.push({ target: { namespace: CLUSTER_INFO_NAMESPACE, name, labels: { ...CLUSTER_INFO_LABELS }, data: { [name]: value }, ...refreshAnnotation(actual, audit, stamp) }, actual });
      }
      // Shards are separate objects: the ones that changed are written side by side (a storm's, a
      // first render's), a few at a time; a failed one fails the pass after the others landed.
      let failed: unknown;
      let at = 0;
      const worker = async (): Promise<void> => {
        while (at < writes.length) {
          const { target, actual } = writes[at++]!;
          try {
            if ((await deps.writer.ensure('cluster_info', target, actual)).written) written++;
            if (target.name === CLUSTER_INFO_NODE_CM) nodeCmExists = true;
          } catch (e) { failed ??= e; }
        }
      };
      await Promise.all(Array.from({ length: Math.min(SHARD_WRITES_IN_FLIGHT, writes.length) }, worker));
      if (failed !== undefined) throw failed;
      if (written > 0) { lastReportMs = now; lastWriteMs = ctx.now(); }
      else tokens = Math.min(burst, tokens + 1); // nothing written: the pass cost no write
      if (burstOf !== undefined) ctx.log.info('cluster-info burst coalesced', { rule: RULE.ingest.clusterInfoShards, nodes: burstOf.nodes, heldMs: now - burstOf.sinceMs, shards: written });
      unwritten = false;
      lastShards = shards;
      if (refresh) lastFullWriteMs = now;
      if (written > 0) ctx.log.info('cluster-info written', { shards: written, names: [...shards.keys()] });
      const refreshIn = deps.refreshMs > 0 ? Math.max(1000, deps.refreshMs - (now - lastFullWriteMs)) : undefined;
      const next = holdNodeCmMs > 0 ? Math.min(holdNodeCmMs, refreshIn ?? Infinity) : refreshIn;
      return next === undefined ? {} : { requeueAfterMs: next };
    },
  };
}
