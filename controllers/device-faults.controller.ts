/**
 * The intake flow: device-info, node-info, public-fault ConfigMaps and Nodes -> FaultStore ->
 * policy -> the cluster-info reconciler and the job pipeline. This file holds the flow's only
 * subscribe (style.md 2.1). Bad input is logged with its reason, counted, and changes nothing.
 */
import { Subject, merge, map, type Observable, type Subscription } from 'rxjs';
import type { FaultRecord } from '../policy/fault-types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { WatchEvent } from '../runtime/reflector.ts';
import { FaultStore, type Rejection } from './fault-store.ts';
import type { ConfigMap, Node, Sources } from './sources/sources.ts';

/** Re-levels and escalates a node's records (policy/); identity = trust what the agents wrote. */
export interface FaultPolicy {
  effective(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[];
}

export const trustReportedLevels: FaultPolicy = { effective: (_n, records) => records };

/** Nodes whose effective faults may have changed, emitted once per intake event. */
export interface FaultChange {
  readonly nodes: readonly string[];
  readonly atMs: number;
}

type Input =
  | { kind: 'device'; ev: WatchEvent<ConfigMap> }
  | { kind: 'nodeinfo'; ev: WatchEvent<ConfigMap> }
  | { kind: 'public'; ev: WatchEvent<ConfigMap> }
  | { kind: 'node'; ev: WatchEvent<Node> };

export interface DeviceFaultsDeps {
  readonly sources: Sources;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly policy?: FaultPolicy;
  readonly now?: () => number;
  /** Called whenever the cluster view may have changed (enqueue the cluster-info key). */
  readonly onChange: (change: FaultChange) => void;
  /** Cluster-wide cap of public faults (`--max-public-faults`, ClusterD: 50,000). */
  readonly maxPublicFaults?: number;
}

export class DeviceFaultsController {
  readonly store: FaultStore;
  private readonly changes = new Subject<FaultChange>();
  /** Every change of node faults, for the job pipeline. */
  readonly changes$: Observable<FaultChange> = this.changes.asObservable();
  private sub: Subscription | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private readonly deps: DeviceFaultsDeps;
  private readonly now: () => number;
  private readonly policy: FaultPolicy;

  constructor(deps: DeviceFaultsDeps) {
    this.deps = deps;
    this.store = new FaultStore({ publicFaults: { maxFaults: deps.maxPublicFaults, bounds: deps.metrics.bounds } });
    this.now = deps.now ?? Date.now;
    this.policy = deps.policy ?? trustReportedLevels;
  }

  /** The records of a node after policy: what decisions and cluster-info use. */
  effective(node: string): readonly FaultRecord[] {
    return this.policy.effective(node, this.store.records(node), this.now());
  }

  start(): void {
    const s = this.deps.sources;
    const inputs$ = merge(
      s.deviceInfo.events$.pipe(map((ev): Input => ({ kind: 'device', ev }))),
      s.nodeInfo.events$.pipe(map((ev): Input => ({ kind: 'nodeinfo', ev }))),
      s.publicFaults.events$.pipe(map((ev): Input => ({ kind: 'public', ev }))),
      s.nodes.events$.pipe(map((ev): Input => ({ kind: 'node', ev }))),
    );
    this.sub = inputs$.subscribe({
      next: (input) => this.apply(input),
      error: (err: unknown) => this.deps.log.error('intake stream failed', { err: String(err) }),
    });
    this.expiryTimer = setInterval(() => {
      if (this.store.expirePublicFaults(this.now())) this.flush();
    }, 1000);
    this.expiryTimer.unref();
  }

  stop(): void {
    this.sub?.unsubscribe();
    if (this.expiryTimer !== undefined) clearInterval(this.expiryTimer);
  }

  /** Replays the current caches (after a restart every source starts with a list, so this is rarely needed). */
  resync(): void {
    const s = this.deps.sources;
    for (const cm of s.deviceInfo.store.values()) this.apply({ kind: 'device', ev: { type: 'add', obj: cm } });
    for (const cm of s.nodeInfo.store.values()) this.apply({ kind: 'nodeinfo', ev: { type: 'add', obj: cm } });
    for (const cm of s.publicFaults.store.values()) this.apply({ kind: 'public', ev: { type: 'add', obj: cm } });
    for (const n of s.nodes.store.values()) this.apply({ kind: 'node', ev: { type: 'add', obj: n } });
  }

  private apply(input: Input): void {
    const now = this.now();
    let rejection: Rejection | undefined;
    const { ev } = input;
    switch (input.kind) {
      case 'device':
        if (ev.type === 'delete') {
          const node = this.store.deleteDeviceInfo(ev.obj as ConfigMap);
          this.deps.log.warn('device-info ConfigMap deleted; keeping its last good faults', { node, name: ev.obj.metadata?.name });
        } else rejection = this.store.applyDeviceInfo(ev.obj as ConfigMap, now);
        break;
      case 'nodeinfo':
        if (ev.type === 'delete') this.store.deleteNodeInfo(ev.obj as ConfigMap);
        else rejection = this.store.applyNodeInfo(ev.obj as ConfigMap, now);
        break;
      case 'public':
        if (ev.type !== 'delete') rejection = this.store.applyPublicFault(ev.obj as ConfigMap, now);
        break;
      case 'node':
        if (ev.type === 'delete') this.store.deleteNode(ev.obj as Node, now);
        else this.store.applyNode(ev.obj as Node, now);
        break;
    }
    if (rejection !== undefined) {
      this.deps.metrics.invalidInput.inc({ format: rejection.format, reason: reasonClass(rejection.reason) });
      this.deps.log.warn('input rejected; last good state kept', { format: rejection.format, object: rejection.object, reason: rejection.reason, resourceVersion: ev.obj.metadata?.resourceVersion });
    }
    this.flush();
  }

  /** Nodes whose effective faults changed without new intake (policy timers, configuration, manual separation). */
  notify(nodes: readonly string[]): void {
    if (nodes.length === 0) return;
    const change = { nodes, atMs: this.now() };
    this.deps.onChange(change);
    this.changes.next(change);
  }

  private flush(): void {
    const nodes = this.store.drainDirty();
    if (nodes.length === 0) return;
    const change = { nodes, atMs: this.now() };
    this.deps.onChange(change);
    this.changes.next(change);
  }
}

/** A bounded label value for metrics from a free-text reason. */
function reasonClass(reason: string): string {
  const r = reason.toLowerCase();
  if (r.includes('checkcode')) return 'check_code';
  if (r.includes('json')) return 'malformed_json';
  if (r.includes('prefix')) return 'unknown_prefix';
  if (r.includes('npu name') || r.includes('chip name')) return 'bad_npu_name';
  if (r.includes('missing')) return 'missing_key';
  if (r.includes('nodesn')) return 'unknown_node';
  return 'invalid';
}
