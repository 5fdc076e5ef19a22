/**
 * `make cluster-up` / `make cluster-down`: the test control plane in the background for people,
 * with kwok nodes carrying huawei.com/Ascend910. Writes .cluster/kubeconfig. `make demo` starts it
 * with the real Volcano instead of kube-scheduler (tools/demo.ts).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ControlPlane, ensureBinaries, type ControlPlaneInfo } from './control-plane/control-plane.ts';
import type { VolcanoOptions } from './control-plane/volcano.ts';
import { HttpKubeClient } from '../runtime/kube-client.ts';
import { baseDeviceInfos, createFakeNodes, nodeNames } from './simulator/nodes.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIR = join(REPO, '.cluster');

function alive(info: ControlPlaneInfo): boolean {
  try {
    const pids = readFileSync(join(info.dir, 'pids'), 'utf8').trim().split('\n').map((l) => Number(l.split(' ')[1]));
    return pids.every((p) => { try { process.kill(p, 0); return true; } catch { return false; } });
  } catch { return false; }
}

export interface ClusterOptions {
  /** The real Volcano (vc-controller-manager + vc-scheduler) in place of kube-scheduler. */
  readonly volcano?: VolcanoOptions;
  /** Stop the control plane when this pid dies; 0 (make cluster-up) = live on. */
  readonly watchPid?: number;
}

/** What schedules pods in a cluster: recorded beside its info so a reused cluster is the one asked for. */
const schedulerOf = (o: ClusterOptions): string => (o.volcano === undefined ? 'kube-scheduler' : `volcano-${o.volcano.scheduler ?? 'ascend'}`);

export async function clusterUp(nodes: number, o: ClusterOptions = {}): Promise<ControlPlaneInfo> {
  const infoFile = join(DIR, 'control-plane.json');
  if (existsSync(infoFile)) {
    const info = JSON.parse(readFileSync(infoFile, 'utf8')) as ControlPlaneInfo & { scheduler?: string };
    if (alive(info)) {
      const running = info.scheduler ?? 'kube-scheduler';
      if (running !== schedulerOf(o)) throw new Error(`a cluster with ${running} is up in .cluster, ${schedulerOf(o)} is wanted: make cluster-down first`);
      console.log(`control plane already up: ${info.servers[0]}`);
      return info;
    }
    await clusterDown();
  }
  const t0 = Date.now();
  console.log(`==> starting etcd, kube-apiserver, ${o.volcano === undefined ? 'kube-scheduler' : 'vc-controller-manager, vc-scheduler'} and kwok`);
  const cp = await ControlPlane.start({ binDir: ensureBinaries(), workDir: DIR, watchPid: o.watchPid ?? 0, scheduler: o.volcano === undefined, kwok: true, volcano: o.volcano });
  writeFileSync(infoFile, JSON.stringify({ ...cp.info(), scheduler: schedulerOf(o) }, null, 2));
  console.log(`==> creating ${nodes} kwok nodes with huawei.com/Ascend910: 8`);
  const client = HttpKubeClient.fromFile(cp.kubeconfigPath);
  await createFakeNodes(client, nodeNames(nodes).map((name) => ({ name })));
  // The apiserver taints new Nodes node.kubernetes.io/not-ready and only the node lifecycle
  // controller (not run here) lifts it: do its job, so pods need no blanket toleration and the
  // controller's isolation taints keep their meaning. baseDeviceInfos: the device plugin's node
  // annotation the ascend plugin counts a node's chips from (tools/volcano/README.md).
  for (const name of nodeNames(nodes)) await client.patch(`/api/v1/nodes/${name}`, { metadata: { annotations: { baseDeviceInfos: baseDeviceInfos() } }, spec: { taints: null } });
  console.log(`==> ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`    kubectl --kubeconfig ${join('.cluster', 'kubeconfig')} get nodes`);
  return cp.info();
}

export async function clusterDown(): Promise<void> {
  const infoFile = join(DIR, 'control-plane.json');
  if (!existsSync(infoFile)) { console.log('no cluster running'); return; }
  const info = JSON.parse(readFileSync(infoFile, 'utf8')) as ControlPlaneInfo;
  let lines: string[] = [];
  try { lines = readFileSync(join(info.dir, 'pids'), 'utf8').trim().split('\n'); } catch { /* none */ }
  const isAlive = (pid: number): boolean => { try { process.kill(pid, 0); return true; } catch { return false; } };
  const pids = lines.map((l) => ({ name: l.split(' ')[0], pid: Number(l.split(' ')[1]) }));
  for (const { pid } of pids) { try { process.kill(-pid, 'SIGTERM'); } catch { /* already gone */ } }
  const deadline = Date.now() + 10_000;
  while (pids.some((p) => isAlive(p.pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const { name, pid } of pids) {
    if (isAlive(pid)) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }
    console.log(`stopped ${name}`);
  }
  rmSync(info.etcdDataDir, { recursive: true, force: true });
  rmSync(DIR, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { nodes: { type: 'string', default: '4' } } });
  if (positionals[0] === 'up') await clusterUp(Number(values.nodes));
  else if (positionals[0] === 'down') await clusterDown();
  else { console.error('usage: cluster.ts up [--nodes N] | down'); process.exit(2); }
}
