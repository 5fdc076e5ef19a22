/**
 * Topology B scenarios on the real Volcano (vc-controller-manager + vc-scheduler-stock, no ascend
 * plugin; NPUs allocated by the device plugin, played by the allocator since kwok has no kubelet):
 * clusterd-ts holds the rescheduling role and every pod is Volcano's. Job-level grace with the force
 * after grace-over-time, pod-level rescheduling and its escalation to job level, the
 * `fault-retry-times` budget, and process-level recovery with the real TaskD client (tools/taskd-client)
 * while Volcano re-creates the pod.
 *
 * One control plane; the four jobs run at once, each on its own node group (`vc-test=<group>`), so
 * the file costs about its slowest scenario. Waits are made short by flags only.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { createFakeNodes, fakeNode, KWOK_ANNOTATION } from '../../tools/simulator/nodes.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import { encodeResetConfigData, parseResetConfigData } from '../../schemas/reset-config/reset-config.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import type { Manager } from '../../controllers/manager.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { rescheduleReasonAfter, rescheduleReasonOf, sleep, startManager, vcjobFaultNpu } from '../support/jobs-support.ts';
import { buildTaskdClient, GoTaskdClient, haveGo, timeline } from '../integration/recovery-real-client.ts';

const P = 'huawei.com/Ascend910';
const ns = 'tb-team';
const GRACE_OVER_TIME_S = 3;
const PENDING_ESCALATION_S = 5;
/** The pods' own termination grace period: what a grace deletion carries. */
const POD_GRACE_S = 30;

type Pod = KubeObject & {
  spec?: { nodeName?: string };
  status?: { phase?: string };
  metadata?: KubeObject['metadata'] & { deletionGracePeriodSeconds?: number };
};
type VcJob = KubeObject & { status?: { state?: { phase?: string }; retryCount?: number } };

const rankOf = (p: Pod): number => Number(p.metadata?.annotations?.['hccl/rankIndex']);
const live = (ps: readonly Pod[]): Pod[] => ps.filter((p) => p.metadata?.deletionTimestamp === undefined);
const placed = (p: Pod): boolean => p.status?.phase === 'Running' && p.metadata?.annotations?.['huawei.com/AscendReal'] !== undefined;
const log = (line: string): void => { process.stdout.write(`[topology-b] ${line}\n`); };

/**
 * A Volcano Job as a user writes it (webhook off: queue, scheduler, minAvailable spelled out), one
 * task per rank so each pod template carries its `hccl/rankIndex` (the ascend plugin writes it in
 * topology A; here nobody else does). `restartOnEvict`: Huawei's documented policy for job-level
 * rescheduling. Left out for pod- and process-level jobs: vc-controller-manager turns every pod
 * deletion into a PodEvicted event, so the policy would widen a pod-level deletion into a job restart.
 */
function vcjob(name: string, o: { group: string; ranks: number; labels: Record<string, string>; annotations?: Record<string, string>; restartOnEvict: boolean }): KubeObject {
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', ...o.labels }, annotations: o.annotations ?? {} },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: o.ranks, maxRetry: 3,
      ...(o.restartOnEvict ? { policies: [{ event: 'PodEvicted', action: 'RestartJob' }] } : {}),
      tasks: Array.from({ length: o.ranks }, (_, r) => ({
        name: `worker${r}`, replicas: 1, minAvailable: 1, maxRetry: 3,
        template: {
          metadata: { labels: { app: 'mindspore', 'ring-controller.atlas': 'ascend-910' }, annotations: { 'hccl/rankIndex': String(r) } },
          spec: {
            restartPolicy: 'Never', terminationGracePeriodSeconds: POD_GRACE_S, nodeSelector: { 'vc-test': o.group },
            containers: [{ name: 'train', image: 'train:latest', resources: { requests: { [P]: '8' }, limits: { [P]: '8' } } }],
          },
        },
      })),
    },
  };
}

describe('topology B scenarios: the real Volcano without the ascend plugin, clusterd-ts rescheduling', () => {
  let cp: ControlPlane | undefined;
  let client: HttpKubeClient;
  let inj: FaultInjector;
  let manager: Manager | undefined;
  let allocator: NpuAllocator | undefined;
  let grpcTarget = '';
  let taskdBin = '';
  const agents: GoTaskdClient[] = [];
  const groups = { grace: 4, pod: 3, retry: 2, proc: 3 } as const;
  const nodesOf = (g: keyof typeof groups): string[] => Array.from({ length: groups[g] }, (_, i) => `tb-${g}-${i}`);
  const runs = new Map<string, Promise<void>>();
  const fileStart = Date.now();
  const scenario = async (k: string): Promise<void> => {
    const run = runs.get(k);
    if (run === undefined) throw new Error(`scenario ${k} never started`);
    await run;
  };

  const podsOf = async (job: string): Promise<Pod[]> =>
    (await client.list<Pod>(paths.pods(ns), { labelSelector: `volcano.sh/job-name=${job}` })).items;
  /** The job's `ranks` pods once all are live, Running and given chips, by rank. */
  const running = (job: string, ranks: number, pred: (ps: Pod[]) => boolean = () => true, timeoutMs = 120_000): Promise<Pod[]> =>
    eventually(async () => {
      const ps = live(await podsOf(job)).sort((a, b) => rankOf(a) - rankOf(b));
      return ps.length === ranks && ps.every(placed) && pred(ps) ? ps : undefined;
    }, timeoutMs, 250);
  const vcJobOf = (name: string): Promise<VcJob> => client.get<VcJob>(paths.vcJob(ns, name));
  const pgAnnotation = async (name: string, uid: string, key: string): Promise<string | undefined> =>
    (await client.get<KubeObject>(paths.podGroup(ns, `${name}-${uid}`))).metadata?.annotations?.[key];
  /** The reset-config ConfigMap a user creates beside a job whose pods mount it. */
  const createResetConfig = (job: string): Promise<unknown> => client.create(paths.configMaps(ns), {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `reset-config-${job}`, namespace: ns, labels: { reset: 'true' } },
    data: encodeResetConfigData({ RankList: [], UpdateTime: 0, RetryTime: 0, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false }),
  });
  const retryTimeOf = async (job: string): Promise<number | undefined> => {
    const p = parseResetConfigData((await client.get<ConfigMap>(paths.configMap(ns, `reset-config-${job}`))).data);
    return p.ok ? p.value.info.RetryTime : undefined;
  };
  const chipFault = (node: string, npu = 'Ascend910-3') => inj.inject({ kind: 'npu', node, npu, code: '80E18402', level: 'SeparateNPU' });

  /**
   * 1. Job-level grace: clusterd-ts deletes both pods with their own grace period. One node's
   * kubelet hangs (the node is not kwok's: it stays Ready and this test plays its kubelet until the
   * fault), so its pod stays Terminating and Volcano's RestartJob cannot go on until clusterd-ts
   * forces that pod after grace-over-time. The operator cordons the hung node; the restarted pods go
   * to the group's two spares, cordoned until the first placement so that it uses the hung node.
   */
  async function graceScenario(): Promise<void> {
    const name = 'tb-grace';
    const [hungNode, faultNode, ...spares] = nodesOf('grace') as [string, string, string, string];
    const cordon = (n: string, on: boolean) => client.patch(paths.node(n), { spec: { unschedulable: on } });
    await Promise.all(spares.map((n) => cordon(n, true)));
    await client.create(paths.vcJobs(ns), vcjob(name, { group: 'grace', ranks: 2, labels: { 'fault-scheduling': 'grace' }, restartOnEvict: true }));
    // The hung node's kubelet, while it still works: its pod starts.
    const onHung = await eventually(async () => (await podsOf(name)).find((p) => p.spec?.nodeName === hungNode), 120_000, 250);
    await client.patch(paths.podStatus(ns, onHung.metadata!.name!), { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
    const first = await running(name, 2);
    const hung = first.find((p) => p.spec?.nodeName === hungNode)!;
    expect(first.map((p) => p.spec?.nodeName).sort()).toEqual([hungNode, faultNode].sort());
    await cordon(hungNode, true);
    await Promise.all(spares.map((n) => cordon(n, false)));
    const t0 = Date.now();
    await chipFault(faultNode);
    // When the grace deletion was asked: its deletionTimestamp less its grace period (whole seconds,
    // so never later than the request).
    let terminating: { atMs: number; grace?: number } | undefined;
    await eventually(async () => {
      const p = await client.getOrUndefined<Pod>(paths.pod(ns, hung.metadata!.name!));
      if (p === undefined || p.metadata?.uid !== hung.metadata!.uid) return true;
      if (p.metadata?.deletionTimestamp !== undefined) terminating ??= { atMs: Date.parse(p.metadata.deletionTimestamp) - (p.metadata.deletionGracePeriodSeconds ?? 0) * 1000, grace: p.metadata.deletionGracePeriodSeconds };
      return undefined;
    }, 60_000, 100);
    const goneMs = Date.now();
    // Deleted with its own grace period first, then gone only by the force, grace-over-time later.
    expect(terminating?.grace).toBe(POD_GRACE_S);
    expect(goneMs - terminating!.atMs).toBeGreaterThanOrEqual((GRACE_OVER_TIME_S - 1) * 1000);
    const second = await running(name, 2, (ps) => ps.every((p) => !first.some((f) => f.metadata?.uid === p.metadata?.uid)));
    const ms = Date.now() - t0;
    // Volcano restarted the job (RestartJob on PodEvicted) on the spares.
    expect((await vcJobOf(name)).status?.retryCount).toBeGreaterThanOrEqual(1);
    expect(second.map((p) => p.spec?.nodeName).sort()).toEqual([...spares].sort());
    const uid = (await vcJobOf(name)).metadata!.uid!;
    const reason = await rescheduleReasonAfter(client, `${ns}/${name}-${uid}`, 1, 30_000);
    expect(reason.TotalRescheduleTimes).toBe(1);
    log(`grace: fault -> stuck pod forced ${goneMs - t0} ms (>= ${goneMs - terminating!.atMs} ms after its grace deletion), -> replacements Running ${ms} ms`);
  }

  /**
   * 2. Pod level: only the fault pod goes and vc-controller-manager re-creates it, the other keeps
   * its UID. Then the replacement's node fails too: the re-created pod fits nowhere in the group,
   * and after --pending-escalation-seconds clusterd-ts restarts the whole job.
   */
  async function podScenario(): Promise<void> {
    const name = 'tb-pod';
    await createResetConfig(name);
    await client.create(paths.vcJobs(ns), vcjob(name, { group: 'pod', ranks: 2, labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' }, restartOnEvict: false }));
    const [keep, fault] = await running(name, 2) as [Pod, Pod];
    const uid = (await vcJobOf(name)).metadata!.uid!;
    const t0 = Date.now();
    await chipFault(fault.spec!.nodeName!);
    const [kept, moved] = await running(name, 2, (ps) => ps[1]!.metadata?.uid !== fault.metadata?.uid) as [Pod, Pod];
    const podMs = Date.now() - t0;
    expect(kept.metadata?.uid).toBe(keep.metadata?.uid);
    expect(moved.metadata?.name).toBe(fault.metadata?.name); // Volcano's re-creation of the same task pod
    expect(moved.spec?.nodeName).not.toBe(fault.spec?.nodeName);
    expect((await vcJobOf(name)).status?.retryCount ?? 0).toBe(0);
    expect((await rescheduleReasonAfter(client, `${ns}/${name}-${uid}`, 1, 30_000)).TotalRescheduleTimes).toBe(1);
    await eventually(async () => (await retryTimeOf(name)) === 1, 30_000, 250);

    // Escalation: the last healthy node of the group fails; the re-created pod stays Pending.
    const t1 = Date.now();
    await chipFault(moved.spec!.nodeName!);
    await eventually(async () => {
      const ps = await podsOf(name);
      return ps.some((p) => p.metadata?.uid === moved.metadata?.uid) ? undefined : true;
    }, 30_000, 250);
    const pendingFrom = Date.now();
    const escalated = await eventually(async () => {
      const ps = await podsOf(name);
      return ps.some((p) => p.metadata?.uid === keep.metadata?.uid) ? undefined : Date.now();
    }, 60_000, 250);
    // The healthy rank 0 went only by the job-level restart, no earlier than the pending timeout.
    expect(escalated - pendingFrom).toBeGreaterThanOrEqual((PENDING_ESCALATION_S - 1) * 1000);
    await rescheduleReasonAfter(client, `${ns}/${name}-${uid}`, 2, 30_000);
    // A chip comes back: Volcano places the restarted job (gang of 2) on the two nodes that fit.
    await inj.recover({ kind: 'npu', node: fault.spec!.nodeName!, npu: 'Ascend910-3' });
    const after = await running(name, 2, (ps) => ps.every((p) => p.metadata?.uid !== keep.metadata?.uid && p.metadata?.uid !== moved.metadata?.uid));
    expect(after.map((p) => p.spec?.nodeName)).not.toContain(moved.spec?.nodeName);
    // Placed again as a whole: RetryTime back to 0, as the plugin writes it (topology A, escalation).
    await eventually(async () => (await retryTimeOf(name)) === 0, 30_000, 250);
    log(`pod level: fault -> replacement Running ${podMs} ms; second fault -> job-level escalation ${escalated - t1} ms (pending ${escalated - pendingFrom} ms), -> Running after the chip's recovery ${Date.now() - t1} ms`);
  }

  /**
   * 3. fault-retry-times=1: a failed pod (phase Failed through the status subresource, as a kubelet
   * reports it) restarts the job once; the budget is then spent and the next failure is left alone.
   */
  async function retryScenario(): Promise<void> {
    const name = 'tb-retry';
    await client.create(paths.vcJobs(ns), vcjob(name, { group: 'retry', ranks: 2, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '1' }, restartOnEvict: true }));
    const first = await running(name, 2);
    const uid = (await vcJobOf(name)).metadata!.uid!;
    const remain = async (): Promise<number | undefined> => [...(await vcjobFaultNpu(client)).remainRetryTimes.values()].find((v) => v.UUID === uid)?.Times;
    await eventually(async () => (await remain()) === 1, 30_000, 250);
    const fail = (p: Pod) => client.patch(paths.podStatus(ns, p.metadata!.name!), { status: { phase: 'Failed' } });
    const t0 = Date.now();
    await fail(first[1]!);
    const second = await running(name, 2, (ps) => ps.every((p) => !first.some((f) => f.metadata?.uid === p.metadata?.uid)));
    const ms = Date.now() - t0;
    expect((await vcJobOf(name)).status?.retryCount).toBeGreaterThanOrEqual(1);
    await eventually(async () => (await remain()) === 0, 30_000, 250);
    const reason = await rescheduleReasonAfter(client, `${ns}/${name}-${uid}`, 1, 30_000);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.[0]?.RescheduleReason).toBe('pod-failed');

    // Budget spent: the next failure stays, Volcano keeps the job as it is.
    const retryCount = (await vcJobOf(name)).status?.retryCount;
    await fail(second[1]!);
    await sleep(6_000);
    const now = await podsOf(name);
    expect(now.map((p) => p.metadata?.uid).sort()).toEqual(second.map((p) => p.metadata?.uid).sort());
    expect(now.find((p) => p.metadata?.uid === second[1]!.metadata?.uid)?.status?.phase).toBe('Failed');
    expect((await rescheduleReasonOf(client, `${ns}/${name}-${uid}`))?.TotalRescheduleTimes).toBe(1);
    expect(await remain()).toBe(0);
    expect((await vcJobOf(name)).status?.retryCount).toBe(retryCount);
    log(`fault-retry-times: pod Failed -> replacements Running ${ms} ms; second failure left alone`);
  }

  /**
   * 4. Process-level recovery with the real TaskD client (built from TaskD's code) on a Volcano Job:
   * strategy recover; the fault pod is deleted and vc-controller-manager re-creates it on the spare.
   */
  async function processScenario(): Promise<void> {
    const name = 'tb-proc';
    await createResetConfig(name);
    const job = await client.create<KubeObject>(paths.vcJobs(ns), vcjob(name, {
      group: 'proc', ranks: 2, restartOnEvict: false,
      labels: { 'fault-scheduling': 'force', 'process-recover-enable': 'on', framework: 'pytorch' },
      annotations: { 'recover-strategy': 'retry,recover,dump,exit' },
    }));
    const uid = job.metadata!.uid!;
    const [keep, fault] = await running(name, 2) as [Pod, Pod];
    const a = new GoTaskdClient(taskdBin, grpcTarget, uid);
    agents.push(a);
    await a.waitFor((e) => e.event === 'subscribe', 60_000, 'subscription');
    const t0 = Date.now();
    await chipFault(fault.spec!.nodeName!, 'Ascend910-1');
    const pre = await a.waitForSignal((s) => s.signalType === 'preExitProcess', 60_000, 'preExitProcess');
    expect(pre.nodeRankIds).toEqual(['1']);
    // Rank 1's pod holds global ranks 8..15.
    expect((pre.faultRanks ?? []).map((r) => Number(r.rankId)).every((r) => r >= 8 && r < 16)).toBe(true);
    const [kept, moved] = await running(name, 2, (ps) => ps[1]!.metadata?.uid !== fault.metadata?.uid) as [Pod, Pod];
    const ms = Date.now() - t0;
    expect(kept.metadata?.uid).toBe(keep.metadata?.uid);
    expect(moved.spec?.nodeName).not.toBe(fault.spec?.nodeName);
    await eventually(async () => (await pgAnnotation(name, uid, 'ProcessRecoverStatus')) === 'recover-success', 60_000, 250);
    expect(a.summary.slice(0, 4)).toEqual(['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]']);
    expect(a.events.filter((e) => e.event === 'report').map((e) => `${e.rpc}:${e.code}`).slice(0, 4))
      .toEqual(['ReportProcessFault:0', 'ReportStopComplete:0', 'ReportRecoverStrategy:0', 'ReportRecoverStatus:0']);
    expect((await vcJobOf(name)).status?.retryCount ?? 0).toBe(0);
    log(`process level: fault -> replacement Running ${ms} ms, recover-success ${Date.now() - t0} ms; signals (ms from fault): ${timeline(a, t0)}`);
  }

  beforeAll(async () => {
    if (!haveGo()) throw new Error('no Go toolchain on PATH (needed to build tools/taskd-client)');
    const dir = ensureVolcano();
    if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
    taskdBin = buildTaskdClient();
    cp = await ControlPlane.start({ binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-topology-b-${process.pid}`), kwok: true, volcano: { dir, scheduler: 'stock' } });
    client = HttpKubeClient.fromFile(cp.kubeconfigPath);
    await ensureNamespace(client, ns);
    const all = (Object.keys(groups) as Array<keyof typeof groups>).flatMap((g) => nodesOf(g).map((name) => ({ name, labels: { 'vc-test': g } })));
    // The grace group's first node is not kwok's (no kwok annotation): Ready as created, nobody
    // finishes a graceful deletion there (the grace scenario plays its kubelet).
    const hung = nodesOf('grace')[0]!;
    await createFakeNodes(client, all.filter((n) => n.name !== hung));
    const hungObj = fakeNode({ name: hung, labels: { 'vc-test': 'grace' } });
    delete hungObj.metadata!.annotations![KWOK_ANNOTATION];
    await client.create(paths.nodes(), { ...hungObj, status: { ...(hungObj as { status: object }).status, conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'played by the test' }] } });
    inj = new FaultInjector(client);
    await Promise.all(all.map((n) => client.patch(paths.node(n.name), { spec: { taints: null } })));
    await inj.addNodes(all.map((n) => ({ name: n.name })));
    allocator = new NpuAllocator(client, { namespace: ns });
    await allocator.start();
    ({ manager } = await startManager(client, [
      `--grace-over-time-seconds=${GRACE_OVER_TIME_S}`, `--pending-escalation-seconds=${PENDING_ESCALATION_S}`,
      // The TaskD client runs on this host, not in the job's (kwok) pods: no caller check.
      '--grpc-port=0', '--grpc-host=127.0.0.1', '--grpc-caller-check=off',
      '--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,inPlaceCheck=1000', '--recovery-feed-window-ms=50',
    ]));
    const server = await manager.grpc.ready();
    if (server === undefined) throw new Error('gRPC server did not start');
    grpcTarget = `127.0.0.1:${server.port}`;
    for (const n of all) await eventually(async () => (await deviceEntry(client, n.name))?.DeviceList[P]?.split(',').length === 8, 30_000);
    log(`setup ${Date.now() - fileStart} ms`);
    // All four at once, each on its own node group; each test awaits its own.
    for (const [k, f] of [['grace', graceScenario], ['pod', podScenario], ['retry', retryScenario], ['proc', processScenario]] as const) {
      const run = f();
      run.catch(() => undefined);
      runs.set(k, run);
    }
  }, 1_800_000);

  afterAll(async () => {
    await Promise.allSettled([...runs.values()]);
    for (const a of agents) await a.stop();
    await manager?.stop();
    allocator?.stop();
    await inj?.close();
    await cp?.stop();
    log(`file wall time ${Date.now() - fileStart} ms`);
  }, 60_000);

  it('job-level grace: pods deleted with their grace period, the one that does not finish forced after grace-over-time, Volcano restarts the job onto healthy nodes', () => scenario('grace'), 300_000);
  it('pod level: only the fault pod is re-created by Volcano (the other keeps its UID); with no node left for it, escalation to a job-level restart after the pending timeout', () => scenario('pod'), 300_000);
  it('fault-retry-times=1: a failed pod restarts the job once (budget 1 -> 0, reason pod-failed), the next failure is left alone', () => scenario('retry'), 300_000);
  it('process-level recovery with the real TaskD client: recover signals, Volcano re-creates the fault pod on the spare, the other keeps its UID, recover-success', () => scenario('proc'), 300_000);
});
