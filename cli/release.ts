/**
 * `kubectl clusterd release NODE NPU...`: the supported way to release manually separated chips,
 * whichever path separated them. Each path is released where it is asserted:
 * 1. the device plugin's `ManuallySeparateNPU` key of kube-system/mindx-dl-deviceinfo-NODE (operators
 *    may only delete names from it; the device plugin and our controller then drop the separation);
 * 2. ClusterD's `clusterd-manual-info-cm` (`Total`/`Detail` of the node): deleting a chip from `Total`
 *    is ClusterD's documented release, and our controller treats it the same way;
 * 3. our own persisted counters (clusterd-ts-escalation-state): the controller overwrites edits to
 *    that ConfigMap, so the request goes to `clusterd-ts-release-requests`, which it reads and acts on
 *    (FaultFrequency upgrades and manual separations made before the request are released and their
 *    counters reset). That list is also the record of who released what, and when.
 * Every write carries the resourceVersion it read (a concurrent writer makes it retry, never clobber).
 *
 * Before anything is written the request is checked: the node name is a DNS-1123 subdomain (and
 * every name goes into a path through runtime/kube-client.ts `paths`, which encodes each segment),
 * at most RELEASE_REQUEST_MAX_NPUS NPU names, the node known (its device-info or an entry in
 * clusterd-manual-info-cm) and every NPU known on it (named in its device-info or its manual-info
 * Total). Anything else exits non-zero with nothing written. The request list is appended to, never
 * replaced: an unreadable list stops the command (exit 1) instead of being overwritten.
 */
import { isConflict, isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import { DEVICE_INFO_KEYS, DEVICE_INFO_NAMESPACE, deviceInfoCmName, parseDeviceInfoData } from '../schemas/device-info/device-info.ts';
import { MANUAL_INFO_CM_NAME, encodeManualInfo, parseManualInfo } from '../schemas/manual-info/manual-info.ts';
import {
  NPU_NAME, RELEASE_REQUESTS_CM_NAME, RELEASE_REQUESTS_KEY, RELEASE_REQUEST_MAX_NPUS, appendReleaseRequest, rawReleaseRequests,
} from '../schemas/release-request/release-request.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import { CliError, EXIT } from './errors.ts';
import { checkNodeName } from './names.ts';

interface Cm { metadata?: { name?: string; resourceVersion?: string }; data?: Record<string, string> }

export interface ReleaseResult {
  readonly node: string;
  readonly npus: readonly string[];
  readonly by: string;
  readonly at: string;
  /** What each path held and what was done there. */
  readonly paths: ReadonlyArray<{ readonly path: 'device-plugin' | 'clusterd-manual-info-cm' | 'clusterd-ts-escalation'; readonly released: readonly string[]; readonly note: string }>;
}

/** Arguments a release accepts: a DNS-1123 node name, 1..RELEASE_REQUEST_MAX_NPUS NPU names (usage error otherwise). */
export function checkReleaseArgs(node: string, npus: readonly string[]): string[] {
  checkNodeName(node);
  const bad = npus.filter((n) => !NPU_NAME.test(n));
  if (bad.length > 0) throw new CliError(`not NPU names: ${bad.slice(0, 5).map((n) => JSON.stringify(n.slice(0, 40))).join(', ')}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''} (want e.g. Ascend910-3)`, EXIT.usage);
  const unique = [...new Set(npus)];
  if (unique.length > RELEASE_REQUEST_MAX_NPUS) throw new CliError(`${unique.length} NPUs in one release; at most ${RELEASE_REQUEST_MAX_NPUS} (a node has at most 16)`, EXIT.usage);
  return unique;
}

/** What the node's device-info and clusterd-manual-info-cm name: is the node known, which NPUs. */
async function knownNpus(client: KubeClient, ns: string, node: string, nowMs: number): Promise<{ known: boolean; npus: Set<string> }> {
  const npus = new Set<string>();
  let known = false;
  const di = await client.getOrUndefined<ConfigMap>(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(node)));
  if (di !== undefined) {
    known = true;
    for (const n of (di.data?.[DEVICE_INFO_KEYS.manuallySeparateNpu] ?? '').split(',')) if (n.trim() !== '') npus.add(n.trim());
    const p = parseDeviceInfoData(di.data, nowMs);
    if (p.ok) {
      const l = p.value.lists;
      for (const n of [...l.available, ...l.unhealthy, ...l.networkUnhealthy, ...l.recovering, ...l.faults.map((f) => f.npu_name)]) npus.add(n);
    }
  }
  const mi = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, MANUAL_INFO_CM_NAME));
  const text = mi?.data?.[node];
  if (text !== undefined) {
    known = true;
    const p = parseManualInfo(text);
    if (p.ok) for (const n of p.value.Total ?? []) npus.add(n);
  }
  return { known, npus };
}

async function withRetry<T>(f: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try { return await f(); } catch (e) { if (!isConflict(e) || i >= 4) throw e; }
  }
}

/** 1: remove the chips from the device plugin's ManuallySeparateNPU CSV. */
async function releaseDevicePlugin(client: KubeClient, node: string, npus: readonly string[]): Promise<string[]> {
  return withRetry(async () => {
    let cm: Cm;
    try { cm = await client.get(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(node))); } catch (e) { if (isNotFound(e)) return []; throw e; }
    const listed = (cm.data?.[DEVICE_INFO_KEYS.manuallySeparateNpu] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
    const released = listed.filter((n) => npus.includes(n));
    if (released.length === 0) return [];
    const rest = listed.filter((n) => !npus.includes(n)).join(',');
    await client.patch(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(node)), {
      metadata: { resourceVersion: cm.metadata?.resourceVersion }, data: { [DEVICE_INFO_KEYS.manuallySeparateNpu]: rest },
    }, 'merge');
    return released;
  });
}

/** 2: remove the chips from the node's Total and Detail in clusterd-manual-info-cm. */
async function releaseManualInfo(client: KubeClient, ns: string, node: string, npus: readonly string[]): Promise<string[]> {
  return withRetry(async () => {
    let cm: Cm;
    try { cm = await client.get(paths.configMap(ns, MANUAL_INFO_CM_NAME)); } catch (e) { if (isNotFound(e)) return []; throw e; }
    const text = cm.data?.[node];
    if (text === undefined) return [];
    const p = parseManualInfo(text);
    if (!p.ok) throw new CliError(`${ns}/${MANUAL_INFO_CM_NAME} key ${node} unreadable (${p.reason}); not changed`, EXIT.error);
    const released = (p.value.Total ?? []).filter((n) => npus.includes(n));
    if (released.length === 0) return [];
    const total = (p.value.Total ?? []).filter((n) => !npus.includes(n));
    const detail = p.value.Detail === null ? null : Object.fromEntries(Object.entries(p.value.Detail).filter(([chip]) => !npus.includes(chip)));
    // A node with nothing left loses its key (null in a merge patch deletes it), as ClusterD writes it.
    await client.patch(paths.configMap(ns, MANUAL_INFO_CM_NAME), {
      metadata: { resourceVersion: cm.metadata?.resourceVersion }, data: { [node]: total.length === 0 ? null : encodeManualInfo({ Total: total, Detail: detail }) },
    }, 'merge');
    return released;
  });
}

/** 3: append the request the controller acts on (created on first use); returns how many of the oldest entries were dropped. */
async function requestControllerRelease(client: KubeClient, ns: string, node: string, npus: readonly string[], by: string, at: string): Promise<number> {
  return withRetry(async () => {
    let cm: Cm | undefined;
    try { cm = await client.get(paths.configMap(ns, RELEASE_REQUESTS_CM_NAME)); } catch (e) { if (!isNotFound(e)) throw e; }
    const existing = rawReleaseRequests(cm?.data);
    // The list is the audit record: never replaced because it could not be read.
    if (!existing.ok) throw new CliError(`${ns}/${RELEASE_REQUESTS_CM_NAME} key ${RELEASE_REQUESTS_KEY} unreadable (${existing.reason}); not changed, nothing released by clusterd-ts: repair or move that list first`, EXIT.error);
    const { data, dropped } = appendReleaseRequest(cm?.data, existing.value, { node, npus, by, at });
    if (cm === undefined) {
      await client.create(paths.configMaps(ns), {
        apiVersion: 'v1', kind: 'ConfigMap',
        metadata: { name: RELEASE_REQUESTS_CM_NAME, namespace: ns, labels: { 'app.kubernetes.io/part-of': 'clusterd-ts' } },
        data,
      } as never);
    } else {
      await client.patch(paths.configMap(ns, RELEASE_REQUESTS_CM_NAME), { metadata: { resourceVersion: cm.metadata?.resourceVersion }, data }, 'merge');
    }
    return dropped;
  });
}

export async function release(client: KubeClient, o: { node: string; npus: readonly string[]; clusterSystemNamespace: string; by: string; at: string }): Promise<ReleaseResult> {
  const npus = checkReleaseArgs(o.node, o.npus);
  const known = await knownNpus(client, o.clusterSystemNamespace, o.node, Date.parse(o.at));
  if (!known.known) throw new CliError(`unknown node ${o.node}: no ${DEVICE_INFO_NAMESPACE}/${deviceInfoCmName(o.node)} and no entry in ${o.clusterSystemNamespace}/${MANUAL_INFO_CM_NAME}; nothing released`, EXIT.notFound);
  const unknown = npus.filter((n) => !known.npus.has(n));
  if (unknown.length > 0) throw new CliError(`unknown NPUs on ${o.node}: ${unknown.join(', ')} (not in its device-info nor in ${MANUAL_INFO_CM_NAME}); nothing released`, EXIT.notFound);
  const dp = await releaseDevicePlugin(client, o.node, npus);
  const ci = await releaseManualInfo(client, o.clusterSystemNamespace, o.node, npus);
  const dropped = await requestControllerRelease(client, o.clusterSystemNamespace, o.node, npus, o.by, o.at);
  return {
    node: o.node, npus, by: o.by, at: o.at,
    paths: [
      { path: 'device-plugin', released: dp, note: dp.length > 0 ? `removed from ${DEVICE_INFO_NAMESPACE}/${deviceInfoCmName(o.node)} ${DEVICE_INFO_KEYS.manuallySeparateNpu}` : 'not listed in the device plugin\'s ManuallySeparateNPU' },
      { path: 'clusterd-manual-info-cm', released: ci, note: ci.length > 0 ? `removed from ${o.clusterSystemNamespace}/${MANUAL_INFO_CM_NAME} Total` : `not listed in ${MANUAL_INFO_CM_NAME}` },
      { path: 'clusterd-ts-escalation', released: npus, note: `request recorded in ${o.clusterSystemNamespace}/${RELEASE_REQUESTS_CM_NAME}${dropped > 0 ? ` (the oldest ${dropped} dropped from the list, counted in its droppedOldest)` : ''}; clusterd-ts releases its escalations and manual separations of these NPUs made before ${o.at} and resets their counters` },
    ],
  };
}
