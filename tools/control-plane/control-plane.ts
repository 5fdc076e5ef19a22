/**
 * A real kube-apiserver + etcd (+ optional kube-scheduler and kwok) started from the binaries that
 * tools/k8s-bins/build.sh builds from Go modules. Used by the jest global setup, by
 * `make cluster-up`, the demo and the benchmark. Every process runs under supervise.mjs in its own
 * process group, so nothing outlives the process that started it (unless watchPid is 0).
 */
import { spawn, execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync, rmSync, existsSync, readFileSync, renameSync } from 'node:fs';
import { request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ascendOperatorArgs, vcControllerArgs, vcSchedulerArgs, vcSchedulerBinary, volcanoSchedulerConf, type VolcanoOptions } from './volcano.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..');
const SUPERVISE = join(HERE, 'supervise.mjs');

export interface ControlPlaneOptions {
  /** Folder with kube-apiserver, etcd (and kube-scheduler, kwok for the extras). */
  readonly binDir: string;
  /** Where data, certs and logs go; etcd data is placed on /dev/shm when it exists. */
  readonly workDir: string;
  /** Kill everything when this pid dies; 0 = live on (make cluster-up). Default: this process. */
  readonly watchPid?: number;
  /** Number of kube-apiservers sharing the etcd (a second one lets tests write while the first is down). */
  readonly apiservers?: number;
  /** Lift apiserver rate limits for benchmarks (the benchmark apiserver flags, docs/benchmarks.md). */
  readonly benchmark?: boolean;
  readonly scheduler?: boolean;
  readonly kwok?: boolean;
  /** The real Volcano (tools/control-plane/volcano.ts); off by default. */
  readonly volcano?: VolcanoOptions;
  /**
   * An audit policy (YAML text) for every apiserver, logging as JSON lines to `auditLogPath` (the
   * real-stack differential test reads who deleted a pod from it); off by default.
   */
  readonly auditPolicy?: string;
}

/** What a test process needs to reach a running control plane (serialisable). */
export interface ControlPlaneInfo {
  readonly dir: string;
  readonly etcdUrl: string;
  readonly servers: readonly string[];
  readonly adminToken: string;
  readonly kubeconfig: string;
  readonly etcdDataDir: string;
}

interface Proc { readonly name: string; readonly pid: number; readonly exited: Promise<void>; readonly hasExited: () => boolean }

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Can a listener bind 127.0.0.1:port now? */
async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Whether `exited` settles within `ms` (a stop's grace before SIGKILL). The grace timer is cleared
 * once the process is gone: left armed, each one held the process that stopped it (a Jest run after
 * its last test: "Jest did not exit one second after the test run") up to `ms` longer.
 */
export async function exitedWithin(exited: Promise<unknown>, ms: number): Promise<boolean> {
  let grace: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([exited.then(() => true), new Promise<false>((r) => { grace = setTimeout(() => r(false), ms); })]);
  } finally {
    clearTimeout(grace);
  }
}

/** GET over https with the admin token, ignoring the self-signed serving certificate. */
export function apiGet(server: string, path: string, token: string, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${server}${path}`, { method: 'GET', rejectUnauthorized: false, headers: { authorization: `Bearer ${token}` }, timeout: timeoutMs }, (res) => {
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

/** POST JSON to etcd's HTTP gateway (/v3/...). */
function etcdPost(etcdUrl: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = httpRequest(`${etcdUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': data.length } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => {
        if ((res.statusCode ?? 500) >= 300) reject(new Error(`etcd ${path}: ${res.statusCode} ${text}`));
        else resolve(JSON.parse(text) as Record<string, unknown>);
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

export function kubeconfigYaml(server: string, token: string, user = 'admin'): string {
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: local',
    'clusters:', '- name: local', '  cluster:', `    server: ${server}`, '    insecure-skip-tls-verify: true',
    'users:', `- name: ${user}`, '  user:', `    token: ${token}`,
    'contexts:', '- name: local', '  context:', '    cluster: local', `    user: ${user}`, '',
  ].join('\n');
}

export class ControlPlane {
  private readonly procs = new Map<string, Proc>();
  private readonly apiserverArgs: string[][] = [];
  readonly servers: string[] = [];
  readonly adminToken = randomBytes(24).toString('hex');
  etcdUrl = '';
  private etcdDataDir = '';

  private readonly opts: ControlPlaneOptions;

  private constructor(opts: ControlPlaneOptions) {
    this.opts = opts;
  }

  static async start(opts: ControlPlaneOptions): Promise<ControlPlane> {
    const cp = new ControlPlane(opts);
    try {
      await cp.boot();
    } catch (err) {
      await cp.stop();
      throw err;
    }
    return cp;
  }

  get dir(): string { return this.opts.workDir; }
  get kubeconfigPath(): string { return join(this.opts.workDir, 'kubeconfig'); }
  /** Where apiserver i writes its audit events (with ControlPlaneOptions.auditPolicy). */
  auditLogPath(i = 0): string { return join(this.opts.workDir, `apiserver-${i}`, 'audit.log'); }

  info(): ControlPlaneInfo {
    return { dir: this.dir, etcdUrl: this.etcdUrl, servers: [...this.servers], adminToken: this.adminToken, kubeconfig: this.kubeconfigPath, etcdDataDir: this.etcdDataDir };
  }

  private bin(name: string): string {
    const p = join(this.opts.binDir, name);
    if (!existsSync(p)) throw new Error(`missing binary ${p}: run 'make control-plane'`);
    return p;
  }

  private spawnSupervised(name: string, bin: string, args: string[]): Proc {
    const log = join(this.opts.workDir, `${name}.log`);
    const watch = this.opts.watchPid ?? process.pid;
    const child = spawn(process.execPath, [SUPERVISE, String(watch), log, '--', bin, ...args], { detached: true, stdio: 'ignore' });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${name}`);
    let gone = false;
    const exited = new Promise<void>((resolve) => child.on('exit', () => { gone = true; resolve(); }));
    const proc = { name, pid: child.pid, exited, hasExited: () => gone };
    this.procs.set(name, proc);
    writeFileSync(join(this.opts.workDir, 'pids'), [...this.procs.values()].map((p) => `${p.name} ${p.pid}`).join('\n') + '\n');
    return proc;
  }

  private async killProc(name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.procs.get(name);
    if (p === undefined) return;
    this.procs.delete(name);
    try { process.kill(-p.pid, signal); } catch { return; }
    try { process.kill(-p.pid, 'SIGCONT'); } catch { /* gone */ } // a paused process only takes the signal once resumed
    const dead = await exitedWithin(p.exited, 10_000);
    if (!dead) { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } await p.exited; }
  }

  private logTail(name: string): string {
    try { return readFileSync(join(this.opts.workDir, `${name}.log`), 'utf8').split('\n').slice(-15).join('\n'); } catch { return ''; }
  }

  private async boot(): Promise<void> {
    const w = this.opts.workDir;
    rmSync(w, { recursive: true, force: true });
    mkdirSync(w, { recursive: true });
    const shm = existsSync('/dev/shm') ? '/dev/shm' : w;
    this.etcdDataDir = join(shm, `clusterd-ts-etcd-${process.pid}-${randomBytes(4).toString('hex')}`);

    await this.onFreshPorts('etcd', async () => {
      const [etcdPort, peerPort] = [await freePort(), await freePort()];
      this.etcdUrl = `http://127.0.0.1:${etcdPort}`;
      this.spawnSupervised('etcd', this.bin('etcd'), [
        `--data-dir=${this.etcdDataDir}`, '--name=default',
        `--listen-client-urls=${this.etcdUrl}`, `--advertise-client-urls=${this.etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
        '--unsafe-no-fsync', '--quota-backend-bytes=8589934592', '--log-level=warn',
      ]);
      await this.waitFor('etcd', async () => (await etcdPost(this.etcdUrl, '/v3/kv/range', { key: 'Lw==' })).header !== undefined, 20_000);
    });

    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(w, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(w, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    writeFileSync(join(w, 'tokens.csv'), `${this.adminToken},admin,admin-uid,"system:masters"\n`);

    const n = Math.max(1, this.opts.apiservers ?? 1);
    if (this.opts.auditPolicy !== undefined) writeFileSync(join(w, 'audit-policy.yaml'), this.opts.auditPolicy);
    for (let i = 0; i < n; i++) {
      const port = await freePort();
      this.servers.push(`https://127.0.0.1:${port}`);
      mkdirSync(join(w, `apiserver-${i}`), { recursive: true });
      this.apiserverArgs.push([
        `--etcd-servers=${this.etcdUrl}`, '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1',
        `--secure-port=${port}`, `--cert-dir=${join(w, `apiserver-${i}`)}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${join(w, 'sa.pub')}`, `--service-account-signing-key-file=${join(w, 'sa.key')}`,
        `--token-auth-file=${join(w, 'tokens.csv')}`, '--authorization-mode=RBAC',
        '--disable-admission-plugins=ServiceAccount', '--allow-privileged=true', '--endpoint-reconciler-type=none',
        ...(this.opts.auditPolicy !== undefined ? [`--audit-policy-file=${join(w, 'audit-policy.yaml')}`, `--audit-log-path=${this.auditLogPath(i)}`, '--audit-log-format=json', '--audit-log-mode=blocking'] : []),
        ...(this.opts.benchmark === true ? ['--max-requests-inflight=0', '--max-mutating-requests-inflight=0', '--enable-priority-and-fairness=false'] : []),
      ]);
    }
    // In parallel: each takes seconds to become ready, and they only share etcd.
    await Promise.all(this.apiserverArgs.map((_, i) => this.onFreshPorts(`kube-apiserver-${i}`, async () => {
      if (!(await portFree(Number(new URL(this.servers[i]!).port)))) {
        const port = await freePort(); // lost since it was picked: the arguments name a new one
        this.servers[i] = `https://127.0.0.1:${port}`;
        this.apiserverArgs[i] = this.apiserverArgs[i]!.map((a) => (a.startsWith('--secure-port=') ? `--secure-port=${port}` : a));
      }
      await this.startApiserver(i);
    })));
    writeFileSync(this.kubeconfigPath, kubeconfigYaml(this.servers[0]!, this.adminToken));
    await this.installCrds();
    if (this.opts.scheduler === true) await this.startScheduler();
    if (this.opts.kwok === true) await this.startKwok();
    if (this.opts.volcano !== undefined) await this.startVolcano(this.opts.volcano);
  }

  /**
   * Starts a process on ports just found free, again on new ones (up to three times) when it lost
   * one of them to another process between the probe and its bind: parallel test runs and their
   * peers pick ports all the time.
   */
  private async onFreshPorts(name: string, start: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await start();
        return;
      } catch (e) {
        const log = join(this.opts.workDir, `${name}.log`);
        const lost = existsSync(log) && readFileSync(log, 'utf8').includes('address already in use');
        if (!lost || attempt >= 3) throw e;
        await this.killProc(name, 'SIGKILL');
        renameSync(log, `${log}.port-taken-${attempt}`);
      }
    }
  }

  private async waitFor(name: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      const p = this.procs.get(name);
      if (p === undefined) throw new Error(`${name} is not running`);
      if (p.hasExited()) throw new Error(`${name} exited before it was ready\n${this.logTail(name)}`);
      try { if (await probe()) return; } catch (e) { last = String(e); }
      await sleep(100);
    }
    throw new Error(`${name} not ready after ${timeoutMs} ms (${last})\n${this.logTail(name)}`);
  }

  /** Starts (or restarts) apiserver i on its fixed port and waits for /readyz. */
  async startApiserver(i = 0): Promise<void> {
    const name = `kube-apiserver-${i}`;
    this.spawnSupervised(name, this.bin('kube-apiserver'), this.apiserverArgs[i]!);
    await this.waitFor(name, async () => (await apiGet(this.servers[i]!, '/readyz', this.adminToken)).status === 200, 60_000);
  }

  /** Kills apiserver i (SIGKILL by default: a crash, not a graceful shutdown). */
  async stopApiserver(i = 0, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.killProc(`kube-apiserver-${i}`, signal);
  }

  /**
   * Freezes apiserver i (SIGSTOP to its process group): the port stays open and connections stay up,
   * but nothing is answered, as when the process hangs or its node stalls. resumeApiserver undoes it.
   */
  pauseApiserver(i = 0): void {
    this.signalGroup(`kube-apiserver-${i}`, 'SIGSTOP');
  }

  resumeApiserver(i = 0): void {
    this.signalGroup(`kube-apiserver-${i}`, 'SIGCONT');
  }

  /** Kills apiserver i (SIGKILL: a crash) and starts it again on the same port and etcd; resolves once ready. */
  async restartApiserver(i = 0): Promise<void> {
    await this.stopApiserver(i);
    await this.startApiserver(i);
  }

  private signalGroup(name: string, signal: NodeJS.Signals): void {
    const p = this.procs.get(name);
    if (p === undefined) throw new Error(`${name} is not running`);
    process.kill(-p.pid, signal);
  }

  /** Compacts etcd at its current revision (physically), forcing 410 Gone on older watches. */
  async compactEtcd(): Promise<number> {
    const res = await etcdPost(this.etcdUrl, '/v3/kv/range', { key: 'Lw==' });
    const rev = Number((res.header as { revision?: string } | undefined)?.revision ?? 0);
    await etcdPost(this.etcdUrl, '/v3/kv/compaction', { revision: String(rev), physical: true });
    return rev;
  }

  /** A kubeconfig (YAML text) that authenticates with the given bearer token. */
  kubeconfigFor(token: string, user = 'user', server = 0): string {
    return kubeconfigYaml(this.servers[server]!, token, user);
  }

  private kubectl(args: string[], input?: string): string {
    return execFileSync('kubectl', ['--kubeconfig', this.kubeconfigPath, ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /**
   * `kubectl wait --for=condition=Established` on CRDs. A CRD created a moment ago may have no
   * status.conditions yet, and kubectl then fails at once (".status.conditions accessor error")
   * instead of waiting: retried until the 60 s are up.
   */
  private async waitEstablished(crd: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        this.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', crd]);
        return;
      } catch (e) {
        if (Date.now() > deadline || !String((e as { stderr?: string }).stderr ?? e).includes('accessor error')) throw e;
        await sleep(200);
      }
    }
  }

  private async installCrds(): Promise<void> {
    // Third-party CRDs (crds/) and our own (the chart's crds/: DecisionRecord).
    this.kubectl(['apply', '--server-side', '-f', join(REPO, 'crds'), '-f', join(REPO, 'charts', 'clusterd-ts', 'crds')]);
    await this.waitEstablished('--all');
    // Established is not enough: the custom-resource storage answers 429 "storage is
    // (re)initializing" for a moment after it; wait until every kind lists.
    const plurals = this.kubectl(['get', 'crd', '-o', 'jsonpath={range .items[*]}{.spec.group}/{.spec.versions[0].name}/{.spec.names.plural}{"\\n"}{end}']).trim().split('\n');
    for (const gvp of plurals) {
      const [group, version, plural] = gvp.split('/');
      await this.waitFor('kube-apiserver-0', async () => (await apiGet(this.servers[0]!, `/apis/${group}/${version}/${plural}`, this.adminToken)).status === 200, 30_000);
    }
  }

  private async startScheduler(): Promise<void> {
    const port = await freePort();
    this.spawnSupervised('kube-scheduler', this.bin('kube-scheduler'), [
      `--kubeconfig=${this.kubeconfigPath}`, `--authentication-kubeconfig=${this.kubeconfigPath}`,
      `--authorization-kubeconfig=${this.kubeconfigPath}`, '--leader-elect=false',
      '--bind-address=127.0.0.1', `--secure-port=${port}`,
    ]);
  }

  private async startKwok(): Promise<void> {
    const config = join(this.dir, 'kwok.yaml');
    writeFileSync(config, readFileSync(join(HERE, 'kwok-stages.yaml'), 'utf8'));
    const port = await freePort();
    this.spawnSupervised('kwok', this.bin('kwok'), [
      `--kubeconfig=${this.kubeconfigPath}`, '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--node-lease-duration-seconds=0', `--server-address=127.0.0.1:${port}`, `--config=${config}`,
    ]);
  }

  /**
   * Volcano's own CRDs (full schemas with their defaults, replacing the open ones of crds/ for the
   * kinds both have), the namespaces its writers expect, then vc-controller-manager and vc-scheduler
   * with Huawei's scheduler configuration. Ready when vc-scheduler has created the default queue.
   */
  private async startVolcano(v: VolcanoOptions): Promise<void> {
    this.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(v.dir, 'crds')]);
    await this.waitEstablished('--all');
    for (const ns of ['volcano-system', 'mindx-dl', 'cluster-system']) {
      this.kubectl(['apply', '--server-side', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${ns}\n`);
    }
    const conf = join(this.dir, 'volcano-scheduler.conf');
    writeFileSync(conf, volcanoSchedulerConf(v.dir, v.scheduler, v.pluginArguments));
    // As a real deployment holds it: the ConfigMap vc-scheduler mounts (Volcano's chart and Huawei's
    // manifest), which is also what clusterd-ts reads to find the ascend plugin (controllers/rescheduling-role.ts).
    this.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'volcano-scheduler-configmap', namespace: 'volcano-system' },
      data: { 'volcano-scheduler.conf': volcanoSchedulerConf(v.dir, v.scheduler, v.pluginArguments) },
    }));
    const verbosity = v.verbosity ?? 3;
    this.spawnSupervised('vc-controller-manager', join(v.dir, 'vc-controller-manager'), vcControllerArgs({
      kubeconfig: this.kubeconfigPath, metricsPort: await freePort(), healthzPort: await freePort(), verbosity,
    }));
    this.spawnSupervised('vc-scheduler', vcSchedulerBinary(v.dir, v.scheduler), vcSchedulerArgs({
      kubeconfig: this.kubeconfigPath, conf, metricsPort: await freePort(), healthzPort: await freePort(), verbosity,
      schedulePeriod: v.schedulePeriod ?? '1s',
    }));
    await this.waitFor('vc-scheduler', async () =>
      (await apiGet(this.servers[0]!, '/apis/scheduling.volcano.sh/v1beta1/queues/default', this.adminToken)).status === 200, 60_000);
    if (v.ascendOperator !== undefined) await this.startAscendOperator(v.ascendOperator);
  }

  /**
   * The real Ascend Operator (tools/ascend-operator/build.sh) beside Volcano: its own AscendJob CRD
   * (full schema, replacing the open one of crds/ as Volcano's do), then the operator. It needs
   * Volcano's PodGroup and Job kinds at start (gang scheduling on). Ready when its healthz answers;
   * its informers sync right after, and it lists existing AscendJobs as creations.
   */
  private async startAscendOperator(dir: string): Promise<void> {
    this.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(dir, 'crds')]);
    await this.waitEstablished('ascendjobs.mindxdl.gitee.com');
    const logDir = join(this.dir, 'ascend-operator-run');
    mkdirSync(logDir, { recursive: true, mode: 0o750 });
    const healthzPort = await freePort();
    this.spawnSupervised('ascend-operator', join(dir, 'ascend-operator'), ascendOperatorArgs({
      kubeconfig: this.kubeconfigPath, logFile: join(logDir, 'ascend-operator.log'), healthzPort,
    }));
    await this.waitFor('ascend-operator', async () => {
      const ok = await new Promise<boolean>((resolve) => {
        const req = httpRequest(`http://127.0.0.1:${healthzPort}/`, { timeout: 1000 }, (res) => { res.resume(); resolve(res.statusCode === 200); });
        req.on('error', () => resolve(false));
        req.on('timeout', () => req.destroy());
        req.end();
      });
      return ok;
    }, 60_000);
  }

  /** Stops every process (scheduler and kwok first, etcd last) and removes the data. */
  async stop(): Promise<void> {
    const order = [...this.procs.keys()].sort((a, b) => (a === 'etcd' ? 1 : 0) - (b === 'etcd' ? 1 : 0));
    for (const name of order) await this.killProc(name);
    if (this.etcdDataDir !== '') rmSync(this.etcdDataDir, { recursive: true, force: true });
  }
}

/** Runs tools/k8s-bins/build.sh (a no-op when the cache holds the pinned versions); returns the bin dir. */
export function ensureBinaries(): string {
  if (process.env.CLUSTERD_TS_BIN_DIR !== undefined && existsSync(join(process.env.CLUSTERD_TS_BIN_DIR, 'kube-apiserver'))) {
    return process.env.CLUSTERD_TS_BIN_DIR;
  }
  const out = execFileSync('bash', [join(REPO, 'tools', 'k8s-bins', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').pop()!;
}
