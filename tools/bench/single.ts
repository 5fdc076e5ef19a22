/**
 * Scenario 1, single-fault latency: `faults` SeparateNPU chip faults, one at a time, each on another
 * node (spread over the jobs), measured from the apiserver's acknowledgement of the simulator's
 * device-info write to (a) the controller's decision, (b) vcjob-fault-npu-cm listing the node and
 * (c) every pod of the job deleted. Faults are undone in rounds: `round` faults one after the other
 * (each waits for the previous one's outcome, so no two measurements overlap), then all of the
 * round's faults are recovered and the jobs' pods come back before the next round. This keeps the
 * device plugin's 1 s per-node write interval out of the run time.
 */
import type { BenchCluster } from './cluster.ts';
import { diffCounts, reconcileStats } from './controller-process.ts';
import { awaitOutcome, inject, undo, type Fault, type Outcome } from './faults.ts';
import type { Figures } from './report.ts';
import { waitQuiet } from './steady.ts';

export interface SingleOptions {
  readonly faults: number;
  readonly npus: number;
  readonly timeoutMs: number;
}

const ROUND = 25;
/** Before the first fault, the controller must have written nothing this long. */
const QUIET_BEFORE_MS = 2000;

/** The i-th fault's node: job i mod J, rank i div J, so consecutive faults hit different jobs. */
function faultPlan(c: BenchCluster, count: number, npus: number): Fault[] {
  const jobs = c.fleet.jobs;
  const out: Fault[] = [];
  for (let i = 0; i < count; i++) {
    let node: string;
    if (jobs.length > 0 && i < jobs.length * jobs[0]!.nodes.length) {
      const job = jobs[i % jobs.length]!;
      node = job.nodes[Math.floor(i / jobs.length)]!;
    } else {
      node = c.names[i % c.names.length]!;
    }
    out.push({ kind: 'chip', node, chip: `Ascend910-${i % npus}` });
  }
  return out;
}

export async function runSingle(c: BenchCluster, o: SingleOptions, figures: Figures): Promise<void> {
  // A lone fault meets a settled controller: the first faults used to land in its start-up burst (the
  // job summary's 125 writes, the first cluster-info renders, cold sockets and JIT), which made the
  // whole p99 of 50 samples (the storm waits the same way).
  const quietS = await waitQuiet(c, QUIET_BEFORE_MS, 60_000);
  figures.note(`single: controller quiet for ${QUIET_BEFORE_MS / 1000} s after ${quietS.toFixed(1)} s of waiting`);
  const plan = faultPlan(c, o.faults, o.npus);
  const round = Math.max(1, Math.min(ROUND, c.fleet.jobs.length || ROUND, c.names.length));
  const samples = { decision: [] as number[], clusterInfo: [] as number[], vcjob: [] as number[], podsDeleted: [] as number[] };
  let missed = 0;
  const perFault: Array<Record<string, string | number | null>> = [];
  const stats0 = reconcileStats(await c.controller.metrics());
  const stages0 = c.observer.stages.length;
  const cpu0 = c.controller.cpuSeconds();
  const t0 = Date.now();
  for (let start = 0; start < plan.length; start += round) {
    const batch = plan.slice(start, start + round);
    const injected: Fault[] = [];
    for (const fault of batch) {
      // Faults of one round must hit distinct nodes and jobs (the plan guarantees it while faults <= nodes).
      if (injected.some((f) => f.node === fault.node)) continue;
      const inj = await inject(c, fault);
      injected.push(fault);
      const out: Outcome = await awaitOutcome(c, inj, o.timeoutMs);
      const d = (t: number | undefined): number => (t === undefined ? Number.NaN : t - inj.ackMs);
      if (Number.isNaN(out.decisionMs)) missed++;
      const rel = (t: number | undefined): number | null => (Number.isFinite(d(t)) ? d(t) : null);
      perFault.push({ node: fault.node, job: inj.job?.name ?? null, ackMs: inj.ackMs, decision: rel(out.decisionMs), clusterInfo: rel(out.clusterInfoMs), vcjob: rel(out.vcjobMs), podsDeleted: rel(out.podsDeletedMs) });
      push(samples.decision, d(out.decisionMs));
      push(samples.clusterInfo, d(out.clusterInfoMs));
      push(samples.vcjob, d(out.vcjobMs));
      push(samples.podsDeleted, d(out.podsDeletedMs));
    }
    await undo(c, injected);
    await new Promise((r) => setTimeout(r, 200)); // let the recovery writes settle before the next round
  }
  const n = perFault.length;
  const passes = diffCounts(reconcileStats(await c.controller.metrics()), stats0);
  const ciPasses = passes.cluster_info_passes ?? 0;
  figures.add('single', 'single_controller_cpu_percent', ((c.controller.cpuSeconds() - cpu0) / ((Date.now() - t0) / 1000)) * 100, '%');
  figures.add('single', 'single_cluster_info_passes_per_fault', n === 0 ? null : ciPasses / n, 'passes');
  figures.add('single', 'single_cluster_info_pass_mean_ms', ciPasses === 0 ? null : ((passes.cluster_info_seconds ?? 0) / ciPasses) * 1000, 'ms');
  figures.add('single', 'single_faults', n, 'faults');
  figures.add('single', 'single_faults_without_decision', missed, 'faults');
  if (missed > 0) figures.note(`single: ${missed} faults had no decision within ${o.timeoutMs} ms (left out of the percentiles; see details.single.perFault)`);
  const decisionSource = c.jobsController ? 'the controller\'s "job decision" log line' : 'the cluster-info-device-* write listing the chip Unhealthy (no jobs controller in this build)';
  figures.note(`single: decision = ${decisionSource}`);
  figures.addDistribution('single', 'single_fault_to_decision', samples.decision, 'ms');
  figures.addDistribution('single', 'single_fault_to_cluster_info', samples.clusterInfo, 'ms');
  const noJobs = c.jobsController ? undefined : 'the controller has no jobs flow (vcjob-fault-npu-cm, pod deletion) in this build';
  figures.addDistribution('single', 'single_fault_to_vcjob_cm', c.jobsController ? samples.vcjob : null, 'ms', noJobs);
  figures.addDistribution('single', 'single_fault_to_pods_deleted', c.jobsController ? samples.podsDeleted : null, 'ms', noJobs);
  // The controller's own breakdown of each decision that deleted pods (load-independent in the sense
  // that it names the stage the time went to): see reconcilers/job-decisions.reconciler.ts Stages.
  const stages = c.observer.stages.slice(stages0);
  for (const [k, name] of [['queued', 'queued'], ['decide', 'decide'], ['prepare', 'prepare'], ['writeAhead', 'write_ahead'], ['deletes', 'deletes']] as const) {
    figures.addDistribution('single', `single_stage_${name}`, stages.flatMap((s) => (typeof s[k] === 'number' ? [s[k]] : [])), 'ms');
  }
  figures.details.single = { faults: n, round, decisionSource, reconciles: passes, perFault };
}

function push(into: number[], v: number): void {
  if (Number.isFinite(v)) into.push(Math.max(0, v));
}
