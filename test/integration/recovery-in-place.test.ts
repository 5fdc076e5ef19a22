/**
 * Recover-in-place on the real apiserver (docs/rules.md#filter.recover-in-place, #recover.in-place): a job with
 * `recover-strategy=recover-in-place,recover`, a TaskD-like client, an L2/L3 fault (RestartRequest)
 * on one pod's chip. The recover-in-place filter keeps the fault out of cluster-info while the pod may
 * restart in place; when the FSM's in-place check finds the fault still there and sends the pod away
 * ("must exit"), the fault reaches cluster-info at once, not at the end of the 60 s window.
 * `--rescheduling=false`: we do not delete the pod, so only the must-exit report can make the fault
 * visible (Volcano reschedules the pod in ClusterD's setup).
 */
import type { Manager } from '../../controllers/manager.ts';
import { codesIn, deviceEntry } from '../support/cluster-info-read.ts';
import { RECOVER_IN_PLACE_MAX_AGE_MS } from '../../policy/filters/recover-in-place-filter.ts';
import { paths } from '../../runtime/kube-client.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podUid, rand, startAgent, startManager } from './recovery-fixtures.ts';

const CHECK_MS = 8_000;



describe('recover-in-place: the filter follows the recovery FSM', () => {
  const client = adminClient();
  let manager: Manager;
  let target: string;
  let metrics: Metrics;
  const cleanups: Array<() => void | Promise<void>> = [];

  beforeAll(async () => {
    ({ manager, target, metrics } = await startManager(client, ['--rescheduling=false', `--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,inPlaceCheck=${CHECK_MS}`]));
  }, 60_000);

  afterEach(async () => { for (const c of cleanups.splice(0)) await c(); });
  afterAll(async () => { await manager.stop(); });

  it('an L2/L3 fault still there after the in-place check reaches cluster-info once the pod must exit', async () => {
    const nodes = await fakeNodes(client, `rip-${rand()}`, 2);
    const ns = await newNamespace(client, 'rip');
    // 2 pods, 2 NPUs each: pod 1 on nodes[1] holds Ascend910-0/1 (ranks 2, 3)
    const job = await createJob(client, {
      ns, nodes, labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': 'recover-in-place,recover' },
    });
    await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 2);
    await eventually(() => manager.filters.index.job(job.key)?.view.pods.filter((p) => p.npus.length > 0).length === 2);
    const agent = startAgent(target, job.uid, { strategies: ['recover'], status: () => null });
    cleanups.push(() => agent.stop(), () => cleanUp(client, job, nodes));
    await agent.waitFor(() => (agent.subscribed && manager.recovery.phase(job.uid) === 'INIT' ? true : undefined), 15_000, 'subscription');
    const uid1 = await podUid(client, job, 1);

    // The L2/L3 fault on pod 1's chip, and in the same write a marker on a chip no job holds: once the
    // marker is in cluster-info, the render has seen the fault too.
    const node = nodes[1]!;
    const tf = Date.now();
    const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
    await client.create(paths.configMaps('kube-system'), {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: deviceInfoCmName(node), namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } },
      data: encodeDeviceInfoData({
        available: chips, updateTimeS: Math.floor(tf / 1000),
        faults: [
          makeDeviceFault('CardUnhealthy', 'Ascend910-1', [{ code: '80C98008', level: 'RestartRequest', timeMs: tf }]),
          makeDeviceFault('CardUnhealthy', 'Ascend910-6', [{ code: '80C98008', level: 'RestartRequest', timeMs: tf }]),
        ],
      }),
    });
    await eventually(async () => codesIn(await deviceEntry(client, node), 'Ascend910-6').includes('80C98008'), 15_000);
    const during = await deviceEntry(client, node);
    const fsm = manager.recovery.job(job.uid)!;
    expect(fsm.mustExitReportedMs(1)).toBeUndefined(); // read after the render: the FSM had not decided then either
    expect(codesIn(during, 'Ascend910-1')).toEqual([]);
    expect(manager.recovery.jobView(node).some((r) => r.code === '80C98008' && r.device === 'Ascend910-1')).toBe(true);

    // The FSM: preExit -> stopTrain -> in-place check (8 s) -> fault still there -> pod 1 exits.
    const exitAt = await eventually(() => fsm.mustExitReportedMs(1), 30_000);
    expect(fsm.recovery.inPlace).toEqual({ restartPods: [], exitPods: [1] });
    const seenAt = await eventually(async () => (codesIn(await deviceEntry(client, node), 'Ascend910-1').includes('80C98008') ? Date.now() : undefined), 15_000);
    expect(exitAt).toBeGreaterThanOrEqual(tf + CHECK_MS);
    // in cluster-info before the filter's own 60 s window would have let it through
    expect(seenAt).toBeLessThan(tf + RECOVER_IN_PLACE_MAX_AGE_MS);
    expect(await podUid(client, job, 1)).toBe(uid1); // not deleted by us: the must-exit report made it visible
    const verdicts = (await metrics.filterVerdicts.get()).values;
    expect(verdicts.find((v) => v.labels.filter === 'recover-in-place' && v.labels.verdict === 'report')?.value).toBeGreaterThanOrEqual(1);
    process.stdout.write(`recover-in-place: fault -> must exit ${exitAt - tf} ms, -> cluster-info ${seenAt - tf} ms (window ${RECOVER_IN_PLACE_MAX_AGE_MS} ms)\n`);
  }, 90_000);
});
