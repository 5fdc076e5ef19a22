/**
 * AscendJobs under the real Ascend Operator (tools/ascend-operator/build.sh) on the real Volcano, as
 * scenarios both topology files run (not a test file itself):
 * - B (ascendjob.test.ts): the stock vc-scheduler, no ascend plugin, so clusterd-ts holds the
 *   rescheduling role with the chart's defaults: it deletes pods and writes vcjob-fault-npu-cm;
 * - A (ascendjob-plugin.test.ts): vc-scheduler with Huawei's plugin, which deletes pods and writes
 *   vcjob-fault-npu-cm while clusterd-ts yields the role and publishes the cluster-info it places by.
 * NPUs are handed out by the device plugin (the allocator: kwok has no kubelet). The operator creates
 * each job's PodGroup, Service and pods (`<job>-<type>-<index>`, rank annotation `hccl/rankIndex`) and
 * re-creates what the deleter deleted. One control plane per file: the operator and
 * vc-controller-manager act on every object of their kinds. Scenarios run concurrently on their own
 * nodes (it.concurrent: they start before beforeAll hooks would, so each awaits the one shared setup).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paths, HttpKubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';
import { ensureAscendOperator, ensureVolcano } from '../../tools/control-plane/volcano.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { createFakeNodes } from '../../tools/simulator/nodes.ts';
import { NpuAllocator } from '../../tools/simulator/allocator.ts';
import { failPod } from '../../tools/job-peer/world.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Metrics } from '../../telemetry/metrics.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { TEST_TIMINGS, startAgent } from '../integration/recovery-fixtures.ts';
import { podGroupEvents, rescheduleReasonOf, sleep, startManager, vcjobFaultNpu } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const P = 'huawei.com/Ascend910';
const RANK = 'hccl/rankIndex';

type Pod = KubeObject & { spec?: { nodeName?: string; schedulerName?: string; containers?: Array<{ env?: Array<{ name: string; value?: string }> }> }; status?: { phase?: string } };
type Condition = { type: string; status: string; reason?: string; message?: string };
type AscendJobObj = KubeObject & { status?: { conditions?: Condition[] } };

/**
 * A PyTorch AscendJob as a user writes one for the operator (its CRD and validation,
 * component/ascend-operator/pkg/controllers/v1/ascendjob_validate.go): label `framework`, one Master
 * and `workers` Workers, container `ascend` with port `ascendjob-port`, Volcano and its queue named.
 */
function ascendJob(ns: string, name: string, o: { workers: number; group: string; labels?: Record<string, string>; annotations?: Record<string, string> }): KubeObject {
  const replica = (replicas: number) => ({
    replicas, restartPolicy: 'Never',
    template: {
      metadata: { labels: { app: 'pytorch', 'ring-controller.atlas': 'ascend-910' } },
      spec: {
        nodeSelector: { 'vc-test': o.group },
        containers: [{
          name: 'ascend', image: 'pytorch-train:latest', ports: [{ containerPort: 2222, name: 'ascendjob-port' }],
          resources: { requests: { [P]: '8' }, limits: { [P]: '8' } },
        }],
      },
    },
  });
  return {
    apiVersion: 'mindxdl.gitee.com/v1', kind: 'AscendJob',
    metadata: { name, namespace: ns, labels: { framework: 'pytorch', 'ring-controller.atlas': 'ascend-910', ...o.labels }, ...(o.annotations ? { annotations: o.annotations } : {}) },
    spec: {
      schedulerName: 'volcano',
      runPolicy: { schedulingPolicy: { minAvailable: 1 + o.workers, queue: 'default' } },
      successPolicy: 'AllWorkers',
      replicaSpecs: { Master: replica(1), ...(o.workers > 0 ? { Worker: replica(o.workers) } : {}) },
    },
  };
}

/** The node annotation the device plugin writes and the ascend plugin counts chips from (tools/volcano/README.md). */
function baseDeviceInfos(npus = 8): string {
  return JSON.stringify(Object.fromEntries(Array.from({ length: npus }, (_, i) => [`Ascend910-${i}`, { IP: `192.168.100.${100 + i}`, SuperDeviceID: 0 }])));
}

export function describeAscendJobs(topology: 'A' | 'B'): void {
  const plugin = topology === 'A';
  /** Who deletes pods and writes vcjob-fault-npu-cm. */
  const deleter = plugin ? 'the ascend plugin' : 'clusterd-ts';
  const tag = `[ascendjob-${topology}]`;
  describe(`AscendJobs: the real Ascend Operator on the real Volcano (topology ${topology}), ${deleter} rescheduling`, () => {
    let cp: ControlPlane | undefined;
    let client: HttpKubeClient;
    let inj: FaultInjector;
    let manager: Manager | undefined;
    let allocator: NpuAllocator | undefined;
    let target = '';
    const t0 = Date.now();
    const ns = 'acj-team';
    const groups = { job: 3, pod: 3, retry: 2, backoff: 2, hot: 3 } as const;
    const nodesOf = (g: keyof typeof groups): string[] => Array.from({ length: groups[g] }, (_, i) => `acj-${g}-${i}`);
    const allNodes = (Object.keys(groups) as Array<keyof typeof groups>).flatMap(nodesOf);

    /** The control plane with Volcano and the operator, nodes, the allocator and clusterd-ts with the chart's defaults. */
    async function setUp(): Promise<void> {
      const dir = ensureVolcano();
      if (dir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3); see tools/volcano/README.md');
      const operator = ensureAscendOperator();
      if (operator === undefined) throw new Error('no MindCluster source on this machine (tools/ascend-operator/build.sh exit 3)');
      cp = await ControlPlane.start({
        binDir: ensureBinaries(), workDir: join(tmpdir(), `clusterd-ts-ascendjob-${topology}-${process.pid}`), kwok: true,
        volcano: { dir, scheduler: plugin ? 'ascend' : 'stock', ascendOperator: operator },
      });
      client = HttpKubeClient.fromFile(cp.kubeconfigPath);
      await ensureNamespace(client, ns);
      await createFakeNodes(client, (Object.keys(groups) as Array<keyof typeof groups>).flatMap((g) => nodesOf(g).map((name) => ({ name, labels: { 'vc-test': g } }))));
      inj = new FaultInjector(client);
      await Promise.all(allNodes.map(async (n) => {
        await client.patch(paths.node(n), { ...(plugin ? { metadata: { annotations: { baseDeviceInfos: baseDeviceInfos() } } } : {}), spec: { taints: null } });
        await inj.addNodes([{ name: n }]);
      }));
      allocator = new NpuAllocator(client, { namespace: ns });
      await allocator.start();
      let metrics: Metrics;
      // The chart's defaults, plus gRPC on loopback for the TaskD-like client of the hot switch (it runs
      // on this host, not in a pod: caller check off) and the recovery waits of the recovery tests.
      ({ manager, metrics } = await startManager(client, ['--grpc-port=0', '--grpc-host=127.0.0.1', '--grpc-caller-check=off', ...TEST_TIMINGS]));
      const server = await manager!.grpc.ready();
      if (server === undefined) throw new Error('gRPC server did not start');
      target = `127.0.0.1:${server.port}`;
      // The plugin in vc-scheduler's configuration (volcano-system's ConfigMap) or not: who holds the role.
      expect((await metrics.reschedulingYielded.get()).values[0]?.value).toBe(plugin ? 1 : 0);
      await Promise.all(allNodes.map((n) => eventually(async () => (await deviceEntry(client, n))?.DeviceList[P]?.split(',').length === 8, 60_000)));
      process.stdout.write(`${tag} stack up in ${Date.now() - t0} ms\n`);
    }
    let ready: Promise<void> | undefined;
    const stack = (): Promise<void> => (ready ??= setUp());

    afterAll(async () => {
      await ready?.catch(() => undefined);
      await manager?.stop();
      allocator?.stop();
      await inj?.close();
      await cp?.stop();
      process.stdout.write(`${tag} file wall time ${Date.now() - t0} ms\n`);
    }, 60_000);

    const podsOf = async (job: string): Promise<Pod[]> =>
      (await client.list<Pod>(paths.pods(ns), { labelSelector: `training.kubeflow.org/job-name=${job}` })).items;
    const live = (ps: readonly Pod[]): Pod[] => ps.filter((p) => p.metadata?.deletionTimestamp === undefined);
    const running = (p: Pod): boolean => p.spec?.nodeName !== undefined && p.status?.phase === 'Running' && p.metadata?.annotations?.['huawei.com/AscendReal'] !== undefined;
    const byName = (ps: readonly Pod[]): Map<string, Pod> => new Map(ps.map((p) => [p.metadata!.name!, p]));
    const uids = (ps: readonly Pod[]): Set<string> => new Set(ps.map((p) => p.metadata!.uid!));
    const rankOf = (p: Pod | undefined): string | undefined => p?.metadata?.annotations?.[RANK];
    /** All `count` pods of the job Running with chips, none of `oldUids`. */
    const allRunning = (job: string, count: number, oldUids: ReadonlySet<string> = new Set()): Promise<Pod[]> => eventually(async () => {
      const ps = live(await podsOf(job));
      return ps.length === count && ps.every((p) => running(p) && !oldUids.has(p.metadata!.uid!)) ? ps : undefined;
    }, 240_000, 500);
    const conditionsOf = async (job: string): Promise<Condition[]> => (await client.get<AscendJobObj>(paths.ascendJob(ns, job))).status?.conditions ?? [];
    const jobEvents = async (job: string) => (await podGroupEvents(client, ns, job)).filter((e) => e.involvedObject?.kind === 'AscendJob');
    const podGroupExists = async (pg: string): Promise<boolean> => (await client.list<KubeObject>(paths.podGroups(ns))).items.some((g) => g.metadata?.name === pg);

    it.concurrent(`job level (fault-scheduling: force): ${deleter} deletes both pods, the operator re-creates them with the same ranks, Volcano places them off the faulty chip`, async () => {
      await stack();
      const job = await client.create<KubeObject>(paths.ascendJobs(ns), ascendJob(ns, 'gpt', { workers: 1, group: 'job', labels: { 'fault-scheduling': 'force' } }));
      const first = await allRunning('gpt', 2);
      // The operator's pods: owned by the AscendJob, in its PodGroup, ranks from the replica index (Master 0).
      const firstByName = byName(first);
      expect([...firstByName.keys()].sort()).toEqual(['gpt-master-0', 'gpt-worker-0']);
      expect(rankOf(firstByName.get('gpt-master-0'))).toBe('0');
      expect(rankOf(firstByName.get('gpt-worker-0'))).toBe('1');
      for (const p of first) {
        expect(p.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'AscendJob', name: 'gpt', uid: job.metadata!.uid, controller: true });
        expect(p.metadata?.annotations?.['scheduling.k8s.io/group-name']).toBe(`gpt-${job.metadata!.uid}`);
        expect(p.spec?.schedulerName).toBe('volcano');
        expect(p.metadata?.labels?.version).toBe('0');
      }
      const faultNode = firstByName.get('gpt-worker-0')!.spec!.nodeName!;

      const tf = Date.now();
      await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU' });
      const second = await allRunning('gpt', 2, uids(first));
      const ms = Date.now() - tf;
      const secondByName = byName(second);
      process.stdout.write(`${tag} job level: fault -> both replacements Running: ${ms} ms (worker ${faultNode} -> ${secondByName.get('gpt-worker-0')?.spec?.nodeName})\n`);
      // Rank reuse: the operator re-creates each replica under its name with the rank of its index.
      expect([...secondByName.keys()].sort()).toEqual(['gpt-master-0', 'gpt-worker-0']);
      expect(rankOf(secondByName.get('gpt-master-0'))).toBe('0');
      expect(rankOf(secondByName.get('gpt-worker-0'))).toBe('1');
      // The operator counted one restart (its pod version label), and no pod sits on the faulty node.
      for (const p of second) expect(p.metadata?.labels?.version).toBe('1');
      expect(second.map((p) => p.spec?.nodeName)).not.toContain(faultNode);
      const reason = await eventually(() => rescheduleReasonOf(client, `${ns}/gpt-${job.metadata!.uid!}`), 30_000, 500);
      expect(reason.TotalRescheduleTimes).toBe(1);
    }, 600_000);

    it.concurrent('pod level (pod-rescheduling: on): only the fault pod is deleted, the operator re-creates it with its rank, the other pod keeps its uid', async () => {
      await stack();
      await client.create<KubeObject>(paths.ascendJobs(ns), ascendJob(ns, 'llama', { workers: 1, group: 'pod', labels: { 'fault-scheduling': 'force', 'pod-rescheduling': 'on' } }));
      const first = byName(await allRunning('llama', 2));
      const master = first.get('llama-master-0')!;
      const worker = first.get('llama-worker-0')!;
      const faultNode = worker.spec!.nodeName!;

      const tf = Date.now();
      await inj.inject({ kind: 'npu', node: faultNode, npu: 'Ascend910-6', code: '80E18402', level: 'SeparateNPU' });
      const replaced = await eventually(async () => {
        const w = byName(live(await podsOf('llama'))).get('llama-worker-0');
        return w !== undefined && w.metadata?.uid !== worker.metadata?.uid && running(w) ? w : undefined;
      }, 240_000, 500);
      process.stdout.write(`${tag} pod level: fault -> replacement Running: ${Date.now() - tf} ms (worker ${faultNode} -> ${replaced.spec?.nodeName})\n`);
      expect(rankOf(replaced)).toBe('1');
      expect(replaced.spec?.nodeName).not.toBe(faultNode);
      // Settled: the master was never deleted (same uid, still version 0), the worker is the operator's second version.
      await sleep(3_000);
      const now = byName(live(await podsOf('llama')));
      expect(now.size).toBe(2);
      expect(now.get('llama-master-0')?.metadata?.uid).toBe(master.metadata?.uid);
      expect(now.get('llama-master-0')?.metadata?.labels?.version).toBe('0');
      expect(now.get('llama-worker-0')?.metadata?.uid).toBe(replaced.metadata?.uid);
      expect(now.get('llama-worker-0')?.metadata?.labels?.version).toBe('1');
    }, 600_000);

    it.concurrent(`fault-retry-times: 1: the operator reads the budget ${deleter} writes in remain-retry-times; a failed pod restarts the job once, the next one fails it`, async () => {
      await stack();
      const job = await client.create<KubeObject>(paths.ascendJobs(ns), ascendJob(ns, 'bert', { workers: 1, group: 'retry', labels: { 'fault-scheduling': 'force', 'fault-retry-times': '1' } }));
      const key = `${ns}/bert-${job.metadata!.uid!}`;
      const first = await allRunning('bert', 2);
      await eventually(async () => (await vcjobFaultNpu(client)).remainRetryTimes.get(key)?.Times === 1, 60_000, 500);

      // A software fault: the worker's container exits 1. The deleter restarts the job and spends the
      // budget once the restart is done. The operator, if it reconciles the failed pod before the deleter
      // deletes it, reads remain-retry-times = 1 and puts the job in Restarting, not Failed
      // (component/ascend-operator/pkg/controllers/v1/job.go reconcileWithFailed); which of the two comes
      // first is a race, either way the job must not fail.
      await failPod(client, ns, 'bert-worker-0');
      const second = byName(await allRunning('bert', 2, uids(first)));
      expect(rankOf(second.get('bert-worker-0'))).toBe('1');
      await eventually(async () => (await vcjobFaultNpu(client)).remainRetryTimes.get(key)?.Times === 0, 60_000, 500);
      expect((await conditionsOf('bert')).some((c) => c.type === 'Failed')).toBe(false);
      const reason = await eventually(() => rescheduleReasonOf(client, key), 30_000, 500);
      expect(reason.TotalRescheduleTimes).toBe(1);
      expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.[0]?.RescheduleReason).toBe('pod-failed');
      const sawRestarting = (await jobEvents('bert')).some((e) => e.reason === 'JobRestarting' && (e.message ?? '').includes('remain retry times is <1>'));
      process.stdout.write(`${tag} retry: the operator ${sawRestarting ? 'read remain-retry-times 1 (JobRestarting)' : 'saw the pod deleted before it counted it failed'}\n`);

      // The budget is used up: the deleter leaves the next failed pod alone and the operator, reading 0,
      // fails the job and deletes its PodGroup; nobody deletes or re-creates a pod. The message is the
      // one of a budget read as 0: without an entry for the job the operator says "has pod failed".
      await failPod(client, ns, 'bert-worker-0');
      const failed = await eventually(async () => (await conditionsOf('bert')).find((c) => c.type === 'Failed' && c.status === 'True'), 60_000, 500);
      expect(failed.message).toContain('remain retry times is 0');
      await eventually(async () => !(await podGroupExists(`bert-${job.metadata!.uid!}`)), 60_000, 500);
      await sleep(3_000);
      expect([...uids(await podsOf('bert'))].sort()).toEqual([...uids([...second.values()])].sort());
    }, 600_000);

    it.concurrent(`fault-retry-times: 1 is also the operator's backoff limit: a second hardware restart by ${deleter} fails the job, although its retry budget (software faults only) is untouched`, async () => {
      await stack();
      const job = await client.create<KubeObject>(paths.ascendJobs(ns), ascendJob(ns, 'vit', { workers: 0, group: 'backoff', labels: { 'fault-scheduling': 'force', 'fault-retry-times': '1' } }));
      const key = `${ns}/vit-${job.metadata!.uid!}`;
      const [first] = await allRunning('vit', 1);
      await inj.inject({ kind: 'npu', node: first!.spec!.nodeName!, npu: 'Ascend910-2', code: '80E18402', level: 'SeparateNPU' });
      const [second] = await allRunning('vit', 1, uids([first!]));
      expect(second!.metadata?.labels?.version).toBe('1');
      expect(second!.spec?.nodeName).not.toBe(first!.spec?.nodeName);
      // A hardware restart spends none of the retry budget (software faults only).
      await eventually(async () => (await rescheduleReasonOf(client, key))?.TotalRescheduleTimes === 1, 30_000, 500);
      expect((await vcjobFaultNpu(client)).remainRetryTimes.get(key)?.Times).toBe(1);

      // The operator's version count passes fault-retry-times (component/ascend-operator/pkg/controllers/v1/job.go
      // reconcileJob): it fails the job, deletes its PodGroup and creates no pod.
      await inj.inject({ kind: 'npu', node: second!.spec!.nodeName!, npu: 'Ascend910-5', code: '80E18402', level: 'SeparateNPU' });
      const failed = await eventually(async () => (await conditionsOf('vit')).find((c) => c.type === 'Failed' && c.status === 'True'), 120_000, 500);
      expect(failed.message).toContain('reached the specified backoff limit');
      await eventually(async () => !(await podGroupExists(`vit-${job.metadata!.uid!}`)), 60_000, 500);
      await sleep(3_000);
      expect(live(await podsOf('vit'))).toHaveLength(0);
    }, 600_000);

    it.concurrent(`hot switch (subHealthyStrategy: hotSwitch): the operator creates the backup pod clusterd-ts asks for, ${deleter} deletes the old pod, the operator clears the backup pod's markers`, async () => {
      await stack();
      const job = await client.create<KubeObject>(paths.ascendJobs(ns), ascendJob(ns, 'moe', {
        workers: 1, group: 'hot', labels: { 'fault-scheduling': 'force', subHealthyStrategy: 'hotSwitch', 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'recover' },
      }));
      const uid = job.metadata!.uid!;
      const first = byName(await allRunning('moe', 2));
      const master = first.get('moe-master-0')!;
      const worker = first.get('moe-worker-0')!;
      await eventually(() => manager!.recovery.lookup(uid)?.entry.view.pods.length === 2, 60_000);
      const agent = startAgent(target, uid, {});
      // Every state the job's pods pass through (the backup pod's markers live only for a moment).
      const seen: Pod[] = [];
      const watch = new Reflector<Pod>(client, { clock: realClock, name: 'test_moe_pods', path: paths.pods(ns), labelSelector: 'training.kubeflow.org/job-name=moe' });
      watch.events$.subscribe({ next: (ev) => { if (ev.type !== 'delete') seen.push(ev.obj); } });
      watch.start();
      await watch.waitForSync();
      try {
        await agent.waitFor(() => (agent.subscribed && manager!.recovery.phase(uid, 'hotSwitch') === 'INIT' ? true : undefined), 60_000, 'subscription');
        const tf = Date.now();
        // A sub-health chip fault under the worker (rank 1; rank 0 is never hot-switched).
        await inj.inject({ kind: 'npu', node: worker.spec!.nodeName!, npu: 'Ascend910-0', code: '81A3880C', level: 'SubHealthFault' });
        const hs = await agent.waitForSignal((x) => x.signalType === 'hot-switch' && x.actions.includes('hot switch'), 60_000);
        expect(hs.nodeRankIds).toEqual([]); // as ClusterD's hot-switch signals (conformance scenario hot-switch)
        // The operator's backup pod (component/ascend-operator/pkg/controllers/v1/pod.go createHotSwitchPod):
        // `<old>-hot-NNNN`, the old pod's rank, placed by Volcano.
        const backup = await eventually(async () => live(await podsOf('moe')).find((p) => p.metadata?.name?.startsWith('moe-worker-0-hot-') && running(p)), 60_000, 500);
        const created = seen.find((p) => p.metadata?.uid === backup.metadata?.uid)!;
        expect(created.metadata?.annotations).toMatchObject({ podType: 'backup', backupSourcePodName: 'moe-worker-0', inHotSwitchFlow: 'true', [RANK]: '1' });
        expect(rankOf(backup)).toBe('1');
        // The old pod pointed at its backup (the operator's patch after creating it).
        expect(seen.some((p) => p.metadata?.uid === worker.metadata?.uid && p.metadata?.annotations?.backupNewPodName === backup.metadata?.name)).toBe(true);
        await agent.waitForSignal((x) => x.signalType === 'changeStrategy' && x.changeStrategy === 'migration', 60_000);
        await eventually(() => manager!.recovery.phase(uid, 'hotSwitch') === 'INIT', 60_000, 500);
        process.stdout.write(`${tag} hot switch: sub-health fault -> migration done: ${Date.now() - tf} ms (backup on ${backup.spec?.nodeName})\n`);
        // The old pod went; the operator, on its deletion, cleared the backup pod's markers (handleOldPodDeleted).
        await eventually(async () => {
          const a = (await client.get<Pod>(paths.pod(ns, backup.metadata!.name!))).metadata?.annotations ?? {};
          return a.podType === undefined && a.backupSourcePodName === undefined;
        }, 60_000, 500);
        const now = byName(live(await podsOf('moe')));
        expect([...now.values()].some((p) => p.metadata?.uid === worker.metadata?.uid)).toBe(false);
        expect(now.get('moe-master-0')?.metadata?.uid).toBe(master.metadata?.uid);
        expect(now.get(backup.metadata!.name!)?.metadata?.uid).toBe(backup.metadata?.uid);
        expect(manager!.recovery.hotSwitchDowngraded(uid)).toBe(false);
        // Not asserted: that no second pod for the worker's index appears. The operator clears the
        // backup pod's markers from its pod-delete predicate (handleOldPodDeleted) and the reconcile that
        // delete enqueues may still read the backup pod from its cache with podType=backup: GetPodSlices
        // skips it, the index looks empty and the operator creates `moe-worker-0` again beside the backup
        // (component/ascend-operator/pkg/controllers/v1/ascendjob_controller.go, pod.go). Seen in about
        // one run in four; it is the operator's race, whoever deletes the old pod.
        const extra = seen.find((p) => p.metadata?.name === 'moe-worker-0' && p.metadata?.uid !== worker.metadata?.uid);
        if (extra !== undefined) process.stdout.write(`${tag} hot switch: the operator re-created moe-worker-0 beside the backup pod (its cache race)\n`);
      } finally {
        watch.stop();
        agent.stop();
      }
    }, 600_000);
  });
}
