/**
 * The benchmark cluster: its own control plane with the apiserver's rate limits lifted
 * (`benchmark: true`: apiserver rate limits lifted, docs/benchmarks.md), kwok nodes carrying `huawei.com/Ascend910` created in bulk
 * (kwok marks them Ready; node lease heartbeats are off), the device plugin simulator writing every
 * node's device-info, the bench jobs, the watches the figures come from, and the controller process.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlPlane } from '../control-plane/control-plane.ts';
import { HttpKubeClient, paths } from '../../runtime/kube-client.ts';
import type { Node } from '../../runtime/kube-objects.ts';
import { DevicePluginSimulator } from '../simulator/device-plugin.ts';
import { createFakeNodes, nodeNames } from '../simulator/nodes.ts';
import { ControllerProcess } from './controller-process.ts';
import { JobFleet } from './jobs.ts';
import { Observer } from './observe.ts';
import { BENCH_NAMESPACE, planJobs } from './fixtures.ts';

export interface ClusterOptions {
  readonly binDir: string;
  readonly nodes: number;
  readonly npus: number;
  readonly podsPerJob: number;
  readonly log: (line: string) => void;
  /** Extra controller flags. */
  readonly controllerArgs?: readonly string[];
  /** Flags for the controller's node (e.g. `--cpu-prof --cpu-prof-dir=...`). */
  readonly controllerNodeArgs?: readonly string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class BenchCluster {
  readonly cp: ControlPlane;
  readonly client: HttpKubeClient;
  readonly names: readonly string[];
  readonly dp: DevicePluginSimulator;
  readonly observer: Observer;
  readonly fleet: JobFleet;
  controller!: ControllerProcess;
  /** Whether the controller runs the jobs flow (vcjob-fault-npu-cm, pod deletion): detected at start. */
  jobsController = false;
  readonly setupSeconds: Record<string, number> = {};
  private readonly opts: ClusterOptions;

  private constructor(cp: ControlPlane, opts: ClusterOptions) {
    this.cp = cp;
    this.opts = opts;
    this.client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    this.names = nodeNames(opts.nodes);
    this.dp = new DevicePluginSimulator(this.client, { nodes: this.names.map((name) => ({ name, npus: opts.npus })), minWriteIntervalMs: 1000, maxInFlight: 128 });
    this.observer = new Observer(this.client);
    this.fleet = new JobFleet(this.client, this.observer, planJobs(this.names, opts.podsPerJob, opts.npus));
  }

  static async start(opts: ClusterOptions): Promise<BenchCluster> {
    const t0 = Date.now();
    const cp = await ControlPlane.start({ binDir: opts.binDir, workDir: join(tmpdir(), `clusterd-ts-bench-${process.pid}`), benchmark: true, kwok: true, scheduler: false });
    const c = new BenchCluster(cp, opts);
    try {
      c.setupSeconds.control_plane = (Date.now() - t0) / 1000;
      await c.populate();
      await c.startController();
    } catch (e) {
      await c.stop();
      throw e;
    }
    return c;
  }

  private async step(name: string, fn: () => Promise<void>): Promise<void> {
    const t = Date.now();
    this.opts.log(`# setup: ${name}`);
    await fn();
    this.setupSeconds[name] = (Date.now() - t) / 1000;
  }

  private async populate(): Promise<void> {
    const { client } = this;
    for (const ns of ['mindx-dl', 'volcano-system', BENCH_NAMESPACE]) {
      if ((await client.getOrUndefined(`/api/v1/namespaces/${ns}`)) === undefined) {
        await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      }
    }
    await this.step('nodes', async () => {
      await createFakeNodes(client, this.names.map((name) => ({ name, npus: this.opts.npus })), 32);
      await this.waitNodesReady();
    });
    await this.step('device_info', async () => { await this.dp.init(); });
    await this.observer.start();
    await this.step('jobs', async () => {
      await this.fleet.create();
      await this.fleet.waitRunning();
    });
  }

  private async waitNodesReady(timeoutMs = 300_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const list = await this.client.list<Node>(paths.nodes(), { labelSelector: 'type=kwok' });
      const ready = list.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
      if (ready >= this.names.length) return;
      if (Date.now() > deadline) throw new Error(`only ${ready} of ${this.names.length} kwok nodes Ready after ${timeoutMs} ms`);
      await sleep(1000);
    }
  }

  /** Starts the controller process and waits until it is ready and has written cluster-info. */
  async startController(): Promise<void> {
    await this.step('controller', async () => {
      const { proc } = await ControllerProcess.start(this.cp.kubeconfigPath, this.cp.dir, this.opts.controllerArgs ?? [], this.opts.controllerNodeArgs ?? []);
      this.controller = proc;
      this.observer.follow(proc);
      await proc.waitReady();
      await this.settle();
      this.jobsController = await this.detectJobsController();
    });
  }

  /**
   * The jobs flow queues its vcjob-fault-npu-cm and job keys as soon as the caches are synced, so a
   * controller that has it shows `vcjob_fault_npu` / `job_decisions` in reconcile_total within seconds.
   */
  private async detectJobsController(): Promise<boolean> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const r = await this.controller.reconcilers();
      if (r.has('vcjob_fault_npu') || r.has('job_decisions')) return true;
      if (Date.now() > deadline) return false;
      await sleep(250);
    }
  }

  /** Waits until cluster-info lists every node healthy (the controller caught up with the cluster). */
  async settle(timeoutMs = 180_000): Promise<void> {
    const t = await this.observer.waitFor(() => (this.names.every((n) => this.observer.deviceState(n, undefined) !== undefined && this.observer.switchState(n, false) !== undefined) && this.clusterInfoComplete() ? Date.now() : undefined), timeoutMs);
    if (Number.isNaN(t)) throw new Error(`cluster-info did not settle within ${timeoutMs} ms`);
  }

  private clusterInfoComplete(): boolean {
    // deviceState(n, undefined) is also true for nodes never listed; require every node to be listed.
    return this.names.every((n) => this.observer.listed(n));
  }

  async stop(): Promise<void> {
    this.dp.close();
    this.observer.stop();
    await this.controller?.stop();
    await this.cp.stop();
  }
}
