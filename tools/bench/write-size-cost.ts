/**
 * What one ConfigMap write costs by its size (docs/benchmarks.md): on a benchmark control
 * plane of its own, a ConfigMap of each size is replaced 25 times (a random pause between) and the
 * time from the write's start to its watch event in a second watcher is taken, as the peer bench
 * takes fault -> cluster-info. A measuring tool, not part of the controller:
 * `node tools/bench/write-size-cost.ts [KiB,...]` (default 8,32,64,128,256,429,800).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlPlane, ensureBinaries } from '../control-plane/control-plane.ts';
import { HttpKubeClient, paths } from '../../runtime/kube-client.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { realClock } from '../../runtime/clock.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';

const sizes = (process.argv[2] ?? '8,32,64,128,256,429,800').split(',').map(Number);
const dir = mkdtempSync(join(tmpdir(), 'write-size-cost-'));
const cp = await ControlPlane.start({ binDir: ensureBinaries(), workDir: dir, benchmark: true });
const client = HttpKubeClient.fromFile(cp.kubeconfigPath);
const NS = 'mindx-dl';
await client.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }).catch(() => undefined);
const seen = new Map<string, number>();
const watch = new Reflector<ConfigMap>(client, { clock: realClock, name: 'write_size_cost', path: paths.configMaps(NS) });
watch.events$.subscribe((ev) => { if (ev.type !== 'delete') seen.set(ev.obj.metadata?.name ?? '', Date.now()); });
watch.start();
await watch.waitForSync(30_000);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pct = (xs: readonly number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
for (const kib of sizes) {
  const name = `size-${kib}`;
  // A JSON object in a string, as a cluster-info shard is.
  const data = (i: number): Record<string, string> => ({ [name]: `{"k${i}":${JSON.stringify('a'.repeat(Math.max(0, kib * 1024 - 20)))}}` });
  let obj = await client.create<ConfigMap>(paths.configMaps(NS), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: data(0) });
  const lat: number[] = [];
  for (let i = 1; i <= 25; i++) {
    await sleep(100 + Math.random() * 200);
    seen.delete(name);
    const t0 = Date.now();
    obj = await client.replace<ConfigMap>(paths.configMap(NS, name), { ...obj, data: data(i) });
    while (!seen.has(name)) await sleep(1);
    lat.push(seen.get(name)! - t0);
  }
  lat.sort((a, b) => a - b);
  console.log(`${kib} KiB: write -> watch event p50 ${pct(lat, 50)} p90 ${pct(lat, 90)} max ${lat[lat.length - 1]} ms`);
}
watch.stop();
await cp.stop();
rmSync(dir, { recursive: true, force: true });
