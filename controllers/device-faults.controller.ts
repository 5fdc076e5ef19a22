/**
 * The intake flow: device-info, node-info, public-fault ConfigMaps, PubFault and Nodes -> FaultStore
 * -> `onChange` (the nodes it changed) -> the fault-view stage (controllers/fault-view-stage.ts). This file holds the flow's only
 * subscribe (docs/CONVENTIONS.md#data-path). Bad input is logged with its reason, counted, and changes nothing.
 * Delayed public-fault deletes run from one work-queue key armed for the next one due
 * (runtime/timer-loop.ts).
 */
import { combineLatest, filter, merge, map, skipUntil, take, type Subscription } from 'rxjs';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { WatchEvent } from '../runtime/reflector.ts';
import type { QueueClock } from '../runtime/clock.ts';
import { TimerLoop } from '../runtime/timer-loop.ts';
import { FaultStore, type Rejection } from '../state/fault-store.ts';
import { DeviceInfoLastGood, LAST_GOOD_CM_NAME, type PersistedLastGood } from '../state/device-info-last-good.ts';
import { deviceInfoDataOfPublished } from '../schemas/cluster-info/published-device-info.ts';
import type { DeviceInfoEntry } from '../schemas/cluster-info/cluster-info.ts';
import { goJson, goMap } from '../schemas/go-json.ts';
import { nodeNameOfDeviceInfoCm } from '../schemas/device-info/device-info.ts';
import { nodeNameOfNodeInfoCm } from '../schemas/node-info/node-info.ts';
import type { ConfigMap, Node } from '../runtime/kube-objects.ts';
import type { Sources } from './sources/sources.ts';
import { STATISTIC_FAULT_KEYS, parsePublicFaults } from '../schemas/statistic-fault/statistic-fault.ts';
import { kindOf } from '../schemas/parsed.ts';
import type { PubFaultInfo } from '../schemas/public-fault/public-fault.ts';

/** Re-levels and escalates a node's records (policy/); identity = trust what the agents wrote. */
export interface FaultPolicy {
  effective(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[];
  /**
   * Called by the fault-view stage after each pass of `effective` calls: report what those
   * evaluations changed beyond the evaluated nodes (other nodes' views, state to persist) and arm
   * the next deadline. A read never does this (controllers/fault-view-stage.ts).
   */
  settle?(): void;
  /**
   * What the rendered view of a node reads beyond its records (pre-separate: which PreSeparateNPU
   * chips a pod uses), so a change of it alone (a job ending) re-renders the node. '' = nothing.
   */
  viewInputs?(node: string, jobView: readonly FaultRecord[]): string;
}

export const trustReportedLevels: FaultPolicy = { effective: (_n, records) => records };

/** A public-fault message from a sender other than a ConfigMap (gRPC): who sent it and the checked payload. */
export interface PublicFaultMessage {
  /** Stands in for the CM's namespace/name in logs and in the store's per-sender bookkeeping. */
  readonly origin: string;
  readonly info: PubFaultInfo;
}

export interface PublicFaultSenders {
  readonly namespaceAllowed: (namespace: string) => boolean;
  /** The flag's text, for the refusal's log line. */
  readonly namespaces: string;
  readonly unknownNodes: boolean;
}

/** ClusterD's sender rules: every namespace, every node name. */
export const OPEN_PUBLIC_FAULT_SENDERS: PublicFaultSenders = { namespaceAllowed: () => true, namespaces: '*', unknownNodes: true };

/** Nodes whose effective faults may have changed, emitted once per intake event. */
export interface FaultChange {
  readonly nodes: readonly string[];
  readonly atMs: number;
}

type Input =
  | { kind: 'nodes-synced' }
  | { kind: 'device'; ev: WatchEvent<ConfigMap> }
  | { kind: 'nodeinfo'; ev: WatchEvent<ConfigMap> }
  | { kind: 'public'; ev: WatchEvent<ConfigMap> }
  /** A public fault sent over gRPC (PubFault.SendPublicFault): the same message as a CM's payload, without a CM. */
  | { kind: 'pubfault'; message: PublicFaultMessage }
  | { kind: 'node'; ev: WatchEvent<Node> };

export interface DeviceFaultsDeps {
  readonly sources: Sources;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Where the kept fault view is read (controllers/fault-view.ts); without it, the records as reported. */
  readonly view?: { effective(node: string): readonly FaultRecord[] };
  /** The controller's clock (runtime/clock.ts): intake times and the public-fault delete key. */
  readonly clock: QueueClock;
  /** The intake's state, when the wiring builds it first (the fault view reads it); else a new one. */
  readonly store?: FaultStore;
  /** Called whenever the cluster view may have changed (enqueue the cluster-info key). */
  readonly onChange: (change: FaultChange) => void;
  /** Cluster-wide cap of public faults (`--max-public-faults`, ClusterD: 50,000). */
  readonly maxPublicFaults?: number;
  /**
   * Who may send public faults (`--public-fault-namespaces`, `--public-fault-unknown-nodes`): the
   * namespaces public-fault ConfigMaps are taken from, and whether a fault may name a node that has
   * no Node object (ClusterD: any namespace, any name).
   */
  readonly publicFaultSenders: PublicFaultSenders;
  /** The set of nodes held on their last good device-info changed (persist it). */
  readonly onLastGoodChange?: () => void;
  /**
   * A public-fault message was accepted, or a delayed public-fault delete ran: ClusterD rewrites
   * statistic-fault-info after each (and after nothing else).
   */
  readonly onPublicFaultMessage?: () => void;
}

/** The work-queue key of the public-fault deletes, armed for the next one due. */
const PUBLIC_FAULT_DELETE_KEY = 'public-fault-deletes';
/**
 * Due deletes run on this grid (from `start`), as a poll would find them: ClusterD's delete queue
 * polls every 500 ms, so its deletes land 0-500 ms after they are due; ours 0-250 ms, and never
 * before a write ClusterD would have made in between (a differential scenario waits right there).
 */
const PUBLIC_FAULT_DELETE_POLL_MS = 250;

/** The intake's public-fault entry, a port of the intake flow (the gRPC PubFault service submits through it). */
export type PublicFaultIntake = Pick<DeviceFaultsController, 'submitPublicFault'>;

export class DeviceFaultsController {
  readonly store: FaultStore;
  /** Last good device-info of nodes whose current one is rejected (persisted by the leader). */
  readonly lastGood: DeviceInfoLastGood;
  private sub: Subscription | undefined;
  private readonly timers: TimerLoop;
  /** Origin of the delete grid. */
  private pollOriginMs: number;
  private readonly deps: DeviceFaultsDeps;
  private readonly now: () => number;
  /** Nodes named by device-info / node-info without a Node object, logged once until the Node appears. */
  private readonly warnedUnknown = new Set<string>();

  constructor(deps: DeviceFaultsDeps) {
    this.deps = deps;
    this.store = deps.store ?? new FaultStore({ publicFaults: { maxFaults: deps.maxPublicFaults, bounds: deps.metrics.bounds } });
    this.lastGood = new DeviceInfoLastGood({ bounds: deps.metrics.bounds });
    const clock = deps.clock;
    this.now = () => clock.now();
    this.timers = new TimerLoop({ name: 'public_fault_deletes', log: deps.log, metrics: deps.metrics, clock }, (_key, nowMs) => this.runPublicFaultDeletes(nowMs));
    this.pollOriginMs = this.now();
  }

  /** The scheduler view of a node (kept by the fault view): what decisions and cluster-info use. */
  effective(node: string): readonly FaultRecord[] {
    return this.deps.view?.effective(node) ?? this.store.records(node);
  }

  start(): void {
    const s = this.deps.sources;
    const inputs$ = merge(
      s.deviceInfo.events$.pipe(map((ev): Input => ({ kind: 'device', ev }))),
      s.nodeInfo.events$.pipe(map((ev): Input => ({ kind: 'nodeinfo', ev }))),
      // The first list of public-fault ConfigMaps is not applied: ClusterD registers its handler
      // only after the node and pod informers synced, so their initial Add events reach no one and a
      // restart re-reads no public-fault ConfigMap (only statistic-fault-info, loadPublicFaults).
      // Later adds (a relist's new ones included) and updates are messages. The Node list comes first
      // (as in ClusterD), so that a fault's node is known to exist or not.
      s.publicFaults.events$.pipe(
        skipUntil(combineLatest([s.publicFaults.synced$, s.nodes.synced$]).pipe(filter(([a, b]) => a && b))),
        map((ev): Input => ({ kind: 'public', ev })),
      ),
      s.nodes.events$.pipe(map((ev): Input => ({ kind: 'node', ev }))),
      s.nodes.synced$.pipe(filter(Boolean), take(1), map((): Input => ({ kind: 'nodes-synced' }))),
    );
    this.sub = inputs$.subscribe({
      next: (input) => this.apply(input),
      error: (err: unknown) => this.deps.log.error('intake stream failed', { err: String(err) }),
    });
    this.pollOriginMs = this.now();
    this.timers.start();
    this.armPublicFaultDeletes();
  }

  stop(): void {
    this.sub?.unsubscribe();
    void this.timers.stop(); // drops the armed key at once; the loop ends on its own
  }

  /** Runs the public-fault deletes due now; each batch that ran rewrites statistic-fault-info (as ClusterD). */
  private runPublicFaultDeletes(nowMs: number): void {
    const { ran } = this.store.expirePublicFaults(nowMs);
    if (ran > 0) {
      this.flush();
      this.deps.onPublicFaultMessage?.();
    }
    this.armPublicFaultDeletes();
  }

  /** Arms the delete key at the grid point of the next delete due (an earlier armed one stays and re-arms when it runs). */
  private armPublicFaultDeletes(): void {
    const next = this.store.nextPublicFaultExpiry();
    if (next === undefined) return;
    const at = this.pollOriginMs + Math.ceil((next - this.pollOriginMs) / PUBLIC_FAULT_DELETE_POLL_MS) * PUBLIC_FAULT_DELETE_POLL_MS;
    this.timers.after(PUBLIC_FAULT_DELETE_KEY, at - this.now());
  }

  /**
   * Replays the current caches (after a restart every source starts with a list, so this is rarely
   * needed). Not public-fault ConfigMaps: each event of theirs is a message, applied once.
   */
  resync(): void {
    const s = this.deps.sources;
    for (const cm of s.deviceInfo.store.values()) this.apply({ kind: 'device', ev: { type: 'add', obj: cm } });
    for (const cm of s.nodeInfo.store.values()) this.apply({ kind: 'nodeinfo', ev: { type: 'add', obj: cm } });
    for (const n of s.nodes.store.values()) this.apply({ kind: 'node', ev: { type: 'add', obj: n } });
  }

  private apply(input: Input): Rejection | undefined {
    if (input.kind === 'nodes-synced') {
      this.checkAllNodesKnown();
      return undefined;
    }
    const now = this.now();
    if (input.kind === 'pubfault') {
      const rejection = this.store.applyPublicFaultMessage(input.message.origin, input.message.info, now, this.nodeExists);
      if (rejection === undefined) this.deps.onPublicFaultMessage?.();
      this.armPublicFaultDeletes();
      this.countUnknownNodes('grpc');
      this.report(rejection, undefined, false);
      return rejection;
    }
    let rejection: Rejection | undefined;
    const { ev } = input;
    switch (input.kind) {
      case 'device':
        if (ev.type === 'delete') {
          const node = this.store.deleteDeviceInfo(ev.obj as ConfigMap);
          if (node !== undefined && this.lastGood.remove(node)) this.deps.onLastGoodChange?.();
          this.deps.log.warn('device-info ConfigMap deleted; the node\'s device faults are removed (as ClusterD does)', { node, name: ev.obj.metadata?.name });
        } else {
          rejection = this.store.applyDeviceInfo(ev.obj as ConfigMap, now);
          this.trackLastGood(ev.obj as ConfigMap, rejection === undefined);
          if (rejection === undefined) this.checkNodeKnown('device-info', nodeNameOfDeviceInfoCm(ev.obj.metadata?.namespace ?? '', ev.obj.metadata?.name ?? ''));
        }
        break;
      case 'nodeinfo':
        if (ev.type === 'delete') this.store.deleteNodeInfo(ev.obj as ConfigMap);
        else {
          rejection = this.store.applyNodeInfo(ev.obj as ConfigMap, now);
          if (rejection === undefined) this.checkNodeKnown('node-info', nodeNameOfNodeInfoCm(ev.obj.metadata?.namespace ?? '', ev.obj.metadata?.name ?? ''));
        }
        break;
      case 'public':
        // A delete (or the label taken off) changes nothing, as in ClusterD.
        if (ev.type !== 'delete' && this.senderNamespace(ev.obj as ConfigMap)) {
          rejection = this.store.applyPublicFault(ev.obj as ConfigMap, now, this.nodeExists);
          if (rejection === undefined) this.deps.onPublicFaultMessage?.();
          this.armPublicFaultDeletes();
          this.countUnknownNodes('configmap');
        }
        break;
      case 'node':
        if (ev.type === 'delete') this.store.deleteNode(ev.obj as Node, now);
        else {
          this.store.applyNode(ev.obj as Node, now);
          this.warnedUnknown.delete(ev.obj.metadata?.name ?? '');
        }
        break;
    }
    this.report(rejection, ev.obj.metadata?.resourceVersion, input.kind === 'device' && !this.lastGood.isHeld(this.deviceNode(ev.obj as ConfigMap) ?? ''));
    return rejection;
  }

  /** Logs and counts what the input lost (all of it, or parts), then publishes the changed nodes. */
  private report(rejection: Rejection | undefined, resourceVersion: string | undefined, noEarlierDeviceInfo: boolean): void {
    if (rejection !== undefined) {
      this.deps.metrics.invalidInput.inc({ format: rejection.format, reason: rejection.kind });
      const fields = { format: rejection.format, object: rejection.object, reason: rejection.reason, kind: rejection.kind, resourceVersion };
      if (noEarlierDeviceInfo) this.deps.log.warn('input rejected; the node has no earlier good device-info, so no device faults are known for it', fields);
      else this.deps.log.warn('input rejected; last good state kept', fields);
    }
    for (const part of this.store.drainPartial()) {
      this.deps.metrics.invalidInput.inc({ format: part.format, reason: part.kind });
      this.deps.log.warn('part of an input rejected; kept in force: ' + (part.kept ?? 'the rest'), { format: part.format, object: part.object, reason: part.reason, kind: part.kind, resourceVersion });
    }
    this.flush();
  }

  /** undefined = any node name (ClusterD); else a name must have a Node object. */
  private get nodeExists(): ((node: string) => boolean) | undefined {
    if (this.deps.publicFaultSenders.unknownNodes) return undefined;
    const nodes = this.deps.sources.nodes;
    return (node) => nodes.get(node) !== undefined;
  }

  /**
   * A public-fault ConfigMap outside the sender namespaces is refused whole: logged, counted, nothing
   * of it applied (any namespace's user could write one; the senders' namespaces are the admins').
   */
  private senderNamespace(cm: ConfigMap): boolean {
    const namespace = cm.metadata?.namespace ?? '';
    if (this.deps.publicFaultSenders.namespaceAllowed(namespace)) return true;
    this.deps.metrics.publicFaultsRefused.inc({ reason: 'namespace', via: 'configmap' });
    this.deps.log.warn('public-fault ConfigMap refused: not in a sender namespace (--public-fault-namespaces)', {
      object: `${namespace}/${cm.metadata?.name ?? ''}`, resourceVersion: cm.metadata?.resourceVersion, senderNamespaces: this.deps.publicFaultSenders.namespaces,
    });
    return false;
  }

  /** Public faults refused for a node with no Node object (logged with the input's rejection or partial rejection). */
  private countUnknownNodes(via: 'configmap' | 'grpc' | 'reload'): void {
    const n = this.store.drainUnknownNodeRefusals();
    if (n > 0) this.deps.metrics.publicFaultsRefused.inc({ reason: 'unknown_node', via }, n);
  }

  private deviceNode(cm: ConfigMap): string | undefined {
    return nodeNameOfDeviceInfoCm(cm.metadata?.namespace ?? '', cm.metadata?.name ?? '');
  }

  private trackLastGood(cm: ConfigMap, accepted: boolean): void {
    const node = this.deviceNode(cm);
    if (node === undefined) return;
    const changed = accepted ? this.lastGood.accept(node, cm.metadata?.name ?? '', cm.data ?? {}) : this.lastGood.reject(node);
    if (changed) this.deps.onLastGoodChange?.();
  }

  /**
   * After the caches synced: a node whose device-info is still rejected and that has no state yet
   * gets the last good device-info the previous leader persisted (`persisted.good`: CM name -> raw
   * data), through the same parser and CheckCode check as a live update.
   *
   * A damaged entry (`persisted.damaged`, or good data that no longer parses) is never skipped
   * quietly: it is logged, counted (clusterd_last_good_damaged_total) and kept verbatim in the
   * persisted ConfigMap (state/device-info-last-good.ts keepDamaged). A node whose live device-info
   * is valid needs nothing from it (the live one wins: `live`). For a node whose device-info is still
   * invalid, its last published cluster-info-device entry (`published`, CM name -> entry, read by the
   * manager) stands in, through the same parser and CheckCode check, so its fault does not vanish
   * from cluster-info and from job decisions (`published`; none there: `none`, the node is missing
   * from cluster-info-device as after a ClusterD restart).
   */
  restoreLastGood(persisted: PersistedLastGood, published: ReadonlyMap<string, DeviceInfoEntry> = new Map()): void {
    if (persisted.good.size === 0 && persisted.damaged.size === 0) return;
    const now = this.now();
    let restored = 0;
    for (const cm of this.deps.sources.deviceInfo.store.values()) {
      const node = this.deviceNode(cm);
      const name = cm.metadata?.name ?? '';
      if (node === undefined) continue;
      let damage = persisted.damaged.get(name);
      const data = persisted.good.get(name);
      const live = this.store.nodeState(node)?.device !== undefined;
      if (data !== undefined && !live) {
        const rejection = this.store.applyDeviceInfo({ ...cm, data }, now);
        if (rejection === undefined) {
          this.lastGood.accept(node, name, data);
          this.lastGood.reject(node);
          restored++;
          this.deps.log.warn('device-info still invalid at start; its last good state restored from the persisted copy', { node, name });
          continue;
        }
        damage = { text: goJson(goMap({ ...data })), reason: `does not parse as device-info: ${rejection.reason}` };
      }
      if (damage === undefined) continue;
      if (live) {
        this.deps.metrics.lastGoodDamaged.inc({ fallback: 'live' });
        this.deps.log.warn('persisted last good device-info entry is damaged; not needed, the node\'s device-info is valid', { node, name, reason: damage.reason });
        continue;
      }
      const entry = published.get(name);
      const fallback = entry !== undefined && this.store.applyDeviceInfo({ ...cm, data: deviceInfoDataOfPublished(entry) }, now) === undefined ? 'published' : 'none';
      this.lastGood.keepDamaged(node, name, damage.text);
      if (fallback === 'published') restored++;
      this.deps.metrics.lastGoodDamaged.inc({ fallback });
      this.deps.log.error(fallback === 'published'
        ? 'persisted last good device-info entry is damaged and the device-info still invalid; the node\'s faults are taken from its last published cluster-info entry until its device-info is valid again; the entry is kept as it is'
        : 'persisted last good device-info entry is damaged and the device-info still invalid, and the node has no published cluster-info entry: no device faults are known for it until its device-info is valid again; the entry is kept as it is', {
        node, name, reason: damage.reason, configMap: `${LAST_GOOD_CM_NAME}`, fallback,
      });
    }
    if (restored > 0) this.flush();
  }

  /**
   * ClusterD takes device-info and node-info whatever node they name (no Node lookup), and so do we:
   * the faults still reach cluster-info. But a name without a Node is usually a typo or a stale
   * ConfigMap, so it is counted every time and logged once until the Node appears. Checked only once
   * the Node informer has synced (its first list), then for everything known at that moment.
   */
  private checkNodeKnown(format: 'device-info' | 'node-info', node: string | undefined): void {
    const nodes = this.deps.sources.nodes;
    if (node === undefined || !nodes.health().synced || nodes.get(node) !== undefined) return;
    this.deps.metrics.unknownNodeInputs.inc({ format });
    if (this.warnedUnknown.has(node)) return;
    this.warnedUnknown.add(node);
    this.deps.log.warn('input names a node that has no Node object; accepted as ClusterD does', { format, node });
  }

  private checkAllNodesKnown(): void {
    const s = this.deps.sources;
    for (const cm of s.deviceInfo.store.values()) this.checkNodeKnown('device-info', nodeNameOfDeviceInfoCm(cm.metadata?.namespace ?? '', cm.metadata?.name ?? ''));
    for (const cm of s.nodeInfo.store.values()) this.checkNodeKnown('node-info', nodeNameOfNodeInfoCm(cm.metadata?.namespace ?? '', cm.metadata?.name ?? ''));
  }

  /**
   * A public fault sent over gRPC enters the intake as an input of its own (no ConfigMap is made up
   * for it): applied, logged and published like a public-fault ConfigMap's message. Returns the
   * rejection, if nothing of it could be used, for the gRPC reply.
   */
  submitPublicFault(message: PublicFaultMessage): Rejection | undefined {
    return this.apply({ kind: 'pubfault', message });
  }

  /**
   * After a restart: the public faults statistic-fault-info lists (ClusterD LoadFaultData), on top
   * of what the public-fault ConfigMaps replayed. A content that does not parse loads nothing.
   */
  loadPublicFaults(cm: ConfigMap | undefined): void {
    if (cm === undefined) return;
    const parsed = parsePublicFaults(cm.data?.[STATISTIC_FAULT_KEYS.publicFaults]);
    if (!parsed.ok) {
      this.deps.metrics.invalidInput.inc({ format: 'statistic-fault-info', reason: kindOf(parsed) });
      this.deps.log.error('statistic-fault-info does not parse; no public fault reloaded from it (as ClusterD)', { reason: parsed.reason });
      return;
    }
    this.store.loadPublicFaults(parsed.value, this.now(), this.nodeExists);
    this.countUnknownNodes('reload');
    for (const part of this.store.drainPartial()) this.deps.log.warn('public faults not reloaded', { object: part.object, reason: part.reason, kind: part.kind });
    this.armPublicFaultDeletes();
    this.deps.log.info('public faults reloaded from statistic-fault-info', { nodes: parsed.value.size, faults: [...parsed.value.values()].reduce((n, l) => n + l.length, 0) });
    this.flush();
  }

  private flush(): void {
    const nodes = this.store.drainDirty();
    if (nodes.length === 0) return;
    this.deps.onChange({ nodes, atMs: this.now() });
  }
}
