/**
 * Makes `mindx-dl/cluster-info-device-N`, `cluster-info-switch-N` and `cluster-info-node-cm` (label
 * mx-consumer-volcano=true, data key = CM name) match the fault view: the contract with Volcano's
 * ascend plugin (formats.md 3.1). One key, `cluster-info`, so a burst of node changes costs one
 * pass. Shards are cut at 800 KiB; surplus shards from a larger past are blanked, never deleted.
 */
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_LABELS, CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_NODE_CM, CLUSTER_INFO_SWITCH_PREFIX, encodeClusterInfo, type ClusterInfoEntry, type DeviceInfoEntry, type NodeInfoEntry, type SwitchInfoEntry } from '../schemas/cluster-info/cluster-info.ts';
import { mergeDeviceFaults, recomputeDeviceList } from '../schemas/cluster-info/device-list.ts';
import { shardClusterInfo } from '../schemas/cluster-info/shard.ts';
import { withholdSwitchFaults } from '../schemas/cluster-info/switch-view.ts';
import { deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { switchInfoCmName } from '../schemas/device-info/switch-info.ts';
import { nodeInfoCmName } from '../schemas/node-info/node-info.ts';
import type { FaultRecord } from '../policy/fault-types.ts';
import type { FaultStore } from '../controllers/fault-store.ts';
import type { ConfigMap } from '../controllers/sources/sources.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';

export const CLUSTER_INFO_KEY = 'cluster-info';
/** Bumped on each periodic refresh so Volcano's informer sees fresh data (an identical PUT is a no-op). */
export const REFRESHED_AT_ANNOTATION = 'clusterd-ts.io/refreshed-at';

export interface ClusterInfoView {
  readonly device: Record<string, DeviceInfoEntry>;
  readonly node: Record<string, NodeInfoEntry>;
  readonly switch: Record<string, SwitchInfoEntry>;
}

/**
 * Builds the entries Volcano reads from the store and the records after policy. Device entries are
 * recomputed by ClusterD's rules from the device plugin's lists plus every effective chip fault
 * (including public faults and policy escalations).
 *
 * `effective` is the scheduler view (after the per-job filters, behavior.md A.3 #20-#25, E.6);
 * `withheld` gives what those filters hid or dropped on the node, read right after `effective(node)`.
 * A withheld fault leaves every list Volcano reads: its chip leaves the device plugin's
 * `-Unhealthy` / `-NetworkUnhealthy` unless a visible non-normal fault keeps it there (ClusterD
 * DelFaultAndFix), and a withheld UB switch code leaves the switch entry, whose level is recomputed.
 * The device plugin's `ManuallySeparateNPU` chips stay where it put them.
 */
export function renderClusterInfo(
  store: FaultStore,
  effective: (node: string) => readonly FaultRecord[],
  nowMs: number,
  withheld: (node: string) => readonly FaultRecord[] = () => [],
): ClusterInfoView {
  const view: ClusterInfoView = { device: {}, node: {}, switch: {} };
  for (const node of store.nodeNames().sort()) {
    const s = store.nodeState(node)!;
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
      const sw = s.device.data.switchInfo;
      if (sw?.ok === true) {
        const codes = new Set(hidden.filter((r) => r.source === 'switch').map((r) => r.code));
        const info = codes.size === 0 ? sw.value.info : withholdSwitchFaults(sw.value.info, codes, sw.value.events);
        if (info.FaultLevel !== '' || (info.FaultCode?.length ?? 0) > 0) view.switch[switchInfoCmName(node)] = { ...info, CmName: switchInfoCmName(node) };
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
  readonly render: () => ClusterInfoView;
  /** Cached ConfigMaps of mindx-dl (our own writes come back through the informer). */
  readonly actual: (name: string) => ConfigMap | undefined;
  readonly actualNames: () => readonly string[];
  readonly writer: ConfigMapWriter;
  /** Rewrite at least this often even without changes (Volcano restarts its informer on data older than 60 s). */
  readonly refreshMs: number;
  /**
   * At most one pass per this many ms (ClusterD: at most 5 writes a second). A pass renders every
   * node, so a burst of intake notifications must not cost one pass each: later ones wait and
   * coalesce into the next pass.
   */
  readonly minIntervalMs?: number;
}

export const CLUSTER_INFO_MIN_INTERVAL_MS = 200;

/** Every shard's desired value, including blanks for surplus shards already in the cluster. */
export function desiredShards(view: ClusterInfoView, existing: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const put = (prefix: string, entries: Record<string, ClusterInfoEntry>): void => {
    const shards = shardClusterInfo(entries);
    shards.forEach((v, i) => out.set(`${prefix}${i}`, v));
    for (const name of existing) {
      if (!name.startsWith(prefix) || out.has(name)) continue;
      if (/^\d+$/.test(name.slice(prefix.length))) out.set(name, '');
    }
  };
  put(CLUSTER_INFO_DEVICE_PREFIX, view.device);
  put(CLUSTER_INFO_SWITCH_PREFIX, view.switch);
  out.set(CLUSTER_INFO_NODE_CM, encodeClusterInfo(view.node));
  return out;
}

export function clusterInfoReconciler(deps: ClusterInfoDeps): Reconciler {
  let lastFullWriteMs = 0;
  let lastPassMs = -Infinity;
  const minInterval = deps.minIntervalMs ?? CLUSTER_INFO_MIN_INTERVAL_MS;
  return {
    name: 'cluster_info',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const now = ctx.now();
      const wait = lastPassMs + minInterval - now;
      if (wait > 0) return { requeueAfterMs: wait };
      lastPassMs = now;
      const refresh = deps.refreshMs > 0 && now - lastFullWriteMs >= deps.refreshMs;
      const shards = desiredShards(deps.render(), deps.actualNames());
      let written = 0;
      const stamp = new Date(now).toISOString();
      for (const [name, value] of shards) {
        const actual = deps.actual(name);
        const keep = actual?.metadata?.annotations?.[REFRESHED_AT_ANNOTATION];
        const annotations = { [REFRESHED_AT_ANNOTATION]: refresh || keep === undefined ? stamp : keep };
        const target = { namespace: CLUSTER_INFO_NAMESPACE, name, labels: { ...CLUSTER_INFO_LABELS }, annotations, data: { [name]: value } };
        const res = await deps.writer.ensure('cluster_info', target, actual);
        if (res.written) written++;
      }
      if (refresh) lastFullWriteMs = now;
      if (written > 0) ctx.log.info('cluster-info written', { shards: written, names: [...shards.keys()] });
      return deps.refreshMs > 0 ? { requeueAfterMs: Math.max(1000, deps.refreshMs - (now - lastFullWriteMs)) } : {};
    },
  };
}
