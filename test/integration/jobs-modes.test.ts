/**
 * The two modes that must act on nothing: `--rescheduling=false` (ClusterD role beside the real
 * Volcano ascend plugin) and `--dry-run` (decide, log and count only).
 */
import { paths } from '../../runtime/kube-client.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, vcJob } from '../../tools/job-peer/world.ts';
import { jobsHarness, runningPods, uidOf, npusOf, jobState, podGroupEvents, rescheduleReasonOf, sleep, vcjobFaultNpu } from '../support/jobs-support.ts';

describe('jobs: modes that act on nothing', () => {
  const h = jobsHarness();
  const { client } = h;

  it.each([
    ['--rescheduling=false', 'rmode'],
    ['--dry-run', 'dmode'],
  ])('%s: a SeparateNPU fault deletes nothing and writes no job ConfigMap', async (flag, prefix) => {
    const world = await h.startWorld({ nodes: 2, prefix });
    const started = await h.startManager([flag]);
    const { manager } = started;
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'quiet', replicas: 2, npus: 4, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '3' } }));
    const uid = job.metadata!.uid!;
    const before = await runningPods(client, ns, 'quiet', 2);
    const node = before[1]!.spec!.nodeName!;
    await world.dp.injectChipFault({ node, npu: npusOf(before[1]!)[0]!, code: '80E18402', level: 'SeparateNPU' });
    // First the controller must have the fault (else "nothing happened" proves nothing), then room to act.
    if (flag === '--dry-run') {
      await eventually(async () => (await started.metrics.decisions.get()).values.some((v) => v.labels.outcome === 'dry_run' && v.value === 1), 10_000);
    } else {
      // The ClusterD half still aggregates the job's faults for its other consumers.
      await eventually(() => manager.jobs.aggregateNow(`${ns}/quiet-${uid}`)?.ranks.some((r) => r.faultType === 'CardUnhealthy'), 10_000);
    }
    await sleep(2_000);
    expect((await jobPods(client, ns, 'quiet')).map(uidOf)).toEqual(before.map(uidOf));
    expect(world.peer.statsOf('quiet').deletedUids.size).toBe(0);
    expect(await jobState(client, uid)).toBeUndefined();
    expect(await rescheduleReasonOf(client, `${ns}/quiet-${uid}`)).toBeUndefined();
    const npu = await vcjobFaultNpu(client).catch(() => undefined);
    expect(npu?.faultNodes.some((n) => n.NodeName === node) ?? false).toBe(false);
    expect(npu?.remainRetryTimes.has(`${ns}/quiet-${uid}`) ?? false).toBe(false);
    expect(await podGroupEvents(client, ns, `quiet-${uid}`)).toEqual([]);
    if (flag === '--rescheduling=false') {
      // The ClusterD half still aggregates the job's faults for its other consumers.
      expect(manager.jobs.aggregateNow(`${ns}/quiet-${uid}`)?.ranks.map((r) => r.faultType)).toEqual(['CardUnhealthy']);
      expect((await started.metrics.decisions.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
    }
  }, 90_000);
});
