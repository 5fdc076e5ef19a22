/**
 * The real controller as a separate process (`node main.ts --kubeconfig ... --http-port N`), run under
 * the control plane's supervise.mjs so it dies with the benchmark. Reads what the process exposes:
 * /readyz, /metrics (api_writes_total, api_requests_total, reconcile_total), its JSON log lines, and
 * CPU time from /proc/<pid>/stat.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync, readFileSync, readSync, closeSync, fstatSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitedWithin, freePort } from '../control-plane/control-plane.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The environment the image's runtime stage sets (Dockerfile `ENV`: NODE_OPTIONS with the V8 heap
 * flags matched to the chart's memory limit, GLIBC_TUNABLES for the allocator), so the controller is
 * measured as it ships. Read from the Dockerfile, the one place they are written down.
 */
export function imageEnv(dockerfile = join(REPO, 'Dockerfile')): Record<string, string> {
  let text: string;
  try { text = readFileSync(dockerfile, 'utf8'); } catch { return {}; }
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const stage = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  const env: Record<string, string> = {};
  for (const line of lines.slice(Math.max(0, stage))) {
    const m = /^ENV\s+(.*)$/i.exec(line.trim());
    if (m === null) continue;
    for (const kv of m[1]!.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|(\S*))/g)) env[kv[1]!] = kv[3] ?? kv[4] ?? '';
  }
  return env;
}

/**
 * The node flags of the image's ENTRYPOINT (`["node", <flags>..., "dist/main.mjs"]`): V8 flags that
 * NODE_OPTIONS does not accept (docs/benchmarks.md "Idle memory"). The bench runs every entry with them.
 */
export function imageNodeArgs(dockerfile = join(REPO, 'Dockerfile')): string[] {
  let text: string;
  try { text = readFileSync(dockerfile, 'utf8'); } catch { return []; }
  const m = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(text.replace(/\\\n/g, ' '));
  if (m === null) return [];
  const argv = JSON.parse(m[1]!) as string[];
  return argv[0] === 'node' ? argv.slice(1, -1).filter((a) => a.startsWith('-')) : [];
}

/**
 * What runs: `ts` = `node main.ts` (type stripping at load, as in development and the tests), `dist` =
 * `node dist/main.js` after `tsc -p tsconfig.build.json` (no type stripper loaded), `bundle` =
 * `node dist-bundle/main.mjs` after tools/bundle/build.ts (one tree-shaken file, the image's form).
 */
export type ControllerEntry = 'ts' | 'dist' | 'bundle';
export const CONTROLLER_ENTRIES: readonly ControllerEntry[] = ['ts', 'dist', 'bundle'];
const ENTRY_FILE: Record<ControllerEntry, string> = { ts: 'main.ts', dist: 'dist/main.js', bundle: 'dist-bundle/main.mjs' };
let entry: ControllerEntry = 'ts';
export const controllerEntry = (): ControllerEntry => entry;
// BENCH_CONTROLLER_ROOT: another checkout whose `main.ts` runs (before/after figures of a change
// measured by the same harness, docs/benchmarks.md).
const tsEntry = (): string => join(process.env.BENCH_CONTROLLER_ROOT ?? REPO, ENTRY_FILE.ts);
let entryFile = tsEntry();
/** The bundle of this checkout, or of BENCH_CONTROLLER_ROOT's built by that checkout's own tools/bundle/build.ts. */
async function bundleOf(bundleDir: string): Promise<string> {
  const root = process.env.BENCH_CONTROLLER_ROOT;
  if (root === undefined) return (await import('../bundle/build.ts')).bundle(bundleDir);
  const r = spawnSync(process.execPath, [join(root, 'tools', 'bundle', 'build.ts'), bundleDir], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0 || !existsSync(join(bundleDir, 'main.mjs'))) throw new Error(`bundling ${root} failed: ${r.stdout}${r.stderr}`);
  return join(bundleDir, 'main.mjs');
}
/** `bundleDir`: where the bundle is built and run from (a folder outside the repo proves it needs no node_modules). */
export async function useControllerEntry(e: ControllerEntry, bundleDir = join(REPO, 'dist-bundle')): Promise<void> {
  // esbuild is loaded only when a bundle is asked for (the conformance sides import this module too).
  entryFile = e === 'bundle' ? await bundleOf(bundleDir) : e === 'ts' ? tsEntry() : join(REPO, ENTRY_FILE[e]);
  if (e === 'dist') {
    const r = spawnSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(REPO, 'tsconfig.build.json')], { cwd: REPO, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed: ${r.stdout}${r.stderr}`);
    // The rest of the Dockerfile's build step: the gRPC protos and the JSON schemas beside the code.
    const c = spawnSync('sh', ['-c', "mkdir -p dist/grpc && rm -rf dist/grpc/protos && cp -r grpc/protos dist/grpc/protos && find schemas -name '*.json' ! -name '*.test.*' -exec cp --parents {} dist/ \\;"], { cwd: REPO, encoding: 'utf8' });
    if (c.status !== 0 || !existsSync(join(REPO, 'dist/grpc/protos/recover.proto'))) throw new Error(`dist: copying protos and schemas failed: ${c.stderr}`);
  }
  entry = e;
}
/**
 * The tests' controller (docs/CONVENTIONS.md#tests): the image's bundle of main.ts, built once and
 * reused while its inputs are unchanged (tools/bundle/build.ts cachedBundle). With
 * BENCH_CONTROLLER_ROOT set, that checkout's sources run instead.
 */
export async function useTestBundle(): Promise<void> {
  if (process.env.BENCH_CONTROLLER_ROOT !== undefined) return;
  entryFile = await (await import('../bundle/build.ts')).cachedBundle();
  entry = 'bundle';
}
const SUPERVISE = join(REPO, 'tools', 'control-plane', 'supervise.mjs');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function httpGet(port: number, path: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

export interface MetricSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Prometheus text format -> samples (enough for counters and gauges). */
export function parseMetrics(text: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

export const sumOf = (samples: readonly MetricSample[], name: string, where: (l: Record<string, string>) => boolean = () => true): number =>
  samples.filter((s) => s.name === name && where(s.labels)).reduce((a, s) => a + s.value, 0);

/** Writes by kind (successful ones) from api_writes_total. */
export function writesByKind(samples: readonly MetricSample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) if (s.name === 'clusterd_api_writes_total' && s.labels.result === 'success') out[s.labels.kind ?? ''] = (out[s.labels.kind ?? ''] ?? 0) + s.value;
  return out;
}

/** Reconcile passes and seconds spent, per controller (reconcile_duration_seconds _count and _sum). */
export function reconcileStats(samples: readonly MetricSample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    const c = s.labels.controller;
    if (c === undefined) continue;
    if (s.name === 'clusterd_reconcile_duration_seconds_count') out[`${c}_passes`] = (out[`${c}_passes`] ?? 0) + s.value;
    if (s.name === 'clusterd_reconcile_duration_seconds_sum') out[`${c}_seconds`] = (out[`${c}_seconds`] ?? 0) + s.value;
  }
  return out;
}

export const diffCounts = (after: Record<string, number>, before: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => (v as number) !== 0));

export interface LogLine { readonly atMs: number; readonly message: string; readonly fields: Record<string, unknown> }

export class ControllerProcess {
  readonly logFile: string;
  readonly httpPort: number;
  readonly grpcPort: number;
  private supervisorPid = 0;
  private exited: Promise<void> = Promise.resolve();
  private logOffset = 0;
  private readonly args: readonly string[];

  private constructor(logFile: string, httpPort: number, grpcPort: number, args: readonly string[]) {
    this.logFile = logFile;
    this.httpPort = httpPort;
    this.grpcPort = grpcPort;
    this.args = args;
  }

  /** Spawns the controller (`nodeArgs` go to node, e.g. --cpu-prof); `startedAtMs` is taken just before the spawn. */
  static async start(kubeconfig: string, workDir: string, extraArgs: readonly string[] = [], nodeArgs: readonly string[] = []): Promise<{ proc: ControllerProcess; startedAtMs: number }> {
    const [httpPort, grpcPort] = [await freePort(), await freePort()];
    const args = [
      ...imageNodeArgs(), ...nodeArgs, entryFile, `--kubeconfig=${kubeconfig}`, `--http-port=${httpPort}`, '--http-host=127.0.0.1',
      `--grpc-port=${grpcPort}`, '--grpc-host=127.0.0.1', ...extraArgs,
    ];
    const proc = new ControllerProcess(join(workDir, 'controller.log'), httpPort, grpcPort, args);
    const startedAtMs = proc.spawn();
    return { proc, startedAtMs };
  }

  private spawn(): number {
    if (existsSync(this.logFile)) this.logOffset = fstatSizeOf(this.logFile);
    const t = Date.now();
    const child = spawn(process.execPath, [SUPERVISE, String(process.pid), this.logFile, '--', process.execPath, ...this.args], { detached: true, stdio: 'ignore', cwd: REPO, env: { ...process.env, ...imageEnv(), NODE_NO_WARNINGS: '1' } });
    child.unref();
    if (child.pid === undefined) throw new Error('could not start the controller');
    this.supervisorPid = child.pid;
    this.exited = new Promise((resolve) => child.on('exit', () => resolve()));
    return t;
  }

  /** Stops the process (SIGTERM to its group, SIGKILL after 10 s) and starts it again; returns the spawn time. */
  async restart(): Promise<number> {
    await this.stop();
    return this.spawn();
  }

  /** pid of the controller itself (the supervisor's child). */
  pid(): number | undefined {
    try {
      const kids = readFileSync(`/proc/${this.supervisorPid}/task/${this.supervisorPid}/children`, 'utf8').trim().split(/\s+/).filter((x) => x !== '');
      return kids.length > 0 ? Number(kids[0]) : undefined;
    } catch {
      return undefined;
    }
  }

  /** User + system CPU seconds of the controller process so far. */
  cpuSeconds(): number {
    const pid = this.pid();
    if (pid === undefined) return Number.NaN;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "(comm) ": state=0 ... utime=11, stime=12 (man 5 proc fields 14 and 15); clock ticks are 100/s on Linux.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  rssMiB(): number {
    const pid = this.pid();
    if (pid === undefined) return Number.NaN;
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? Number.NaN : Number(m[1]) / 1024;
  }

  /** Polls /readyz every 20 ms; resolves with the time it first answered 200. */
  async waitReady(timeoutMs = 180_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if ((await httpGet(this.httpPort, '/readyz', 1000)).status === 200) return Date.now();
      } catch { /* not listening yet */ }
      if (Date.now() > deadline) throw new Error(`controller not ready after ${timeoutMs} ms; log tail:\n${this.logTail()}`);
      await sleep(20);
    }
  }

  async metrics(): Promise<MetricSample[]> {
    const res = await httpGet(this.httpPort, '/metrics', 10_000);
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    return parseMetrics(res.body);
  }

  /** Controllers with at least one reconcile pass so far (clusterd_reconcile_total's labels). */
  async reconcilers(): Promise<Set<string>> {
    return new Set((await this.metrics()).filter((s) => s.name === 'clusterd_reconcile_total').map((s) => s.labels.controller ?? ''));
  }

  /** JSON log lines written since the last call (or since this process started). */
  newLogLines(): LogLine[] {
    if (!existsSync(this.logFile)) return [];
    const fd = openSync(this.logFile, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= this.logOffset) return [];
      const buf = Buffer.alloc(size - this.logOffset);
      readSync(fd, buf, 0, buf.length, this.logOffset);
      const text = buf.toString('utf8');
      const lastNl = text.lastIndexOf('\n');
      if (lastNl < 0) return [];
      this.logOffset += Buffer.byteLength(text.slice(0, lastNl + 1));
      const out: LogLine[] = [];
      for (const line of text.slice(0, lastNl).split('\n')) {
        try {
          const j = JSON.parse(line) as Record<string, unknown>;
          out.push({ atMs: Date.parse(String(j.timestamp)), message: String(j.message), fields: j });
        } catch { /* not JSON (stack trace, warning) */ }
      }
      return out;
    } finally {
      closeSync(fd);
    }
  }

  logTail(lines = 20): string {
    try { return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n'); } catch { return ''; }
  }

  async stop(): Promise<void> {
    if (this.supervisorPid === 0) return;
    const pid = this.supervisorPid;
    this.supervisorPid = 0;
    try { process.kill(-pid, 'SIGTERM'); } catch { return; }
    const done = await exitedWithin(this.exited, 10_000);
    if (!done) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } await this.exited; }
  }
}

function fstatSizeOf(path: string): number {
  const fd = openSync(path, 'r');
  try { return fstatSync(fd).size; } finally { closeSync(fd); }
}
