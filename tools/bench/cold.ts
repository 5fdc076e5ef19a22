/**
 * Scenario 5, cold start: the controller process is stopped, one chip fault is injected while it is
 * down, and it is started again on the full cluster. Measured from the spawn: caches synced (/readyz
 * answers 200; also the controller's own `caches synced` log line, and when it started and listened),
 * the first cluster-info write, and the first correct decision (the fault handled:
 * cluster-info lists the chip, and with the jobs flow the job's decision and its pods deleted).
 */
import type { BenchCluster } from './cluster.ts';
import { awaitOutcome, inject, undo, type Fault } from './faults.ts';
import type { Figures } from './report.ts';

export async function runCold(c: BenchCluster, timeoutMs: number, figures: Figures): Promise<void> {
  const job = c.fleet.jobs[c.fleet.jobs.length - 1];
  const node = job?.nodes[job.nodes.length - 1] ?? c.names[c.names.length - 1]!;
  const fault: Fault = { kind: 'chip', node, chip: 'Ascend910-2' };
  await c.controller.stop();
  const inj = await inject(c, fault);
  const updatesBefore = c.observer.clusterInfoUpdates;
  const spawnMs = await c.controller.restart();
  const firstWrite = c.observer.waitFor(() => (c.observer.clusterInfoUpdates > updatesBefore ? Date.now() : undefined), timeoutMs);
  const readyMs = await c.controller.waitReady(timeoutMs);
  const out = await awaitOutcome(c, { ...inj, ackMs: spawnMs }, timeoutMs);
  const firstWriteMs = await firstWrite;
  const logged = (m: string): Promise<number> => c.observer.waitFor(() => c.observer.logLine(m, spawnMs), 2000);
  const [startedLog, httpLog, syncedLog] = [await logged('starting clusterd-ts'), await logged('http server listening'), await logged('caches synced')];
  const s = (t: number | undefined): number | null => (t === undefined || Number.isNaN(t) ? null : Math.max(0, t - spawnMs) / 1000);
  const noJobs = c.jobsController ? undefined : 'the controller has no jobs flow (pod deletion) in this build';
  figures.add('cold', 'cold_start_nodes', c.names.length, 'nodes');
  figures.add('cold', 'cold_start_synced_s', s(readyMs), 's');
  figures.add('cold', 'cold_start_process_up_s', s(startedLog), 's');
  figures.add('cold', 'cold_start_http_up_s', s(httpLog), 's');
  figures.add('cold', 'cold_start_caches_synced_log_s', s(syncedLog), 's');
  figures.add('cold', 'cold_start_first_cluster_info_write_s', s(firstWriteMs), 's');
  figures.add('cold', 'cold_start_first_decision_s', s(out.decisionMs), 's');
  figures.add('cold', 'cold_start_pods_deleted_s', c.jobsController ? s(out.podsDeletedMs) : null, 's', noJobs);
  figures.add('cold', 'cold_start_rss_mib', c.controller.rssMiB(), 'MiB');
  figures.details.cold = { node, spawnMs, readyMs, firstWriteMs, outcome: out };
  await undo(c, [fault]);
}
