/**
 * SuperPod IPC force release (docs/rules.md#recover.force-release, #recover.fault-job-info-clear) with the
 * real TaskD client against the shipped controller (`node main.ts`): an A3 job (Nodes annotated
 * `superPodID`, `serverIndex`, `serverType=A3` and `baseDeviceInfos`, device-info with SuperPodID and
 * ServerIndex, pods with the device plugin's allocation annotation carrying `super_pod_id`) takes a
 * chip fault; `cluster-system/fault-job-info` gets the job's entry before globalFault and globalFault
 * follows after the wait for NodeD (`--recovery-timings` forceRelease). NodeD writes nothing back
 * (ClusterD only waits), so nobody plays it here. Then the test plays Volcano: a pod annotated
 * `reschedule-in-place=true` on a node that is no fault node leaves the entry, one on the fault node
 * clears it 10 s later. The job allows recover, so the fault takes the stopTrain / globalFault path; its
 * agents offer dump and exit only, so no recover success clears the entry; nobody replaces pods
 * (`--rescheduling=false`, no Volcano). An A5 job (Nodes `serverType=npu`, docs/rules.md#recover.force-release-a5)
 * gets no entry and no wait; with `ra-block` and its PodGroup not Running it first waits 4 x 3 s
 * (docs/rules.md#recover.rack-wait). What ClusterD does: component/clusterd/pkg/application/recover/controller.go
 * (dealWithForceRelease, dealWithRackScheduling, isA5Job), component/clusterd/pkg/interface/kube/kube_client.go,
 * component/clusterd/pkg/application/jobv2/collector.go (refreshCmWhenPodRescheduleInPlace).
 */
import { readFileSync } from 'node:fs';
import { paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { chips, cleanUp, createJob, fakeNodes, rand, type TestJob } from './recovery-fixtures.ts';
import { haveGo, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('force-release-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

const FJI = paths.configMap('cluster-system', 'fault-job-info');
/** The wait for NodeD, shortened by its flag (ClusterD: 10 s). */
const WAIT_MS = 5_000;
/** SuperDeviceID of chip c on the node of server index i (the device plugin's numbering on A3: one id per chip of the SuperPod). */
const sdid = (i: number, c: number): number => i * 16 + c;

describeGo('SuperPod IPC force release (fault-job-info) with the real TaskD client', () => {
  const client = adminClient();
  const { cleanup, startController, agent, logOf } = realClientHarness(client, 'force-release');

  /** The device plugin's device-info: SuperPodID and ServerIndex (-1 off a SuperPod); `fault` a chip with 80E18402. */
  async function deviceInfo(node: string, superPodId: number, i: number, fault?: string): Promise<void> {
    const now = Date.now();
    const data = encodeDeviceInfoData({
      available: chips(8).filter((c) => c !== fault), unhealthy: fault === undefined ? [] : [fault], superPodId, serverIndex: i,
      faults: fault === undefined ? [] : [makeDeviceFault('CardUnhealthy', fault, [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }])],
      updateTimeS: Math.floor(now / 1000),
    });
    const name = deviceInfoCmName(node);
    const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
    if (existing === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
    else await client.replace(paths.configMap('kube-system', name), { ...existing, data });
  }

  /** Three A3 nodes of SuperPod 0 run the job (one pod each, 2 chips), a fourth is spare. */
  async function setUp(): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `fr-${rand()}`, 4);
    for (const [i, n] of nodes.entries()) {
      const base = Object.fromEntries(chips(8).map((c, k) => [c, { IP: `192.168.${i}.${k}`, SuperDeviceID: sdid(i, k) }]));
      await client.patch(paths.node(n), { metadata: { annotations: { superPodID: '0', serverIndex: String(i), serverType: 'A3', baseDeviceInfos: JSON.stringify(base) } } }, 'merge');
      await deviceInfo(n, 0, i);
    }
    const job = await jobWithSdids('fr', nodes, nodes.slice(0, 3), {});
    return { job, nodes };
  }

  /** A 3-rank process-recovery job on `jobNodes`, each pod's chips annotated with their SuperPod device IDs as the device plugin writes them. */
  async function jobWithSdids(prefix: string, nodes: string[], jobNodes: string[], annotations: Record<string, string>): Promise<TestJob> {
    const job = await createJob(client, {
      ns: await newNamespace(client, prefix), nodes: jobNodes, labels: { framework: 'pytorch', 'process-recover-enable': 'on' },
      annotations: { 'recover-strategy': 'recover,dump,exit', ...annotations },
    });
    cleanup(() => cleanUp(client, job, nodes));
    for (const rank of [0, 1, 2]) {
      const devices = [0, 1].map((k) => ({ device_id: String(k), device_ip: `192.168.${rank}.${k}`, super_device_id: String(sdid(rank, k)) }));
      const alloc = { pod_name: job.podNames[rank], server_id: `10.0.0.${rank + 1}`, host_ip: `10.0.0.${rank + 1}`, super_pod_id: 0, devices };
      await client.patch(paths.pod(job.ns, job.podNames[rank]!), { metadata: { annotations: { 'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify(alloc) } } }, 'merge');
    }
    return job;
  }

  const entryOf = async (job: TestJob): Promise<string | undefined> => (await client.getOrUndefined<ConfigMap>(FJI))?.data?.[job.uid];

  it('entry written before globalFault, globalFault after the wait; reschedule-in-place on the fault node clears it 10 s later', async () => {
    // The ConfigMap exists (an earlier entry made it): the entry is written by an update, so a
    // reschedule-in-place clears it after 10 s (70 s after a create, docs/rules.md#recover.fault-job-info-clear).
    if ((await client.getOrUndefined(FJI)) === undefined) {
      await client.create(paths.configMaps('cluster-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fault-job-info', namespace: 'cluster-system' }, data: {} }).catch(() => undefined);
    }
    const c = await startController('a3-dump', [`--recovery-timings=forceRelease=${WAIT_MS}`, '--rescheduling=false']);
    const { job, nodes } = await setUp();
    const a = agent(c.target, job, ['-strategies=dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');

    // When the entry first shows (polled every 100 ms).
    let writtenAt: number | undefined;
    let polling = true;
    const poll = (async () => {
      while (polling && writtenAt === undefined) {
        if ((await entryOf(job).catch(() => undefined)) !== undefined) writtenAt = Date.now();
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    cleanup(async () => { polling = false; await poll; });

    const t0 = Date.now();
    await deviceInfo(nodes[1]!, 0, 1, 'Ascend910-1');
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 60_000, 'globalFault');
    process.stdout.write(`[real-client] force release timeline (ms from fault): ${timeline(a, t0)}, entry at ${writtenAt === undefined ? '-' : writtenAt - t0}\n`);
    expect(writtenAt).toBeDefined();
    expect(writtenAt!).toBeLessThan(global.t);
    // The entry is seen through a 100 ms poll, so later than written: headroom for a loaded machine.
    expect(global.t - writtenAt!).toBeGreaterThanOrEqual(WAIT_MS - 2_000);

    // Every chip of the fault node (SuperDeviceIDs 16-23), the job's other nodes of SuperPod 0.
    const text = (await entryOf(job))!;
    const faultTimes = Number(/"FaultTimes":(\d+)/.exec(text)?.[1]);
    expect(Math.abs(faultTimes - Math.floor(writtenAt! / 1000))).toBeLessThanOrEqual(2);
    expect(text).toBe(`{"0":{"SdIds":[${chips(8).map((_, k) => `"${sdid(1, k)}"`).join(',')}],"FaultNodes":{"${nodes[1]}":{}},`
      + `"NodeNames":["${nodes[0]}","${nodes[2]}"],"FaultTimes":${faultTimes},"JobId":"${job.uid}"}}`);

    // Volcano places rank 0's pod back on its node (no fault node): the entry stays.
    const mark = (rank: number) => client.patch(paths.pod(job.ns, job.podNames[rank]!), { metadata: { annotations: { 'reschedule-in-place': 'true' } } }, 'merge');
    await mark(0);
    await new Promise((r) => setTimeout(r, 13_000));
    expect(await entryOf(job)).toBe(text);

    // Rank 1's pod on the fault node: cleared 10 s later, not before.
    const marked = Date.now();
    await mark(1);
    await new Promise((r) => setTimeout(r, 7_000));
    expect(await entryOf(job)).toBe(text);
    await eventually(async () => (await entryOf(job)) === undefined, 20_000, 200);
    const clearedMs = Date.now() - marked;
    process.stdout.write(`[real-client] reschedule-in-place clear after ${clearedMs} ms\n`);
    expect((await client.get<ConfigMap>(FJI)).metadata?.name).toBe('fault-job-info');
  }, 240_000);

  /**
   * Three A5 nodes of SuperPod 0 (annotations as the device plugin writes them: `serverType=npu`,
   * `npu-<phyId>` chips, label `accelerator-type`), the job on them with its allocation in SuperPod 0.
   */
  async function setUpA5(annotations: Record<string, string> = {}): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `fr5-${rand()}`, 3);
    for (const [i, n] of nodes.entries()) {
      const base = Object.fromEntries(chips(8).map((_, k) => [`npu-${k}`, { IP: `192.168.${i}.${k}`, SuperDeviceID: sdid(i, k) }]));
      await client.patch(paths.node(n), { metadata: {
        labels: { 'accelerator-type': '950-SuperPod-Atlas-8' },
        annotations: { superPodID: '0', serverIndex: String(i), serverType: 'npu', baseDeviceInfos: JSON.stringify(base) },
      } }, 'merge');
      await deviceInfo(n, 0, i);
    }
    const job = await jobWithSdids('fr5', nodes, nodes, annotations);
    return { job, nodes };
  }

  /** Long enough that an A5 job's globalFault clearly comes without it. */
  const A5_WAIT_MS = 8_000;

  it('an A5 job: no fault-job-info entry and globalFault without the wait for NodeD (docs/rules.md#recover.force-release-a5)', async () => {
    const c = await startController('a5-dump', [`--recovery-timings=forceRelease=${A5_WAIT_MS}`, '--rescheduling=false']);
    const { job, nodes } = await setUpA5();
    const a = agent(c.target, job, ['-strategies=dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const t0 = Date.now();
    await deviceInfo(nodes[1]!, 0, 1, 'Ascend910-1');
    const stop = await a.waitForSignal((s) => s.signalType === 'stopTrain', 60_000, 'stopTrain');
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 60_000, 'globalFault');
    process.stdout.write(`[real-client] A5 timeline (ms from fault): ${timeline(a, t0)}\n`);
    // stopComplete and the 1 s flush only: far below the wait for NodeD.
    expect(global.t - stop.t).toBeLessThan(A5_WAIT_MS - 3_000);
    expect(await entryOf(job)).toBeUndefined();
    expect(readFileSync(logOf('a5-dump'), 'utf8')).toContain('"rule":"recover.force-release-a5"');
  }, 120_000);

  it('an A5 job with ra-block whose PodGroup is not Running: 4 rack waits of 3 s, then globalFault without the wait for NodeD (docs/rules.md#recover.rack-wait)', async () => {
    const c = await startController('a5-rack', [`--recovery-timings=forceRelease=${A5_WAIT_MS},rackWait=3000`, '--rescheduling=false']);
    const { job, nodes } = await setUpA5({ 'ra-block': 'true' });
    const a = agent(c.target, job, ['-strategies=dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    // Rack rescheduling under way: the PodGroup is back in the queue.
    await client.patch(paths.podGroup(job.ns, job.pgName), { status: { phase: 'Inqueue' } }, 'merge');
    const t0 = Date.now();
    await deviceInfo(nodes[1]!, 0, 1, 'Ascend910-1');
    const stop = await a.waitForSignal((s) => s.signalType === 'stopTrain', 60_000, 'stopTrain');
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 60_000, 'globalFault');
    process.stdout.write(`[real-client] A5 rack wait timeline (ms from fault): ${timeline(a, t0)}\n`);
    // 4 x 3 s of rack wait (ClusterD's MaxRackReschedulingRetryTimes + 1), then no 8 s for NodeD.
    expect(global.t - stop.t).toBeGreaterThanOrEqual(12_000);
    expect(global.t - stop.t).toBeLessThan(12_000 + A5_WAIT_MS - 2_000);
    expect(await entryOf(job)).toBeUndefined();
  }, 120_000);

  it('a job off any SuperPod (no SuperPod annotations): nothing written, globalFault after the same wait', async () => {
    const c = await startController('a2-dump', [`--recovery-timings=forceRelease=${WAIT_MS}`, '--rescheduling=false']);
    const nodes = await fakeNodes(client, `fr-${rand()}`, 3);
    const job = await createJob(client, {
      ns: await newNamespace(client, 'fr'), nodes, labels: { framework: 'pytorch', 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'recover,dump,exit' },
    });
    cleanup(() => cleanUp(client, job, nodes));
    const a = agent(c.target, job, ['-strategies=dump,exit']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const t0 = Date.now();
    await deviceInfo(nodes[1]!, -1, -1, 'Ascend910-1');
    const stop = await a.waitForSignal((s) => s.signalType === 'stopTrain', 60_000, 'stopTrain');
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 60_000, 'globalFault');
    process.stdout.write(`[real-client] no SuperPod timeline (ms from fault): ${timeline(a, t0)}\n`);
    expect(global.t - stop.t).toBeGreaterThanOrEqual(WAIT_MS);
    expect(await entryOf(job)).toBeUndefined();
  }, 120_000);
});
