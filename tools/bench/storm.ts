/**
 * Scenario 2, fault storms: `stormNodes` nodes get a SeparateNPU chip fault at once (the simulator's
 * writes land within about a second), and separately every node of one simulated switch domain gets
 * an A3 switch fault at level Separate. Measured from the first acknowledged write: the time until
 * every affected job is decided and written (cluster-info lists every node; with the jobs flow also
 * the job's decision, vcjob-fault-npu-cm listing its nodes and its pods deleted), and the controller's
 * writes (api_writes_total from /metrics) per affected job.
 */
import type { BenchCluster } from './cluster.ts';
import { diffCounts, writesByKind } from './controller-process.ts';
import { inject, seen, undo, type Fault } from './faults.ts';
import { jobKey, type JobSpec } from './fixtures.ts';
import type { Figures } from './report.ts';
import { waitQuiet } from './steady.ts';

export interface StormOptions {
  readonly stormNodes: number;
  readonly domainSize: number;
  readonly timeoutMs: number;
}

/**
 * Writes that are one per pod or node by nature (deletions, pod annotations, taints) and the
 * per-decision records (the decision's Event and its durable twin, the DecisionRecord):
 * not counted as job writes. `_all_writes_per_affected_job` counts them.
 */
export const PER_OBJECT_ACTION_KINDS: ReadonlySet<string> = new Set(['pod_force_delete', 'pod_evict', 'pod_annotation', 'event', 'decision_record', 'node_taint']);
/** Before a storm, the controller must have written nothing this long (the tail of its start or of the previous storm stays out). */
const QUIET_BEFORE_MS = 2000;
const SETTLE_MS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runStorm(c: BenchCluster, o: StormOptions, figures: Figures): Promise<void> {
  const n = Math.min(o.stormNodes, c.names.length);
  await stormOnce(c, 'storm', c.names.slice(0, n).map((node) => ({ kind: 'chip', node, chip: 'Ascend910-0' })), o, figures);
  const size = Math.min(o.domainSize, c.names.length);
  const from = n + size <= c.names.length ? n : c.names.length - size;
  figures.note(`storm_switch_domain: switch domain = ${size} nodes (${c.names[from]}..${c.names[from + size - 1]})`);
  await stormOnce(c, 'storm_switch_domain', c.names.slice(from, from + size).map((node) => ({ kind: 'switch', node })), o, figures);
}

async function stormOnce(c: BenchCluster, base: string, faults: readonly Fault[], o: StormOptions, figures: Figures): Promise<void> {
  const obs = c.observer;
  const jobs = [...new Set(faults.map((f) => c.fleet.jobOf(f.node)).filter((j): j is JobSpec => j !== undefined))];
  const uids = new Map(jobs.map((j) => [j.name, c.fleet.podUids(j)]));
  const quietS = await waitQuiet(c, QUIET_BEFORE_MS, 60_000);
  figures.note(`${base}: controller quiet for ${QUIET_BEFORE_MS / 1000} s after ${quietS.toFixed(1)} s of waiting`);
  const before = writesByKind(await c.controller.metrics());
  const ciBefore = obs.clusterInfoUpdates;
  const injected = await Promise.all(faults.map((f) => inject(c, f)));
  const acks = injected.map((i) => i.ackMs);
  const t0 = Math.min(...acks);
  const spread = Math.max(...acks) - t0;
  const sent0 = Math.min(...injected.map((i) => i.sentMs)); // a decision after this belongs to the storm (faults.ts sentMs)

  const nodeWaits = faults.map((f) => obs.waitFor(() => seen(c, f), o.timeoutMs));
  const vcWaits = c.jobsController ? faults.map((f) => obs.waitFor(() => obs.vcjobFaultNode(f.node, true), o.timeoutMs)) : [];
  const jobWaits = c.jobsController ? jobs.flatMap((j) => [
    obs.waitFor(() => obs.decision(jobKey(j), sent0, j.nodes), o.timeoutMs),
    obs.waitFor(() => obs.podsDeleted(j, uids.get(j.name)!), o.timeoutMs),
  ]) : [];
  const ciTimes = await Promise.all(nodeWaits);
  const allTimes = [...ciTimes, ...(await Promise.all(vcWaits)), ...(await Promise.all(jobWaits))];
  const missing = allTimes.filter((t) => Number.isNaN(t)).length;
  const written = missing > 0 ? Number.NaN : Math.max(...allTimes) - t0;
  const ciWritten = ciTimes.some((t) => Number.isNaN(t)) ? Number.NaN : Math.max(...ciTimes) - t0;

  // Trailing writes count too: wait until neither a cluster-info update arrived nor the controller
  // wrote anything for SETTLE_MS (the job journal writes a storm's clears once none came for 2 s).
  const total = async (): Promise<number> => Object.values(writesByKind(await c.controller.metrics())).reduce((a, v) => a + v, 0);
  let last = [obs.clusterInfoUpdates, await total()];
  for (;;) {
    await sleep(SETTLE_MS);
    const now = [obs.clusterInfoUpdates, await total()];
    if (now[0] === last[0] && now[1] === last[1]) break;
    last = now;
  }
  const writes = diffCounts(writesByKind(await c.controller.metrics()), before);
  const jobWrites = Object.entries(writes).filter(([k]) => !PER_OBJECT_ACTION_KINDS.has(k)).reduce((a, [, v]) => a + v, 0);
  const allWrites = Object.values(writes).reduce((a, v) => a + v, 0);
  const affected = Math.max(1, jobs.length);

  figures.add(base, `${base}_nodes`, faults.length, 'nodes');
  figures.add(base, `${base}_affected_jobs`, jobs.length, 'jobs');
  figures.add(base, `${base}_inject_spread_s`, spread / 1000, 's');
  if (missing > 0) figures.note(`${base}: ${missing} outcomes not seen within ${o.timeoutMs} ms`);
  figures.add(base, `${base}_all_jobs_written_s`, written / 1000, 's');
  figures.add(base, `${base}_cluster_info_written_s`, ciWritten / 1000, 's');
  figures.add(base, `${base}_writes_per_affected_job`, jobWrites / affected, 'writes');
  figures.add(base, `${base}_all_writes_per_affected_job`, allWrites / affected, 'writes');
  figures.note(`${base}: writes by kind: ${Object.entries(writes).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}${PER_OBJECT_ACTION_KINDS.has(k) ? ' (not counted)' : ''}`).join(', ')}`);
  figures.details[base] = {
    nodes: faults.map((f) => f.node), affectedJobs: jobs.map((j) => j.name), injectSpreadMs: spread,
    writesByKind: writes, clusterInfoUpdatesSeen: obs.clusterInfoUpdates - ciBefore,
    countedAsJobWrites: `api_writes_total (success) of every kind except ${[...PER_OBJECT_ACTION_KINDS].join(', ')}`,
    writtenMeans: c.jobsController ? 'cluster-info lists every node, and per job: decision log line, vcjob-fault-npu-cm lists its nodes, pods deleted' : 'cluster-info lists every node (no jobs flow in this build)',
  };
  await undo(c, faults);
}
