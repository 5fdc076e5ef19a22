/**
 * Scenario 4, scale and memory, in-process (no apiserver): for each size a fresh process
 * (scale-entry.ts, `--expose-gc`) builds what the informers would hold for N nodes x `npus` NPUs
 * (Nodes, device-info ConfigMaps, one pod per node in 16-pod jobs, PodGroups), feeds it into the
 * FaultStore and job index, renders cluster-info, then applies device-info updates for
 * `updateSeconds`. Figures per size: RSS and heap after the initial list, time to the first
 * cluster-info, time of one full render, the cluster-info reconciler's first (full) pass and its
 * incremental passes after 1 and 100 nodes changed, sustained device-info updates per second.
 */
import { spawn } from 'node:child_process';
import { controllerEntry, imageEnv, imageNodeArgs } from './controller-process.ts';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScaleResult } from './scale-worker.ts';
import type { Figures } from './report.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
/**
 * The worker in the form the controller runs (--controller-entry), so the RSS figures carry the same
 * module floor: the TypeScript sources (type stripping loads its compiler, +20-30 MiB), tsc's dist/
 * (built by useControllerEntry('dist')), or an esbuild bundle made like the image's.
 */
async function workerEntry(): Promise<string> {
  switch (controllerEntry()) {
    case 'dist': return join(HERE, '..', '..', 'dist', 'tools', 'bench', 'scale-entry.js');
    case 'bundle': return (await import('../bundle/build.ts')).bundleScaleWorker();
    case 'ts': return join(HERE, 'scale-entry.ts');
  }
}

export interface ScaleOptions {
  readonly sizes: readonly number[];
  readonly npus: number;
  readonly updateSeconds: number;
  readonly log: (line: string) => void;
}

function runWorker(worker: string, nodes: number, npus: number, updateSeconds: number): Promise<ScaleResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...imageNodeArgs(), '--expose-gc', worker, '--nodes', String(nodes), '--npus', String(npus), '--update-seconds', String(updateSeconds)], {
      // With the image's environment (V8 heap flags, allocator tunables), so the figures are those of the process as it ships.
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...imageEnv(), NODE_NO_WARNINGS: '1' },
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`scale worker (${nodes} nodes) exited ${code}: ${err.slice(-2000)}`));
      else resolve(JSON.parse(line) as ScaleResult);
    });
  });
}

export async function runScaleScenario(o: ScaleOptions, figures: Figures): Promise<void> {
  const results: ScaleResult[] = [];
  const worker = await workerEntry();
  o.log(`# scale: worker ${relative(join(HERE, '..', '..'), worker)} (--controller-entry ${controllerEntry()})`);
  for (const nodes of o.sizes) {
    o.log(`# scale: ${nodes} nodes x ${o.npus} NPUs`);
    const r = await runWorker(worker, nodes, o.npus, o.updateSeconds);
    results.push(r);
    figures.add('scale', `rss_mib_${nodes}_nodes`, r.rssMiB, 'MiB');
    figures.add('scale', `heap_mib_${nodes}_nodes`, r.heapUsedMiB, 'MiB');
    figures.add('scale', `rss_after_gc_mib_${nodes}_nodes`, r.rssAfterGcMiB, 'MiB');
    figures.add('scale', `scale_first_cluster_info_ms_${nodes}_nodes`, r.firstClusterInfoMs, 'ms');
    figures.add('scale', `scale_render_ms_${nodes}_nodes`, r.renderMs, 'ms');
    figures.add('scale', `scale_cluster_info_first_pass_ms_${nodes}_nodes`, r.firstPassMs, 'ms');
    figures.add('scale', `scale_cluster_info_pass_1_dirty_ms_${nodes}_nodes`, r.incrementalPassMs, 'ms');
    figures.add('scale', `scale_cluster_info_pass_100_dirty_ms_${nodes}_nodes`, r.incremental100PassMs, 'ms');
    figures.add('scale', `scale_cluster_info_cache_mib_${nodes}_nodes`, r.clusterInfoCacheMiB, 'MiB');
    figures.add('scale', `scale_updates_per_s_${nodes}_nodes`, r.updatesPerSecond, 'updates/s');
  }
  figures.details.scale = results;
  figures.details.scaleWorkerEntry = controllerEntry();
}
