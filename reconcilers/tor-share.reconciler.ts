/**
 * `volcano-system/tor-share-cm`, key `global-tor-info` (docs/formats.md#tor-share-cm, docs/rules.md#tor.share-state).
 *
 * Input: the user-provided `kube-system/basic-tor-node-cm`, key `tor_info` =
 * `{version, tor_count, server_list:[{tor_id, tor_ip, server:[{server_ip, npu_count, slice_id}]}]}`
 * (field names from the MindCluster API docs, "Parameter Plane Network Topology Configuration").
 * Servers are matched to Nodes by InternalIP. Without that ConfigMap there is no NSLB topology and
 * nothing is written (Volcano writes tor-share-cm only under NSLB 2.0). Volcano reads the topology
 * with a one-minute delay; we re-read it every 60 s (a GET, not a watch: it changes when racks do).
 *
 * State per TOR, from the jobs that carry a `tor-affinity` label (`large-model-schema`,
 * `normal-schema`) and run pods on its servers: no such job -> free (0), one -> exclusive (2), more
 * -> shared (1); a shared TOR is unhealthy (1) when one of its jobs is large-model (docs/rules.md#tor.share-state:
 * "unhealthy = shared by a large-model job"). Node `JobName` = those jobs' names, sorted.
 * Placement-time NSLB choices (shared-TOR budget, black lists, docs/rules.md#tor.re-placement) are the scheduler's and are
 * not re-derived here.
 */
import { isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import {
  BASIC_TOR_NODE_CM_NAME, BASIC_TOR_NODE_NAMESPACE, TOR_HEALTH, TOR_INFO_KEY, TOR_SHARE_CM_NAME, TOR_SHARE_NAMESPACE, TOR_SHARING,
  encodeTorShareData, type GlobalTorInfo, type TorShare,
} from '../schemas/tor-share/tor-share.ts';

export const TOR_SHARE_KEY = 'tor-share-cm';
export const TOR_AFFINITY_LABEL = 'tor-affinity';
export const TOR_TOPOLOGY_REFRESH_MS = 60_000;

export interface TorTopology {
  readonly tors: ReadonlyArray<{ readonly ip: string; readonly serverIps: readonly string[] }>;
}

/** Parses `tor_info`; undefined when absent or unusable (pure, never throws). */
export function parseTorTopology(text: string | undefined): TorTopology | undefined {
  if (text === undefined || text === '') return undefined;
  let raw: unknown;
  try { raw = JSON.parse(text); } catch { return undefined; }
  const list = (raw as { server_list?: unknown } | null)?.server_list;
  if (!Array.isArray(list)) return undefined;
  const tors = list.flatMap((t: unknown) => {
    const x = t as { tor_ip?: unknown; server?: unknown };
    if (typeof x?.tor_ip !== 'string') return [];
    const servers = Array.isArray(x.server) ? x.server : [];
    return [{ ip: x.tor_ip, serverIps: servers.flatMap((s: unknown) => (typeof (s as { server_ip?: unknown })?.server_ip === 'string' ? [(s as { server_ip: string }).server_ip] : [])) }];
  });
  return { tors };
}

export interface TorJob {
  readonly name: string;
  readonly affinity: string;
  readonly nodes: readonly string[];
}

/** global-tor-info from the topology, node IPs and the TOR-affinity jobs (pure). */
export function globalTorInfoOf(topo: TorTopology, nodeByIp: ReadonlyMap<string, string>, jobs: readonly TorJob[]): GlobalTorInfo {
  const out = new Map<string, TorShare>();
  for (const tor of topo.tors) {
    const nodes = tor.serverIps.map((ip) => {
      const nodeName = nodeByIp.get(ip) ?? '';
      const names = [...new Set(jobs.filter((j) => nodeName !== '' && j.nodes.includes(nodeName)).map((j) => j.name))].sort();
      return { NodeIp: ip, NodeName: nodeName, JobName: names };
    });
    const onTor = jobs.filter((j) => nodes.some((n) => n.NodeName !== '' && j.nodes.includes(n.NodeName)));
    const sharing = onTor.length === 0 ? TOR_SHARING.free : onTor.length === 1 ? TOR_SHARING.exclusive : TOR_SHARING.shared;
    const unhealthy = sharing === TOR_SHARING.shared && onTor.some((j) => j.affinity === 'large-model-schema');
    out.set(tor.ip, { IsHealthy: unhealthy ? TOR_HEALTH.unhealthy : TOR_HEALTH.healthy, IsSharedTor: sharing, nodes });
  }
  return out;
}

export interface TorShareDeps {
  readonly client: KubeClient;
  readonly nodeByIp: () => ReadonlyMap<string, string>;
  readonly torJobs: () => readonly TorJob[];
  readonly cached: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
}

export function torShareReconciler(d: TorShareDeps): Reconciler {
  return {
    name: 'tor_share',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      let input: ConfigMap | undefined;
      try {
        input = await d.client.get<ConfigMap>(paths.configMap(BASIC_TOR_NODE_NAMESPACE, BASIC_TOR_NODE_CM_NAME));
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      const topo = parseTorTopology(input?.data?.[TOR_INFO_KEY]);
      if (topo === undefined) {
        if (input !== undefined) ctx.log.warn('basic-tor-node-cm tor_info unusable; tor-share-cm not written');
        return { requeueAfterMs: TOR_TOPOLOGY_REFRESH_MS };
      }
      const data = encodeTorShareData(globalTorInfoOf(topo, d.nodeByIp(), d.torJobs()));
      const res = await d.writer.ensure('tor_share', { namespace: TOR_SHARE_NAMESPACE, name: TOR_SHARE_CM_NAME, data }, d.cached());
      if (res.written) ctx.log.info('tor-share-cm written', { tors: topo.tors.length });
      return { requeueAfterMs: TOR_TOPOLOGY_REFRESH_MS };
    },
  };
}
