/**
 * A job restarted over and over for one fault: a public fault (SeparateNPU) on a chip the device
 * plugin still hands out (it does not read public faults; the test's allocator, like a scheduler
 * that keeps choosing that chip, places every generation's new pod on it again), so the job would
 * restart each generation. Flap damping's per-job
 * restart budget restarts it at most once per damping period, and the blast-radius breaker counts
 * the job once for that fault (policy/jobs/breaker-accounting.ts), not once per generation.
 */
import { paths } from '../../runtime/kube-client.ts';
import { BREAKER_CM_NAME, BREAKER_NAMESPACE, CLUSTER_SCOPE, parseBreakerState } from '../../schemas/breaker-state/breaker-state.ts';
import { vcJob } from '../../tools/job-peer/world.ts';
import { encodePublicFault, PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS, type PubFault } from '../../schemas/public-fault/public-fault.ts';
import { eventually } from '../support/cluster.ts';
import { jobsHarness, npusOf, readCm, report, runningPods, sleep, uidOf } from '../support/jobs-support.ts';

describe('jobs: a restart loop on a chip the job is placed on again', () => {
  const h = jobsHarness();
  const { client } = h;
  afterEach(async () => { await client.delete(paths.configMap(BREAKER_NAMESPACE, BREAKER_CM_NAME)).catch(() => undefined); });

  it('one fault, 20 s: restarted once (damped per job), counted once by the breaker', async () => {
    await client.delete(paths.configMap(BREAKER_NAMESPACE, BREAKER_CM_NAME)).catch(() => undefined);
    const world = await h.startWorld({ nodes: 1, prefix: 'loop' });
    const { metrics } = await h.startManager([]);
    await client.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name: 'loop', replicas: 1, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const [pod] = await runningPods(client, world.ns, 'loop', 1);
    const chip = npusOf(pod!)[0]!;
    const node = pod!.spec!.nodeName!;
    const fault = (assertion: PubFault['assertion']): PubFault => ({
      faultId: `loop-${world.ns}`, faultType: 'NPU', faultCode: '220001001', faultTime: Date.now() - 60_000, assertion, faultLocation: null,
      influence: [{ nodeName: node, nodeSN: '', deviceIds: [Number(chip.split('-').at(-1))] }], description: 'restart loop',
    });
    const cm = (assertion: PubFault['assertion']) => ({
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `pf-${world.ns}`, namespace: 'mindx-dl', labels: { ...PUBLIC_FAULT_LABELS } },
      data: { [PUBLIC_FAULT_DATA_KEY]: encodePublicFault({ id: `loop-${assertion}-${Date.now()}`, timestamp: Date.now(), version: '1.0', resource: 'CCAE', faults: [fault(assertion)] }) },
    });
    await client.create(paths.configMaps('mindx-dl'), cm('occur'));
    try {
      await eventually(() => world.peer.statsOf('loop').deletedUids.has(uidOf(pod!)), 20_000);
      // The replacement lands on the same chip (it stays allocatable).
      const next = await eventually(async () => (await runningPods(client, world.ns, 'loop', 1)).find((p) => uidOf(p) !== uidOf(pod!)), 30_000);
      expect(npusOf(next)).toContain(chip);
      await sleep(20_000);
      const deleted = world.peer.statsOf('loop').deletedUids.size;
      const state = parseBreakerState((await readCm(client, BREAKER_NAMESPACE, BREAKER_CM_NAME))?.data?.state);
      if (!state.ok) throw new Error(state.reason);
      const jobs = state.value.scopes[CLUSTER_SCOPE]?.window.jobs ?? [];
      const deferred = (await metrics.flapDamped.get()).values.find((v) => v.labels.rule === 'defer')?.value ?? 0;
      report(`restart loop: ${deleted} pod deletions in 20 s after the first; breaker jobs ${JSON.stringify(jobs)}; deferred ${deferred}`);
      expect(deleted).toBe(1);
      expect(jobs).toHaveLength(1);
      expect(deferred).toBeGreaterThanOrEqual(1);
    } finally {
      // Leave no public fault behind (deleting the ConfigMap clears nothing).
      await client.replace(paths.configMap('mindx-dl', `pf-${world.ns}`), cm('recover')).catch(() => undefined);
      await sleep(6_000);
      await client.delete(paths.configMap('mindx-dl', `pf-${world.ns}`)).catch(() => undefined);
    }
  }, 120_000);
});
