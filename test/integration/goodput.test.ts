/**
 * Goodput metrics on the real control plane: a job faulted and rescheduled gets its
 * recovery stages (decided, pods deleted, replacements Running) in clusterd_job_recovery_seconds and
 * the time lost in clusterd_job_lost_seconds_total, the faulty chip shows in clusterd_npu_faults, and
 * the job's series go away with its PodGroup.
 */
import { paths } from '../../runtime/kube-client.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, runningWithNpus, vcJob } from '../../tools/job-peer/world.ts';
import { jobsHarness, runningPods, uidOf, npusOf, report } from '../support/jobs-support.ts';

/** Series of the exposition text (what Prometheus scrapes) for a metric and a job. */
async function series(m: Metrics, metric: string, jobName: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const l of (await m.registry.metrics()).split('\n')) {
    if (!new RegExp(`^${metric}(_bucket|_sum|_count)?\\{`).test(l) || !l.includes(`job_name="${jobName}"`)) continue;
    const i = l.lastIndexOf(' ');
    out.set(l.slice(0, i), Number(l.slice(i + 1)));
  }
  return out;
}
const stageValue = (s: Map<string, number>, suffix: 'sum' | 'count', stage: string): number | undefined =>
  [...s].find(([k]) => k.startsWith(`clusterd_job_recovery_seconds_${suffix}{`) && k.includes(`stage="${stage}"`))?.[1];

describe('goodput metrics', () => {
  const h = jobsHarness();
  const { client } = h;

  it('a rescheduled job has its recovery stages and lost seconds; its series are dropped when the job is deleted', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'gp1' });
    const { metrics } = await h.startManager();
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'llama', replicas: 4, npus: 4, labels: { 'fault-scheduling': 'force' } }));
    const before = await runningPods(client, ns, 'llama', 4);
    expect(await series(metrics, 'clusterd_job_lost_seconds_total', 'llama')).toEqual(new Map()); // no fault yet, no series

    const rank2 = before[2]!;
    const node = rank2.spec!.nodeName!;
    const npu = npusOf(rank2)[0]!;
    const faultAtMs = Date.now(); // before the write: its answer may come seconds later on a loaded machine
    await world.dp.injectChipFault({ node, npu, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => (await metrics.registry.metrics()).includes(`clusterd_npu_faults{node="${node}",npu="${npu}",level="SeparateNPU"} 1`), 10_000);

    const oldUids = new Set(before.map(uidOf));
    await eventually(async () => { const ps = await jobPods(client, ns, 'llama'); return ps.length === 4 && ps.every((p) => !oldUids.has(uidOf(p)) && runningWithNpus(p)); }, 40_000);
    const s = await eventually(async () => { const x = await series(metrics, 'clusterd_job_recovery_seconds', 'llama'); return stageValue(x, 'count', 'pods_running') === 1 ? x : undefined; }, 15_000);
    const seenRunningMs = Date.now();
    const decided = stageValue(s, 'sum', 'decided')!;
    const deleted = stageValue(s, 'sum', 'pods_deleted')!;
    const running = stageValue(s, 'sum', 'pods_running')!;
    expect(stageValue(s, 'count', 'decided')).toBe(1);
    expect(stageValue(s, 'count', 'pods_deleted')).toBe(1);
    expect(stageValue(s, 'count', 'resumed')).toBeUndefined(); // no process-level recovery: the chain stops at Running
    expect(0 <= decided && decided <= deleted && deleted <= running).toBe(true);
    // The fault happened at faultAtMs; the replacements were Running when this test saw them.
    expect(running).toBeLessThanOrEqual((seenRunningMs - faultAtMs) / 1000 + 1);
    expect([...s.keys()].every((k) => k.includes(`job_namespace="${ns}"`))).toBe(true);
    const lost = (await series(metrics, 'clusterd_job_lost_seconds_total', 'llama')).get(`clusterd_job_lost_seconds_total{job_namespace="${ns}",job_name="llama"}`);
    expect(lost).toBeCloseTo(running, 6);
    report(`goodput: fault -> decided ${decided.toFixed(3)} s, -> pods deleted ${deleted.toFixed(3)} s, -> replacements Running ${running.toFixed(3)} s; lost ${lost!.toFixed(3)} s`);

    // The job ends: its PodGroup goes, and so do its series.
    await client.delete(`${paths.vcJobs(ns)}/llama`);
    await client.delete(`${paths.podGroups(ns)}/llama-${job.metadata!.uid!}`);
    await eventually(async () => (await series(metrics, 'clusterd_job_recovery_seconds', 'llama')).size === 0
      && (await series(metrics, 'clusterd_job_lost_seconds_total', 'llama')).size === 0, 15_000);
    expect(metrics.goodput.openEpisodes()).toBe(0);
  }, 150_000);
});
