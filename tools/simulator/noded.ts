/**
 * A simulated NodeD: node hardware faults as `mindx-dl/mindx-dl-nodeinfo-<node>` (docs/formats.md#node-info),
 * label mx-consumer-cim=true, keys NodeInfo (CheckCode) and updateTime (RFC3339). The CM is deleted
 * when the node has no fault left (FaultDevList empty, NodeStatus Healthy). One FaultDev per
 * (DeviceType, DeviceId, FaultLevel), codes in arrival order.
 */
import { isNotFound, isConflict, paths, type KubeClient } from '../../runtime/kube-client.ts';
import {
  NODE_INFO_LABELS, NODE_INFO_NAMESPACE, encodeNodeInfoData, nodeInfoCmName, parseNodeInfoData, type FaultDev, type NodeFaultLevel,
} from '../../schemas/node-info/node-info.ts';
import { Coalescer } from './coalescer.ts';
import type { ConfigMap } from './device-plugin.ts';
import { InvalidFaultError, nodeLevel } from './fault-codes.ts';

export interface NodeFaultSpec {
  readonly node: string;
  /** 8-hex-digit IPMI code, e.g. 2C000031. */
  readonly code: string;
  /** NodeD (SeparateFault ...) or NPU (SeparateNPU ...) spelling; default from the NodeD code table. */
  readonly level?: string;
  /** Default `CPU`. */
  readonly deviceType?: string;
  /** Default 0. */
  readonly deviceId?: number;
}

export interface NodeInfoAck {
  readonly node: string;
  readonly namespace: string;
  readonly name: string;
  /** resourceVersion of the written CM; undefined when it was deleted. */
  readonly resourceVersion: string | undefined;
  readonly deleted: boolean;
  /** Unix ms when the apiserver answered. */
  readonly atMs: number;
}

interface DevKey {
  readonly DeviceType: string;
  readonly DeviceId: number;
  readonly FaultLevel: NodeFaultLevel;
}

export interface NodeDOptions {
  /** NodeD writes at most every 5 s; default 0 here so tests and demos are not slowed down. */
  readonly minWriteIntervalMs?: number;
  readonly now?: () => number;
}

export class NodeDSimulator {
  private readonly client: KubeClient;
  private readonly now: () => number;
  /** node -> `type/id/level` -> codes. */
  private readonly faults = new Map<string, Map<string, { key: DevKey; codes: string[] }>>();
  private readonly coalescer: Coalescer<NodeInfoAck>;
  private readonly adopted = new Map<string, Promise<void>>();

  constructor(client: KubeClient, opts: NodeDOptions = {}) {
    this.client = client;
    this.now = opts.now ?? Date.now;
    this.coalescer = new Coalescer((node) => this.writeNow(node), opts.minWriteIntervalMs ?? 0, this.now);
  }

  /** Loads what the node's node-info CM already says (for a fresh process, e.g. the CLI). */
  adopt(node: string): Promise<void> {
    let p = this.adopted.get(node);
    if (p === undefined) {
      p = this.load(node).catch((e: unknown) => { this.adopted.delete(node); throw e; });
      this.adopted.set(node, p);
    }
    return p;
  }

  private async load(node: string): Promise<void> {
    const cm = await this.client.getOrUndefined<ConfigMap>(paths.configMap(NODE_INFO_NAMESPACE, nodeInfoCmName(node)));
    if (cm === undefined) return;
    const parsed = parseNodeInfoData(cm.data);
    if (!parsed.ok) throw new Error(`cannot take over ${nodeInfoCmName(node)}: ${parsed.reason}`);
    for (const d of parsed.value.cm.NodeInfo.FaultDevList ?? []) {
      for (const code of d.FaultCode ?? []) this.add(node, { DeviceType: d.DeviceType, DeviceId: d.DeviceId, FaultLevel: nodeLevel(code, d.FaultLevel) }, code);
    }
  }

  /** The FaultDevList NodeD would write now (null when there is none). */
  faultDevList(node: string): FaultDev[] | null {
    const devs = [...(this.faults.get(node)?.values() ?? [])].filter((d) => d.codes.length > 0);
    return devs.length === 0 ? null : devs.map((d) => ({ DeviceType: d.key.DeviceType, DeviceId: d.key.DeviceId, FaultCode: [...d.codes], FaultLevel: d.key.FaultLevel }));
  }

  async inject(spec: NodeFaultSpec): Promise<NodeInfoAck> {
    if (!/^[0-9A-Fa-f]{1,16}$/.test(spec.code)) throw new InvalidFaultError(`node fault code ${JSON.stringify(spec.code)} is not hex (e.g. 2C000031)`);
    const key: DevKey = { DeviceType: spec.deviceType ?? 'CPU', DeviceId: spec.deviceId ?? 0, FaultLevel: nodeLevel(spec.code, spec.level) };
    this.add(spec.node, key, spec.code.toUpperCase());
    return this.coalescer.request(spec.node);
  }

  /** Removes a code (every code when undefined) from the node, optionally only on one device. */
  async recover(node: string, code?: string, deviceType?: string, deviceId?: number): Promise<NodeInfoAck> {
    for (const [k, d] of this.faults.get(node) ?? []) {
      if (deviceType !== undefined && d.key.DeviceType !== deviceType) continue;
      if (deviceId !== undefined && d.key.DeviceId !== deviceId) continue;
      const keep = code === undefined ? [] : d.codes.filter((c) => c !== code.toUpperCase());
      if (keep.length === 0) this.faults.get(node)!.delete(k);
      else d.codes.splice(0, d.codes.length, ...keep);
    }
    return this.coalescer.request(node);
  }

  flush(): Promise<void> {
    return this.coalescer.flush();
  }

  close(): void {
    this.coalescer.close();
  }

  private add(node: string, key: DevKey, code: string): void {
    const byDev = this.faults.get(node) ?? new Map<string, { key: DevKey; codes: string[] }>();
    this.faults.set(node, byDev);
    const k = `${key.DeviceType}/${key.DeviceId}/${key.FaultLevel}`;
    // The same code on the same device at another level moves to the new level.
    for (const [other, d] of byDev) if (other !== k && d.key.DeviceType === key.DeviceType && d.key.DeviceId === key.DeviceId) {
      d.codes.splice(0, d.codes.length, ...d.codes.filter((c) => c !== code));
      if (d.codes.length === 0) byDev.delete(other);
    }
    const dev = byDev.get(k) ?? { key, codes: [] };
    if (!dev.codes.includes(code)) dev.codes.push(code);
    byDev.set(k, dev);
  }

  private async writeNow(node: string): Promise<NodeInfoAck> {
    const name = nodeInfoCmName(node);
    const path = paths.configMap(NODE_INFO_NAMESPACE, name);
    const list = this.faultDevList(node);
    if (list === null) {
      try { await this.client.delete(path); } catch (e) { if (!isNotFound(e)) throw e; }
      return { node, namespace: NODE_INFO_NAMESPACE, name, resourceVersion: undefined, deleted: true, atMs: this.now() };
    }
    const cm: ConfigMap = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name, namespace: NODE_INFO_NAMESPACE, labels: { ...NODE_INFO_LABELS } },
      data: encodeNodeInfoData({ faultDevList: list, updateTimeMs: this.now() }),
    };
    const saved = await writeConfigMap(this.client, cm);
    return { node, namespace: NODE_INFO_NAMESPACE, name, resourceVersion: saved.metadata?.resourceVersion ?? '', deleted: false, atMs: this.now() };
  }
}

/** Update, then Create on NotFound; creates the namespace when it is missing too. */
export async function writeConfigMap(client: KubeClient, cm: ConfigMap): Promise<ConfigMap> {
  const ns = cm.metadata!.namespace!;
  try {
    return await client.replace(paths.configMap(ns, cm.metadata!.name!), cm);
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  try {
    return await client.create(paths.configMaps(ns), cm);
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  try {
    await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  } catch (e) {
    if (!isConflict(e)) throw e;
  }
  return client.create(paths.configMaps(ns), cm);
}
