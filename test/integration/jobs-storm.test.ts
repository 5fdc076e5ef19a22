/**
 * A storm on the real control plane: the jobs it hits are decided at once, not in waves behind
 * each other's pod deletions (with 4 decision workers a 13-job storm was decided in waves
 * of 4, and each wave's journal write-aheads took their own commits).
 */
import { paths } from '../../runtime/kube-client.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { ExecAction } from '../../schemas/job-state/job-state.ts';
import { adminClient, eventually } from '../support/cluster.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { jobState, report, startManager } from '../support/jobs-support.ts';

const JOBS = 6;
const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);

describe('jobs: a storm', () => {
  const client = adminClient();
  let world: World | undefined;
  const managers: Manager[] = [];

  afterEach(async () => {
    for (const m of managers.splice(0)) await m.stop();
    await world?.stop();
    world = undefined;
  });

  it(`${JOBS} jobs faulted at once all reach their pod deletions together, each written ahead first`, async () => {
    world = await startWorld(client, { nodes: JOBS, prefix: 'jst' });
    const { ns } = world;
    // Every job's pod deletion waits until all of them have reached theirs: a decision that needs
    // another's worker to free up never gets there (the test times out at the barrier).
    const reached = new Set<string>();
    let open!: () => void;
    const barrier = new Promise<void>((r) => { open = r; });
    const hold = (action: ExecAction, ctx: { jobKey: string; signal: AbortSignal }): Promise<void> => {
      if (action.type !== 'forceDeletePods') return Promise.resolve();
      reached.add(ctx.jobKey);
      if (reached.size === JOBS) open();
      return Promise.race([barrier, new Promise<void>((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }))]);
    };
    const { manager, metrics } = await startManager(client, [], { hooks: { beforeAction: hold } });
    managers.push(manager);
    const names = Array.from({ length: JOBS }, (_, i) => `s${i}`);
    const uids = await Promise.all(names.map(async (name) => (await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world!.nodeSelector, name, replicas: 1, npus: 8, labels: { 'fault-scheduling': 'force' } }))).metadata!.uid!));
    const pods = await Promise.all(names.map((name) => eventually(async () => { const ps = await jobPods(client, ns, name); return ps.length === 1 && ps.every(runningWithNpus) ? ps[0] : undefined; }, 30_000)));
    const writes = async (): Promise<number> => (await metrics.apiWrites.get()).values.filter((v) => v.labels.kind === 'job_state' && v.labels.result === 'success').reduce((n, v) => n + v.value, 0);
    const before = await writes();

    await Promise.all(pods.map((p) => world!.dp.injectChipFault({ node: p!.spec!.nodeName!, npu: npusOf(p!)[0]!, code: '80E18402', level: 'SeparateNPU' })));
    await eventually(() => reached.size === JOBS, 20_000);
    // At the barrier every decision is written ahead (durable before any pod is deleted).
    for (const uid of uids) expect((await jobState(client, uid))?.pending?.actions.map((a) => a.type)).toContain('forceDeletePods');
    const writeAheads = (await writes()) - before;
    report(`storm of ${JOBS} jobs: all at their pod deletions together; write-aheads in ${writeAheads} journal writes`);
    expect(writeAheads).toBeLessThanOrEqual(JOBS);
  }, 120_000);
});
