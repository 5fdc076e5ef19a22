/**
 * `make bench ARGS="--peer clusterd"`: the same figures for clusterd-ts and the real ClusterD
 * (tools/clusterd-peer), each controller alone on a control plane of its own, fed the same
 * device-info at the same moments. Printed as `<figure>` (ours), `clusterd_<figure>` (theirs) and
 * `<figure>_vs_clusterd` (ours / theirs):
 *   - cold start: spawn to the first cluster-info that lists every node (started one after the
 *     other, so neither competes with the other for CPU);
 *   - idle: RSS and CPU over an idle window with both running;
 *   - fault -> cluster-info: a chip fault written to both clusters at once, until each side's
 *     cluster-info-device-* lists the chip unhealthy: the arrival time of the watch event that lists
 *     it (one watch per side; the first version polled with a LIST of every shard each 25 ms, which
 *     loaded both apiservers and added up to 25 ms plus a 1 MB parse to each sample). Each fault is
 *     written after a random pause (seeded, uniform over `phaseMs`), so it lands at a random phase of
 *     every ticker of either side: ClusterD renders cluster-info on a 1 s ticker, and a fault written
 *     as soon as the previous recovery showed (just after a tick) waited almost a whole tick every
 *     time (docs/benchmarks.md, "How fault -> cluster-info is measured"). Reported as p10, p50,
 *     p90, p99 and max per side, and the ratio of the medians with a bootstrap 90 % interval.
 */
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { readFileSync } from 'node:fs';
import { ControlPlane } from '../control-plane/control-plane.ts';
import { ClusterdPeer, installClusterdPrerequisites } from '../clusterd-peer/clusterd-peer.ts';
import { HttpKubeClient, isNotFound, paths, type KubeObject } from '../../runtime/kube-client.ts';
import { Reflector } from '../../runtime/reflector.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { DEVICE_INFO_LABELS, DEVICE_INFO_NAMESPACE, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { addChipCode, deviceInfoInput, newNodeState, removeChipCodes, type NpuNodeState } from '../simulator/npu-state.ts';
import { smapsBreakdown } from './smaps.ts';
import { ControllerProcess, diffCounts, reconcileStats, writesByKind } from './controller-process.ts';
import { percentile } from './fixtures.ts';
import { prng } from '../prng.ts';
import type { Figures } from './report.ts';
import { realClock } from '../../runtime/clock.ts';

export interface PeerOptions {
  readonly binDir: string;
  readonly nodes: number;
  readonly faults: number;
  readonly idleSeconds: number;
  readonly timeoutMs: number;
  readonly controllerArgs: readonly string[];
  /** Flags for our controller's node (e.g. `--cpu-prof --cpu-prof-dir=...`). */
  readonly controllerNodeArgs?: readonly string[];
  /** With the controller preloading tools/bench/mem-probe.mjs: where it writes its figures at the end of the idle window. */
  readonly memoryProbe?: string;
  readonly log: (line: string) => void;
  /** The pause before each fault is uniform over [0, phaseMs): a random phase of any ticker up to that period. */
  readonly phaseMs: number;
  /** Seeds the pauses and the bootstrap, so a run's schedule can be repeated. */
  readonly seed: number;
}


/**
 * The 5th and 95th percentiles of the ratio of medians (ours / theirs) over `rounds` bootstrap
 * resamples of both samples: how far the printed ratio can move on another run of the same size.
 */
export function bootstrapMedianRatio(ours: readonly number[], theirs: readonly number[], random: () => number, rounds = 2000): { low: number; high: number } {
  if (ours.length === 0 || theirs.length === 0) return { low: Number.NaN, high: Number.NaN };
  const resample = (xs: readonly number[]): number[] => xs.map(() => xs[Math.floor(random() * xs.length)]!);
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = percentile(resample(theirs), 50);
    if (t > 0) ratios.push(percentile(resample(ours), 50) / t);
  }
  return { low: percentile(ratios, 5), high: percentile(ratios, 95) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PREFIX = 'huawei.com/Ascend910';

interface Side {
  readonly name: 'ours' | 'clusterd';
  readonly cp: ControlPlane;
  readonly admin: HttpKubeClient;
  readonly watch: UnhealthyWatch;
  pid(): number | undefined;
}

function deviceInfoCm(s: NpuNodeState, nowMs: number): KubeObject {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: deviceInfoCmName(s.name), namespace: DEVICE_INFO_NAMESPACE, labels: { ...DEVICE_INFO_LABELS } },
    data: encodeDeviceInfoData(deviceInfoInput(s, Math.floor(nowMs / 1000))),
  } as KubeObject;
}

async function put(client: HttpKubeClient, cm: KubeObject): Promise<void> {
  const path = paths.configMap(DEVICE_INFO_NAMESPACE, cm.metadata!.name!);
  try { await client.replace(path, cm); } catch (e) {
    if (!isNotFound(e)) throw e;
    await client.create(`/api/v1/namespaces/${DEVICE_INFO_NAMESPACE}/configmaps`, cm);
  }
}

/**
 * Every node's Unhealthy chip list in a side's cluster-info-device-* shards, with the time the watch
 * event that changed it arrived (the same for both sides, and no polling load on either apiserver).
 */
class UnhealthyWatch {
  readonly byNode = new Map<string, { value: string; sinceMs: number }>();
  private readonly reflector: Reflector<ConfigMap>;

  constructor(client: HttpKubeClient) {
    this.reflector = new Reflector<ConfigMap>(client, { clock: realClock,
      name: 'peer_cluster_info', path: paths.configMaps('mindx-dl'),
      filter: (o) => (o.metadata?.name ?? '').startsWith('cluster-info-device-'),
    });
    this.reflector.events$.subscribe((ev) => {
      const at = Date.now();
      if (ev.type === 'delete') return;
      for (const v of Object.values(ev.obj.data ?? {})) {
        let parsed: Record<string, { DeviceList?: Record<string, string> }>;
        try { parsed = JSON.parse(v) as typeof parsed; } catch { continue; }
        for (const [k, e] of Object.entries(parsed)) {
          const node = k.replace('mindx-dl-deviceinfo-', '');
          const value = e.DeviceList?.[`${PREFIX}-Unhealthy`] ?? '';
          if (this.byNode.get(node)?.value !== value) this.byNode.set(node, { value, sinceMs: at });
        }
      }
    });
  }

  async start(): Promise<void> { this.reflector.start(); await this.reflector.waitForSync(120_000); }
  stop(): void { this.reflector.stop(); }
}

async function waitUntil<T>(probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

const cpuSeconds = (pid: number | undefined): number => {
  if (pid === undefined) return Number.NaN;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const rssMiB = (pid: number | undefined): number => {
  if (pid === undefined) return Number.NaN;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? Number.NaN : Number(m[1]) / 1024;
};

export async function runPeer(o: PeerOptions, figures: Figures): Promise<void> {
  const root = join(tmpdir(), `clusterd-ts-bench-peer-${process.pid}`);
  const cps = await Promise.all(['clusterd', 'ours'].map((n) => ControlPlane.start({ binDir: o.binDir, workDir: join(root, n), benchmark: true })));
  let peer: ClusterdPeer | undefined;
  let ours: ControllerProcess | undefined;
  const cleanups: Array<() => void> = [];
  try {
    const admins = cps.map((cp) => HttpKubeClient.fromFile(cp.kubeconfigPath));
    const nodes = Array.from({ length: o.nodes }, (_, i) => newNodeState({ name: `node-${String(i).padStart(4, '0')}`, switchMode: 'absent' }));
    o.log(`# peer: ${o.nodes} nodes x 8 NPUs on two control planes (ClusterD alone on one, clusterd-ts alone on the other)`);
    for (const admin of admins) {
      await installClusterdPrerequisites(admin);
      await admin.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'volcano-system' } });
    }
    const now = Date.now();
    for (let i = 0; i < nodes.length; i += 16) {
      await Promise.all(nodes.slice(i, i + 16).flatMap((s) => admins.map(async (a) => {
        await a.create(paths.nodes(), { apiVersion: 'v1', kind: 'Node', metadata: { name: s.name }, status: { capacity: { [PREFIX]: '8' }, allocatable: { [PREFIX]: '8' } } } as KubeObject);
        await put(a, deviceInfoCm(s, now));
      })));
    }
    const [cdAdmin, ourAdmin] = admins as [HttpKubeClient, HttpKubeClient];
    const watches = admins.map((a) => new UnhealthyWatch(a));
    cleanups.push(() => watches.forEach((w) => w.stop()));
    await Promise.all(watches.map((w) => w.start()));
    const [cdWatch, ourWatch] = watches as [UnhealthyWatch, UnhealthyWatch];
    const allListed = (w: UnhealthyWatch) => async () => (w.byNode.size >= o.nodes ? Date.now() : undefined);

    // Cold start, one after the other.
    let t = Date.now();
    peer = await ClusterdPeer.start(cdAdmin, { controlPlane: cps[0]!.info(), workDir: join(root, 'clusterd-peer') });
    const cdCold = (await waitUntil(allListed(cdWatch), o.timeoutMs, 5)) - t;
    t = Date.now();
    if (o.memoryProbe !== undefined && o.memoryProbe !== '') process.env.PROBE_OUT = o.memoryProbe;
    ours = (await ControllerProcess.start(cps[1]!.kubeconfigPath, join(root, 'ours'), ['--log-level=warn', ...o.controllerArgs], o.controllerNodeArgs ?? [])).proc;
    const ourCold = (await waitUntil(allListed(ourWatch), o.timeoutMs, 5)) - t;
    const sides: Side[] = [
      { name: 'clusterd', cp: cps[0]!, admin: cdAdmin, watch: cdWatch, pid: () => peer?.pid() },
      { name: 'ours', cp: cps[1]!, admin: ourAdmin, watch: ourWatch, pid: () => ours?.pid() },
    ];

    // Idle, both running.
    await sleep(5000);
    const cpu0 = sides.map((s) => cpuSeconds(s.pid()));
    await sleep(o.idleSeconds * 1000);
    const cpuIdle = sides.map((s, i) => ((cpuSeconds(s.pid()) - cpu0[i]!) / o.idleSeconds) * 1000);
    const rssIdle = sides.map((s) => rssMiB(s.pid()));
    // PSS and where the resident pages are (tools/bench/smaps.ts): the binaries' file-backed pages
    // are shared with other processes of the same binary, which PSS divides among them.
    const smapsIdle = sides.map((s) => { const pid = s.pid(); return pid === undefined ? undefined : smapsBreakdown(pid); });
    if (o.memoryProbe !== undefined && o.memoryProbe !== '' && ours.pid() !== undefined) { process.kill(ours.pid()!, 'SIGUSR2'); await sleep(2000); }

    // Faults, one at a time, the same bytes to both sides at once.
    const stats0 = reconcileStats(await ours.metrics());
    const writes0 = writesByKind(await ours.metrics());
    const lat: Record<'clusterd' | 'ours', number[]> = { clusterd: [], ours: [] };
    const random = prng(o.seed);
    o.log(`# peer: each fault after a random pause in [0, ${o.phaseMs}) ms, seed ${o.seed}`);
    for (let k = 0; k < o.faults; k++) {
      await sleep(Math.floor(random() * o.phaseMs));
      const s = nodes[(k * 7) % nodes.length]!;
      const chip = `Ascend910-${k % 8}`;
      addChipCode(s, chip, 'card', '80E18402', 'SeparateNPU', Date.now());
      const cm = deviceInfoCm(s, Date.now());
      const acks = await Promise.all(sides.map(async (side) => { await put(side.admin, structuredClone(cm)); return Date.now(); }));
      await Promise.all(sides.map(async (side, i) => {
        const seen = await waitUntil(async () => {
          const e = side.watch.byNode.get(s.name);
          return e !== undefined && e.value.split(',').includes(chip) ? e.sinceMs : undefined;
        }, o.timeoutMs, 5);
        lat[side.name].push(seen - acks[i]!);
      }));
      removeChipCodes(s, chip, 'card');
      const back = deviceInfoCm(s, Date.now());
      await Promise.all(sides.map((side) => put(side.admin, structuredClone(back))));
      await Promise.all(sides.map((side) => waitUntil(async () => ((side.watch.byNode.get(s.name)?.value ?? '') === '' ? true : undefined), o.timeoutMs, 5)));
    }

    const passes = diffCounts(reconcileStats(await ours.metrics()), stats0);
    const writes = diffCounts(writesByKind(await ours.metrics()), writes0);
    // Per fault: its write and its recovery's, and the passes of both (a pass that writes nothing is cheap).
    figures.add('peer', 'peer_cluster_info_passes_per_fault', (passes.cluster_info_passes ?? 0) / o.faults, 'passes');
    figures.add('peer', 'peer_cluster_info_writes_per_fault', (writes.cluster_info ?? 0) / o.faults, 'writes');
    const pair = (name: string, oursV: number, theirs: number, unit: string): void => {
      figures.add('peer', name, oursV, unit);
      figures.add('peer', `clusterd_${name}`, theirs, unit);
      figures.add('peer', `${name}_vs_clusterd`, theirs > 0 ? oursV / theirs : null, 'ratio');
    };
    figures.add('peer', 'peer_nodes', o.nodes, 'nodes');
    pair('peer_cold_start_to_cluster_info_s', ourCold / 1000, cdCold / 1000, 's');
    pair('peer_idle_rss_mib', rssIdle[1]!, rssIdle[0]!, 'MiB');
    pair('peer_idle_pss_mib', (smapsIdle[1]?.pssKiB ?? Number.NaN) / 1024, (smapsIdle[0]?.pssKiB ?? Number.NaN) / 1024, 'MiB');
    pair('peer_idle_rss_anon_mib', (smapsIdle[1]?.anonKiB ?? Number.NaN) / 1024, (smapsIdle[0]?.anonKiB ?? Number.NaN) / 1024, 'MiB');
    pair('peer_idle_rss_file_mib', (smapsIdle[1]?.fileKiB ?? Number.NaN) / 1024, (smapsIdle[0]?.fileKiB ?? Number.NaN) / 1024, 'MiB');
    pair('peer_idle_cpu_ms_per_s', cpuIdle[1]!, cpuIdle[0]!, 'ms/s');
    for (const p of [10, 50, 90, 99] as const) pair(`peer_fault_to_cluster_info_p${p}_ms`, percentile(lat.ours, p), percentile(lat.clusterd, p), 'ms');
    pair('peer_fault_to_cluster_info_max_ms', Math.max(...lat.ours), Math.max(...lat.clusterd), 'ms');
    const ci = bootstrapMedianRatio(lat.ours, lat.clusterd, prng(o.seed ^ 0x5bd1e995));
    figures.add('peer', 'peer_fault_to_cluster_info_p50_vs_clusterd_low', ci.low, 'ratio');
    figures.add('peer', 'peer_fault_to_cluster_info_p50_vs_clusterd_high', ci.high, 'ratio');
    figures.details.peer = { idleSmaps: { ours: smapsIdle[1], clusterd: smapsIdle[0] }, latenciesMs: lat, coldMs: { ours: ourCold, clusterd: cdCold }, reconciles: passes, writesByKind: writes, phaseMs: o.phaseMs, seed: o.seed };
  } finally {
    for (const c of cleanups) c();
    await ours?.stop();
    await peer?.stop();
    await Promise.all(cps.map((cp) => cp.stop()));
  }
}
