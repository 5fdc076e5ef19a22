/**
 * One size of the in-process scale scenario, in a fresh process so RSS belongs to that size alone:
 * `node --expose-gc tools/bench/scale-worker.ts --nodes N --npus 16 --update-seconds S`. Prints one
 * JSON line with the measurements. No apiserver: the objects an informer would hold (device-info
 * ConfigMaps from the device plugin simulator's own encoder, Running pods, PodGroups) are built in
 * memory and fed straight into the controller's FaultStore, JobIndex and cluster-info rendering.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { FaultStore } from '../../controllers/fault-store.ts';
import { JobIndex } from '../../controllers/job-index.ts';
import type { ConfigMap, Node, Pod, PodGroup, Sources } from '../../controllers/sources/sources.ts';
import { desiredShards, renderClusterInfo } from '../../reconcilers/cluster-info.reconciler.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, DEVICE_INFO_NAMESPACE, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { objectKey } from '../../runtime/reflector.ts';
import { addChipCode, deviceInfoInput, newNodeState, removeChipCodes, type NpuNodeState } from '../simulator/npu-state.ts';
import { fakeNode, nodeNames } from '../simulator/nodes.ts';
import { planJobs, podGroupObject, runningPodObject, type JobSpec } from './fixtures.ts';

export interface ScaleResult {
  readonly nodes: number;
  readonly npus: number;
  readonly pods: number;
  readonly jobs: number;
  readonly baselineRssMiB: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  readonly externalMiB: number;
  readonly intakeMs: number;
  readonly firstRenderMs: number;
  readonly firstClusterInfoMs: number;
  readonly shards: number;
  readonly shardBytes: number;
  readonly renderMs: number;
  readonly updates: number;
  readonly updateSeconds: number;
  readonly updatesPerSecond: number;
  readonly rendersDuringUpdates: number;
  readonly peakRssMiB: number;
}

const mib = (b: number): number => Math.round((b / 2 ** 20) * 10) / 10;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

/** What an informer holds for one device-info CM as the apiserver returned it. */
function deviceInfoCm(state: NpuNodeState, rv: number, nowMs: number): ConfigMap {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: deviceInfoCmName(state.name), namespace: DEVICE_INFO_NAMESPACE, labels: { ...DEVICE_INFO_LABELS },
      uid: randomUUID(), resourceVersion: String(rv), creationTimestamp: new Date(nowMs).toISOString(),
    },
    data: encodeDeviceInfoData(deviceInfoInput(state, Math.floor(nowMs / 1000))),
  };
}

/** The two caches JobIndex reads, as plain maps (the informers are not started in-process). */
function cacheSources(pods: Map<string, Pod>, podGroups: Map<string, PodGroup>): Pick<Sources, 'pods' | 'podGroups'> {
  const view = <T>(m: Map<string, T>) => ({ store: m as ReadonlyMap<string, T>, get: (k: string) => m.get(k) });
  return { pods: view(pods), podGroups: view(podGroups) } as unknown as Pick<Sources, 'pods' | 'podGroups'>;
}

export function runScale(nodes: number, npus: number, updateSeconds: number): ScaleResult {
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
    nodeCache.set(name, n);
  }
  const pods = new Map<string, Pod>();
  const podGroups = new Map<string, PodGroup>();
  const nowIso = new Date(now).toISOString();
  for (const job of jobs) {
    job.uid = randomUUID();
    const pg = podGroupObject(job) as PodGroup;
    podGroups.set(objectKey(pg), pg);
    for (let r = 0; r < job.nodes.length; r++) { const p = runningPodObject(job, r, nowIso, randomUUID()) as Pod; pods.set(objectKey(p), p); }
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
  const index = new JobIndex(cacheSources(pods, podGroups));
  for (const p of pods.values()) index.apply({ type: 'add', obj: p });
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

  // Sustained updates: a pool of nodes flip between one SeparateNPU chip fault and healthy; the CMs
  // are encoded beforehand (that is the device plugin's work, not ours). Each update is parsed and
  // applied like a watch event; cluster-info is rendered once per second of updates (ClusterD's 1 s
  // processing cycle; a burst of node changes costs one pass in our reconciler too).
  const variants = pool.map((s) => {
    addChipCode(s, 'Ascend910-1', 'card', '80E18402', 'SeparateNPU', now);
    const faulty = deviceInfoCm(s, 0, now);
    removeChipCodes(s, undefined, 'card');
    const healthy = deviceInfoCm(s, 0, now);
    return [faulty, healthy] as const;
  });
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
      store.drainDirty();
      desiredShards(renderClusterInfo(store, effective, Date.now()), [...shards.keys()]);
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
    baselineRssMiB: mib(baselineRss), rssMiB: mib(rssAfterList), heapUsedMiB: mib(mem.heapUsed), externalMiB: mib(mem.external),
    intakeMs: Math.round(t1 - t0), firstRenderMs: Math.round(t2 - t1), firstClusterInfoMs: Math.round(t2 - t0),
    shards: shardValues.length, shardBytes: shardValues.reduce((a, v) => a + Buffer.byteLength(v), 0),
    renderMs: Math.round(renderMs), updates, updateSeconds: Math.round(elapsed * 100) / 100,
    updatesPerSecond: Math.round(updates / elapsed), rendersDuringUpdates: renders, peakRssMiB: mib(peakRss),
  };
}

if (process.argv[1]?.endsWith('scale-worker.ts')) {
  const { values } = parseArgs({ options: { nodes: { type: 'string' }, npus: { type: 'string', default: '16' }, 'update-seconds': { type: 'string', default: '10' } } });
  const result = runScale(Number(values.nodes), Number(values.npus), Number(values['update-seconds']));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
