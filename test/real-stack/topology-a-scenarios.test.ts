/**
 * Topology A with the chart's defaults: vc-scheduler with Huawei's ascend plugin reschedules, from the
 * cluster-info ConfigMaps clusterd-ts writes, and clusterd-ts keeps ClusterD's role (it detects the
 * plugin, controllers/rescheduling-role.ts, and deletes nothing). Every pod here is vc-controller-
 * manager's, placed by vc-scheduler; faults are real chip faults in the device-info (FaultInjector).
 * One control plane; the scenarios run concurrently, each on its own node group (nodeSelector).
 *
 * What the plugin does, read from component/ascend-for-volcano/internal/rescheduling:
 * - `fault-scheduling: grace` (job.go GraceDeleteJob): the fault pod is evicted (Volcano's evictor:
 *   Ready=False reason Evict, then a delete with the pod's own grace); if the job has not restarted
 *   `grace-over-time` seconds after the fault (reschedule.go isDelayingJobTimeout), the pod is deleted
 *   with grace 0 (RestartNeedForceDeleteJobs). It writes `reset-config-<job>` (GracefulExit) only for
 *   sub-health faults (deleteJobWithSubHealthyLabels, resetGraceExitCode), not for a chip fault.
 * - `pod-rescheduling: on` (job.go isNormalTaskCanBeDelete): only the fault pod goes; while its
 *   replacement stays unplaced, every session counts (reschedule.go singlePodReschedulingUpgrade) and
 *   at util.PendingTimes (12) the whole job is deleted (job level).
 * - `fault-retry-times` (job.go isFaultJobCanRestarted, reschedule.go doRestartJob): a Failed pod on a
 *   healthy chip restarts the job while `remain-retry-times` lasts, one less each time; then nothing.
 * - `process-recover-enable: on`: only the fault pod goes, whatever the job's other labels.
 * - `subHealthyStrategy: graceExit` (job.go deleteJobWithSubHealthyLabels): reset-config GracefulExit=1
 *   (reschedule.go updateResetConfigMapWithGraceExit replaces the data map), a grace delete, and
 *   GracefulExit=0 once the job runs again (job.go resetGraceExitCode).
 * - `fault-scheduling: external-*` (job.go addPodStatusAnnotationForFaultTask): the fault pod annotated, nothing deleted.
 * - `pod-rescheduling: on`: a fault on rank 0 restarts the whole job (job.go isMasterFault); whenever
 *   such a job has every pod placed, reset-config gets RankList [] and RetryTime + 1 after a pod-level
 *   placement, 0 after a whole one (plugin/job.go updateResetConfigMap, updateResetCm).
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { encodeResetConfigData, parseResetConfigData, type TaskResetInfo } from '../../schemas/reset-config/reset-config.ts';
import { jobSummaryCmName } from '../../schemas/job-summary/job-summary.ts';
import { vcJobId } from '../../schemas/vcjob-fault-npu/vcjob-fault-npu.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { readCm, report, rescheduleReasonOf, startManager, vcjobFaultNpu } from '../support/jobs-support.ts';
import { TEST_TIMINGS } from '../integration/recovery-fixtures.ts';
import { buildTaskdClient, GoTaskdClient, timeline } from '../integration/recovery-real-client.ts';
import type { RecoveryState } from '../../policy/recovery/recovery-types.ts';

const P = 'huawei.com/Ascend910';
const REAL = 'huawei.com/AscendReal';
const RANK = 'hccl/rankIndex';
/** Short enough for a test, inside the plugin's [2, 3600] (plugin/factory.go). */
const GRACE_OVER_TIME_S = 6;

type Pod = KubeObject & {
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string }> };
  metadata?: KubeObject['metadata'] & { deletionTimestamp?: string; deletionGracePeriodSeconds?: number };
};

function baseDeviceInfos(npus = 8): string {
  const m: Record<string, { IP: string; SuperDeviceID: number }> = {};
  for (let i = 0; i < npus; i++) m[`Ascend910-${i}`] = { IP: `192.168.100.${100 + i}`, SuperDeviceID: 0 };
  return JSON.stringify(m);
}

interface JobOpts {
  replicas: number;
  group: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  /** Huawei's policy for job-level fault scheduling; pod-level and process-level jobs have none (a deleted pod is re-created alone). */
  restartOnEvict?: boolean;
  terminationGracePeriodSeconds?: number;
}

/** A Volcano Job as a user writes it with the webhook off; 8 chips a pod, on the nodes labelled vc-test=<group>. */
function vcjob(ns: string, name: string, o: JobOpts): KubeObject {
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', ...o.labels }, ...(o.annotations ? { annotations: o.annotations } : {}) },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: o.replicas, maxRetry: 3,
      ...(o.restartOnEvict === true ? { policies: [{ event: 'PodEvicted', action: 'RestartJob' }] } : {}),
      tasks: [{
        name: 'worker', replicas: o.replicas, minAvailable: o.replicas, maxRetry: 3,
        template: {
          metadata: { labels: { app: 'mindspore', 'ring-controller.atlas': 'ascend-910' } },
          spec: {
            restartPolicy: 'Never', nodeSelector: { 'vc-test': o.group },
            ...(o.terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds: o.terminationGracePeriodSeconds } : {}),
            containers: [{ name: 'train', image: 'train:latest', resources: { requests: { [P]: '8' }, limits: { [P]: '8' } } }],
          },
        },
      }],
    },
  };
}

const EMPTY_RESET: TaskResetInfo = { RankList: [], UpdateTime: 0, RetryTime: 0, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false };

describe('topology A: Volcano with the ascend plugin reschedules, clusterd-ts in ClusterD\'s role', () => {
  let cp: ControlPlane | undefined;
  let client: HttpKubeClient;
  let inj: FaultInjector;
  let manager: Manager | undefined;
  let metrics: Metrics;
  let grpcTarget = '';
  let allocator: NpuAllocator | undefined;
  let taskdBin = '';
  const ns = 'topo-a';
  const groups: Record<string, string[]> = {
    grace: ['ta-grace-0', 'ta-grace-1'],
    pod: ['ta-pod-0', 'ta-pod-1', 'ta-pod-2'],
    esc: ['ta-esc-0', 'ta-esc-1'],
    retry: ['ta-retry-0', 'ta-retry-1'],
    proc: ['ta-proc-0', 'ta-proc-1', 'ta-proc-2'],
    subh: ['ta-subh-0', 'ta-subh-1'],
    ext: ['ta-ext-0', 'ta-ext-1'],
    lead: ['ta-lead-0', 'ta-lead-1', 'ta-lead-2'],
  };
  const jobs: Record<string, KubeObject> = {};
  const started = Date.now();

  const podsOf = async (job: string): Promise<Pod[]> =>
    (await client.list<Pod>(paths.pods(ns), { labelSelector: `volcano.sh/job-name=${job}` })).items;
  const live = (p: Pod): boolean => p.metadata?.deletionTimestamp === undefined;
  const ready = (p: Pod): boolean => live(p) && p.status?.phase === 'Running' && p.spec?.nodeName !== undefined && p.metadata?.annotations?.[REAL] !== undefined;
  /** The job's `count` pods once all are Running with chips, by rank. */
  const runningPods = (job: string, count: number, timeoutMs = 120_000): Promise<Pod[]> => eventually(async () => {
    const ps = (await podsOf(job)).filter(live);
    return ps.length === count && ps.every(ready) ? ps.sort((a, b) => Number(a.metadata!.annotations![RANK]) - Number(b.metadata!.annotations![RANK])) : undefined;
  }, timeoutMs, 250);
  const deletes = async (): Promise<number> => (await metrics.apiRequests.get()).values.filter((v) => v.labels.method === 'DELETE').reduce((n, v) => n + v.value, 0);
  const schedulerLog = (): string => readFileSync(join(cp!.dir, 'vc-scheduler.log'), 'utf8');
  const resetConfig = async (job: string): Promise<{ rv: string; info: TaskResetInfo }> => {
    const cm = await client.get<ConfigMap>(paths.configMap(ns, `reset-config-${job}`));
    const parsed = parseResetConfigData(cm.data);
    if (!parsed.ok) throw new Error(`reset-config-${job}: ${parsed.reason}`);
    return { rv: cm.metadata!.resourceVersion!, info: parsed.value.info };
  };
  /** The plugin's reset-config write after a pod-rescheduling job is placed (plugin/job.go updateResetConfigMap) sets restartType. */
  const restartTypeOf = async (job: string): Promise<string | undefined> => (await client.get<ConfigMap>(paths.configMap(ns, `reset-config-${job}`))).data?.restartType;
  const jobStatus = async (job: string): Promise<string | undefined> => (await readCm(client, ns, jobSummaryCmName(job, 0)))?.data?.job_status;

  async function createJob(name: string, o: JobOpts): Promise<void> {
    // The reset-config ConfigMap the user's manifest carries (MindCluster's job templates mount it).
    await client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `reset-config-${name}`, namespace: ns, labels: { reset: 'true' } }, data: encodeResetConfigData(EMPTY_RESET) });
    jobs[name] = await client.create<KubeObject>(paths.vcJobs(ns), vcjob(ns, name, o));
  }

  beforeAll(async () => {
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    taskdBin = buildTaskdClient();
    cp = await ControlPlane.start({
      binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-topology-a-${process.pid}`), kwok: true,
      volcano: { dir, pluginArguments: { 'grace-over-time': String(GRACE_OVER_TIME_S) } },
    });
    client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    await ensureNamespace(client, ns);
    const all = Object.entries(groups).flatMap(([g, names]) => names.map((name) => ({ name, labels: { 'vc-test': g } })));
    await createFakeNodes(client, all);
    inj = new FaultInjector(client);
    for (const { name } of all) {
      await client.patch(paths.node(name), { metadata: { annotations: { baseDeviceInfos: baseDeviceInfos() } }, spec: { taints: null } });
      await inj.addNodes([{ name }]);
    }
    allocator = new NpuAllocator(client, { namespace: ns });
    await allocator.start();
    // The chart's defaults (the plugin is detected), plus gRPC for the TaskD client and the recovery
    // timings the other recovery tests use.
    ({ manager, metrics } = await startManager(client, ['--grpc-port=0', '--grpc-host=127.0.0.1', '--grpc-caller-check=off', ...TEST_TIMINGS]));
    const server = await manager.grpc.ready();
    if (server === undefined) throw new Error('gRPC server did not start');
    grpcTarget = `127.0.0.1:${server.port}`;
    for (const { name } of all) await eventually(async () => (await deviceEntry(client, name))?.DeviceList[P]?.split(',').length === 8, 60_000);
    expect((await metrics.reschedulingYielded.get()).values[0]?.value).toBe(1);

    await createJob('grace', { replicas: 1, group: 'grace', labels: { 'fault-scheduling': 'grace' }, restartOnEvict: true, terminationGracePeriodSeconds: 3600 });
    await createJob('podlvl', { replicas: 2, group: 'pod', labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' } });
    await createJob('escal', { replicas: 2, group: 'esc', labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' } });
    await createJob('retry', { replicas: 2, group: 'retry', labels: { 'fault-scheduling': 'force', 'fault-retry-times': '1' } });
    await createJob('proc', {
      replicas: 2, group: 'proc', labels: { 'fault-scheduling': 'force', 'process-recover-enable': 'on', framework: 'pytorch' },
      annotations: { 'recover-strategy': 'retry,recover,dump,exit' },
    });
    await createJob('subh', { replicas: 1, group: 'subh', labels: { 'fault-scheduling': 'grace', subHealthyStrategy: 'graceExit' }, restartOnEvict: true, terminationGracePeriodSeconds: 3600 });
    await createJob('ext', { replicas: 2, group: 'ext', labels: { 'fault-scheduling': 'external-force' } });
    await createJob('lead', { replicas: 2, group: 'lead', labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' } });
    report(`topology A: control plane, Volcano, nodes and jobs up in ${Date.now() - started} ms`);
  }, 1_800_000);

  afterAll(async () => {
    await manager?.stop();
    allocator?.stop();
    await inj?.close();
    await cp?.stop();
    report(`topology A: file wall time ${Date.now() - started} ms`);
  }, 60_000);

  it.concurrent('grace: the plugin evicts the fault pod, force-deletes it after grace-over-time, Volcano re-creates it away from the fault; reset-config untouched', async () => {
    const [first] = await runningPods('grace', 1);
    const faultNode = first!.spec!.nodeName!;
    const resetBefore = await resetConfig('grace');
    const t0 = Date.now();
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU' });

    // Evicted with grace: Volcano's evictor marks it and deletes it with the pod's own grace (an hour).
    const evicted = await eventually(async () => {
      const p = await client.getOrUndefined<Pod>(paths.pod(ns, first!.metadata!.name!));
      return p !== undefined && p.metadata?.uid === first!.metadata!.uid && p.metadata?.deletionTimestamp !== undefined ? p : undefined;
    }, 60_000, 100);
    // When Volcano evicted it (the stamp is the delete's time plus the grace; seen late on a busy machine, so not Date.now()).
    const tEvict = Date.parse(evicted.metadata!.deletionTimestamp!) - 3600_000;
    expect(evicted.metadata?.deletionGracePeriodSeconds).toBe(3600);
    expect(evicted.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Evict' }));

    // Gone only when the plugin's grace-over-time ran out (nothing else deletes with grace 0 here).
    await eventually(async () => (await client.getOrUndefined<Pod>(paths.pod(ns, first!.metadata!.name!)))?.metadata?.uid !== first!.metadata!.uid, 60_000, 100);
    const tGone = Date.now();
    // The plugin counts from the session that saw the fault, the one that evicted (whole seconds).
    expect(tGone - tEvict).toBeGreaterThanOrEqual(GRACE_OVER_TIME_S * 1000);
    const [second] = await runningPods('grace', 1);
    const tRun = Date.now();
    expect(second!.metadata?.uid).not.toBe(first!.metadata?.uid);
    expect(second!.spec?.nodeName).toBe(groups.grace!.find((n) => n !== faultNode));
    expect(schedulerLog()).toMatch(/grace delete job \S*grace\S* is timeout,force delete/);
    // A chip fault is no sub-health fault: the plugin leaves GracefulExit (and the rest) as the user wrote it.
    expect(await resetConfig('grace')).toEqual(resetBefore);
    expect(await deletes()).toBe(0);
    report(`grace: fault -> evicted ${tEvict - t0} ms, -> force-deleted ${tGone - t0} ms (grace-over-time ${GRACE_OVER_TIME_S} s), -> replacement Running ${tRun - t0} ms`);
  }, 300_000);

  it.concurrent('sub-health graceExit: the plugin writes reset-config GracefulExit=1 (replacing its data: restartType goes), evicts, forces after grace-over-time, and writes GracefulExit=0 once the job runs again', async () => {
    const [first] = await runningPods('subh', 1);
    const faultNode = first!.spec!.nodeName!;
    // A restartType an earlier restart left (the device plugin's hot reset).
    await client.patch(paths.configMap(ns, 'reset-config-subh'), { data: { restartType: 'hotReset' } });
    const t0 = Date.now();
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-3', code: '8C2FA001', level: 'SubHealthFault' });
    const during = await eventually(async () => { const r = await resetConfig('subh'); return r.info.GracefulExit === 1 ? r : undefined; }, 60_000, 100);
    const tWrite = Date.now();
    expect(during.info).toEqual({ ...EMPTY_RESET, GracefulExit: 1 });
    const cm = await client.get<ConfigMap>(paths.configMap(ns, 'reset-config-subh'));
    expect(Object.keys(cm.data ?? {}).sort()).toEqual(['checkCode', 'reset.json']);
    // The grace deletion: evicted with the pod's own grace, then forced after grace-over-time.
    await eventually(async () => (await client.getOrUndefined<Pod>(paths.pod(ns, first!.metadata!.name!)))?.metadata?.deletionTimestamp !== undefined, 60_000, 100);
    await eventually(async () => (await client.getOrUndefined<Pod>(paths.pod(ns, first!.metadata!.name!)))?.metadata?.uid !== first!.metadata!.uid, 60_000, 100);
    const tGone = Date.now();
    await inj.recover({ kind: 'npu', node: faultNode, npu: 'Ascend910-3', code: '8C2FA001' });
    const [second] = await runningPods('subh', 1);
    expect(second!.metadata?.uid).not.toBe(first!.metadata?.uid);
    // A pure sub-health restart done: back to 0 (job.go resetGraceExitCode).
    await eventually(async () => (await resetConfig('subh')).info.GracefulExit === 0, 60_000, 250);
    expect((await resetConfig('subh')).info).toEqual(EMPTY_RESET);
    expect(await deletes()).toBe(0);
    report(`sub-health graceExit: fault -> GracefulExit=1 ${tWrite - t0} ms, -> pod gone ${tGone - t0} ms, -> GracefulExit=0 ${Date.now() - t0} ms`);
  }, 300_000);

  it.concurrent('external-force: the plugin annotates the fault pod huawei.com/pod-status=Unhealthy-CardUnhealthy and deletes nothing', async () => {
    const [r0, r1] = await runningPods('ext', 2);
    const faultNode = r1!.spec!.nodeName!;
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-5', code: '80E18402', level: 'SeparateNPU' });
    const status = async (p: Pod): Promise<string | undefined> => (await client.get<Pod>(paths.pod(ns, p.metadata!.name!))).metadata?.annotations?.['huawei.com/pod-status'];
    await eventually(async () => (await status(r1!)) === 'Unhealthy-CardUnhealthy', 60_000, 250);
    await new Promise((r) => setTimeout(r, 4_000)); // several sessions
    expect(await status(r0!)).toBeUndefined();
    const now = await podsOf('ext');
    expect(now.map((p) => p.metadata?.uid).sort()).toEqual([r0!.metadata?.uid, r1!.metadata?.uid].sort());
    expect(now.every(live)).toBe(true);
    expect(await deletes()).toBe(0);
  }, 300_000);

  it.concurrent('pod-rescheduling with the fault on rank 0: the plugin restarts the whole job (isMasterFault) and, once it is placed, sets reset-config RetryTime to 0', async () => {
    const [r0, r1] = await runningPods('lead', 2);
    const faultNode = r0!.spec!.nodeName!;
    await eventually(async () => (await restartTypeOf('lead')) === 'podReschedule', 60_000, 250);
    const cur = (await resetConfig('lead')).info;
    await client.patch(paths.configMap(ns, 'reset-config-lead'), { data: encodeResetConfigData({ ...cur, RetryTime: 3 }) });
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-0', code: '80E18402', level: 'SeparateNPU' });
    const after = await eventually(async () => {
      const ps = await runningPods('lead', 2, 1_000).catch(() => undefined);
      return ps?.every((p) => p.metadata?.uid !== r0!.metadata?.uid && p.metadata?.uid !== r1!.metadata?.uid) ? ps : undefined;
    }, 120_000, 250);
    expect(after.some((p) => p.spec?.nodeName === faultNode)).toBe(false);
    await eventually(async () => (await resetConfig('lead')).info.RetryTime === 0, 30_000, 250);
    expect((await resetConfig('lead')).info).toMatchObject({ RankList: [], RetryTime: 0 });
    const uid = jobs.lead!.metadata!.uid!;
    const reason = await eventually(() => rescheduleReasonOf(client, vcJobId(ns, 'lead', uid)), 30_000, 500);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.map((t) => t.NodeRankIndex)).toEqual(['0']);
    expect(await deletes()).toBe(0);
  }, 300_000);

  it.concurrent('pod-rescheduling: the plugin deletes only the fault pod, Volcano re-creates it alone, the plugin places it on the spare node', async () => {
    const [r0, r1] = await runningPods('podlvl', 2);
    const faultNode = r1!.spec!.nodeName!;
    const spare = groups.pod!.find((n) => n !== faultNode && n !== r0!.spec!.nodeName)!;
    // Once placed as a whole, the plugin writes reset-config (RankList [], RetryTime 0, restartType podReschedule).
    await eventually(async () => (await restartTypeOf('podlvl')) === 'podReschedule', 60_000, 250);
    expect((await resetConfig('podlvl')).info).toMatchObject({ RankList: [], RetryTime: 0, GracefulExit: 0 });
    const t0 = Date.now();
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-6', code: '80E18402', level: 'SeparateNPU' });
    const after = await eventually(async () => {
      const ps = await runningPods('podlvl', 2, 1_000).catch(() => undefined);
      return ps?.some((p) => p.metadata?.name === r1!.metadata!.name && p.metadata?.uid !== r1!.metadata?.uid) ? ps : undefined;
    }, 120_000, 250);
    const tRun = Date.now();
    const byName = (name: string): Pod => after.find((p) => p.metadata?.name === name)!;
    expect(byName(r0!.metadata!.name!).metadata?.uid).toBe(r0!.metadata?.uid); // rank 0 untouched
    expect(byName(r1!.metadata!.name!).spec?.nodeName).toBe(spare);
    // The pod-level restart placed: RetryTime + 1, RankList empty (plugin/job.go updateResetCm).
    await eventually(async () => (await resetConfig('podlvl')).info.RetryTime === 1, 30_000, 250);
    expect((await resetConfig('podlvl')).info).toMatchObject({ RankList: [], RetryTime: 1, GracefulExit: 0 });
    expect(await restartTypeOf('podlvl')).toBe('podReschedule');
    const uid = jobs.podlvl!.metadata!.uid!;
    const reason = await eventually(() => rescheduleReasonOf(client, vcJobId(ns, 'podlvl', uid)), 30_000, 500);
    // The rank is the plugin's (hccl/rankIndex), not the pod's name index.
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'CardUnhealthy', PodName: r1!.metadata!.name, NodeName: faultNode, NodeRankIndex: '1' }]);
    expect(await deletes()).toBe(0);
    report(`pod-rescheduling: fault -> replacement Running ${tRun - t0} ms`);
  }, 300_000);

  it.concurrent('pod-rescheduling escalates: with no node for the replacement, after 12 sessions the plugin deletes the whole job; once the chip recovers it runs again', async () => {
    const [r0, r1] = await runningPods('escal', 2);
    const faultNode = r1!.spec!.nodeName!;
    // After the plugin's first write (RetryTime 0 on a whole placement), as if pod-level restarts had counted 3.
    await eventually(async () => (await restartTypeOf('escal')) === 'podReschedule', 60_000, 250);
    const cur = (await resetConfig('escal')).info;
    await client.patch(paths.configMap(ns, 'reset-config-escal'), { data: encodeResetConfigData({ ...cur, RetryTime: 3 }) });
    const t0 = Date.now();
    await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-2', code: '80E18402', level: 'SeparateNPU' });
    const podName = (p: Pod): string => p.metadata!.name!;
    const uidOf = async (name: string): Promise<string | undefined> => (await client.getOrUndefined<Pod>(paths.pod(ns, name)))?.metadata?.uid;
    await eventually(async () => (await uidOf(podName(r1!))) !== r1!.metadata?.uid, 60_000, 100);
    const tPod = Date.now();
    // The replacement finds no node (the other node is taken, the fault node has 7 healthy chips); rank 0 stays for now.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(await uidOf(podName(r0!))).toBe(r0!.metadata?.uid);
    const pending = (await podsOf('escal')).find((p) => p.metadata?.name === podName(r1!));
    expect(pending?.spec?.nodeName).toBeUndefined();
    // Job level: rank 0 goes too.
    await eventually(async () => (await uidOf(podName(r0!))) !== r0!.metadata?.uid, 90_000, 100);
    const tJob = Date.now();
    expect(tJob - tPod).toBeGreaterThanOrEqual(10_000); // 12 one-second sessions, less the rounding
    const uid = jobs.escal!.metadata!.uid!;
    const reason = await eventually(async () => { const r = await rescheduleReasonOf(client, vcJobId(ns, 'escal', uid)); return (r?.TotalRescheduleTimes ?? 0) >= 2 ? r : undefined; }, 30_000, 500);
    expect(reason.TotalRescheduleTimes).toBe(2);

    await inj.recover({ kind: 'npu', node: faultNode, npu: 'Ascend910-2', code: '80E18402' });
    const tRecover = Date.now();
    const after = await runningPods('escal', 2);
    const tRun = Date.now();
    expect(after.map((p) => p.spec?.nodeName).sort()).toEqual([...groups.esc!].sort());
    // Placed again as a whole (job level): the plugin sets RetryTime back to 0, not + 1 (plugin/job.go updateResetCm).
    await eventually(async () => (await resetConfig('escal')).info.RetryTime === 0, 30_000, 250);
    expect((await resetConfig('escal')).info).toMatchObject({ RankList: [], RetryTime: 0 });
    expect(await deletes()).toBe(0);
    report(`pod-rescheduling escalation: fault -> pod deleted ${tPod - t0} ms, -> job deleted ${tJob - t0} ms (${tJob - tPod} ms pending), chip recovered -> Running ${tRun - tRecover} ms`);
  }, 300_000);

  it.concurrent('fault-retry-times 1: a Failed pod on a healthy chip restarts the job once; the second failure is left alone; clusterd-ts\'s job summary and cluster-info follow', async () => {
    const [r0, r1] = await runningPods('retry', 2);
    const node = r1!.spec!.nodeName!;
    const uid = jobs.retry!.metadata!.uid!;
    await eventually(async () => (await jobStatus('retry')) === 'running', 30_000, 250);
    const fail = async (p: Pod): Promise<void> => {
      const now = new Date().toISOString();
      await client.patch(paths.podStatus(ns, p.metadata!.name!), {
        status: {
          phase: 'Failed',
          containerStatuses: [{ name: 'train', image: 'train:latest', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 1, reason: 'Error', startedAt: now, finishedAt: now } } }],
        },
      });
    };
    // A chip fault the device plugin does not isolate, and the training process exits with it.
    await inj.inject({ kind: 'npu', node, npu: 'Ascend910-4', code: '80E01801', level: 'NotHandleFault' });
    await eventually(async () => (await deviceEntry(client, node))?.DeviceList[`${P}-Fault`]?.includes('80E01801'), 30_000, 250);
    expect((await deviceEntry(client, node))?.DeviceList[`${P}-Unhealthy`] ?? '').toBe('');
    const t0 = Date.now();
    await fail(r1!);
    // Job level (no pod-rescheduling label): both pods go and come back.
    const restarted = await eventually(async () => {
      const ps = await runningPods('retry', 2, 1_000).catch(() => undefined);
      return ps?.every((p) => p.metadata?.uid !== r0!.metadata?.uid && p.metadata?.uid !== r1!.metadata?.uid) ? ps : undefined;
    }, 120_000, 250);
    const tRun = Date.now();
    const reason = await eventually(() => rescheduleReasonOf(client, vcJobId(ns, 'retry', uid)), 30_000, 500);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'pod-failed', PodName: r1!.metadata!.name, NodeName: node, NodeRankIndex: '1' }]);
    await eventually(async () => (await vcjobFaultNpu(client)).remainRetryTimes.get(vcJobId(ns, 'retry', uid))?.Times === 0, 30_000, 500);
    await eventually(async () => (await jobStatus('retry')) === 'running', 30_000, 250);

    // Retries spent: the second failure stays.
    const again = restarted.find((p) => p.metadata?.annotations?.[RANK] === '1')!;
    await fail(again);
    await eventually(async () => (await jobStatus('retry')) === 'failed', 30_000, 250);
    await new Promise((r) => setTimeout(r, 6_000)); // several sessions
    const still = await client.get<Pod>(paths.pod(ns, again.metadata!.name!));
    expect(still.metadata?.uid).toBe(again.metadata?.uid);
    expect(still.status?.phase).toBe('Failed');
    expect((await rescheduleReasonOf(client, vcJobId(ns, 'retry', uid)))?.TotalRescheduleTimes).toBe(1);
    expect(await jobStatus('retry')).toBe('failed');
    expect((await deviceEntry(client, node))?.DeviceList[`${P}-Unhealthy`] ?? '').toBe('');
    expect(await deletes()).toBe(0);
    report(`fault-retry-times: pod Failed -> job restarted and Running ${tRun - t0} ms`);
  }, 300_000);

  it.concurrent('process-level recovery with the real TaskD client: clusterd-ts signals, the plugin deletes the fault pod once, Volcano re-creates it, recover-success', async () => {
    const [r0, r1] = await runningPods('proc', 2);
    const uid = jobs.proc!.metadata!.uid!;
    const faultNode = r1!.spec!.nodeName!;
    const spare = groups.proc!.find((n) => n !== faultNode && n !== r0!.spec!.nodeName)!;
    const a = new GoTaskdClient(taskdBin, grpcTarget, uid);
    try {
      await a.waitFor((e) => e.event === 'subscribe', 60_000, 'subscription');
      const fsm = (): RecoveryState => manager!.recovery.job(uid)!.recovery;
      const seqBefore = fsm().uuidSeq;
      // The chip's global rank: pod rank 1 x 8 chips + Ascend910-1's index in the pod's AscendReal.
      const chipRank = 8 + r1!.metadata!.annotations![REAL]!.split(',').sort((x, y) => Number(x.split('-')[1]) - Number(y.split('-')[1])).indexOf('Ascend910-1');
      const t0 = Date.now();
      await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-1', code: '80E18402', level: 'SeparateNPU' });
      // clusterd-ts takes the fault and waits preExitWait (ClusterD's sleepForStateChange: 10 s, 1 s
      // here) for the recovery to start before sending preExitProcess to the fault pod. The plugin's
      // next session deletes that pod meanwhile or not: a pod no longer the original gets no
      // preExitProcess (ClusterD sendPreExitSignal), and then its processes are gone with it and
      // MindIO reports them (ReportProcessFault), which starts the recovery.
      await eventually(async () => {
        const s = fsm();
        return s.faults.some((f) => f.rankId === chipRank) && s.preExitRanks.length === 0 && !s.timers.some((x) => x.id === 'preExit');
      }, 60_000, 20);
      const pluginFirst = fsm().uuidSeq === seqBefore;
      if (pluginFirst) a.reportProcessFault(Array.from({ length: 8 }, (_, k) => ({ rankId: String(8 + k), faultType: '1' })));
      const pgName = `proc-${uid}`;
      const status = async (): Promise<string | undefined> =>
        (await client.get<KubeObject>(paths.podGroup(ns, pgName))).metadata?.annotations?.ProcessRecoverStatus;
      await eventually(async () => (await status()) === 'recover-success', 120_000, 250);
      const tDone = Date.now();
      // The scripted MindIO answers at once, so recover-success can come before the plugin's session deleted the pod.
      const after = await eventually(async () => {
        const ps = await runningPods('proc', 2, 1_000).catch(() => undefined);
        return ps?.some((p) => p.metadata?.name === r1!.metadata!.name && p.metadata?.uid !== r1!.metadata?.uid) ? ps : undefined;
      }, 120_000, 250);
      const tRun = Date.now();
      const byName = (name: string): Pod => after.find((p) => p.metadata?.name === name)!;
      const recovery = ['stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]'];
      if (pluginFirst) {
        expect(a.summary.slice(0, 3)).toEqual(recovery);
      } else {
        expect(a.summary.slice(0, 4)).toEqual(['preExitProcess[pre exit process]', ...recovery]);
        expect(a.signals[0]!.nodeRankIds).toEqual(['1']);
      }
      // The chip fault is the job's in either order: attributed through the job's last complete
      // placement even when the plugin deleted the pod first (ClusterD's PreServerList).
      expect(a.signals.find((x) => x.signalType === 'globalFault')?.faultRanks).toContainEqual({ rankId: String(chipRank), faultType: '1' });
      expect(byName(r0!.metadata!.name!).metadata?.uid).toBe(r0!.metadata?.uid);
      expect(byName(r1!.metadata!.name!).spec?.nodeName).toBe(spare);
      // Deleted once, by the plugin: its own log line for that pod (task <name>[<uid>] force terminated).
      const lines = schedulerLog().split('\n').filter((l) => l.includes(`${r1!.metadata!.name}[${r1!.metadata!.uid}] force terminated`));
      expect(lines).toHaveLength(1);
      expect((await client.get<KubeObject>(paths.podGroup(ns, pgName))).metadata?.labels?.['process-recover-enable']).toBe('on');
      expect(await deletes()).toBe(0);
      report(`process-level recovery (${pluginFirst ? 'plugin deleted the fault pod first: no preExitProcess, MindIO reported' : 'preExitProcess first'}): signals ${timeline(a, t0)}; recover-success ${tDone - t0} ms; replacement Running ${tRun - t0} ms`);
    } catch (e) {
      // What the client saw and the plugin's deletion lines show which came first (tools/volcano/README.md).
      const plugin = schedulerLog().split('\n').filter((l) => l.includes('proc-worker') && l.includes('force terminated'));
      process.stdout.write(`process-level: client saw ${JSON.stringify(a.events.filter((ev) => ev.event !== 'keepalive'))}\npods ${JSON.stringify((await podsOf('proc')).map((p) => [p.metadata?.name, p.metadata?.uid, p.spec?.nodeName, p.status?.phase, p.metadata?.deletionTimestamp]))}\nplugin deletions ${JSON.stringify(plugin)}\n`);
      throw e;
    } finally {
      await a.stop();
    }
  }, 300_000);
});
