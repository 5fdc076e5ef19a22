/**
 * Harness of the real-client test (not a test file): the shipped controller as a child process
 * (the image's bundle of main.ts, flags only, reached through the apiserver and its gRPC port) and the Go TaskD
 * client of tools/taskd-client (MindCluster's generated Recover stubs, built by its build.sh into
 * the cache outside the repository), which prints one JSON line per event.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { parseResetConfigData, type TaskResetInfo } from '../../schemas/reset-config/reset-config.ts';
import { controlPlaneInfo } from '../support/cluster.ts';
import { watchPodGroupLabel, type TestJob } from './recovery-fixtures.ts';
import { cachedBundle } from '../../tools/bundle/build.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// The image's bundle of main.ts (docs/CONVENTIONS.md#tests); REAL_CLIENT_CONTROLLER_ROOT: another
// checkout's main.ts from its sources (before/after measurements).
const CONTROLLER_ROOT = process.env.REAL_CLIENT_CONTROLLER_ROOT ?? ROOT;
const CONTROLLER_ENTRY = process.env.REAL_CLIENT_CONTROLLER_ROOT !== undefined ? join(CONTROLLER_ROOT, 'main.ts') : await cachedBundle();

/** True when a Go toolchain is on PATH (always on CI and here: the control plane is built with it). */
export const haveGo = (): boolean => spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;

/** Builds (or finds in the cache) the Go TaskD client; returns the binary's path. */
export function buildTaskdClient(): string {
  const out = execFileSync(join(ROOT, 'tools/taskd-client/build.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 20 * 60_000 });
  return out.trim().split('\n').at(-1)!;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}

/** `node main.ts` against the test control plane; its JSON log goes to `logFile`. */
export class ControllerProcess {
  readonly grpcPort: number;
  private child: ChildProcess | undefined;
  private readonly args: readonly string[];
  private readonly logFile: string;

  constructor(grpcPort: number, args: readonly string[], logFile: string) {
    this.grpcPort = grpcPort;
    this.args = args;
    this.logFile = logFile;
  }

  get target(): string { return `127.0.0.1:${this.grpcPort}`; }

  start(): this {
    const log = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(process.execPath, [CONTROLLER_ENTRY,
      `--kubeconfig=${controlPlaneInfo().kubeconfig}`, '--http-port=0', '--http-host=127.0.0.1',
      // The client runs on this host, not in the job's (kwok) pods: no caller check here (it is
      // proved in tenant-grpc.test.ts and the conformance process-recovery scenario).
      `--grpc-port=${this.grpcPort}`, '--grpc-host=127.0.0.1', '--cluster-info-refresh-seconds=0', '--grpc-caller-check=off', ...this.args], {
      cwd: CONTROLLER_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_NO_WARNINGS: '1', POD_NAME: '', POD_NAMESPACE: '' },
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    this.child = child;
    return this;
  }

  /**
   * Resolves once the gRPC port accepts connections: the caches are synced and the controller acts
   * (it serves gRPC as the leader only). Node's start on a loaded machine can take many seconds.
   */
  async ready(timeoutMs = 90_000): Promise<this> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = connect(this.grpcPort, '127.0.0.1');
        s.once('connect', () => { s.destroy(); resolve(true); });
        s.once('error', () => resolve(false));
      });
      if (ok) return this;
      if (Date.now() > end) throw new Error(`controller not serving gRPC on ${this.grpcPort} after ${timeoutMs} ms (log: ${this.logFile})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGKILL: no shutdown path runs (a crash or an OOM kill). */
  async kill(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (c === undefined || c.exitCode !== null) return;
    await new Promise<void>((resolve) => { c.once('exit', () => resolve()); c.kill('SIGKILL'); });
  }

  async stop(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (c === undefined || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => c.kill('SIGKILL'), 10_000);
      c.once('exit', () => { clearTimeout(t); resolve(); });
      c.kill('SIGTERM');
    });
  }
}

/** One line of the Go client's output. */
export interface ClientEvent {
  readonly t: number;
  readonly event: 'init' | 'register' | 'subscribe' | 'signal' | 'keepalive' | 'report' | 'stream-end'
    /** O&M: the operator's request and its result stream; TaskD's notify messages. */
    | 'om' | 'om-result' | 'stress-notify' | 'switch-notify' | 'command';
  readonly signalType?: string;
  readonly uuid?: string;
  readonly actions?: string[];
  readonly changeStrategy?: string;
  readonly faultRanks?: Array<{ rankId: string; faultType: string }>;
  readonly nodeRankIds?: string[];
  readonly extraParams?: string;
  /** signal: ProcessManageSignal.timeout (seconds). */
  readonly timeout?: number;
  readonly rpc?: string;
  readonly code?: number;
  readonly error?: string;
  readonly info?: string;
  readonly msg?: string;
  /** om-result: how the result stream ended without a message ('EOF' or the refusal). */
  readonly end?: string;
  /** stress-notify: rank -> ops. */
  readonly params?: Record<string, number[]>;
  /** switch-notify. */
  readonly ranks?: string[];
  readonly ops?: boolean[];
}

/** The Go client for one job, running. */
export class GoTaskdClient {
  readonly events: ClientEvent[] = [];
  private readonly child: ChildProcess;

  constructor(bin: string, target: string, jobId: string, flags: readonly string[] = []) {
    this.child = spawn(bin, [`-addr=${target}`, `-job=${jobId}`, ...flags], { stdio: ['pipe', 'pipe', 'inherit'] });
    let buf = '';
    this.child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim() !== '') this.events.push(JSON.parse(line) as ClientEvent);
      }
    });
  }

  get signals(): ClientEvent[] { return this.events.filter((e) => e.event === 'signal'); }

  /** `signalType[:changeStrategy][actions]` of every signal, in order. */
  get summary(): string[] {
    return this.signals.map((s) => `${s.signalType}${s.changeStrategy ? `:${s.changeStrategy}` : ''}[${(s.actions ?? []).join('|')}]`);
  }

  async waitFor(pred: (e: ClientEvent) => boolean, timeoutMs: number, what: string, after = 0): Promise<ClientEvent> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.slice(after).find(pred);
      if (hit !== undefined) return hit;
      if (Date.now() > end) throw new Error(`Go TaskD client: timed out waiting for ${what}; events: ${JSON.stringify(this.events.filter((e) => e.event !== 'keepalive'))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  waitForSignal(pred: (e: ClientEvent) => boolean, timeoutMs: number, what: string): Promise<ClientEvent> {
    return this.waitFor((e) => e.event === 'signal' && pred(e), timeoutMs, what);
  }

  /** MindIO's unprompted ReportProcessFault, e.g. `[{ rankId: '3', faultType: '0' }]` for a UCE it retries. */
  reportProcessFault(ranks: ReadonlyArray<{ rankId: string; faultType: string }>): void {
    this.child.stdin!.write(`process-fault ${ranks.map((r) => `${r.rankId}:${r.faultType}`).join(',')}\n`);
  }

  /**
   * The O&M platform's StressTest (`node-b:0,1`, `node-a:0;node-b:1`, `all:0,1`), then its result
   * stream until the operation is over (events `om`, `om-result`).
   */
  stressTest(arg: string): void {
    this.child.stdin!.write(`stress-test ${arg}\n`);
  }

  /** SwitchNicTrack (`node-a:0=true,1=true`), then its result stream. */
  switchNic(arg: string): void {
    this.child.stdin!.write(`switch-nic ${arg}\n`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    await new Promise<void>((resolve) => { this.child.once('exit', () => resolve()); this.child.stdin!.end(); setTimeout(() => this.child.kill('SIGKILL'), 3_000).unref(); });
  }
}

/** A version of reset-config-<job> as a poller of the given period sees it. */
export interface SeenVersion { readonly atMs: number; readonly resourceVersion: string; readonly info: TaskResetInfo }

/** Reads reset-config-<job> every `periodMs` (an Elastic Agent polling its mounted file) and keeps each new version. */
/** What a recovery-timeout test watches of a job: its reset-config versions and its `process-recover-enable` label; `stop` ends both. */
export function observeRecovery(client: KubeClient, job: TestJob): { poll: ReturnType<typeof pollResetConfig>; labels: ReturnType<typeof watchPodGroupLabel>; stop(): void } {
  const poll = pollResetConfig(client, job, 500);
  const labels = watchPodGroupLabel(client, job, 'process-recover-enable');
  return { poll, labels, stop: () => { poll.stop(); labels.stop(); } };
}

export function pollResetConfig(client: KubeClient, job: TestJob, periodMs = 500): { seen: SeenVersion[]; stop(): void } {
  const seen: SeenVersion[] = [];
  let stopped = false;
  const tick = async (): Promise<void> => {
    while (!stopped) {
      const cm = await client.getOrUndefined<ConfigMap>(paths.configMap(job.ns, `reset-config-${job.name}`)).catch(() => undefined);
      const rv = cm?.metadata?.resourceVersion ?? '';
      if (cm !== undefined && seen.at(-1)?.resourceVersion !== rv) {
        const p = parseResetConfigData(cm.data);
        if (p.ok) seen.push({ atMs: Date.now(), resourceVersion: rv, info: p.value.info });
      }
      await new Promise((r) => setTimeout(r, periodMs));
    }
  };
  void tick();
  return { seen, stop: () => { stopped = true; } };
}

/** ms from `t0` to each signal, as `signal@ms`. */
export const timeline = (c: GoTaskdClient, t0: number): string =>
  c.signals.map((s) => `${s.signalType}${s.changeStrategy ? `:${s.changeStrategy}` : ''}@${s.t - t0}`).join(' ');

/**
 * The per-file harness of a real-TaskD-client test: builds the client once, ensures the
 * namespaces the controller watches, and after each case runs the case's cleanups (last first) and
 * stops its controller. Call it at the top of a `describe`: it registers the hooks there.
 */
export interface RealClientHarness {
  /** Run after the current case, last registered first. */
  readonly cleanup: (fn: () => void | Promise<void>) => void;
  /** The shipped controller with these flags, ready; its log is `logOf(name)`. */
  readonly startController: (name: string, args?: readonly string[]) => Promise<ControllerProcess>;
  /** The shipped controller started on this gRPC port (a restart), not yet ready; stopped after the case. */
  readonly launch: (name: string, grpcPort: number, args?: readonly string[]) => ControllerProcess;
  readonly logOf: (name: string) => string;
  /** A TaskD client of this job against `target`, stopped after the case. */
  readonly agent: (target: string, job: TestJob, flags?: readonly string[]) => GoTaskdClient;
  /**
   * Two replicas with leader election (Lease in `leaseNs`, 5 s lease) on one gRPC port, as a
   * Deployment of two behind the Service: only the leader listens. The first is the leader (ready);
   * the second stands by. Both stopped after the case.
   */
  readonly startReplicas: (name: string, leaseNs: string, args?: readonly string[]) => Promise<ControllerReplicas>;
  /**
   * The controller of `world` stopped in the middle of whatever it runs and its work taken over on the
   * same gRPC port: `restart` SIGKILLs the process and starts a new one from the same flags (a crash
   * and the Deployment's restart); `failover` stops the leader (SIGTERM: it releases the Lease) and
   * the standby takes over. Resolves once the successor serves gRPC.
   */
  readonly disrupt: (world: ControllerWorld, how: 'restart' | 'failover') => Promise<void>;
}

/** Two leader-elected replicas on one gRPC port. */
export interface ControllerReplicas { readonly leader: ControllerProcess; readonly standby: ControllerProcess }

/** The controller(s) one run talks to, on one gRPC port. */
export interface ControllerWorld {
  readonly target: string;
  readonly name: string;
  readonly args: readonly string[];
  /** The one serving now. */
  current: ControllerProcess;
  /** Leader election: the replica standing by. */
  standby?: ControllerProcess;
}

export function realClientHarness(client: KubeClient, logPrefix: string): RealClientHarness {
  const logDir = mkdtempSync(join(tmpdir(), `${logPrefix}-`));
  let bin = '';
  const controllers: ControllerProcess[] = [];
  const cleanups: Array<() => void | Promise<void>> = [];
  const logOf = (name: string): string => join(logDir, `${name}.log`);
  const launch = (name: string, grpcPort: number, args: readonly string[] = []): ControllerProcess => {
    const c = new ControllerProcess(grpcPort, args, logOf(name)).start();
    controllers.push(c); // every process of the case is stopped after it
    process.stdout.write(`controller log: ${logOf(name)}\n`);
    return c;
  };
  let generation = 0;
  const disrupt = async (world: ControllerWorld, how: 'restart' | 'failover'): Promise<void> => {
    const old = world.current;
    if (how === 'restart') {
      await old.kill();
      world.current = launch(`${world.name}-restart-${++generation}`, old.grpcPort, world.args);
      await world.current.ready();
      return;
    }
    const next = world.standby;
    if (next === undefined) throw new Error('failover: no standby replica');
    await old.stop();
    world.current = next;
    delete world.standby;
    await next.ready();
  };
  beforeAll(async () => {
    bin = buildTaskdClient();
    for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system']) {
      if ((await client.getOrUndefined(`/api/v1/namespaces/${ns}`)) === undefined) {
        await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
      }
    }
  }, 20 * 60_000);
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await Promise.all(controllers.splice(0).map((c) => c.stop()));
  }, 30_000);
  return {
    cleanup: (fn) => { cleanups.push(fn); },
    launch,
    logOf,
    startController: async (name, args = []) => launch(name, await freePort(), args).ready(),
    startReplicas: async (name, leaseNs, args = []) => {
      const all = ['--leader-elect', `--leader-election-namespace=${leaseNs}`, '--lease-duration-seconds=5', ...args];
      const port = await freePort();
      const leader = await launch(`${name}-a`, port, all).ready();
      // Started once the first leads: it finds the Lease held and stands by (no gRPC listener).
      return { leader, standby: launch(`${name}-b`, port, all) };
    },
    disrupt,
    agent: (target, job, flags = []) => {
      const a = new GoTaskdClient(bin, target, job.uid, flags);
      cleanups.push(() => a.stop());
      return a;
    },
  };
}
