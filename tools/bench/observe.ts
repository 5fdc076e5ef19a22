/**
 * What the benchmark sees of the controller's work, each with the time it was first seen: the
 * cluster-info shards (per node: Unhealthy chips, switch fault level), vcjob-fault-npu-cm's fault
 * nodes, the bench jobs' pods (deleted or being deleted), and the controller's `job decision` log
 * lines. Watches use the project's Reflector; times are this process's clock when the watch event
 * arrived (the controller runs on the same machine and clock).
 */
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import { Reflector, type WatchEvent } from '../../runtime/reflector.ts';
import type { ConfigMap, Pod } from '../../runtime/kube-objects.ts';
import { CLUSTER_INFO_DEVICE_PREFIX, CLUSTER_INFO_LABEL_KEY, CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_SWITCH_PREFIX } from '../../schemas/cluster-info/cluster-info.ts';
import { DEVICE_INFO_CM_PREFIX } from '../../schemas/device-info/device-info.ts';
import { FAULT_NODE_KEY, VCJOB_FAULT_NPU_CM_NAME, VCJOB_FAULT_NPU_NAMESPACE } from '../../schemas/vcjob-fault-npu/vcjob-fault-npu.ts';
import type { ControllerProcess } from './controller-process.ts';
import { BENCH_NAMESPACE, podName, type JobSpec } from './fixtures.ts';
import { realClock } from '../../runtime/clock.ts';

const SWITCH_INFO_PREFIX = 'mindx-dl-switchinfo-';
const UNHEALTHY_KEY = 'huawei.com/Ascend910-Unhealthy';
/** Controller log lines whose times the cold-start scenario reads. */
export const LIFECYCLE_MESSAGES: readonly string[] = ['starting clusterd-ts', 'http server listening', 'caches synced'];

interface Timed<T> { value: T; sinceMs: number }

/** A value per key with the time it last changed. */
class TimedMap<T> {
  private readonly m = new Map<string, Timed<T>>();
  set(key: string, value: T, atMs: number, same: (a: T, b: T) => boolean = (a, b) => a === b): void {
    const cur = this.m.get(key);
    if (cur === undefined || !same(cur.value, value)) this.m.set(key, { value, sinceMs: atMs });
  }
  get(key: string): Timed<T> | undefined { return this.m.get(key); }
}

interface Waiter { readonly check: () => number | undefined; readonly resolve: (t: number) => void }

export class Observer {
  readonly clusterInfo: Reflector<ConfigMap>;
  readonly volcano: Reflector<ConfigMap>;
  readonly pods: Reflector<Pod>;
  /** Node -> Unhealthy chip CSV in cluster-info-device-*. */
  private readonly unhealthy = new TimedMap<string>();
  /** Node -> switch FaultLevel in cluster-info-switch-* ('' when absent). */
  private readonly switchLevel = new TimedMap<string>();
  private readonly shardNodes = new Map<string, Set<string>>();
  /** Node -> listed in vcjob-fault-npu-cm fault-node. */
  private readonly vcFault = new TimedMap<boolean>();
  private vcNodes = new Set<string>();
  /** Pod name -> uid being deleted (deletionTimestamp or gone). */
  private readonly podDeleting = new Map<string, { uid: string; atMs: number }>();
  /** Job key -> time and fault nodes of each `job decision` log line. */
  private readonly decisions = new Map<string, Array<{ atMs: number; nodes: readonly string[] }>>();
  /** The `stagesMs` of each `job decision carried out` log line (where a fresh decision's time went). */
  readonly stages: Array<Record<string, number>> = [];
  /** Times of the controller's lifecycle log lines (LIFECYCLE_MESSAGES). */
  private readonly lifecycle = new Map<string, number[]>();
  private readonly waiters = new Set<Waiter>();
  private logTimer: NodeJS.Timeout | undefined;
  private controller: ControllerProcess | undefined;
  /** cluster-info updates seen, and those that changed only metadata (the periodic refresh). */
  clusterInfoUpdates = 0;
  clusterInfoRefreshOnly = 0;

  constructor(client: KubeClient) {
    this.clusterInfo = new Reflector<ConfigMap>(client, { clock: realClock, name: 'bench_cluster_info', path: paths.configMaps(CLUSTER_INFO_NAMESPACE), labelSelector: `${CLUSTER_INFO_LABEL_KEY}=true` });
    this.volcano = new Reflector<ConfigMap>(client, { clock: realClock, name: 'bench_volcano', path: paths.configMaps(VCJOB_FAULT_NPU_NAMESPACE), fieldSelector: `metadata.name=${VCJOB_FAULT_NPU_CM_NAME}` });
    this.pods = new Reflector<Pod>(client, { clock: realClock, name: 'bench_pods', path: paths.pods(BENCH_NAMESPACE) });
    this.clusterInfo.events$.subscribe((ev) => { this.onClusterInfo(ev); this.wake(); });
    this.volcano.events$.subscribe((ev) => { this.onVolcano(ev); this.wake(); });
    this.pods.events$.subscribe((ev) => { this.onPod(ev); this.wake(); });
  }

  async start(): Promise<void> {
    for (const r of [this.clusterInfo, this.volcano, this.pods]) r.start();
    await Promise.all([this.clusterInfo, this.volcano, this.pods].map((r) => r.waitForSync(120_000)));
  }

  /** Follows the controller's log for `job decision` lines (polled every 25 ms). */
  follow(controller: ControllerProcess): void {
    this.controller = controller;
    if (this.logTimer !== undefined) return;
    this.logTimer = setInterval(() => {
      const lines = this.controller?.newLogLines() ?? [];
      let any = false;
      for (const l of lines) {
        if (LIFECYCLE_MESSAGES.includes(l.message)) this.lifecycle.set(l.message, [...(this.lifecycle.get(l.message) ?? []), l.atMs]);
        const st = l.fields.stagesMs;
        if (l.message === 'job decision carried out' && typeof st === 'object' && st !== null) this.stages.push(st as Record<string, number>);
        if (l.message !== 'job decision' || typeof l.fields.job !== 'string') continue;
        const list = this.decisions.get(l.fields.job) ?? [];
        list.push({ atMs: l.atMs, nodes: Array.isArray(l.fields.nodes) ? l.fields.nodes.map(String) : [] });
        this.decisions.set(l.fields.job, list);
        any = true;
      }
      if (any) this.wake();
    }, 25);
  }

  stop(): void {
    if (this.logTimer !== undefined) clearInterval(this.logTimer);
    for (const r of [this.clusterInfo, this.volcano, this.pods]) r.stop();
    for (const w of this.waiters) w.resolve(Number.NaN);
    this.waiters.clear();
  }

  // ---- queries: the time a condition became true, or undefined while it is false ----

  /** The chip is listed Unhealthy for the node (or, with chip undefined, the node has no Unhealthy chip). */
  deviceState(node: string, chip: string | undefined): number | undefined {
    const t = this.unhealthy.get(node);
    const csv = t?.value ?? '';
    const ok = chip === undefined ? csv === '' : csv.split(',').includes(chip);
    return ok ? (t?.sinceMs ?? 0) : undefined;
  }

  /** The node has an entry in some cluster-info-device-* shard. */
  listed(node: string): boolean {
    for (const [shard, nodes] of this.shardNodes) if (shard.startsWith(CLUSTER_INFO_DEVICE_PREFIX) && nodes.has(node)) return true;
    return false;
  }

  /** The node's switch entry has a fault level (faulted) or none (faulted=false). */
  switchState(node: string, faulted: boolean): number | undefined {
    const t = this.switchLevel.get(node);
    const ok = faulted ? (t?.value ?? '') !== '' : (t?.value ?? '') === '';
    return ok ? (t?.sinceMs ?? 0) : undefined;
  }

  vcjobFaultNode(node: string, listed: boolean): number | undefined {
    const t = this.vcFault.get(node);
    return (t?.value ?? false) === listed ? (t?.sinceMs ?? 0) : undefined;
  }

  /** Every pod of the job with the given uids is deleted or being deleted: the time of the last one. */
  podsDeleted(job: JobSpec, uids: ReadonlyMap<string, string>): number | undefined {
    let last = 0;
    for (let r = 0; r < job.nodes.length; r++) {
      const d = this.podDeleting.get(podName(job, r));
      if (d === undefined || d.uid !== uids.get(podName(job, r))) return undefined;
      last = Math.max(last, d.atMs);
    }
    return last;
  }

  /** The first `job decision` log line for the job at or after `afterMs` that names one of `nodes` (any when empty). */
  decision(jobKey: string, afterMs: number, nodes: readonly string[] = []): number | undefined {
    return this.decisions.get(jobKey)?.find((d) => d.atMs >= afterMs - 5 && (nodes.length === 0 || d.nodes.some((n) => nodes.includes(n))))?.atMs;
  }

  /** The first lifecycle log line with this message at or after `afterMs`. */
  logLine(message: string, afterMs: number): number | undefined {
    return this.lifecycle.get(message)?.find((t) => t >= afterMs);
  }

  /** Resolves with the time `check` reports once it reports one; NaN on timeout. */
  waitFor(check: () => number | undefined, timeoutMs: number): Promise<number> {
    const now = check();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve) => {
      const w: Waiter = { check, resolve: (t) => { clearTimeout(timer); this.waiters.delete(w); resolve(t); } };
      const timer = setTimeout(() => w.resolve(Number.NaN), timeoutMs);
      this.waiters.add(w);
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) {
      const t = w.check();
      if (t !== undefined) w.resolve(t);
    }
  }

  private onClusterInfo(ev: WatchEvent<ConfigMap>): void {
    const at = Date.now();
    const name = ev.obj.metadata?.name ?? '';
    if (ev.type === 'update') {
      this.clusterInfoUpdates++;
      const a = ev.old.data ?? {};
      const b = ev.obj.data ?? {};
      if (Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k) => a[k] === b[k])) this.clusterInfoRefreshOnly++;
    }
    const isDevice = name.startsWith(CLUSTER_INFO_DEVICE_PREFIX);
    if (!isDevice && !name.startsWith(CLUSTER_INFO_SWITCH_PREFIX)) return;
    const raw = ev.type === 'delete' ? '' : (ev.obj.data?.[name] ?? '');
    let entries: Record<string, { DeviceList?: Record<string, string>; FaultLevel?: string }> = {};
    try { entries = raw === '' ? {} : JSON.parse(raw) as typeof entries; } catch { return; }
    const seen = new Set<string>();
    for (const [key, e] of Object.entries(entries)) {
      if (isDevice && key.startsWith(DEVICE_INFO_CM_PREFIX)) {
        const node = key.slice(DEVICE_INFO_CM_PREFIX.length);
        seen.add(node);
        this.unhealthy.set(node, e.DeviceList?.[UNHEALTHY_KEY] ?? '', at);
      } else if (!isDevice && key.startsWith(SWITCH_INFO_PREFIX)) {
        const node = key.slice(SWITCH_INFO_PREFIX.length);
        seen.add(node);
        this.switchLevel.set(node, e.FaultLevel ?? '', at);
      }
    }
    // Nodes that left this shard (moved or cleared): cleared unless another shard lists them.
    for (const node of this.shardNodes.get(name) ?? []) {
      const prefix = isDevice ? CLUSTER_INFO_DEVICE_PREFIX : CLUSTER_INFO_SWITCH_PREFIX;
      if (seen.has(node) || [...this.shardNodes].some(([n, s]) => n !== name && n.startsWith(prefix) && s.has(node))) continue;
      if (isDevice) this.unhealthy.set(node, '', at);
      else this.switchLevel.set(node, '', at);
    }
    this.shardNodes.set(name, seen);
  }

  private onVolcano(ev: WatchEvent<ConfigMap>): void {
    const at = Date.now();
    const raw = ev.type === 'delete' ? '' : (ev.obj.data?.[FAULT_NODE_KEY] ?? '');
    let list: Array<{ NodeName?: string }> = [];
    try { list = raw === '' ? [] : (JSON.parse(raw) as typeof list) ?? []; } catch { return; }
    const now = new Set(list.map((n) => n.NodeName ?? ''));
    for (const n of now) this.vcFault.set(n, true, at);
    for (const n of this.vcNodes) if (!now.has(n)) this.vcFault.set(n, false, at);
    this.vcNodes = now;
  }

  private onPod(ev: WatchEvent<Pod>): void {
    const at = Date.now();
    const name = ev.obj.metadata?.name ?? '';
    const uid = ev.obj.metadata?.uid ?? '';
    const deleting = ev.type === 'delete' || ev.obj.metadata?.deletionTimestamp !== undefined;
    const cur = this.podDeleting.get(name);
    if (deleting && cur?.uid !== uid) this.podDeleting.set(name, { uid, atMs: at });
  }
}
