/**
 * The two sides of a conformance run. Each side is a fresh control plane of its own (etcd +
 * kube-apiserver with the repo's CRDs, no scheduler, no kwok: the scenario writes every Node itself)
 * with one controller on it: the real ClusterD (tools/clusterd-peer) or clusterd-ts as production
 * runs it (`node main.ts`, the bench's ControllerProcess). Both sides get the same prerequisites
 * (clusterd.yaml's namespaces, clusterd-config-cm, ServiceAccount and RBAC).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { ControlPlane, ensureBinaries, type ControlPlaneOptions } from '../../tools/control-plane/control-plane.ts';
import { ClusterdPeer, ensureClusterdBinary, installClusterdPrerequisites } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { ControllerProcess, useTestBundle, type MetricSample } from '../../tools/bench/controller-process.ts';
import { HttpKubeClient, isNotFound, paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { Write } from './world.ts';

export type SideName = 'clusterd' | 'ours';

export interface Side {
  readonly name: SideName;
  readonly cp: ControlPlane;
  readonly admin: HttpKubeClient;
  /** Starts the controller; resolves when it serves (ClusterD: "clusterd starts to serve"; ours: /readyz). */
  startController(): Promise<number>;
  restartController(): Promise<number>;
  /** host:port of the running controller's gRPC server. */
  grpcTarget(): string;
  stop(): Promise<void>;
  logTail(): string;
}

export interface SideOptions {
  /** Extra clusterd-ts flags (a scenario's configuration; the allow-list names flags too). */
  readonly ourFlags?: readonly string[];
  readonly workRoot: string;
  /**
   * What else each control plane runs, the same on both sides (the real Volcano, kwok: the
   * real-stack differential test); default none, the scenario writes every object itself.
   */
  readonly controlPlane?: Pick<ControlPlaneOptions, 'kwok' | 'volcano' | 'auditPolicy'>;
  /**
   * ClusterD's relation-fault files (relationFaultCustomization.json, faultDuration.json) in place of
   * the shipped ones: ClusterD reads them from /home/hwMindX, ours from --relation-fault-config-dir.
   */
  readonly relationFiles?: Readonly<Record<string, string>>;
}

/** Volcano is installed wherever ClusterD runs (it checks the PodGroup CRD at start): its namespace too. */
const VOLCANO_NAMESPACE = 'volcano-system';

async function startControlPlane(binDir: string, workDir: string, extra: SideOptions['controlPlane'] = {}): Promise<{ cp: ControlPlane; admin: HttpKubeClient }> {
  const cp = await ControlPlane.start({ binDir, workDir, ...extra });
  const admin = HttpKubeClient.fromFile(cp.kubeconfigPath);
  await installClusterdPrerequisites(admin);
  // A control plane with Volcano has created it already.
  if ((await admin.getOrUndefined(`${paths.namespaces()}/${VOLCANO_NAMESPACE}`)) === undefined) {
    await admin.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: VOLCANO_NAMESPACE } });
  }
  return { cp, admin };
}

export class ClusterdSide implements Side {
  readonly name = 'clusterd' as const;
  readonly cp: ControlPlane;
  readonly admin: HttpKubeClient;
  private peer: ClusterdPeer | undefined;
  private readonly workDir: string;
  private readonly files: Readonly<Record<string, string>>;
  constructor(cp: ControlPlane, admin: HttpKubeClient, workDir: string, files: Readonly<Record<string, string>> = {}) { this.cp = cp; this.admin = admin; this.workDir = workDir; this.files = files; }
  async startController(): Promise<number> {
    const t = Date.now();
    this.peer = await ClusterdPeer.start(this.admin, { controlPlane: this.cp.info(), workDir: join(this.workDir, 'clusterd'), hwMindXFiles: this.files });
    return Date.now() - t;
  }
  async restartController(): Promise<number> {
    const t = Date.now();
    await this.peer!.restart('SIGTERM');
    return Date.now() - t;
  }
  grpcTarget(): string {
    if (this.peer === undefined) throw new Error('ClusterD not started');
    return this.peer.grpcAddress;
  }
  async stop(): Promise<void> {
    await this.peer?.stop();
    await this.cp.stop();
  }
  logTail(): string { return this.peer?.tail(40) ?? ''; }
}

export class OurSide implements Side {
  readonly name = 'ours' as const;
  readonly cp: ControlPlane;
  readonly admin: HttpKubeClient;
  private proc: ControllerProcess | undefined;
  private readonly flags: readonly string[];
  private readonly workDir: string;
  constructor(cp: ControlPlane, admin: HttpKubeClient, workDir: string, flags: readonly string[]) { this.cp = cp; this.admin = admin; this.workDir = workDir; this.flags = flags; }
  async startController(): Promise<number> {
    const t = Date.now();
    const { proc } = await ControllerProcess.start(this.cp.kubeconfigPath, this.workDir, this.flags);
    this.proc = proc;
    await proc.waitReady(120_000);
    return Date.now() - t;
  }
  async restartController(): Promise<number> {
    const t = Date.now();
    await this.proc!.restart();
    await this.proc!.waitReady(120_000);
    return Date.now() - t;
  }
  /** The running controller's /metrics. */
  async metrics(): Promise<MetricSample[]> {
    if (this.proc === undefined) throw new Error('clusterd-ts not started');
    return this.proc.metrics();
  }
  grpcTarget(): string {
    if (this.proc === undefined) throw new Error('clusterd-ts not started');
    return `127.0.0.1:${this.proc.grpcPort}`;
  }
  async stop(): Promise<void> {
    await this.proc?.stop();
    await this.cp.stop();
  }
  logTail(): string { return this.proc?.logTail(40) ?? ''; }
}

/** The same relation files for ours: written to `dir`, named by --relation-fault-config-dir. */
function relationFlag(dir: string, files: Readonly<Record<string, string>> | undefined): string[] {
  if (files === undefined || Object.keys(files).length === 0) return [];
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return [`--relation-fault-config-dir=${dir}`];
}

/** Both control planes, started side by side (the controllers are started by the runner). */
export async function startSides(opts: SideOptions): Promise<{ clusterd: ClusterdSide; ours: OurSide }> {
  ensureClusterdBinary(); // fail before any process starts when ClusterD cannot be built
  // Once, not once per side: two build.sh runs at the same time race on the shared cache.
  const binDir = ensureBinaries();
  await useTestBundle();
  const id = randomBytes(3).toString('hex');
  const root = join(opts.workRoot, `conformance-${process.pid}-${id}`);
  const [a, b] = await Promise.allSettled([startControlPlane(binDir, join(root, 'clusterd'), opts.controlPlane), startControlPlane(binDir, join(root, 'ours'), opts.controlPlane)]);
  if (a.status === 'rejected' || b.status === 'rejected') {
    if (a.status === 'fulfilled') await a.value.cp.stop();
    if (b.status === 'fulfilled') await b.value.cp.stop();
    throw (a.status === 'rejected' ? a.reason : (b as PromiseRejectedResult).reason) as Error;
  }
  return {
    clusterd: new ClusterdSide(a.value.cp, a.value.admin, join(root, 'clusterd'), opts.relationFiles),
    ours: new OurSide(b.value.cp, b.value.admin, join(root, 'ours'), [...(opts.ourFlags ?? []), ...relationFlag(join(root, 'ours-relation'), opts.relationFiles)]),
  };
}

export const defaultWorkRoot = (): string => tmpdir();

/** Sends one input request (the same object for both sides). */
export async function send(client: HttpKubeClient, w: Write): Promise<void> {
  switch (w.op) {
    case 'put': {
      const path = `${w.collection}/${w.body.metadata!.name}`;
      const body = structuredClone(w.body);
      if (w.ownerFrom !== undefined) {
        const owner = await client.get<KubeObject>(w.ownerFrom);
        for (const r of body.metadata?.ownerReferences ?? []) if (r.name === owner.metadata?.name) r.uid = owner.metadata?.uid ?? '';
      }
      try {
        await client.replace(path, structuredClone(body));
      } catch (e) {
        if (!isNotFound(e)) throw e;
        await client.create<KubeObject>(w.collection, body);
      }
      return;
    }
    case 'patch': await client.patch(w.path, w.body, w.type); return;
    case 'delete':
      try { await client.delete(w.path); } catch (e) { if (!isNotFound(e)) throw e; }
      return;
  }
}
