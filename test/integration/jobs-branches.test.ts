/**
 * The Volcano half's branches of the job path on the real control plane, with the controller as
 * main.ts builds it (docs/ARCHITECTURE.md, "Job-path branches and where they are proven"):
 * job-level grace turning to force after grace-over-time, the sub-health strategies graceExit and
 * forceExit (reset-config GracefulExit around graceExit), external-grace / external-force, the rank-0
 * rule under pod-rescheduling, and the reset-config write after a pod-level restart.
 *
 * A pod whose template asks for an hour of termination grace stays Terminating under kwok until it is
 * deleted with grace 0 (tools/control-plane/kwok-stages.yaml), as a training process writing its
 * checkpoint would: that is how grace is told from force here.
 */
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { encodeResetConfigData, parseResetConfigData, type TaskResetInfo } from '../../schemas/reset-config/reset-config.ts';
import {
  BASIC_TOR_NODE_CM_NAME, BASIC_TOR_NODE_NAMESPACE, GLOBAL_TOR_INFO_KEY, TOR_INFO_KEY, TOR_SHARE_CM_NAME, TOR_SHARE_NAMESPACE,
} from '../../schemas/tor-share/tor-share.ts';
import { eventually } from '../support/cluster.ts';
import { jobPods, vcJob, type PodObj, type VcJobSpec } from '../../tools/job-peer/world.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { jobsHarness, runningPods, uidOf, npusOf, jobState, podGroupEvents, report, rescheduleReasonAfter, sleep } from '../support/jobs-support.ts';

type Pod = PodObj & { metadata?: PodObj['metadata'] & { deletionTimestamp?: string; deletionGracePeriodSeconds?: number } };

const HOUR_GRACE = 3600;
const BASE_RESET: TaskResetInfo = { RankList: [], UpdateTime: 1_700_000_000, RetryTime: 2, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false };

/** A Volcano Job whose pods ask for `grace` seconds of termination grace. */
function job(ns: string, s: VcJobSpec, grace?: number): KubeObject {
  const j = vcJob(ns, s) as KubeObject & { spec: { tasks: Array<{ template: { spec: Record<string, unknown> } }> } };
  if (grace !== undefined) j.spec.tasks[0]!.template.spec.terminationGracePeriodSeconds = grace;
  return j;
}

/** The reset-config ConfigMap the user's manifest carries, with a restartType a device plugin wrote. */
async function createResetConfig(client: KubeClient, ns: string, name: string, info: TaskResetInfo = BASE_RESET): Promise<void> {
  await client.create(paths.configMaps(ns), {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `reset-config-${name}`, namespace: ns, labels: { reset: 'true' } },
    data: encodeResetConfigData(info, undefined, 'hotReset'),
  });
}

async function resetConfig(client: KubeClient, ns: string, name: string): Promise<{ rv: string; info: TaskResetInfo; data: Record<string, string> }> {
  const cm = await client.get<ConfigMap>(paths.configMap(ns, `reset-config-${name}`));
  const parsed = parseResetConfigData(cm.data); // checkCode verified
  if (!parsed.ok) throw new Error(`reset-config-${name}: ${parsed.reason}`);
  return { rv: cm.metadata!.resourceVersion!, info: parsed.value.info, data: { ...cm.data } };
}

const writes = async (metrics: Metrics, kind: string): Promise<number> =>
  (await metrics.apiWrites.get()).values.filter((v) => v.labels.kind === kind && v.labels.result === 'success').reduce((n, v) => n + v.value, 0);

const podNamed = async (client: KubeClient, ns: string, name: string): Promise<Pod | undefined> => client.getOrUndefined<Pod>(paths.pod(ns, name));

describe('jobs: the Volcano half\'s branches', () => {
  const h = jobsHarness();
  const { client } = h;

  it('fault-scheduling=grace: every pod evicted with its own grace, forced after --grace-over-time-seconds, the job restarted; a chip fault leaves reset-config alone', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jbg' });
    const { metrics } = await h.startManager(['--grace-over-time-seconds=3']);
    const { ns } = world;
    await createResetConfig(client, ns, 'slow');
    const vj = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: world.nodeSelector, name: 'slow', replicas: 2, npus: 8, labels: { 'fault-scheduling': 'grace' } }, HOUR_GRACE));
    const before = await runningPods(client, ns, 'slow', 2);
    const reset0 = await resetConfig(client, ns, 'slow');
    const node = before[1]!.spec!.nodeName!;
    const ack = await world.dp.injectChipFault({ node, npu: npusOf(before[1]!)[2]!, code: '80E18402', level: 'SeparateNPU' });

    // Both evicted with their own hour of grace: Terminating, not gone.
    const terminating = await eventually(async () => {
      const ps = await Promise.all(before.map((p) => podNamed(client, ns, p.metadata!.name!)));
      return ps.every((p) => p !== undefined && uidOf(p) === uidOf(before[ps.indexOf(p)]!) && p.metadata?.deletionTimestamp !== undefined) ? ps as Pod[] : undefined;
    }, 15_000, 100);
    const tEvict = Date.now();
    for (const p of terminating) expect(p.metadata?.deletionGracePeriodSeconds).toBe(HOUR_GRACE);
    expect(await writes(metrics, 'pod_evict')).toBe(2);
    expect(await writes(metrics, 'pod_force_delete')).toBe(0);

    // Gone only by the force, grace-over-time after the decision.
    const oldUids = new Set(before.map(uidOf));
    await eventually(async () => (await jobPods(client, ns, 'slow')).every((p) => !oldUids.has(uidOf(p))), 30_000, 100);
    const gone = Date.now();
    expect(await writes(metrics, 'pod_force_delete')).toBe(2);
    expect(gone - ack.atMs).toBeGreaterThanOrEqual(3_000);
    await runningPods(client, ns, 'slow', 2);
    const state = await eventually(async () => { const s = await jobState(client, vj.metadata!.uid!); return s?.state.active === undefined ? s : undefined; }, 15_000);
    expect(state.state.generation).toBe(1);
    expect((await rescheduleReasonAfter(client, `${ns}/slow-${vj.metadata!.uid!}`, 1)).TotalRescheduleTimes).toBe(1);
    expect(await resetConfig(client, ns, 'slow')).toEqual(reset0);
    const events = await podGroupEvents(client, ns, `slow-${vj.metadata!.uid!}`);
    expect(events.some((e) => e.message?.includes('resched.job-force'))).toBe(true);
    report(`job-level grace -> force: fault write ack -> evicted ${tEvict - ack.atMs} ms, -> forced, all gone by ${gone - ack.atMs} ms (grace-over-time 3 s)`);
  }, 90_000);

  it('subHealthyStrategy=graceExit: reset-config GracefulExit=1 before the grace deletion of every pod, back to 0 once the job has restarted', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jbge' });
    const { metrics } = await h.startManager(['--grace-over-time-seconds=3']);
    const { ns } = world;
    await createResetConfig(client, ns, 'sub');
    const vj = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: world.nodeSelector, name: 'sub', replicas: 2, npus: 8, labels: { 'fault-scheduling': 'grace', subHealthyStrategy: 'graceExit' } }, HOUR_GRACE));
    const before = await runningPods(client, ns, 'sub', 2);
    const node = before[1]!.spec!.nodeName!;
    const npu = npusOf(before[1]!)[0]!;
    await world.dp.injectChipFault({ node, npu, code: '8C2FA001', level: 'SubHealthFault' });

    // While the pods are Terminating (their grace), the agents read GracefulExit=1.
    await eventually(async () => (await Promise.all(before.map((p) => podNamed(client, ns, p.metadata!.name!)))).every((p) => p?.metadata?.deletionTimestamp !== undefined), 15_000, 100);
    const during = await resetConfig(client, ns, 'sub');
    expect(during.info).toEqual({ ...BASE_RESET, GracefulExit: 1 });
    // Written before the deletions (etcd revisions are cluster-wide and increasing).
    const podRvs = (await Promise.all(before.map((p) => podNamed(client, ns, p.metadata!.name!)))).map((p) => Number(p!.metadata!.resourceVersion));
    expect(Number(during.rv)).toBeLessThan(Math.min(...podRvs));
    // The data replaced, as Volcano's plugin writes it: the restartType left by the device plugin goes.
    expect(Object.keys(during.data).sort()).toEqual(['checkCode', 'reset.json']);
    expect(await writes(metrics, 'pod_evict')).toBe(2);
    // The chip is healthy again before the job is placed anew (else the restarted job faults again).
    await world.dp.recoverChipFault({ node, npu, code: '8C2FA001' });

    const oldUids = new Set(before.map(uidOf));
    await eventually(async () => (await jobPods(client, ns, 'sub')).every((p) => !oldUids.has(uidOf(p))), 30_000, 100);
    await runningPods(client, ns, 'sub', 2);
    // A pure sub-health restart done: GracefulExit back to 0 (job.go resetGraceExitCode), nothing else changed.
    await eventually(async () => (await resetConfig(client, ns, 'sub')).info.GracefulExit === 0, 15_000, 100);
    expect((await resetConfig(client, ns, 'sub')).info).toEqual(BASE_RESET);
    expect(Object.keys((await resetConfig(client, ns, 'sub')).data).sort()).toEqual(['checkCode', 'reset.json']);
    const state = await eventually(async () => { const s = await jobState(client, vj.metadata!.uid!); return s?.state.active === undefined ? s : undefined; }, 15_000);
    expect(state.state.generation).toBe(1);
    const reason = await rescheduleReasonAfter(client, `${ns}/sub-${vj.metadata!.uid!}`, 1);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'SubHealthFault', PodName: before[1]!.metadata!.name!, NodeName: node, NodeRankIndex: '1' }]);
    const events = await podGroupEvents(client, ns, `sub-${vj.metadata!.uid!}`);
    expect(events.some((e) => e.message?.includes('decision.sub-health'))).toBe(true);
  }, 90_000);

  it('subHealthyStrategy=forceExit: every pod force-deleted at once (no grace-over-time), reset-config not written', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jbfe' });
    const { metrics } = await h.startManager();
    const { ns } = world;
    await createResetConfig(client, ns, 'subf');
    const vj = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: world.nodeSelector, name: 'subf', replicas: 2, npus: 8, labels: { 'fault-scheduling': 'grace', subHealthyStrategy: 'forceExit' } }, HOUR_GRACE));
    const before = await runningPods(client, ns, 'subf', 2);
    const reset0 = await resetConfig(client, ns, 'subf');
    const node = before[0]!.spec!.nodeName!;
    const npu = npusOf(before[0]!)[0]!;
    await world.dp.injectChipFault({ node, npu, code: '8C2FA001', level: 'SubHealthFault' });
    const oldUids = new Set(before.map(uidOf));
    // Gone although their grace is an hour and grace-over-time 15 min: forced.
    await eventually(async () => (await jobPods(client, ns, 'subf')).every((p) => !oldUids.has(uidOf(p))), 20_000, 100);
    await world.dp.recoverChipFault({ node, npu, code: '8C2FA001' });
    expect(await writes(metrics, 'pod_force_delete')).toBe(2);
    expect(await writes(metrics, 'pod_evict')).toBe(0);
    await runningPods(client, ns, 'subf', 2);
    await eventually(async () => (await jobState(client, vj.metadata!.uid!))?.state.active === undefined, 15_000);
    expect(await resetConfig(client, ns, 'subf')).toEqual(reset0);
  }, 90_000);

  it.each(['external-grace', 'external-force'])('fault-scheduling=%s: the fault pod is annotated huawei.com/pod-status=Unhealthy-CardUnhealthy, nothing is deleted', async (fs) => {
    const world = await h.startWorld({ nodes: 2, prefix: 'jbx' });
    const { metrics } = await h.startManager();
    const { ns } = world;
    const vj = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: world.nodeSelector, name: 'ext', replicas: 2, npus: 8, labels: { 'fault-scheduling': fs } }));
    const before = await runningPods(client, ns, 'ext', 2);
    const node = before[1]!.spec!.nodeName!;
    await world.dp.injectChipFault({ node, npu: npusOf(before[1]!)[5]!, code: '80E18402', level: 'SeparateNPU' });
    const status = async (p: PodObj): Promise<string | undefined> => (await podNamed(client, ns, p.metadata!.name!))?.metadata?.annotations?.['huawei.com/pod-status'];
    await eventually(async () => (await status(before[1]!)) === 'Unhealthy-CardUnhealthy', 15_000, 100);
    await sleep(2_000);
    expect(await status(before[0]!)).toBeUndefined();
    expect((await jobPods(client, ns, 'ext')).map(uidOf)).toEqual(before.map(uidOf));
    expect(world.peer.statsOf('ext').deletedUids.size).toBe(0);
    expect(await writes(metrics, 'pod_evict') + await writes(metrics, 'pod_force_delete')).toBe(0);
    expect((await jobState(client, vj.metadata!.uid!))?.state.active?.scope).toBe('external');
    const events = await podGroupEvents(client, ns, `ext-${vj.metadata!.uid!}`);
    expect(events.some((e) => e.message?.includes('decision.external'))).toBe(true);
  }, 60_000);

  it('pod-rescheduling=on: a fault on rank 0 restarts the whole job (rank-0 rule); once it is placed again reset-config RetryTime is 0, not + 1', async () => {
    const world = await h.startWorld({ nodes: 4, prefix: 'jbr0' });
    await h.startManager();
    const { ns } = world;
    await createResetConfig(client, ns, 'lead', { ...BASE_RESET, RankList: [{ RankId: 3, LogicId: 3, Status: 'fault', Policy: '', InitialPolicy: '', ErrorCode: null, ErrorCodeHex: '' }] });
    const vj = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: world.nodeSelector, name: 'lead', replicas: 3, npus: 8, labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' } }));
    const before = await runningPods(client, ns, 'lead', 3);
    const node = before[0]!.spec!.nodeName!;
    await world.dp.injectChipFault({ node, npu: npusOf(before[0]!)[1]!, code: '80E18402', level: 'SeparateNPU' });
    const oldUids = new Set(before.map(uidOf));
    await eventually(async () => (await jobPods(client, ns, 'lead')).every((p) => !oldUids.has(uidOf(p))), 20_000, 100);
    expect(world.peer.statsOf('lead').deletedUids.size).toBe(3);
    const after = await runningPods(client, ns, 'lead', 3);
    expect(after.some((p) => p.spec?.nodeName === node)).toBe(false);
    const reason = await rescheduleReasonAfter(client, `${ns}/lead-${vj.metadata!.uid!}`, 1);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.map((t) => t.NodeRankIndex)).toEqual(['0']);
    // Placed as a whole: Volcano's plugin writes RankList [], RetryTime 0 and restartType podReschedule (plugin/job.go updateResetCm).
    const reset = await eventually(async () => { const r = await resetConfig(client, ns, 'lead'); return r.info.RetryTime === 0 ? r : undefined; }, 15_000, 100);
    expect(reset.info).toMatchObject({ RankList: [], RetryTime: 0, GracefulExit: 0 });
    expect(reset.data.restartType).toBe('podReschedule');
    const state = await eventually(async () => { const s = await jobState(client, vj.metadata!.uid!); return s?.state.active === undefined ? s : undefined; }, 15_000);
    expect(state.state.generation).toBe(1);
    const events = await podGroupEvents(client, ns, `lead-${vj.metadata!.uid!}`);
    expect(events.some((e) => e.message?.includes('decision.master-rank'))).toBe(true);
  }, 90_000);

  it('pod-rescheduling=on: after the fault pod alone is placed again, reset-config RankList [], RetryTime + 1, restartType podReschedule', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jbpl' });
    await h.startManager();
    const { ns } = world;
    await createResetConfig(client, ns, 'pl', { ...BASE_RESET, RankList: [{ RankId: 9, LogicId: 1, Status: 'fault', Policy: '', InitialPolicy: '', ErrorCode: null, ErrorCodeHex: '' }] });
    const vj = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: world.nodeSelector, name: 'pl', replicas: 2, npus: 8, labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' } }));
    const before = await runningPods(client, ns, 'pl', 2);
    const t0 = Math.floor(Date.now() / 1000);
    await world.dp.injectChipFault({ node: before[1]!.spec!.nodeName!, npu: npusOf(before[1]!)[4]!, code: '80E18402', level: 'SeparateNPU' });
    const after = await eventually(async () => {
      const ps = await runningPods(client, ns, 'pl', 2, 1_000).catch(() => undefined);
      return ps !== undefined && uidOf(ps[1]!) !== uidOf(before[1]!) ? ps : undefined;
    }, 30_000, 100);
    expect(uidOf(after[0]!)).toBe(uidOf(before[0]!));
    const reset = await eventually(async () => { const r = await resetConfig(client, ns, 'pl'); return r.info.RetryTime === 3 ? r : undefined; }, 15_000, 100);
    expect(reset.info).toMatchObject({ RankList: [], RetryTime: 3, GracefulExit: 0 });
    expect(reset.info.UpdateTime).toBeGreaterThanOrEqual(t0);
    expect(reset.data.restartType).toBe('podReschedule');
    await eventually(async () => (await jobState(client, vj.metadata!.uid!))?.state.active === undefined, 15_000);
    await sleep(1_000);
    expect((await resetConfig(client, ns, 'pl')).rv).toBe(reset.rv);
  }, 90_000);

  it('tor-share-cm: a TOR shared by a large-model job is shared and unhealthy; once the other job leaves, exclusive and healthy; a TOR without jobs free', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'jbtor' });
    const { ns, nodes } = world;
    // The servers' addresses, as a kubelet reports them (kwok's nodes here have none, so no other node has these).
    const ips = nodes.map((_, i) => `10.8.0.${10 + i}`);
    for (const [i, n] of nodes.entries()) await client.patch(paths.nodeStatus(n), { status: { addresses: [{ type: 'InternalIP', address: ips[i] }] } });
    for (const [i, n] of nodes.entries()) await client.patch(paths.node(n), { metadata: { labels: { 'jb-slot': String(i) } } });
    // Two TORs: the first holds n0 and n1, the second n2 (the user's parameter-plane topology).
    const torInfo = { version: '1.0', tor_count: 2, server_list: [
      { tor_id: 0, tor_ip: '10.9.0.1', server: [{ server_ip: ips[0], npu_count: 8, slice_id: 0 }, { server_ip: ips[1], npu_count: 8, slice_id: 1 }] },
      { tor_id: 1, tor_ip: '10.9.0.2', server: [{ server_ip: ips[2], npu_count: 8, slice_id: 0 }] },
    ] };
    await client.delete(paths.configMap(BASIC_TOR_NODE_NAMESPACE, BASIC_TOR_NODE_CM_NAME)).catch(() => undefined);
    await client.create(paths.configMaps(BASIC_TOR_NODE_NAMESPACE), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: BASIC_TOR_NODE_CM_NAME, namespace: BASIC_TOR_NODE_NAMESPACE }, data: { [TOR_INFO_KEY]: JSON.stringify(torInfo) } });
    try {
      await h.startManager();
      const on = (slot: number): Record<string, string> => ({ ...world.nodeSelector, 'jb-slot': String(slot) });
      await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: on(0), name: 'big', replicas: 1, npus: 8, labels: { 'tor-affinity': 'large-model-schema' } }));
      const small = await client.create(paths.vcJobs(ns), job(ns, { nodeSelector: on(1), name: 'small', replicas: 1, npus: 8, labels: { 'tor-affinity': 'normal-schema' } }));
      await runningPods(client, ns, 'big', 1);
      await runningPods(client, ns, 'small', 1);
      const torShare = async (): Promise<unknown> => {
        const cm = await client.getOrUndefined<ConfigMap>(paths.configMap(TOR_SHARE_NAMESPACE, TOR_SHARE_CM_NAME));
        const text = cm?.data?.[GLOBAL_TOR_INFO_KEY];
        return text === undefined ? undefined : JSON.parse(text);
      };
      const free = { IsHealthy: 0, IsSharedTor: 0, nodes: [{ NodeIp: ips[2], NodeName: nodes[2], JobName: [] }] };
      const shared = {
        '10.9.0.1': { IsHealthy: 1, IsSharedTor: 1, nodes: [{ NodeIp: ips[0], NodeName: nodes[0], JobName: ['big'] }, { NodeIp: ips[1], NodeName: nodes[1], JobName: ['small'] }] },
        '10.9.0.2': free,
      };
      await eventually(async () => JSON.stringify(await torShare()) === JSON.stringify(shared), 15_000, 100).catch(async (e: unknown) => { throw new Error(`${String(e)}: ${JSON.stringify(await torShare())}`); });

      // The normal job leaves: the TOR is the large-model job's alone.
      await client.delete(`${paths.vcJobs(ns)}/${small.metadata!.name!}`);
      await client.delete(paths.pod(ns, 'small-worker-0'), { gracePeriodSeconds: 0 }).catch(() => undefined);
      const exclusive = {
        '10.9.0.1': { IsHealthy: 0, IsSharedTor: 2, nodes: [{ NodeIp: ips[0], NodeName: nodes[0], JobName: ['big'] }, { NodeIp: ips[1], NodeName: nodes[1], JobName: [] }] },
        '10.9.0.2': free,
      };
      await eventually(async () => JSON.stringify(await torShare()) === JSON.stringify(exclusive), 10_000, 100).catch(async (e: unknown) => { throw new Error(`${String(e)}: ${JSON.stringify(await torShare())}`); });
    } finally {
      await client.delete(paths.configMap(BASIC_TOR_NODE_NAMESPACE, BASIC_TOR_NODE_CM_NAME)).catch(() => undefined);
    }
  }, 90_000);
});
