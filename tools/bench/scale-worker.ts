/**
 * One size of the in-process scale scenario, in a fresh process so RSS belongs to that size alone
 * (started through scale-entry.ts, which prints the result as one JSON line). No apiserver: the
 * objects an informer would hold (device-info ConfigMaps from the device plugin simulator's own
 * encoder, Running pods, PodGroups) are built in memory and fed straight into the controller's FaultStore, job index and cluster-info rendering.
 * The cluster-info reconciler itself runs on in-memory ConfigMaps (its per-node cache, one pass per
 * batch of dirty nodes), next to a full render for comparison.
 */
import { randomUUID } from 'node:crypto';
import { writeHeapSnapshot } from 'node:v8';
import { FaultStore } from '../../state/fault-store.ts';
import { Subject } from 'rxjs';
import { JobIndexFeed, type JobIndexFeedSources } from '../../controllers/sources/job-index-feed.ts';
import type { WatchEvent } from '../../runtime/reflector.ts';
import type { ConfigMap, Node, Pod, PodGroup } from '../../runtime/kube-objects.ts';
import type { KubeObject } from '../../runtime/kube-client.ts';
import { CLUSTER_INFO_KEY, clusterInfoReconciler, desiredShards, renderClusterInfo } from '../../reconcilers/cluster-info.reconciler.ts';
import type { ConfigMapTarget, ConfigMapWriter } from '../../runtime/configmap-writer.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, DEVICE_INFO_NAMESPACE, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { objectKey } from '../../runtime/reflector.ts';
import { trimNode, trimPod } from '../../controllers/sources/cache-shapes.ts';
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_MAX_SHARD_BYTES, CLUSTER_INFO_NODE_CM, CLUSTER_INFO_SWITCH_PREFIX } from '../../schemas/cluster-info/cluster-info.ts';
import { addChipCode, deviceInfoInput, newNodeState, removeChipCodes, type NpuNodeState } from '../simulator/npu-state.ts';
import { fakeNode, nodeNames } from '../simulator/nodes.ts';
import { percentile, planJobs, podGroupObject, runningPodObject, vcJobObject, type JobSpec } from './fixtures.ts';

export interface ScaleResult {
  readonly nodes: number;
  readonly npus: number;
  readonly pods: number;
  readonly jobs: number;
  readonly baselineRssMiB: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  /** RSS after the initial list and a full GC: the data without the intake's garbage (rssMiB is before it). */
  readonly rssAfterGcMiB: number;
  readonly externalMiB: number;
  readonly intakeMs: number;
  readonly firstRenderMs: number;
  readonly firstClusterInfoMs: number;
  readonly shards: number;
  readonly shardBytes: number;
  readonly renderMs: number;
  /** The reconciler's first pass: every node rendered into its cache, shards joined and written. */
  readonly firstPassMs: number;
  /** Median reconciler pass after one node's device-info changed (render it, join, compare, write). */
  readonly incrementalPassMs: number;
  /** Median reconciler pass after 100 nodes' device-infos changed. */
  readonly incremental100PassMs: number;
  /** Heap the reconciler keeps after its first pass (encoded entries, joined shards; after GC). */
  readonly clusterInfoCacheMiB: number;
  readonly updates: number;
  readonly updateSeconds: number;
  readonly updatesPerSecond: number;
  readonly rendersDuringUpdates: number;
  readonly peakRssMiB: number;
}

const mib = (b: number): number => Math.round((b / 2 ** 20) * 10) / 10;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

/**
 * An object as an informer holds it: parsed from the apiserver's JSON, so its strings are flat. Built
 * by concatenation in memory they would be cons strings (a 32-byte node per piece): about 20 MiB more
 * heap at 16,000 nodes than the controller holds for the same objects (seen in a heap profile).
 */
const fromWire = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

/** What an informer holds for one device-info CM as the apiserver returned it. */
function deviceInfoCm(state: NpuNodeState, rv: number, nowMs: number): ConfigMap {
  return fromWire({
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: deviceInfoCmName(state.name), namespace: DEVICE_INFO_NAMESPACE, labels: { ...DEVICE_INFO_LABELS },
      uid: randomUUID(), resourceVersion: String(rv), creationTimestamp: new Date(nowMs).toISOString(),
    },
    data: encodeDeviceInfoData(deviceInfoInput(state, Math.floor(nowMs / 1000))),
  });
}

/**
 * The cluster-info reconciler as the manager wires it (minus the fault policy and filters, which
 * the scale run does not build), writing to an in-memory ConfigMap map with ConfigMapWriter's
 * "equal data, no write" rule. No throttle and no refresh: each `pass` is one reconcile.
 */
function memoryClusterInfo(store: FaultStore, effective: (n: string) => readonly FaultRecord[]) {
  const cms = new Map<string, ConfigMap>();
  const writer = {
    ensure: async (_kind: string, t: ConfigMapTarget, actual: ConfigMap | undefined) => {
      if (actual !== undefined && actual.data?.[t.name] === t.data[t.name]) return { written: false, obj: actual };
      const obj: ConfigMap = { metadata: { name: t.name, namespace: t.namespace, labels: t.labels, annotations: t.annotations }, data: t.data };
      cms.set(t.name, obj);
      return { written: true, obj };
    },
  } as unknown as ConfigMapWriter;
  const reconciler = clusterInfoReconciler({
    nodes: () => store.nodeNames(),
    renderNode: (node, nowMs) => renderClusterInfo(store, effective, nowMs, undefined, [node]),
    actual: (name) => cms.get(name), actualNames: () => [...cms.keys()], writer, refreshMs: 0, minIntervalMs: 0,
  });
  // A local silent logger: importing telemetry/logger.ts would load winston and change the RSS figures.
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => log };
  const ctx = { log, signal: new AbortController().signal, now: () => Date.now() };
  /** One pass over the nodes the store changed since the last drain; returns its wall time in ms. */
  const pass = async (): Promise<number> => {
    const t = performance.now();
    reconciler.markDirty(store.drainDirty());
    await reconciler.reconcile(CLUSTER_INFO_KEY, ctx);
    return performance.now() - t;
  };
  /**
   * The ConfigMaps written through the cache hold exactly what a full render gives: the same
   * entries per kind, each shard within the limit. The cuts may differ from a first layout's: they
   * are stable (docs/rules.md#ingest.cluster-info-shards), and Volcano merges the shards by key.
   */
  const checkAgainstFullRender = (nowMs: number): void => {
    const desired = desiredShards(renderClusterInfo(store, effective, nowMs), [...cms.keys()]);
    const written = new Map([...cms].map(([name, cm]) => [name, cm.data?.[name] ?? '']));
    for (const prefix of [CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_SWITCH_PREFIX]) {
      if (mergedEntries(written, prefix) !== mergedEntries(desired, prefix)) throw new Error(`cached cluster-info differs from the full render in the ${prefix}* entries`);
    }
    for (const [name, value] of written) if (value.length > CLUSTER_INFO_MAX_SHARD_BYTES) throw new Error(`${name} is over the shard limit: ${value.length} bytes`);
    const node = desired.get(CLUSTER_INFO_NODE_CM);
    // The empty node ConfigMap is held back until 5 quiet seconds pass, as ClusterD's cycle report does.
    if (node !== undefined && !(node === '' && !cms.has(CLUSTER_INFO_NODE_CM)) && written.get(CLUSTER_INFO_NODE_CM) !== node) throw new Error(`cached cluster-info differs from the full render in ${CLUSTER_INFO_NODE_CM}`);
  };
  return { pass, cms, checkAgainstFullRender };
}

/** Every entry of the shards named `<prefix><i>`, merged by key as Volcano does, in key order. */
function mergedEntries(shards: ReadonlyMap<string, string>, prefix: string): string {
  const all: Record<string, unknown> = {};
  for (const [name, value] of shards) if (name.startsWith(prefix) && value !== '') Object.assign(all, JSON.parse(value) as Record<string, unknown>);
  return JSON.stringify(Object.keys(all).sort().map((k) => [k, all[k]]));
}

/** The caches the job index reads, as plain maps, and their events (the informers are not started in-process). */
function cacheSources(pods: Map<string, Pod>, podGroups: Map<string, PodGroup>, vcJobs: Map<string, KubeObject>) {
  const view = <T>(m: Map<string, T>) => ({ store: m as ReadonlyMap<string, T>, get: (k: string) => m.get(k) });
  return {
    pods: { ...view(pods), events$: new Subject<WatchEvent<Pod>>() }, podGroups: { ...view(podGroups), events$: new Subject<WatchEvent<PodGroup>>() },
    vcJobs: view(vcJobs), ascendJobs: view(new Map<string, KubeObject>()),
  } satisfies JobIndexFeedSources;
}

export async function runScale(nodes: number, npus: number, updateSeconds: number): Promise<ScaleResult> {
  gc();
  const baselineRss = process.memoryUsage().rss;
  let peakRss = baselineRss;
  const sample = (): void => { peakRss = Math.max(peakRss, process.memoryUsage().rss); };
  const now = Date.now();
  const names = nodeNames(nodes);
  const podsPerJob = 16;
  const jobs: JobSpec[] = planJobs(names, podsPerJob, npus);
  // The "initial list": what the informers would hand over after their first list.
  // Only the simulator state of the update pool is kept: the rest is the device plugin's, not ours.
  const pool: NpuNodeState[] = [];
  const cmCache = new Map<string, ConfigMap>();
  let rv = 1;
  for (const name of names) {
    const s = newNodeState({ name, npus });
    if (pool.length < 1000) pool.push(s);
    const cm = deviceInfoCm(s, rv++, now);
    cmCache.set(objectKey(cm), cm);
  }
  const nodeCache = new Map<string, Node>();
  for (const name of names) {
    const n = fakeNode({ name, npus }) as Node;
    n.metadata = { ...n.metadata, uid: randomUUID(), resourceVersion: String(rv++), creationTimestamp: new Date(now).toISOString() };
    n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(now).toISOString(), reason: 'KubeletReady', message: 'kwok fake node is ready' } as { type: string; status: string; lastTransitionTime: string }] };
    nodeCache.set(name, trimNode(fromWire(n))); // what the node informer keeps (sources/cache-shapes.ts)
  }
  const pods = new Map<string, Pod>();
  const podGroups = new Map<string, PodGroup>();
  const vcJobs = new Map<string, KubeObject>();
  const nowIso = new Date(now).toISOString();
  for (const job of jobs) {
    job.uid = randomUUID();
    const vj = fromWire(vcJobObject(job));
    vj.metadata = { ...vj.metadata, uid: job.uid };
    vcJobs.set(objectKey(vj), vj);
    const pg = fromWire(podGroupObject(job)) as PodGroup;
    podGroups.set(objectKey(pg), pg);
    for (let r = 0; r < job.nodes.length; r++) { const p = trimPod(fromWire(runningPodObject(job, r, nowIso, randomUUID()))); pods.set(objectKey(p), p); }
  }
  sample();

  // Intake: every Node and device-info CM through FaultStore (parse, CheckCode, records), every pod through the index.
  const t0 = performance.now();
  const store = new FaultStore();
  for (const n of nodeCache.values()) store.applyNode(n, now);
  for (const cm of cmCache.values()) {
    const rej = store.applyDeviceInfo(cm, now);
    if (rej !== undefined) throw new Error(`device-info rejected: ${rej.reason}`);
  }
  store.drainDirty();
  // The controller's one job index as the sources build it (controllers/sources/job-index-feed.ts), fed the initial list's events.
  const caches = cacheSources(pods, podGroups, vcJobs);
  const index = new JobIndexFeed(caches, 'verified').index;
  for (const pg of podGroups.values()) caches.podGroups.events$.next({ type: 'add', obj: pg });
  for (const p of pods.values()) caches.pods.events$.next({ type: 'add', obj: p });
  const t1 = performance.now();
  const effective = (n: string) => store.records(n);
  const shards = desiredShards(renderClusterInfo(store, effective, now), []);
  const t2 = performance.now();
  sample();
  // Touch every job view once, as the jobs controller does on start (startLoops queues every job).
  let podsSeen = 0;
  for (const key of index.jobKeys()) podsSeen += index.job(key)?.view.pods.length ?? 0;
  if (podsSeen !== pods.size) throw new Error(`job index sees ${podsSeen} of ${pods.size} pods`);
  sample();
  const rssAfterList = process.memoryUsage().rss;
  gc();
  const mem = process.memoryUsage();

  // One more full render on a warm heap: the cost of each cluster-info pass at this size.
  const r0 = performance.now();
  desiredShards(renderClusterInfo(store, effective, now), [...shards.keys()]);
  const renderMs = performance.now() - r0;
  gc();
  const heapBeforeCache = process.memoryUsage().heapUsed;
  const clusterInfo = memoryClusterInfo(store, effective);
  const firstPassMs = await clusterInfo.pass();
  gc();
  const cacheHeap = process.memoryUsage().heapUsed - heapBeforeCache;
  clusterInfo.checkAgainstFullRender(now);
  // A heap snapshot of the steady state for tools/bench/heap-profile.ts; each holder is reachable by
  // its name from one global object, so the profile can say what each one retains.
  const snapshotPath = process.env.SCALE_HEAP_SNAPSHOT;
  if (snapshotPath !== undefined && snapshotPath !== '') {
    (globalThis as Record<string, unknown>).__scaleHolders = { deviceInfoCms: cmCache, nodes: nodeCache, pods, podGroups, faultStore: store, jobIndex: index, clusterInfoCms: clusterInfo.cms, clusterInfoReconciler: clusterInfo };
    gc();
    writeHeapSnapshot(snapshotPath);
    delete (globalThis as Record<string, unknown>).__scaleHolders;
  }

  // Sustained updates: a pool of nodes flip between one SeparateNPU chip fault and healthy; the CMs
  // are encoded beforehand (that is the device plugin's work, not ours). Each update is parsed and
  // applied like a watch event; the cluster-info reconciler makes one pass per second of updates
  // over the nodes changed in that second (ClusterD's 1 s processing cycle; our reconciler
  // coalesces a burst of node changes into one pass too).
  const variants = pool.map((s) => {
    addChipCode(s, 'Ascend910-1', 'card', '80E18402', 'SeparateNPU', now);
    const faulty = deviceInfoCm(s, 0, now);
    removeChipCodes(s, undefined, 'card');
    const healthy = deviceInfoCm(s, 0, now);
    return [faulty, healthy] as const;
  });
  // Incremental passes: one node (then 100) flips to the other variant, applied like a watch event
  // (not timed), then one reconciler pass renders just those nodes and rejoins the shards.
  let flip = 0;
  const applyNext = (): void => {
    const pair = variants[flip % variants.length]!;
    const src = pair[Math.floor(flip / variants.length) % 2]!;
    flip++;
    store.applyDeviceInfo({ ...src, metadata: { ...src.metadata, resourceVersion: String(rv++) } }, Date.now());
  };
  const onePass: number[] = [];
  for (let i = 0; i < 50; i++) { applyNext(); onePass.push(await clusterInfo.pass()); }
  const hundredPass: number[] = [];
  for (let i = 0; i < 10; i++) { for (let k = 0; k < 100; k++) applyNext(); hundredPass.push(await clusterInfo.pass()); }
  clusterInfo.checkAgainstFullRender(Date.now());
  sample();

  let updates = 0;
  let renders = 0;
  const u0 = performance.now();
  let nextRender = u0 + 1000;
  const end = u0 + updateSeconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const pair = variants[i % variants.length]!;
    const src = pair[Math.floor(i / variants.length) % 2]!;
    const cm: ConfigMap = { ...src, metadata: { ...src.metadata, resourceVersion: String(rv++) } };
    cmCache.set(objectKey(cm), cm);
    store.applyDeviceInfo(cm, Date.now());
    updates++;
    if ((i & 63) === 0 && performance.now() >= nextRender) {
      await clusterInfo.pass();
      renders++;
      sample();
      nextRender = performance.now() + 1000;
    }
  }
  const elapsed = (performance.now() - u0) / 1000;
  sample();
  const shardValues = [...shards.values()];
  return {
    nodes, npus, pods: pods.size, jobs: jobs.length,
    baselineRssMiB: mib(baselineRss), rssMiB: mib(rssAfterList), heapUsedMiB: mib(mem.heapUsed), rssAfterGcMiB: mib(mem.rss), externalMiB: mib(mem.external),
    intakeMs: Math.round(t1 - t0), firstRenderMs: Math.round(t2 - t1), firstClusterInfoMs: Math.round(t2 - t0),
    shards: shardValues.length, shardBytes: shardValues.reduce((a, v) => a + Buffer.byteLength(v), 0),
    renderMs: Math.round(renderMs), firstPassMs: Math.round(firstPassMs),
    incrementalPassMs: Math.round(percentile(onePass, 50) * 100) / 100, incremental100PassMs: Math.round(percentile(hundredPass, 50) * 100) / 100,
    clusterInfoCacheMiB: mib(cacheHeap), updates, updateSeconds: Math.round(elapsed * 100) / 100,
    updatesPerSecond: Math.round(updates / elapsed), rendersDuringUpdates: renders, peakRssMiB: mib(peakRss),
  };
}
