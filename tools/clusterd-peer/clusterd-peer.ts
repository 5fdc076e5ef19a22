/**
 * The real ClusterD (built by build.sh from the MindCluster snapshot) as a supervised test peer on
 * a local control plane. ClusterD only knows in-cluster configuration and fixed paths, so it runs
 * in its own mount namespace (`unshare --mount`) where tmpfs mounts hide /run, /home, /var/log and
 * /tmp, the service-account files and /home/hwMindX are bind mounts of a scratch folder, and the
 * root file system is read-only: nothing on the host changes, and everything it mounted vanishes
 * with the process. Like every control-plane process it runs under supervise.mjs and dies with the
 * process that started it.
 */
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { HttpKubeClient, paths, type KubeObject } from '../../runtime/kube-client.ts';
import { exitedWithin, freePort, kubeconfigYaml, type ControlPlaneInfo } from '../control-plane/control-plane.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const SUPERVISE = join(HERE, '..', 'control-plane', 'supervise.mjs');
/** The snapshot (test input, never written to). */
/** The snapshot beside the repository (`../shared/mindcluster`, as CI lays it out) unless MINDCLUSTER_SRC names one. */
export const MINDCLUSTER_SRC = process.env.MINDCLUSTER_SRC ?? fileURLToPath(new URL('../../../shared/mindcluster', import.meta.url));
const CLUSTERD_BUILD = () => join(MINDCLUSTER_SRC, 'component', 'clusterd', 'build');
/** The namespace and ServiceAccount of clusterd.yaml's Deployment. */
export const CLUSTERD_NAMESPACE = 'mindx-dl';
const SERVICE_ACCOUNT = 'clusterd';
/** The files ClusterD reads from /home/hwMindX (its Dockerfile copies them there). */
const HW_MINDX_FILES = ['relationFaultCustomization.json', 'faultDuration.json', 'publicFaultConfiguration.json', 'fdConfig.yaml'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs build.sh (a no-op when the cache holds this snapshot's binary); returns the binary's path. */
export function ensureClusterdBinary(): string {
  if (process.env.CLUSTERD_PEER_BIN !== undefined && existsSync(process.env.CLUSTERD_PEER_BIN)) return process.env.CLUSTERD_PEER_BIN;
  const out = execFileSync('bash', [join(HERE, 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').pop()!;
}

/** The objects of clusterd.yaml (ConfigMap, ServiceAccount, ClusterRole, ClusterRoleBinding, ...). */
export function clusterdManifests(): KubeObject[] {
  const text = readFileSync(join(CLUSTERD_BUILD(), 'clusterd.yaml'), 'utf8');
  return parseAllDocuments(text).map((d) => d.toJS() as KubeObject).filter((o) => o !== null && typeof o === 'object');
}

async function createIfMissing(client: HttpKubeClient, collection: string, obj: KubeObject): Promise<void> {
  const path = `${collection}/${obj.metadata!.name}`;
  if ((await client.getOrUndefined(path)) === undefined) await client.create(collection, obj);
}

/**
 * What ClusterD needs in a cluster before it starts (README of the snapshot): namespaces mindx-dl
 * and cluster-system, clusterd.yaml's clusterd-config-cm, ServiceAccount and RBAC (the PodGroup CRD
 * comes with the control plane's crds/). Not its Deployment or Service.
 */
export async function installClusterdPrerequisites(admin: HttpKubeClient, opts: { configCm?: boolean } = {}): Promise<void> {
  for (const ns of [CLUSTERD_NAMESPACE, 'cluster-system']) {
    await createIfMissing(admin, paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  }
  for (const obj of clusterdManifests()) {
    const ns = obj.metadata?.namespace;
    switch (obj.kind) {
      case 'ConfigMap': if (opts.configCm !== false) await createIfMissing(admin, `/api/v1/namespaces/${ns}/configmaps`, obj); break;
      case 'ServiceAccount': await createIfMissing(admin, `/api/v1/namespaces/${ns}/serviceaccounts`, obj); break;
      case 'ClusterRole': await createIfMissing(admin, '/apis/rbac.authorization.k8s.io/v1/clusterroles', obj); break;
      case 'ClusterRoleBinding': await createIfMissing(admin, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', obj); break;
      default: break; // Deployment, Service: the harness is the Deployment
    }
  }
}

/** Pingmesh's file root (RAS_NET_ROOT_PATH), under the log folder the namespace binds writable. */
const RAS_NET_DIR = 'ras-net';

export interface ClusterdPeerOptions {
  /** The control plane ClusterD talks to (its first apiserver). */
  readonly controlPlane: ControlPlaneInfo;
  /** Scratch folder for the service-account files, /home/hwMindX, the logs. */
  readonly workDir: string;
  readonly binary?: string;
  /** Loopback address for gRPC (ClusterD listens on $POD_IP:8899). Default: a free 127.0.0.x. */
  readonly podIp?: string;
  /** Kill ClusterD when this pid dies (default: this process). */
  readonly watchPid?: number;
  /** Extra files for /home/hwMindX (name -> content), replacing the shipped ones. */
  readonly hwMindXFiles?: Readonly<Record<string, string>>;
}

/**
 * Picks a loopback address where port 8899 can be bound (ClusterD's gRPC port is fixed; it listens
 * on $POD_IP:8899). When another process holds 0.0.0.0:8899 no loopback address can be bound: then
 * any address is returned and ClusterD runs without its gRPC server (it logs the failure and goes
 * on; the ConfigMap behaviour the conformance suite compares does not depend on it).
 */
export async function freeLoopbackFor8899(): Promise<string> {
  const pick = () => `127.0.${Math.floor(Math.random() * 250) + 2}.${Math.floor(Math.random() * 250) + 2}`;
  for (let i = 0; i < 20; i++) {
    const ip = pick();
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(8899, ip, () => srv.close(() => resolve(true)));
    });
    if (free) return ip;
  }
  return pick();
}

/** The namespace script: mounts, then exec ClusterD (so the supervised pid is ClusterD's). */
const NAMESPACE_SCRIPT = String.raw`
set -eu
scratch=$1; binary=$2; shift 2
# Never touch the host: this must run in a mount namespace of its own.
[ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] || { echo "not in a private mount namespace" >&2; exit 97; }
mount --make-rprivate /
mount -t tmpfs -o mode=755 clusterd-run /run
# The binary stays reachable where the tmpfs mounts below would hide it (a cache under /home or /tmp).
touch /run/clusterd
mount --bind "$binary" /run/clusterd
mkdir -p /run/secrets/kubernetes.io/serviceaccount
mount --bind "$scratch/serviceaccount" /run/secrets/kubernetes.io/serviceaccount
mount -t tmpfs -o mode=755 clusterd-home /home
mkdir -p /home/hwMindX
mount --bind "$scratch/hwMindX" /home/hwMindX
mount -t tmpfs -o mode=755 clusterd-log /var/log
mkdir -p /var/log/mindx-dl
mount --bind "$scratch/log" /var/log/mindx-dl
mount -t tmpfs -o mode=1777 clusterd-tmp /tmp
# Per-mount read-only (bind remount): only this namespace's view of / changes.
mount -o remount,bind,ro /
exec /run/clusterd "$@"
`;

export class ClusterdPeer {
  /** ClusterD's POD_IP: its gRPC address is podIp:8899 (a new one when a start lost the port). */
  podIp: string;
  readonly healthPort: number;
  readonly opts: ClusterdPeerOptions;
  private supervisorPid = 0;
  private exited: Promise<void> = Promise.resolve();
  private running = false;
  private readonly binary: string;
  private starts = 0;

  private constructor(opts: ClusterdPeerOptions, podIp: string, healthPort: number) {
    this.opts = opts;
    this.podIp = podIp;
    this.healthPort = healthPort;
    this.binary = opts.binary ?? ensureClusterdBinary();
  }

  /** Writes the scratch files (token from the TokenRequest API) and starts ClusterD; resolves when healthy. */
  static async start(admin: HttpKubeClient, opts: ClusterdPeerOptions): Promise<ClusterdPeer> {
    const podIp = opts.podIp ?? (await freeLoopbackFor8899());
    let health = await freePort();
    while (health < 1025) health = await freePort(); // ClusterD rejects ports below 1025
    const peer = new ClusterdPeer(opts, podIp, health);
    await peer.prepare(admin);
    // The probe found podIp:8899 free, but another process may bind it before ClusterD does (parallel
    // test runs start peers all the time); ClusterD then serves without gRPC. Start it again elsewhere.
    for (let attempt = 1; ; attempt++) {
      await peer.launch();
      if (!peer.grpcPortLost() || opts.podIp !== undefined || attempt >= 3) return peer;
      await peer.stop();
      rmSync(peer.runLog, { force: true });
      peer.starts = 0;
      peer.podIp = await freeLoopbackFor8899();
    }
  }

  /** ClusterD logged that its gRPC server could not bind its address at this start. */
  private grpcPortLost(): boolean {
    try { return /clusterd grpc server start failed.*address already in use/.test(readFileSync(this.runLog, 'utf8')); } catch { return false; }
  }

  get logDir(): string { return join(this.opts.workDir, 'log'); }
  /** ClusterD's own run log (-logFile default, seen from the host through the bind mount). */
  get runLog(): string { return join(this.logDir, 'clusterd', 'clusterd.log'); }
  get stdoutLog(): string { return join(this.opts.workDir, 'clusterd.stdout.log'); }
  get grpcAddress(): string { return `${this.podIp}:8899`; }

  private async prepare(admin: HttpKubeClient): Promise<void> {
    const w = this.opts.workDir;
    rmSync(w, { recursive: true, force: true });
    for (const d of ['serviceaccount', 'hwMindX', 'log/clusterd', `log/${RAS_NET_DIR}`]) mkdirSync(join(w, d), { recursive: true });
    await installClusterdPrerequisites(admin);
    const tr = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${CLUSTERD_NAMESPACE}/serviceaccounts/${SERVICE_ACCOUNT}/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 86_400 } },
    });
    const sa = join(w, 'serviceaccount');
    writeFileSync(join(sa, 'token'), tr.status.token);
    writeFileSync(join(sa, 'namespace'), CLUSTERD_NAMESPACE);
    writeFileSync(join(sa, 'ca.crt'), servingCa(this.opts.controlPlane));
    for (const f of HW_MINDX_FILES) cpSync(join(CLUSTERD_BUILD(), f), join(w, 'hwMindX', f));
    for (const [name, content] of Object.entries(this.opts.hwMindXFiles ?? {})) writeFileSync(join(w, 'hwMindX', name), content);
  }

  private async launch(): Promise<void> {
    const server = new URL(this.opts.controlPlane.servers[0]!);
    const unshare = process.getuid?.() === 0 ? ['unshare', '--mount'] : ['unshare', '--user', '--map-root-user', '--mount'];
    const args = [
      ...unshare, '--', 'bash', '-c', NAMESPACE_SCRIPT, 'clusterd-ns', this.opts.workDir,
      this.binary, '-logLevel=0', '--enable-healthz=true', `--healthz-address=${this.healthPort}`,
    ];
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port,
      POD_IP: this.podIp, NODE_NAME: 'clusterd-peer', HOME: '/tmp',
      // Pingmesh publishes super-pod-<id> only while this names a directory (component/clusterd/pkg/application/pingmesh/publisher.go checkRasNetRootPath).
      RAS_NET_ROOT_PATH: `/var/log/mindx-dl/${RAS_NET_DIR}`,
    };
    const child = spawn(process.execPath, [SUPERVISE, String(this.opts.watchPid ?? process.pid), this.stdoutLog, '--', ...args], { detached: true, stdio: 'ignore', env });
    child.unref();
    if (child.pid === undefined) throw new Error('could not start ClusterD');
    this.supervisorPid = child.pid;
    this.running = true;
    this.starts++;
    this.exited = new Promise<void>((resolve) => child.on('exit', () => { this.running = false; resolve(); }));
    await this.waitHealthy(60_000);
  }

  /** Healthy = ClusterD logged "clusterd starts to serve" for this start (its healthz answers before its informers). */
  private async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`ClusterD exited at start:\n${this.tail()}`);
      if (this.servingCount() >= this.starts) return;
      await sleep(100);
    }
    throw new Error(`ClusterD not serving after ${timeoutMs} ms:\n${this.tail()}`);
  }

  private servingCount(): number {
    try { return readFileSync(this.runLog, 'utf8').split('clusterd starts to serve').length - 1; } catch { return 0; }
  }

  /** ClusterD's pid (the supervisor's child: unshare and bash exec into it). */
  pid(): number | undefined {
    try {
      const kids = readFileSync(`/proc/${this.supervisorPid}/task/${this.supervisorPid}/children`, 'utf8').trim().split(/\s+/).filter((x) => x !== '');
      return kids.length > 0 ? Number(kids[0]) : undefined;
    } catch {
      return undefined;
    }
  }

  tail(lines = 30): string {
    const read = (f: string) => { try { return readFileSync(f, 'utf8').split('\n').slice(-lines).join('\n'); } catch { return ''; } };
    return `${read(this.stdoutLog)}\n--- ${this.runLog}\n${read(this.runLog)}`;
  }

  /** Stops ClusterD (SIGTERM, then SIGKILL after 10 s). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.running) return;
    try { process.kill(-this.supervisorPid, signal); } catch { return; }
    const dead = await exitedWithin(this.exited, 10_000);
    if (!dead) { try { process.kill(-this.supervisorPid, 'SIGKILL'); } catch { /* gone */ } await this.exited; }
  }

  /** A restart of the controller process: stop (kill by default, a crash), start again on the same scratch files. */
  async restart(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.stop(signal);
    await this.launch();
  }
}

/** The CA that signed the apiserver's self-signed serving certificate (apiserver.crt holds cert + CA). */
function servingCa(cp: ControlPlaneInfo): string {
  const crt = join(cp.dir, 'apiserver-0', 'apiserver.crt');
  if (!existsSync(crt)) throw new Error(`no serving certificate at ${crt}`);
  return readFileSync(crt, 'utf8');
}

/** A client acting as ClusterD's ServiceAccount (for RBAC checks). */
export async function clusterdClient(admin: HttpKubeClient, cp: ControlPlaneInfo): Promise<HttpKubeClient> {
  const tr = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${CLUSTERD_NAMESPACE}/serviceaccounts/${SERVICE_ACCOUNT}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return HttpKubeClient.fromString(kubeconfigYaml(cp.servers[0]!, tr.status.token, 'clusterd'));
}
