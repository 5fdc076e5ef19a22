/**
 * The controller's view of every node's faults, fed by the intake sources. Each input is parsed by
 * its schema module; a rejected update is logged, counted and ignored, so the last good state of
 * that node stays (docs/formats.md#check-code: ClusterD also drops a bad CheckCode). Policy (re-levelling,
 * escalation) is applied on top by the caller; this store only remembers what the agents said.
 */
import { parseDeviceInfoData } from '../schemas/device-info/device-info.ts';
import type { DeviceInfoData } from '../schemas/device-info/device-info.ts';
import { deviceInfoRecords } from '../schemas/device-info/device-info-records.ts';
import { nodeNameOfDeviceInfoCm } from '../schemas/device-info/device-info.ts';
import { parseNodeInfoData, nodeNameOfNodeInfoCm, splitNodeFaults, type NodeInfoData } from '../schemas/node-info/node-info.ts';
import { parsePublicFaultData, type PubFaultInfo } from '../schemas/public-fault/public-fault.ts';
import { publicFaultItems } from '../schemas/public-fault/public-fault-records.ts';
import { DEFAULT_PUBLIC_FAULT_CONFIG, publicFaultLevel } from '../schemas/public-fault/public-fault-config.ts';
import { kindOf, type RejectKind } from '../schemas/parsed.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { StatisticNodeFault } from '../schemas/statistic-fault/statistic-fault.ts';
import type { ConfigMap, Node } from '../runtime/kube-objects.ts';
import { PublicFaultStore, type PublicFaultStoreOptions } from './public-fault-store.ts';

/** Pseudo-code of a node whose Ready condition is not True, or that was deleted (VC's reason word). */
export const NODE_NOT_READY_CODE = 'heartbeatTimeOut';

/** Whether a node name has a Node object (the public-fault sender check). */
export type NodeExists = (node: string) => boolean;

/** A refused input (or part of one: `kept` then says what stays in force). `kind` is the metric reason. */
export type Rejection = { readonly format: string; readonly object: string; readonly reason: string; readonly kind: RejectKind; readonly kept?: string };

export interface NodeFaultState {
  readonly node: string;
  device?: { readonly data: DeviceInfoData; readonly records: readonly FaultRecord[]; readonly cmName: string };
  nodeInfo?: { readonly data: NodeInfoData; readonly records: readonly FaultRecord[]; readonly cmName: string };
  notReadySinceMs?: number;
}

export class FaultStore {
  private readonly nodes = new Map<string, NodeFaultState>();
  /** Public faults (CMs and gRPC), capped cluster-wide as ClusterD caps them. */
  readonly publicFaults: PublicFaultStore;
  private readonly serialToNode = new Map<string, string>();

  /** Nodes whose faults changed since the last drain (what to re-decide). */
  private readonly dirty = new Set<string>();
  /** Parts of accepted inputs that were left out since the last drain (to log and count). */
  private readonly partial: Rejection[] = [];
  private unknownNodeRefusals = 0;

  constructor(opts: { readonly publicFaults?: PublicFaultStoreOptions } = {}) {
    this.publicFaults = new PublicFaultStore(opts.publicFaults);
  }

  nodeState(node: string): NodeFaultState | undefined { return this.nodes.get(node); }
  nodeNames(): string[] { return [...this.nodes.keys()]; }

  drainPartial(): Rejection[] {
    return this.partial.splice(0);
  }

  drainDirty(): string[] {
    const out = [...this.dirty];
    this.dirty.clear();
    return out;
  }

  private state(node: string): NodeFaultState {
    let s = this.nodes.get(node);
    if (s === undefined) { s = { node }; this.nodes.set(node, s); }
    return s;
  }

  /** A device-info CM was added or updated. Returns the rejection when the update was dropped. */
  applyDeviceInfo(cm: ConfigMap, nowMs: number): Rejection | undefined {
    const name = cm.metadata?.name ?? '';
    const node = nodeNameOfDeviceInfoCm(cm.metadata?.namespace ?? '', name);
    if (node === undefined) return { format: 'device-info', object: name, reason: 'not a device-info ConfigMap name', kind: 'bad_name' };
    const parsed = parseDeviceInfoData(cm.data, nowMs);
    if (!parsed.ok) return { format: 'device-info', object: name, reason: parsed.reason, kind: kindOf(parsed) };
    const last = this.nodes.get(node)?.device;
    const data = this.withLastGoodSwitch(name, parsed.value, last?.data);
    for (const d of data.dropped) this.partial.push({ format: 'device-info', object: name, reason: d.reason, kind: d.kind, kept: 'the rest of the ConfigMap' });
    // Keep each record's first-seen time across updates that repeat the same fault.
    const prev = new Map((last?.records ?? []).map((r) => [`${r.device}/${r.source}/${r.code}`, r]));
    const records = deviceInfoRecords(node, data, nowMs).map((r) => {
      const p = prev.get(`${r.device}/${r.source}/${r.code}`);
      return p !== undefined && p.firstSeenMs < r.firstSeenMs ? { ...r, firstSeenMs: p.firstSeenMs } : r;
    });
    this.state(node).device = { data, records, cmName: name };
    this.dirty.add(node);
    return undefined;
  }

  /**
   * SwitchInfoCfg is quarantined on its own, as ClusterD parses it on its own: a bad one (or a missing
   * key, which ClusterD ignores) leaves the node's last good switch state in force, the rest of the
   * device-info is taken.
   */
  private withLastGoodSwitch(name: string, data: DeviceInfoData, last: DeviceInfoData | undefined): DeviceInfoData {
    const sw = data.switchInfo;
    if (sw?.ok === true) return data;
    const kept = last?.switchInfo?.ok === true ? last.switchInfo : undefined;
    if (sw !== undefined && !sw.ok) {
      this.partial.push({ format: 'device-info', object: name, reason: sw.reason, kind: kindOf(sw), kept: kept === undefined ? 'the rest of the ConfigMap (no switch state accepted yet)' : 'the last good SwitchInfoCfg and the rest of the ConfigMap' });
    }
    return { ...data, switchInfo: kept };
  }

  /**
   * A device-info CM was deleted: the node's device faults go, as in ClusterD (its informer's
   * DeleteFunc removes the node's device entry). Returns the node.
   */
  deleteDeviceInfo(cm: ConfigMap): string | undefined {
    const node = nodeNameOfDeviceInfoCm(cm.metadata?.namespace ?? '', cm.metadata?.name ?? '');
    const s = node === undefined ? undefined : this.nodes.get(node);
    if (s?.device !== undefined) { delete s.device; this.dirty.add(s.node); }
    return node;
  }

  applyNodeInfo(cm: ConfigMap, nowMs: number): Rejection | undefined {
    const name = cm.metadata?.name ?? '';
    const node = nodeNameOfNodeInfoCm(cm.metadata?.namespace ?? '', name);
    if (node === undefined) return { format: 'node-info', object: name, reason: 'not a node-info ConfigMap name', kind: 'bad_name' };
    const parsed = parseNodeInfoData(cm.data);
    if (!parsed.ok) return { format: 'node-info', object: name, reason: parsed.reason, kind: kindOf(parsed) };
    this.state(node).nodeInfo = { data: parsed.value, records: splitNodeFaults(node, parsed.value, nowMs), cmName: name };
    this.dirty.add(node);
    return undefined;
  }

  /** NodeD deletes its CM when the node is healthy again (docs/formats.md#node-info). */
  deleteNodeInfo(cm: ConfigMap): void {
    const node = nodeNameOfNodeInfoCm(cm.metadata?.namespace ?? '', cm.metadata?.name ?? '');
    if (node === undefined) return;
    const s = this.nodes.get(node);
    if (s?.nodeInfo !== undefined) { delete s.nodeInfo; this.dirty.add(node); }
  }

  /** Node object added/updated: track readiness and the serial number public faults may name. */
  applyNode(n: Node, nowMs: number): void {
    const name = n.metadata?.name ?? '';
    const sn = n.metadata?.annotations?.['product-serial-number'];
    if (sn !== undefined) this.serialToNode.set(sn, name);
    const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
    const notReady = ready === undefined ? false : ready.status !== 'True';
    const s = this.state(name);
    if (notReady && s.notReadySinceMs === undefined) {
      const t = ready?.lastTransitionTime !== undefined ? Date.parse(ready.lastTransitionTime) : NaN;
      s.notReadySinceMs = Number.isFinite(t) ? Math.min(t, nowMs) : nowMs;
      this.dirty.add(name);
    } else if (!notReady && s.notReadySinceMs !== undefined) {
      delete s.notReadySinceMs;
      this.dirty.add(name);
    }
  }

  /** A deleted Node counts as not ready (its pods cannot run). */
  deleteNode(n: Node, nowMs: number): void {
    const s = this.state(n.metadata?.name ?? '');
    if (s.notReadySinceMs === undefined) { s.notReadySinceMs = nowMs; this.dirty.add(s.node); }
  }

  /**
   * A public-fault message (a CM added or updated, or a gRPC call), applied as ClusterD applies it
   * (public-fault-store.ts). Deleting or unlabelling the CM clears nothing (ClusterD ignores the
   * informer's delete). Invalid faults are left out, the message's others kept (ClusterD
   * checkFaultsAndFlush); returns a rejection when nothing of it could be used.
   */
  applyPublicFault(cm: ConfigMap, nowMs: number, nodeExists?: NodeExists): Rejection | undefined {
    const obj = `${cm.metadata?.namespace}/${cm.metadata?.name}`;
    const parsed = parsePublicFaultData(cm.data);
    if (!parsed.ok) return { format: 'public-fault', object: obj, reason: parsed.reason, kind: kindOf(parsed) };
    return this.applyPublicFaultMessage(obj, parsed.value, nowMs, nodeExists);
  }

  /**
   * A checked public-fault message from `origin` (a CM's namespace/name, or a gRPC sender's).
   * `nodeExists` (undefined: any name, as ClusterD): an `occur` or `once` for a node name it denies is
   * refused (counted in `drainUnknownNodeRefusals`, not held for a Node that may appear later); a
   * `recover` always applies, so a fault outlives no deleted Node.
   */
  applyPublicFaultMessage(obj: string, info: PubFaultInfo, nowMs: number, nodeExists?: NodeExists): Rejection | undefined {
    for (const d of info.dropped ?? []) this.partial.push({ format: 'public-fault', object: obj, reason: d.reason, kind: d.kind, kept: 'the message\'s valid faults' });
    const out = publicFaultItems(info, { nodeBySn: (sn) => this.serialToNode.get(sn) });
    const refused = nodeExists === undefined ? [] : out.items.filter((it) => it.assertion !== 'recover' && !nodeExists(it.node));
    const items = refused.length === 0 ? out.items : out.items.filter((it) => it.assertion === 'recover' || nodeExists!(it.node));
    this.unknownNodeRefusals += refused.length;
    const unknownNodes = [...new Set(refused.map((it) => it.node))];
    const named = (nodes: readonly string[]): string => `${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ` and ${nodes.length - 3} more` : ''}`;
    if (out.unresolved.length > 0 && items.length === 0 && refused.length === 0) return { format: 'public-fault', object: obj, reason: `unknown nodeSN in fault(s) ${out.unresolved.join(', ')}: no valid fault`, kind: 'unknown_node' };
    if (refused.length > 0 && items.length === 0) {
      return { format: 'public-fault', object: obj, reason: `no Node named ${named(unknownNodes)} (${refused.length} fault-node pairs${out.unresolved.length > 0 ? `; unknown nodeSN in ${out.unresolved.join(', ')}` : ''}): no valid fault`, kind: 'unknown_node' };
    }
    for (const id of out.unresolved) this.partial.push({ format: 'public-fault', object: obj, reason: `fault ${id}: an influence names an unknown nodeSN`, kind: 'unknown_node', kept: 'the message\'s valid faults' });
    if (refused.length > 0) this.partial.push({ format: 'public-fault', object: obj, reason: `no Node named ${named(unknownNodes)}: ${refused.length} fault-node pairs refused`, kind: 'unknown_node', kept: 'the message\'s faults for existing nodes' });
    for (const node of this.publicFaults.apply(obj, items, nowMs)) this.dirty.add(node);
    return undefined;
  }

  /** Public faults (fault-node pairs) refused for a node that does not exist since the last drain. */
  drainUnknownNodeRefusals(): number {
    const n = this.unknownNodeRefusals;
    this.unknownNodeRefusals = 0;
    return n;
  }

  /**
   * statistic-fault-info as the previous process left it, read back at start (ClusterD
   * LoadFaultFromCM). The level comes from the current configuration when it knows the code. Nodes
   * `nodeExists` denies are left out (counted in `drainUnknownNodeRefusals`).
   */
  loadPublicFaults(byNode: ReadonlyMap<string, readonly StatisticNodeFault[]>, nowMs: number, nodeExists?: NodeExists): void {
    const kept = new Map([...byNode].filter(([node, faults]) => {
      if (nodeExists === undefined || nodeExists(node)) return true;
      this.unknownNodeRefusals += faults.length;
      this.partial.push({ format: 'statistic-fault-info', object: node, reason: `no Node named ${node}: its ${faults.length} public fault(s) not reloaded`, kind: 'unknown_node', kept: 'the public faults of existing nodes' });
      return false;
    }));
    for (const node of this.publicFaults.load(kept, (code) => publicFaultLevel(DEFAULT_PUBLIC_FAULT_CONFIG, code), nowMs)) this.dirty.add(node);
  }

  /** Runs the public-fault deletes that are due; `ran`: how many ran (each rewrites statistic-fault-info in ClusterD). */
  expirePublicFaults(nowMs: number): { changed: boolean; ran: number } {
    const { changed, ran } = this.publicFaults.expire(nowMs);
    for (const node of changed) this.dirty.add(node);
    return { changed: changed.size > 0, ran };
  }

  nextPublicFaultExpiry(): number | undefined {
    return this.publicFaults.nextExpiry();
  }

  /** The public faults in force, per node, as ClusterD's statistic-fault-info lists them (GetPubFaultsForCM). */
  publicFaultStatistics(): Map<string, StatisticNodeFault[]> {
    const byNode = new Map<string, StatisticNodeFault[]>();
    for (const p of this.publicFaults.entries()) {
      const list = byNode.get(p.node) ?? [];
      byNode.set(p.node, list);
      list.push({ resource: p.resource, devIds: p.devIds, faultId: p.faultId, type: p.faultType, faultCode: p.code, level: p.level, faultTime: Math.floor(p.faultTimeMs / 1000) });
    }
    return byNode;
  }

  /** Every fault record the agents report for one node (before policy). */
  records(node: string): FaultRecord[] {
    const s = this.nodes.get(node);
    const out: FaultRecord[] = [...(s?.device?.records ?? []), ...(s?.nodeInfo?.records ?? [])];
    out.push(...this.publicFaults.records(node, s?.device?.data.lists.prefix === 'huawei.com/npu' ? 'npu' : 'Ascend910'));
    if (s?.notReadySinceMs !== undefined) {
      out.push({ node, source: 'node-ready', code: NODE_NOT_READY_CODE, level: 'SeparateNPU', reportedLevel: 'NotReady', firstSeenMs: s.notReadySinceMs, detail: 'Node Ready condition is not True' });
    }
    return out;
  }
}
