/**
 * The two modes that must act on nothing: `--rescheduling=false` (ClusterD role beside the real
 * Volcano ascend plugin) and `--dry-run` (decide, log and count only).
 */
import { paths } from '../../runtime/kube-client.ts';
import type { Manager } from '../../controllers/manager.ts';
import { adminClient, eventually } from '../support/cluster.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { jobState, podGroupEvents, rescheduleReasonOf, sleep, startManager, vcjobFaultNpu } from './jobs-support.ts';

const uidOf = (p: PodObj): string => p.metadata?.uid ?? '';
const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);

describe('jobs: modes that act on nothing', () => {
  const client = adminClient();
  let world: World | undefined;
  let manager: Manager | undefined;

  afterEach(async () => {
    await manager?.stop();
    await world?.stop();
    manager = undefined;
    world = undefined;
  });

  it.each([
    ['--rescheduling=false', 'rmode'],
    ['--dry-run', 'dmode'],
  ])('%s: a SeparateNPU fault deletes nothing and writes no job ConfigMap', async (flag, prefix) => {
    world = await startWorld(client, { nodes: 2, prefix });
    const started = await startManager(client, [flag]);
    manager = started.manager;
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'quiet', replicas: 2, npus: 4, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '3' } }));
    const uid = job.metadata!.uid!;
    const before = await eventually(async () => { const ps = await jobPods(client, ns, 'quiet'); return ps.length === 2 && ps.every(runningWithNpus) ? ps : undefined; }, 30_000);
    const node = before[1]!.spec!.nodeName!;
    await world.dp.injectChipFault({ node, npu: npusOf(before[1]!)[0]!, code: '80E18402', level: 'SeparateNPU' });
    // First the controller must have the fault (else "nothing happened" proves nothing), then room to act.
    if (flag === '--dry-run') {
      await eventually(async () => (await started.metrics.decisions.get()).values.some((v) => v.labels.outcome === 'dry_run' && v.value === 1), 10_000);
    } else {
      // The ClusterD half still aggregates the job's faults for its other consumers.
      await eventually(() => manager!.jobs.aggregateNow(`${ns}/quiet-${uid}`)?.ranks.some((r) => r.faultType === 'CardUnhealthy'), 10_000);
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
