/**
 * Scenario 3, steady state: first a wait until the controller has written nothing for 10 s (so the
 * tail of the previous scenario, such as taints lifted and restarts completed, stays out), then
 * `minutes` with no fault, while the device plugin simulator rewrites every node's device-info every
 * `dpRefreshSeconds` (the real device plugin's 5-minute refresh; the first one half an interval in,
 * so a 10-minute run sees two). Figures: the controller's writes (api_writes_total from its
 * /metrics; target 0), its CPU seconds (/proc/<pid>/stat), its RSS, and the cluster-info updates
 * seen, split into data changes and metadata-only rewrites. The RSS is sampled every `rssSampleMs`
 * (default 5 s) through the window, so the figures show its band (no wider than 20 % at
 * 1,000 nodes) and not one value that depends on when it was read.
 */
import type { BenchCluster } from './cluster.ts';
import { diffCounts, sumOf, writesByKind } from './controller-process.ts';
import { percentile } from './fixtures.ts';
import type { Figures } from './report.ts';

export interface SteadyOptions {
  readonly minutes: number;
  readonly dpRefreshSeconds: number;
  readonly log: (line: string) => void;
  /** RSS sampling interval through the window (default 5000). */
  readonly rssSampleMs?: number;
}

export interface RssBand {
  readonly samples: number;
  readonly minMiB: number;
  readonly maxMiB: number;
  /** Nearest-rank p50, as the other figures' percentiles. */
  readonly medianMiB: number;
  /** (max - min) / min, in %: how far above its lowest reading the RSS went in the window. */
  readonly bandPercent: number;
}

/** The band of RSS samples (MiB); NaN readings (process gone for a moment) are left out. null when none is left. */
export function rssBand(samplesMiB: readonly number[]): RssBand | null {
  const xs = samplesMiB.filter((x) => Number.isFinite(x));
  if (xs.length === 0) return null;
  const minMiB = Math.min(...xs);
  const maxMiB = Math.max(...xs);
  return { samples: xs.length, minMiB, maxMiB, medianMiB: percentile(xs, 50), bandPercent: ((maxMiB - minMiB) / minMiB) * 100 };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (at most maxMs) until the controller made no write for quietMs: the tail of the previous scenario stays out. */
export async function waitQuiet(c: BenchCluster, quietMs: number, maxMs: number): Promise<number> {
  const t0 = Date.now();
  const total = async (): Promise<number> => Object.values(writesByKind(await c.controller.metrics())).reduce((a, v) => a + v, 0);
  let last = await total();
  while (Date.now() - t0 < maxMs) {
    await sleep(quietMs);
    const now = await total();
    if (now === last) break;
    last = now;
  }
  return (Date.now() - t0) / 1000;
}

export async function runSteady(c: BenchCluster, o: SteadyOptions, figures: Figures): Promise<void> {
  const quietS = await waitQuiet(c, Math.min(10_000, o.minutes * 60_000 / 4 + 1000), 60_000);
  const durationMs = o.minutes * 60_000;
  const refreshMs = o.dpRefreshSeconds * 1000;
  const m0 = await c.controller.metrics();
  const before = writesByKind(m0);
  const req0 = sumOf(m0, 'clusterd_api_requests_total');
  const cpu0 = c.controller.cpuSeconds();
  const ci0 = { all: c.observer.clusterInfoUpdates, meta: c.observer.clusterInfoRefreshOnly };
  const t0 = Date.now();
  // RSS through the window: one reading at its start, every rssSampleMs, and one at its end.
  const rss: { atS: number; mib: number }[] = [];
  const sampleRss = (): void => { rss.push({ atS: Math.round((Date.now() - t0) / 100) / 10, mib: Math.round(c.controller.rssMiB() * 10) / 10 }); };
  sampleRss();
  const sampler = setInterval(sampleRss, o.rssSampleMs ?? 5000);
  let refreshes = 0;
  let dpWrites = 0;
  for (let next = refreshMs / 2; next < durationMs; next += refreshMs) {
    await sleep(Math.max(0, t0 + next - Date.now()));
    o.log(`# steady: device plugin refresh ${refreshes + 1} at ${Math.round((Date.now() - t0) / 1000)} s`);
    dpWrites += (await c.dp.refreshAll()).filter((a) => a.written).length;
    refreshes++;
  }
  await sleep(Math.max(0, t0 + durationMs - Date.now()));
  clearInterval(sampler);
  sampleRss();
  const band = rssBand(rss.map((r) => r.mib));
  const seconds = (Date.now() - t0) / 1000;
  const cpu = c.controller.cpuSeconds() - cpu0;
  const m1 = await c.controller.metrics();
  const writes = diffCounts(writesByKind(m1), before);
  const total = Object.values(writes).reduce((a, v) => a + v, 0);
  const ciAll = c.observer.clusterInfoUpdates - ci0.all;
  const ciMeta = c.observer.clusterInfoRefreshOnly - ci0.meta;

  figures.add('steady', 'steady_state_quiet_wait_s', quietS, 's');
  figures.add('steady', 'steady_state_minutes', seconds / 60, 'min');
  figures.add('steady', 'steady_state_writes', total, 'writes');
  figures.add('steady', 'steady_state_cpu_s', cpu, 's');
  figures.add('steady', 'steady_state_cpu_percent', (cpu / seconds) * 100, '%');
  figures.add('steady', 'steady_state_rss_mib', c.controller.rssMiB(), 'MiB');
  figures.add('steady', 'steady_state_rss_min_mib', band?.minMiB ?? null, 'MiB', 'no RSS reading');
  figures.add('steady', 'steady_state_rss_median_mib', band?.medianMiB ?? null, 'MiB');
  figures.add('steady', 'steady_state_rss_max_mib', band?.maxMiB ?? null, 'MiB');
  figures.add('steady', 'steady_state_rss_band_percent', band?.bandPercent ?? null, '%');
  figures.add('steady', 'steady_state_dp_refreshes', refreshes, 'refreshes');
  figures.add('steady', 'steady_state_cluster_info_data_writes', ciAll - ciMeta, 'writes');
  figures.add('steady', 'steady_state_cluster_info_metadata_only_writes', ciMeta, 'writes');
  figures.add('steady', 'steady_state_api_requests', sumOf(m1, 'clusterd_api_requests_total') - req0, 'requests');
  figures.details.steady = { seconds, writesByKind: writes, dpRefreshes: refreshes, dpWrites, clusterInfoUpdatesSeen: ciAll, metadataOnly: ciMeta, rssSamplesMiB: rss };
}
