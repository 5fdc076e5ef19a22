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
 */
import { isConflict, isNotFound, paths, type KubeClient } from '../runtime/kube-client.ts';
import { DEVICE_INFO_KEYS, DEVICE_INFO_NAMESPACE, deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { MANUAL_INFO_CM_NAME, encodeManualInfo, parseManualInfo } from '../schemas/manual-info/manual-info.ts';
import { RELEASE_REQUESTS_CM_NAME, RELEASE_REQUESTS_KEY, appendReleaseRequest, parseReleaseRequests } from '../schemas/release-request/release-request.ts';
import { CliError, EXIT } from './errors.ts';

interface Cm { metadata?: { name?: string; resourceVersion?: string }; data?: Record<string, string> }

export interface ReleaseResult {
  readonly node: string;
  readonly npus: readonly string[];
  readonly by: string;
  readonly at: string;
  /** What each path held and what was done there. */
  readonly paths: ReadonlyArray<{ readonly path: 'device-plugin' | 'clusterd-manual-info-cm' | 'clusterd-ts-escalation'; readonly released: readonly string[]; readonly note: string }>;
}

const NPU = /^[A-Za-z][A-Za-z0-9]*-\d+$/;

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

/** 3: append the request the controller acts on (created on first use). */
async function requestControllerRelease(client: KubeClient, ns: string, node: string, npus: readonly string[], by: string, at: string): Promise<void> {
  await withRetry(async () => {
    let cm: Cm | undefined;
    try { cm = await client.get(paths.configMap(ns, RELEASE_REQUESTS_CM_NAME)); } catch (e) { if (!isNotFound(e)) throw e; }
    const existing = parseReleaseRequests(cm?.data);
    const value = appendReleaseRequest(existing.ok ? existing.value.requests : [], { node, npus, by, at });
    if (cm === undefined) {
      await client.create(paths.configMaps(ns), {
        apiVersion: 'v1', kind: 'ConfigMap',
        metadata: { name: RELEASE_REQUESTS_CM_NAME, namespace: ns, labels: { 'app.kubernetes.io/part-of': 'clusterd-ts' } },
        data: { [RELEASE_REQUESTS_KEY]: value },
      } as never);
    } else {
      await client.patch(paths.configMap(ns, RELEASE_REQUESTS_CM_NAME), { metadata: { resourceVersion: cm.metadata?.resourceVersion }, data: { [RELEASE_REQUESTS_KEY]: value } }, 'merge');
    }
  });
}

export async function release(client: KubeClient, o: { node: string; npus: readonly string[]; clusterSystemNamespace: string; by: string; at: string }): Promise<ReleaseResult> {
  const bad = o.npus.filter((n) => !NPU.test(n));
  if (bad.length > 0) throw new CliError(`not NPU names: ${bad.join(', ')} (want e.g. Ascend910-3)`, EXIT.usage);
  const npus = [...new Set(o.npus)];
  const dp = await releaseDevicePlugin(client, o.node, npus);
  const ci = await releaseManualInfo(client, o.clusterSystemNamespace, o.node, npus);
  await requestControllerRelease(client, o.clusterSystemNamespace, o.node, npus, o.by, o.at);
  return {
    node: o.node, npus, by: o.by, at: o.at,
    paths: [
      { path: 'device-plugin', released: dp, note: dp.length > 0 ? `removed from ${DEVICE_INFO_NAMESPACE}/${deviceInfoCmName(o.node)} ${DEVICE_INFO_KEYS.manuallySeparateNpu}` : 'not listed in the device plugin\'s ManuallySeparateNPU' },
      { path: 'clusterd-manual-info-cm', released: ci, note: ci.length > 0 ? `removed from ${o.clusterSystemNamespace}/${MANUAL_INFO_CM_NAME} Total` : `not listed in ${MANUAL_INFO_CM_NAME}` },
      { path: 'clusterd-ts-escalation', released: npus, note: `request recorded in ${o.clusterSystemNamespace}/${RELEASE_REQUESTS_CM_NAME}; clusterd-ts releases its escalations and manual separations of these NPUs made before ${o.at} and resets their counters` },
    ],
  };
}
