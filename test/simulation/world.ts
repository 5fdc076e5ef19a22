/**
 * The simulation's world: one MemoryApiServer on a ManualClock (every timer of the controller and of
 * the apiserver on it; `watchTimeouts: false` keeps the reflector's random watch timeout out of a
 * replay), N nodes with 8 chips and a device-info ConfigMap each, Volcano jobs (Job + PodGroup + one
 * pod per node), a deterministic Volcano stand-in, and the Manager built as main.ts builds it (flags
 * through parseOptions). The controller's client is a MemoryKubeClient that also notes, for the
 * invariants, when each pod deletion happened (virtual time) and every write that left its object
 * unchanged (docs/simulation.md).
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { createLogger, silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { fakeNode } from '../../tools/simulator/nodes.ts';
import { MemoryApiServer, MemoryKubeClient } from '../support/sim/memory-apiserver.ts';
import { prng } from '../../tools/prng.ts';
import { parsePath } from '../support/sim/resources.ts';
import { copyJson } from '../support/sim/copy.ts';
import { ManualClock, settle } from '../support/manual-clock.ts';

export const CHIPS = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
export const JOB_NS = 'team-sim';

/**
 * Production flags, with the ports free (several Managers on one host) and nothing else changed:
 * default flap damping (30 s hold), 200 ms burst window, 15 s pending escalation, 5 s refresh.
 */
export const SIM_ARGS = ['--http-port=0', '--http-host=127.0.0.1', '--grpc-port=0', '--grpc-host=127.0.0.1'];
/** Parsed once, as main.ts parses its argv once: flags are plain values, frozen, so Managers share nothing through them. */
const SIM_OPTIONS = Object.freeze(parseOptions(SIM_ARGS, {}));

export interface ChipFault { readonly code: string; readonly level: NpuFaultLevel; readonly sinceMs: number }

export interface SimJob {
  readonly name: string;
  readonly uid: string;
  readonly pgName: string;
  readonly ranks: number;
  readonly owner: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean };
}

/** A controller write: when (virtual ms), what, and whether it left the object byte-identical. */
export interface Write { readonly t: number; readonly verb: 'create' | 'update' | 'patch' | 'delete'; readonly path: string; readonly unchanged: boolean }

/** The controller's client: a MemoryKubeClient that notes each write (see Write). */
export class RecordingClient extends MemoryKubeClient {
  readonly writes: Write[] = [];
  private readonly now: () => number;

  constructor(server: MemoryApiServer, name: string, now: () => number) { super(server, name); this.now = now; }

  /** The stored object's resourceVersion now (before the write runs: the store applies it synchronously). */
  private rvOf(path: string): string | undefined {
    const tg = parsePath(path);
    if (tg?.name === undefined) return undefined;
    return this.server.store.peek(tg.type, tg.namespace, tg.name)?.metadata?.resourceVersion;
  }

  private async noted<T extends KubeObject>(verb: 'update' | 'patch', path: string, run: () => Promise<T>): Promise<T> {
    const before = this.rvOf(path);
    const out = await run();
    // The store writes nothing for an update or patch that changes nothing (memory-store.ts): the
    // answer keeps the resourceVersion the object had.
    this.writes.push({ t: this.now(), verb, path, unchanged: before !== undefined && out.metadata?.resourceVersion === before });
    return out;
  }

  override replace<T extends KubeObject>(path: string, obj: T): Promise<T> { return this.noted('update', path, () => super.replace(path, obj)); }
  override patch<T extends KubeObject>(path: string, patch: unknown, type?: Parameters<MemoryKubeClient['patch']>[2]): Promise<T> {
    return this.noted('patch', path, () => super.patch<T>(path, patch, type));
  }
  override async delete(path: string, body?: Record<string, unknown>, opts?: Parameters<MemoryKubeClient['delete']>[2]): Promise<unknown> {
    const out = await super.delete(path, body, opts);
    this.writes.push({ t: this.now(), verb: 'delete', path, unchanged: false });
    return out;
  }
  override async create<T extends KubeObject>(collectionPath: string, obj: T, opts?: Parameters<MemoryKubeClient['create']>[2]): Promise<T> {
    const out = await super.create(collectionPath, obj, opts);
    this.writes.push({ t: this.now(), verb: 'create', path: `${collectionPath}/${out.metadata?.name ?? ''}`, unchanged: false });
    return out;
  }
}

export interface WorldSpec {
  readonly seed: number;
  readonly nodes: number;
  readonly jobs: ReadonlyArray<{ readonly ranks: number }>;
  /** Virtual delay before the stand-in recreates a deleted pod (Volcano's job controller and scheduler). */
  readonly recreateDelayMs: number;
}

export class World {
  readonly startMs = 1_700_000_000_000;
  readonly clock = new ManualClock(this.startMs);
  /** Called when the stand-in places a recreated pod. */
  onPlaced: ((pod: string, node: string) => void) | undefined;
  readonly server: MemoryApiServer;
  readonly controller: RecordingClient;
  readonly plugin: MemoryKubeClient;
  readonly volcano: MemoryKubeClient;
  readonly nodes: string[];
  readonly jobs: SimJob[] = [];
  /** The device plugin's view: each node's faulty chips. */
  readonly faults = new Map<string, Map<string, ChipFault>>();
  /** Pod name -> node, as the stand-in placed it. */
  readonly placement = new Map<string, string>();
  manager: Manager | undefined;
  /** Managers started so far (1 + restarts). */
  incarnations = 0;
  private readonly pendingRecreate = new Set<string>();
  private readonly random: () => number;
  private late: string[] = [];

  readonly spec: WorldSpec;

  constructor(spec: WorldSpec) {
    this.spec = spec;
    this.random = prng(spec.seed ^ 0x3c6ef372);
    this.server = new MemoryApiServer({ clock: this.clock, random: prng(spec.seed), watchTimeouts: false, recordCalls: true, gracefulPodDeletion: false });
    this.controller = new RecordingClient(this.server, 'clusterd-ts', this.clock.now);
    this.plugin = this.server.client('device-plugin');
    this.volcano = this.server.client('volcano');
    this.nodes = Array.from({ length: spec.nodes }, (_, i) => `node-${i}`);
    for (const n of this.nodes) this.faults.set(n, new Map());
  }

  async setUp(): Promise<void> {
    const c = this.volcano;
    for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system', JOB_NS]) {
      await c.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    }
    for (const n of this.nodes) await c.create(paths.nodes(), fakeNode({ name: n, npus: 8 }));
    // Device plugins start in any order, some after the controller (`writeLateDeviceInfo`): the
    // controller meets nodes in an order of their own, not the store's.
    const order = [...this.nodes];
    for (let i = order.length - 1; i > 0; i--) { const j = Math.floor(this.random() * (i + 1)); [order[i], order[j]] = [order[j]!, order[i]!]; }
    const early = Math.floor(this.random() * (order.length + 1));
    for (const n of order.slice(0, early)) await this.writeDeviceInfo(n);
    this.late = order.slice(early);
    let next = 0;
    for (const [j, spec] of this.spec.jobs.entries()) {
      const name = `job-${j}`;
      const vc = await c.create<KubeObject>(paths.vcJobs(JOB_NS), {
        apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: JOB_NS, labels: { 'fault-scheduling': 'force' } },
        spec: { minAvailable: spec.ranks, tasks: [{ name: 'worker', replicas: spec.ranks }] },
      });
      const uid = vc.metadata!.uid!;
      const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true };
      const job: SimJob = { name, uid, pgName: `${name}-${uid}`, ranks: spec.ranks, owner };
      await c.create<KubeObject>(paths.podGroups(JOB_NS), {
        apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
        metadata: { name: job.pgName, namespace: JOB_NS, labels: { 'fault-scheduling': 'force' }, ownerReferences: [owner] },
        spec: { minMember: spec.ranks }, status: { phase: 'Running' },
      });
      this.jobs.push(job);
      for (let rank = 0; rank < spec.ranks; rank++) await this.createPod(job, rank, this.nodes[next++]!);
    }
  }

  /** The device-info ConfigMaps of the device plugins that start after the controller. */
  async writeLateDeviceInfo(): Promise<void> {
    for (const n of this.late) await this.writeDeviceInfo(n);
    this.late = [];
  }

  podName(job: SimJob, rank: number): string { return `${job.name}-worker-${rank}`; }

  private async createPod(job: SimJob, rank: number, node: string): Promise<void> {
    const name = this.podName(job, rank);
    const pod = await this.volcano.create<KubeObject>(paths.pods(JOB_NS), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name, namespace: JOB_NS, ownerReferences: [job.owner], labels: { app: job.name },
        annotations: { 'hccl/rankIndex': String(rank), 'scheduling.k8s.io/group-name': job.pgName, 'huawei.com/AscendReal': CHIPS.join(',') },
      },
      spec: {
        nodeName: node, restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
        containers: [{ name: 'train', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': '8' }, limits: { 'huawei.com/Ascend910': '8' } } }],
      },
    });
    await this.volcano.replace(paths.podStatus(JOB_NS, name), { ...pod, status: { phase: 'Running', podIP: `10.0.0.${rank + 1}`, conditions: [{ type: 'Ready', status: 'True' }] } });
    this.placement.set(name, node);
  }

  /** What the device plugin writes for `node`: its faulty chips unhealthy, each with its one code. */
  async writeDeviceInfo(node: string): Promise<void> {
    const fs = this.faults.get(node)!;
    const bad = [...fs.entries()].filter(([, f]) => f.level !== 'NotHandleFault' && f.level !== 'SubHealthFault').map(([c]) => c);
    const data = encodeDeviceInfoData({
      available: CHIPS.filter((c) => !bad.includes(c)), unhealthy: bad,
      faults: [...fs.entries()].map(([chip, f]) => makeDeviceFault('CardUnhealthy', chip, [{ code: f.code, level: f.level, timeMs: f.sinceMs }])),
      updateTimeS: Math.floor(this.clock.now() / 1000),
    });
    const name = deviceInfoCmName(node);
    const path = paths.configMap('kube-system', name);
    const cur = this.server.store.peek(parsePath(path)!.type, 'kube-system', name) as ConfigMap | undefined;
    if (cur === undefined) await this.plugin.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: DEVICE_INFO_LABELS }, data });
    else await this.plugin.replace(path, { ...copyJson(cur), data });
  }

  /**
   * Chips the scheduler sees out of service on `node`: its cluster-info entry's `-Unhealthy` list
   * (device-info faults, and what the controller holds: manual separation, flap damping).
   */
  schedulerUnhealthy(node: string): string[] {
    for (const e of this.server.store.snapshot(this.server.target('GET', paths.configMaps('mindx-dl'), 'collection').type, 'mindx-dl') ?? []) {
      const name = e.obj.metadata?.name ?? '';
      const raw = (e.obj as ConfigMap).data?.[name];
      if (!name.startsWith('cluster-info-device-') || raw === undefined || raw === '') continue;
      const entry = (JSON.parse(raw) as Record<string, { DeviceList?: Record<string, string> }>)[deviceInfoCmName(node)];
      if (entry !== undefined) return (entry.DeviceList?.['huawei.com/Ascend910-Unhealthy'] ?? '').split(',').filter(Boolean);
    }
    return [];
  }

  /**
   * A free node (no pod) for a recreated pod, as Volcano's scheduler would pick one for a pod asking
   * for all 8 chips: one whose 8 chips are all in service in cluster-info, without faults in
   * device-info; else (none left) any free node.
   */
  private freeHealthyNode(): string | undefined {
    const used = new Set(this.placement.values());
    return this.nodes.find((n) => !used.has(n) && this.faults.get(n)!.size === 0 && this.schedulerUnhealthy(n).length === 0) ?? this.nodes.find((n) => !used.has(n));
  }

  /**
   * Volcano's part: a job pod that is gone comes back under the same name with a new uid, on a free
   * node (a healthy one first), `recreateDelayMs` of virtual time after it was seen gone.
   */
  private volcanoPass(): void {
    for (const job of this.jobs) {
      for (let rank = 0; rank < job.ranks; rank++) {
        const name = this.podName(job, rank);
        if (this.pendingRecreate.has(name)) continue;
        const tg = parsePath(paths.pod(JOB_NS, name))!;
        if (this.server.store.peek(tg.type, JOB_NS, name) !== undefined) continue;
        this.placement.delete(name);
        this.pendingRecreate.add(name);
        this.clock.setTimeout(() => {
          const node = this.freeHealthyNode();
          if (node === undefined) { this.pendingRecreate.delete(name); return; }
          this.placement.set(name, node);
          this.onPlaced?.(name, node);
          void this.createPod(job, rank, node).finally(() => this.pendingRecreate.delete(name));
        }, this.spec.recreateDelayMs);
      }
    }
  }

  async startManager(): Promise<void> {
    this.incarnations++;
    const m = new Manager({
      clock: this.clock, client: this.controller,
      // SIM_LOG=debug|info: the controller's log on stderr (for a replayed seed).
      log: process.env.SIM_LOG === undefined || process.env.SIM_LOG === '' ? silentLogger : createLogger(process.env.SIM_LOG as 'info', process.stderr), metrics: new Metrics({ processMetrics: false }),
      options: SIM_OPTIONS,
    });
    const started = m.start();
    // start() waits for the informers' first lists: answers come on microtasks, timers need the clock.
    let done = false;
    void started.finally(() => { done = true; });
    for (let i = 0; i < 200 && !done; i++) await this.clock.run(10);
    await started;
    this.manager = m;
  }

  async stopManager(): Promise<void> {
    const m = this.manager;
    if (m === undefined) return;
    this.manager = undefined;
    const stopped = m.stop();
    let done = false;
    void stopped.finally(() => { done = true; });
    for (let i = 0; i < 200 && !done; i++) await this.clock.run(10);
    await stopped;
  }

  /** Moves virtual time forward in `tickMs` steps, letting the answers and the stand-in run after each. */
  async advance(ms: number, tickMs = 1_000): Promise<void> {
    for (let done = 0; done < ms; done += tickMs) {
      await this.clock.run(Math.min(tickMs, ms - done));
      await settle();
      this.volcanoPass();
    }
  }
}
