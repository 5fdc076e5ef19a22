/**
 * Fixtures of the process-recovery and hot-switch integration tests: kwok nodes, a Volcano-style job
 * (vcjob + PodGroup `<job>-<uid>` + rank pods already placed with `huawei.com/AscendReal`) and its
 * reset-config, a peer that re-creates deleted job pods on spare nodes (Volcano's job controller),
 * device-plugin fault reports, a watch of every reset-config version, and a scripted MindIO behind
 * the TaskD-like client (test/support/taskd-client.ts).
 */
import { randomBytes } from 'node:crypto';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import type { ConfigMap, Pod } from '../../runtime/kube-objects.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { encodeResetConfigData, parseResetConfigData, type TaskResetInfo } from '../../schemas/reset-config/reset-config.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { silentLogger, createLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import type { ProcessManageSignal } from '../../vocabulary/process-manage-signal.ts';
import { TaskdClient } from '../support/taskd-client.ts';
import { eventually } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

export const rand = (): string => randomBytes(3).toString('hex');
export const chips = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `Ascend910-${from + i}`);

/**
 * The tests' waits (ms), as `--recovery-timings` (ClusterD's are 10 s / 10 s / 1 s / 15 s): short, so
 * a case takes seconds. A later flag of the same name in `args` wins.
 */
export const TEST_TIMINGS = ['--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,inPlaceCheck=1000', '--recovery-feed-window-ms=50'];

/**
 * A Manager in process on the shared control plane, built as main.ts builds it (flags only): HTTP and
 * gRPC on free ports. The TaskD-like clients of these tests run on this host, not in the job's (kwok)
 * pods, so the caller check is off (`--grpc-caller-check=pod-ip` in `args` turns it back on; it is
 * proved in tenant-grpc.test.ts).
 */
export async function startManager(
  client: KubeClient, args: readonly string[] = [], tuning: { standby?: boolean } = {},
): Promise<{ manager: Manager; target: string; metrics: Metrics }> {
  for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system']) {
    if ((await client.getOrUndefined(`/api/v1/namespaces/${ns}`)) === undefined) {
      await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
    }
  }
  const metrics = new Metrics({ processMetrics: false });
  const log = process.env.RECOVERY_TEST_LOG === '1' ? createLogger('debug', process.stderr) : silentLogger;
  const manager = new Manager({ clock: realClock,
    client, metrics, log,
    options: parseOptions(['--http-port=0', '--grpc-port=0', '--grpc-host=127.0.0.1', '--cluster-info-refresh-seconds=0', '--grpc-caller-check=off', ...TEST_TIMINGS, ...args], {}),
  });
  await manager.start();
  if (tuning.standby === true) return { manager, target: '', metrics };
  const server = await manager.grpc.ready();
  if (server === undefined) throw new Error('gRPC server did not start');
  return { manager, target: `127.0.0.1:${server.port}`, metrics };
}

export interface TestJob {
  readonly ns: string;
  readonly name: string;
  readonly uid: string;
  readonly pgName: string;
  readonly key: string;
  readonly npusPerPod: number;
  readonly owner: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean };
  readonly podNames: string[];
}

export interface JobSpec {
  readonly ns: string;
  readonly nodes: readonly string[];
  readonly npusPerPod?: number;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  /** Extra pod labels (e.g. a MindIE server's `jobID` and `app=mindie-ms-server`). */
  readonly podLabels?: Record<string, string>;
  readonly resetConfig?: boolean;
  /** Pin every pod to its node with a nodeSelector (a copy of its spec fits no other node). */
  readonly pinned?: boolean;
}

/** A rank pod as the job controller creates it (AscendReal set: the device plugin allocated its chips). */
export function podObject(job: TestJob, rank: number, node: string, chipList: readonly string[], pinned = false, podLabels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${job.name}-worker-${rank}`, namespace: job.ns, ownerReferences: [job.owner], labels: { app: job.name, ...podLabels },
      annotations: { 'hccl/rankIndex': String(rank), 'scheduling.k8s.io/group-name': job.pgName, 'huawei.com/AscendReal': chipList.join(',') },
    },
    spec: {
      nodeName: node, tolerations: [{ operator: 'Exists' }], restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
      ...(pinned ? { nodeSelector: { 'kubernetes.io/hostname': node } } : {}),
      containers: [{ name: 'train', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': String(chipList.length) }, limits: { 'huawei.com/Ascend910': String(chipList.length) } } }],
    },
  };
}

/** vcjob + PodGroup (Running) + one pod per node (ranks in node order) + reset-config. */
export async function createJob(client: KubeClient, spec: JobSpec): Promise<TestJob> {
  const name = `job-${rand()}`;
  const per = spec.npusPerPod ?? 2;
  const labels = { 'fault-scheduling': 'force', ...spec.labels };
  const vc = await client.create<KubeObject>(paths.vcJobs(spec.ns), {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: spec.ns, labels },
    spec: { minAvailable: spec.nodes.length, tasks: [{ name: 'worker', replicas: spec.nodes.length }] },
  });
  const uid = vc.metadata!.uid!;
  const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true };
  const pgName = `${name}-${uid}`;
  await client.create(paths.podGroups(spec.ns), {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: pgName, namespace: spec.ns, labels, annotations: spec.annotations ?? {}, ownerReferences: [owner] },
    spec: { minMember: spec.nodes.length }, status: { phase: 'Running' },
  });
  const job: TestJob = { ns: spec.ns, name, uid, pgName, key: `${spec.ns}/${pgName}`, npusPerPod: per, owner, podNames: spec.nodes.map((_, i) => `${name}-worker-${i}`) };
  for (const [rank, node] of spec.nodes.entries()) await client.create(paths.pods(spec.ns), podObject(job, rank, node, chips(per), spec.pinned === true, spec.podLabels));
  if (spec.resetConfig !== false) {
    const empty: TaskResetInfo = { RankList: [], UpdateTime: 0, RetryTime: 0, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false };
    await client.create(paths.configMaps(spec.ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `reset-config-${name}`, namespace: spec.ns, labels: { reset: 'true' } }, data: encodeResetConfigData(empty) });
  }
  return job;
}

/** Kwok nodes with 8 NPUs each. */
export async function fakeNodes(client: KubeClient, prefix: string, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  await createFakeNodes(client, names.map((name) => ({ name, npus: 8 })));
  return names;
}

/** The device plugin reports `codes` on `chip` of `node` (one CardUnhealthy fault). */
export async function reportChipFault(client: KubeClient, node: string, chip: string, code: string, level: NpuFaultLevel, unhealthy = false): Promise<void> {
  const now = Date.now();
  const data = encodeDeviceInfoData({
    available: chips(8).filter((c) => !unhealthy || c !== chip), unhealthy: unhealthy ? [chip] : [],
    faults: [makeDeviceFault('CardUnhealthy', chip, [{ code, level, timeMs: now }])], updateTimeS: Math.floor(now / 1000),
  });
  const name = deviceInfoCmName(node);
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
  if (existing === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
  else await client.replace(paths.configMap('kube-system', name), { ...existing, data });
}

/**
 * Leaves nothing for other tests' controllers on the shared control plane: the nodes report healthy
 * chips again (a deleted device-info ConfigMap would keep its last faults) and the job's PodGroup and
 * vcjob go (pods of a job without a PodGroup are nobody's business).
 */
export async function cleanUp(client: KubeClient, job: TestJob | undefined, nodes: readonly string[]): Promise<void> {
  for (const node of nodes) {
    const name = deviceInfoCmName(node);
    const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
    if (existing === undefined) continue;
    const data = encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000) });
    await client.replace(paths.configMap('kube-system', name), { ...existing, data }).catch(() => undefined);
  }
  if (job === undefined) return;
  await client.delete(paths.podGroup(job.ns, job.pgName)).catch(() => undefined);
  await client.delete(paths.vcJob(job.ns, job.name)).catch(() => undefined);
}

/** Volcano's job controller for the test job: a deleted rank pod comes back (new UID) on a spare node. */
export function podPeer(client: KubeClient, job: TestJob, spare: string[]): { recreated: string[]; stop(): void } {
  const pods = new Reflector<Pod>(client, { clock: realClock, name: `peer-${job.name}`, path: paths.pods(job.ns) });
  const recreated: string[] = [];
  // As Volcano's controller does, a failed create is tried again (a lost replacement would leave the
  // test waiting for a pod nobody makes), and said on stderr.
  let stopped = false;
  const recreate = async (pod: KubeObject): Promise<void> => {
    for (let attempt = 1; !stopped; attempt++) {
      try {
        await client.create(paths.pods(job.ns), pod);
        return;
      } catch (e) {
        process.stderr.write(`pod peer: re-creating ${pod.metadata?.name} failed (attempt ${attempt}): ${String(e)}\n`);
        if (attempt >= 20) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  };
  const sub = pods.events$.subscribe({
    next: (ev) => {
      const p = ev.obj;
      if (ev.type !== 'delete' || !job.podNames.includes(p.metadata?.name ?? '') || p.metadata?.annotations?.podType === 'backup') return;
      const rank = Number(p.metadata?.annotations?.['hccl/rankIndex']);
      const node = spare.shift();
      if (node === undefined) return;
      recreated.push(p.metadata!.name!);
      void recreate(podObject(job, rank, node, chips(job.npusPerPod)));
    },
    error: () => undefined,
  });
  pods.start();
  return { recreated, stop: () => { stopped = true; sub.unsubscribe(); pods.stop(); } };
}

/** Every version of the job's reset.json (checkCode verified), in order. */
export function watchResetConfig(client: KubeClient, job: TestJob): { versions: TaskResetInfo[]; badCheckCode: number; stop(): void } {
  const r = new Reflector<ConfigMap>(client, { clock: realClock, name: `reset-${job.name}`, path: paths.configMaps(job.ns), fieldSelector: `metadata.name=reset-config-${job.name}` });
  const out = { versions: [] as TaskResetInfo[], badCheckCode: 0, stop: () => { sub.unsubscribe(); r.stop(); } };
  const sub = r.events$.subscribe({
    next: (ev) => {
      if (ev.type === 'delete') return;
      const parsed = parseResetConfigData(ev.obj.data, { verifyCheckCode: true });
      if (parsed.ok) out.versions.push(parsed.value.info);
      else out.badCheckCode++;
    },
    error: () => undefined,
  });
  r.start();
  return out;
}

/**
 * Every value a PodGroup label took, in order, from a watch: a transient value (the `pause` of a job
 * whose pods are replaced within a few hundred ms) is seen, where polling can miss it.
 */
export function watchPodGroupLabel(client: KubeClient, job: TestJob, key: string): { values: Array<string | undefined>; stop(): void } {
  const r = new Reflector<KubeObject>(client, { clock: realClock, name: `pg-${job.name}`, path: paths.podGroups(job.ns), fieldSelector: `metadata.name=${job.pgName}` });
  const out = { values: [] as Array<string | undefined>, stop: () => { sub.unsubscribe(); r.stop(); } };
  const sub = r.events$.subscribe({
    next: (ev) => {
      if (ev.type === 'delete') return;
      const v = ev.obj.metadata?.labels?.[key];
      if (out.values.length === 0 || out.values.at(-1) !== v) out.values.push(v);
    },
    error: () => undefined,
  });
  r.start();
  return out;
}

export async function podUid(client: KubeClient, job: TestJob, rank: number): Promise<string | undefined> {
  const p = await client.getOrUndefined<Pod>(paths.pod(job.ns, `${job.name}-worker-${rank}`));
  return p?.metadata?.deletionTimestamp === undefined ? p?.metadata?.uid : undefined;
}

export async function podGroup(client: KubeClient, job: TestJob): Promise<KubeObject> {
  return client.get<KubeObject>(paths.podGroup(job.ns, job.pgName));
}

/** What the scripted MindIO answers; `null` = never answers that signal. */
export interface MindIo {
  preExit?: boolean;
  stopCode?: number | null;
  strategies?: string[] | null;
  hotSwitchStrategies?: string[] | null;
  /** Code for ReportRecoverStatus of `strategy` (may wait, e.g. for the pod to be replaced). */
  status?: (strategy: string, signal: ProcessManageSignal) => Promise<number | null> | number | null;
}

const REPORTED = new Set(['retry', 'recover', 'dump', 'downgrade', 'upgrade', 'migration']);

/** A TaskD (role taskd) whose MindIO follows `script`; started. */
export function startAgent(target: string, jobId: string, script: MindIo, role: 'taskd' | 'master agent' = 'taskd'): TaskdClient {
  const c = new TaskdClient({ target, jobId, role, autoRespond: false }).start();
  void (async () => {
    for await (const s of c.signals()) {
      void (async () => {
        switch (s.signalType) {
          case 'preExitProcess':
            if (script.preExit !== false) await c.reportProcessFault(s.faultRanks.map((r) => ({ rankId: r.rankId, faultType: '1' })));
            return;
          case 'stopTrain':
            if (script.stopCode !== null) await c.reportStopComplete(script.stopCode ?? 0, 'stop', s.faultRanks);
            return;
          case 'globalFault':
            if (script.strategies !== null) await c.reportRecoverStrategy(s.faultRanks, script.strategies ?? ['retry', 'recover']);
            return;
          case 'hot-switch':
            if (s.actions.includes('hot switch') && script.hotSwitchStrategies !== null) await c.reportRecoverStrategy(s.faultRanks, script.hotSwitchStrategies ?? ['migration']);
            return;
          case 'changeStrategy': {
            if (!REPORTED.has(s.changeStrategy)) return;
            const code = script.status === undefined ? 0 : await script.status(s.changeStrategy, s);
            if (code !== null) await c.reportRecoverStatus(code, '', s.changeStrategy);
            return;
          }
          default:
        }
      })();
    }
  })();
  return c;
}

/** Polls until the pod of `rank` has a UID other than `oldUid`. */
export const replacedPod = (client: KubeClient, job: TestJob, rank: number, oldUid: string, timeoutMs = 30_000): Promise<string> =>
  eventually(async () => {
    const uid = await podUid(client, job, rank);
    return uid !== undefined && uid !== oldUid ? uid : undefined;
  }, timeoutMs);

export const signalSummary = (s: ProcessManageSignal): string =>
  `${s.signalType}${s.changeStrategy ? `:${s.changeStrategy}` : ''}${s.actions.length > 0 ? `[${s.actions.join('|')}]` : ''}`;
