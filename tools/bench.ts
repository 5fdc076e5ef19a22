/**
 * `make bench`: the controller measured at cluster scale. Prints every figure as a
 * `name: value unit` line (`n/a` when this build cannot produce it, with a `#` note saying why) and
 * writes a JSON report with the versions and machine facts. Scenarios and sizes: see `--help` and
 * docs/benchmarks.md. The apiserver scenarios (single, storm, steady, cold) share one benchmark
 * control plane with kwok nodes, the device plugin simulator and the real controller process
 * (main.ts); `scale` runs in-process without an apiserver.
 */
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBinaries } from './control-plane/control-plane.ts';
import { BenchCluster } from './bench/cluster.ts';
import { runCold } from './bench/cold.ts';
import { Figures, machine, versions, writeReport } from './bench/report.ts';
import { runScaleScenario } from './bench/scale.ts';
import { runSingle } from './bench/single.ts';
import { runSteady } from './bench/steady.ts';
import { runStorm } from './bench/storm.ts';
import { runPeer } from './bench/peer.ts';
import { CONTROLLER_ENTRIES, useControllerEntry, type ControllerEntry } from './bench/controller-process.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Also the order they run in: steady comes before storm because the switch-domain storm's node taints
 * are lifted 60 s after its recovery (policy/faults/job-isolation.ts UNTAINT_HOLD_MS), which would land in
 * the steady-state window; cold comes last because it restarts the controller.
 */
export const SCENARIOS = ['scale', 'single', 'steady', 'storm', 'cold'] as const;
export type Scenario = (typeof SCENARIOS)[number];

const FLAGS = {
  scenario: { default: 'all', help: `comma-separated: ${SCENARIOS.join(', ')}, or all (they run in this order)` },
  nodes: { default: '1000', help: 'kwok nodes of the apiserver scenarios (single, storm, steady, cold)' },
  npus: { default: '8', help: 'huawei.com/Ascend910 per kwok node' },
  'pods-per-job': { default: '8', help: 'pods per job; one pod per node takes all its NPUs, nodes/pods-per-job jobs' },
  faults: { default: '200', help: 'single: faults, one at a time' },
  'storm-nodes': { default: '100', help: 'storm: nodes faulting at once' },
  'domain-size': { default: '32', help: 'storm: nodes of the simulated switch domain' },
  'steady-minutes': { default: '10', help: 'steady: duration (fractions allowed, e.g. 0.5)' },
  'dp-refresh-seconds': { default: '300', help: 'steady: device plugin rewrite interval (real DP: 300)' },
  'scale-sizes': { default: '1000,4000,16000', help: 'scale: node counts, in-process' },
  'scale-npus': { default: '16', help: 'scale: NPUs per node' },
  'scale-update-seconds': { default: '10', help: 'scale: seconds of sustained device-info updates per size' },
  'timeout-seconds': { default: '60', help: 'longest wait for one outcome' },
  out: { default: '', help: 'JSON report path (default bench-results/<ISO timestamp>.json)' },
  'controller-args': { default: '', help: 'extra controller flags, space-separated; write it --controller-args="--burst-window-ms=0 --log-level=warn"' },
  'controller-entry': { default: 'ts', help: 'ts: node main.ts (type stripping, as in development); dist: tsc -p tsconfig.build.json first, then node dist/main.js; bundle: tools/bundle/build.ts first, then node dist-bundle/main.mjs (as the image runs it); the in-process scale worker runs in the same form (sources, dist/, or bundled like the image). All with the image\'s NODE_OPTIONS (Dockerfile)' },
  'cpu-prof': { default: '', help: 'write V8 CPU profiles of the controller process into this folder (node --cpu-prof)' },
  'memory-probe': { default: '', help: 'peer: the controller preloads tools/bench/mem-probe.mjs and, at the end of the idle window (after RSS and PSS are read), writes its V8 heap spaces, memoryUsage() and smaps into this JSON file; then two GCs and the same again' },
  'heap-snapshot-dir': { default: '', help: 'the controller writes a V8 heap snapshot into this folder on SIGUSR2 (node --heapsnapshot-signal); analyse it with tools/bench/heap-profile.ts' },
  peer: { default: '', help: 'clusterd: also run the real ClusterD (tools/clusterd-peer) beside clusterd-ts on the same inputs and print <figure>_vs_clusterd ratios (use --scenario none for the comparison alone)' },
  'peer-nodes': { default: '100', help: 'peer: nodes (x 8 NPUs) on each of the two control planes' },
  'peer-faults': { default: '20', help: 'peer: chip faults, one at a time, for fault -> cluster-info' },
  'peer-idle-seconds': { default: '30', help: 'peer: idle window for RSS and CPU' },
  'peer-phase-ms': { default: '1000', help: 'peer: each fault after a random pause in [0, this) ms, so it lands at a random phase of either side\'s tickers (ClusterD renders on a 1 s ticker)' },
  'peer-seed': { default: '', help: 'peer: seed of the pauses (default: random, printed)' },
} as const;

export interface BenchOptions {
  readonly scenarios: readonly Scenario[];
  readonly nodes: number;
  readonly npus: number;
  readonly podsPerJob: number;
  readonly faults: number;
  readonly stormNodes: number;
  readonly domainSize: number;
  readonly steadyMinutes: number;
  readonly dpRefreshSeconds: number;
  readonly scaleSizes: readonly number[];
  readonly scaleNpus: number;
  readonly scaleUpdateSeconds: number;
  readonly timeoutMs: number;
  readonly out: string;
  readonly controllerArgs: readonly string[];
  readonly cpuProfDir: string;
  readonly heapSnapshotDir: string;
  readonly memoryProbe: string;
  readonly controllerEntry: ControllerEntry;
  readonly peer: '' | 'clusterd';
  readonly peerNodes: number;
  readonly peerFaults: number;
  readonly peerIdleSeconds: number;
  readonly peerPhaseMs: number;
  readonly peerSeed: number;
}

/** V8 flags for the controller process from the profiling options. */
function controllerNodeArgs(o: BenchOptions): string[] {
  const args = o.cpuProfDir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(o.cpuProfDir)}`];
  if (o.memoryProbe !== '') args.push('--expose-gc', `--import=${pathToFileURL(join(REPO, 'tools', 'bench', 'mem-probe.mjs')).href}`);
  if (o.heapSnapshotDir !== '') args.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${resolve(o.heapSnapshotDir)}`);
  return args;
}

export function usage(): string {
  return ['usage: make bench ARGS="[flags]"   (or: node tools/bench.ts [flags])', '',
    ...Object.entries(FLAGS).map(([k, f]) => `  --${k.padEnd(22)} ${f.help}${f.default === '' ? '' : ` (default ${f.default})`}`)].join('\n');
}

export function parseBenchArgs(argv: readonly string[], now = new Date()): BenchOptions {
  const { values } = parseArgs({ args: [...argv], options: Object.fromEntries(Object.keys(FLAGS).map((k) => [k, { type: 'string' as const }])), strict: true });
  const v = (k: keyof typeof FLAGS): string => (values as Record<string, string | undefined>)[k] ?? FLAGS[k].default;
  const num = (k: keyof typeof FLAGS, min: number, int = true): number => {
    const n = Number(v(k));
    if (!Number.isFinite(n) || n < min || (int && !Number.isInteger(n))) throw new Error(`--${k}: ${JSON.stringify(v(k))} is not ${int ? 'an integer' : 'a number'} >= ${min}`);
    return n;
  };
  const list = v('scenario').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const scenarios = list.includes('all') ? [...SCENARIOS] : list.filter((s) => s !== 'none').map((s) => {
    if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`--scenario: ${JSON.stringify(s)} is not one of ${SCENARIOS.join(', ')}, all`);
    return s as Scenario;
  });
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  return {
    scenarios: SCENARIOS.filter((s) => scenarios.includes(s)),
    nodes: num('nodes', 1), npus: num('npus', 1), podsPerJob: num('pods-per-job', 1), faults: num('faults', 1),
    stormNodes: num('storm-nodes', 1), domainSize: num('domain-size', 1),
    steadyMinutes: num('steady-minutes', 0, false), dpRefreshSeconds: num('dp-refresh-seconds', 1, false),
    scaleSizes: v('scale-sizes').split(',').map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--scale-sizes: ${JSON.stringify(s)} is not a positive integer`);
      return n;
    }),
    scaleNpus: num('scale-npus', 1), scaleUpdateSeconds: num('scale-update-seconds', 0, false),
    timeoutMs: num('timeout-seconds', 1, false) * 1000,
    out: v('out') === '' ? join(REPO, 'bench-results', `${stamp}.json`) : v('out'),
    controllerArgs: v('controller-args').split(' ').filter((a) => a !== ''),
    cpuProfDir: v('cpu-prof'),
    heapSnapshotDir: v('heap-snapshot-dir'),
    memoryProbe: v('memory-probe') === '' ? '' : resolve(v('memory-probe')),
    controllerEntry: ((): ControllerEntry => {
      if (!(CONTROLLER_ENTRIES as readonly string[]).includes(v('controller-entry'))) throw new Error(`--controller-entry: ${JSON.stringify(v('controller-entry'))} is not one of ${CONTROLLER_ENTRIES.join(', ')}`);
      return v('controller-entry') as ControllerEntry;
    })(),
    peer: ((): '' | 'clusterd' => {
      if (v('peer') !== '' && v('peer') !== 'clusterd') throw new Error(`--peer: ${JSON.stringify(v('peer'))} is not clusterd`);
      return v('peer') as '' | 'clusterd';
    })(),
    peerNodes: num('peer-nodes', 1), peerFaults: num('peer-faults', 1), peerIdleSeconds: num('peer-idle-seconds', 1),
    peerPhaseMs: num('peer-phase-ms', 0), peerSeed: v('peer-seed') === '' ? Math.floor(Math.random() * 2 ** 31) : num('peer-seed', 0),
  };
}

export async function runBench(o: BenchOptions, print: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<{ figures: Figures; failed: string[] }> {
  const startedAt = new Date();
  const t0 = Date.now();
  const figures = new Figures(print);
  const failed: string[] = [];
  const needsCluster = o.scenarios.some((s) => s !== 'scale');
  const binDir = needsCluster || o.peer !== '' ? ensureBinaries() : undefined;
  await useControllerEntry(o.controllerEntry);
  const vers = versions(binDir);
  const machineAtStart = machine();
  print(`# clusterd-ts benchmark: ${o.scenarios.join(', ')} | node ${process.version} | ${String(machineAtStart.cores)} cores, ${String(machineAtStart.memoryMiB)} MiB, load ${String(machineAtStart.loadAverage1m)}`);
  const attempt = async (name: string, fn: () => Promise<void>): Promise<void> => {
    const ts = Date.now();
    try {
      await fn();
    } catch (e) {
      failed.push(name);
      figures.note(`${name} failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    }
    figures.add('bench', `bench_${name}_wall_s`, (Date.now() - ts) / 1000, 's');
  };

  if (o.scenarios.includes('scale')) {
    await attempt('scale', () => runScaleScenario({ sizes: o.scaleSizes, npus: o.scaleNpus, updateSeconds: o.scaleUpdateSeconds, log: print }, figures));
  }
  let cluster: BenchCluster | undefined;
  if (needsCluster) {
    await attempt('setup', async () => {
      print(`# setup: benchmark control plane, ${o.nodes} kwok nodes x ${o.npus} NPUs, ${Math.floor(o.nodes / o.podsPerJob)} jobs of ${o.podsPerJob} pods`);
      cluster = await BenchCluster.start({
        binDir: binDir!, nodes: o.nodes, npus: o.npus, podsPerJob: o.podsPerJob, log: print, controllerArgs: o.controllerArgs,
        controllerNodeArgs: controllerNodeArgs(o),
      });
      for (const [k, s] of Object.entries(cluster.setupSeconds)) figures.add('setup', `bench_setup_${k}_s`, s, 's');
      figures.add('setup', 'bench_jobs', cluster.fleet.jobs.length, 'jobs');
      figures.add('setup', 'bench_jobs_controller_present', cluster.jobsController ? 1 : 0, 'bool');
      if (!cluster.jobsController) figures.note('the controller process shows no jobs flow (no vcjob_fault_npu/job_decisions reconciles): vcjob-fault-npu-cm and pod-deletion figures are n/a');
    });
  }
  try {
    const c = cluster;
    if (c !== undefined) {
      const timeoutMs = o.timeoutMs;
      if (o.scenarios.includes('single')) await attempt('single', () => runSingle(c, { faults: o.faults, npus: o.npus, timeoutMs }, figures));
      if (o.scenarios.includes('steady')) await attempt('steady', () => runSteady(c, { minutes: o.steadyMinutes, dpRefreshSeconds: o.dpRefreshSeconds, log: print }, figures));
      if (o.scenarios.includes('storm')) await attempt('storm', () => runStorm(c, { stormNodes: o.stormNodes, domainSize: o.domainSize, timeoutMs }, figures));
      if (o.scenarios.includes('cold')) await attempt('cold', () => runCold(c, timeoutMs, figures));
      figures.details.controllerLog = c.controller.logFile;
    } else if (needsCluster) {
      failed.push(...o.scenarios.filter((s) => s !== 'scale'));
    }
  } finally {
    await cluster?.stop();
  }
  if (o.peer === 'clusterd') {
    await attempt('peer', () => runPeer({
      binDir: binDir!, nodes: o.peerNodes, faults: o.peerFaults, idleSeconds: o.peerIdleSeconds, timeoutMs: o.timeoutMs,
      controllerArgs: o.controllerArgs, log: print, phaseMs: o.peerPhaseMs, seed: o.peerSeed,
      controllerNodeArgs: controllerNodeArgs(o), memoryProbe: o.memoryProbe,
    }, figures));
  }
  const wallSeconds = (Date.now() - t0) / 1000;
  figures.add('bench', 'bench_wall_s', wallSeconds, 's');
  writeReport(o.out, { command: `node tools/bench.ts ${process.argv.slice(2).join(' ')}`.trim(), options: o, startedAt: startedAt.toISOString(), wallSeconds, versions: vers, machineAtStart }, figures);
  print(`# report: ${relative(process.cwd(), o.out) || o.out}${failed.length > 0 ? ` | FAILED: ${failed.join(', ')}` : ''}`);
  return { figures, failed };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(`${usage()}\n`);
    process.exit(0);
  }
  let opts: BenchOptions;
  try {
    opts = parseBenchArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n\n${usage()}\n`);
    process.exit(2);
  }
  const { failed } = await runBench(opts);
  process.exit(failed.length > 0 ? 1 : 0);
}
