/**
 * Never two deleters (README "Running beside or instead of ClusterD"): while Huawei's ascend plugin
 * is configured in Volcano's scheduler (the `volcano-scheduler.conf` of a volcano-system ConfigMap,
 * as vc-scheduler mounts it), the plugin deletes the fault pods and writes the job ConfigMaps
 * itself, so clusterd-ts with its default flags does not: it says so in a log line, an Event on that
 * ConfigMap, `clusterd_rescheduling_yielded` and `/readyz?verbose`. `--reschedule-beside-ascend-plugin`
 * takes the role anyway. A plugin configured after start stops the jobs flow at once; one removed
 * after start gives the role back through a new process (main.ts exits, the hook here counts).
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { vcJob, type World } from '../../tools/job-peer/world.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { ensureNamespace, eventually } from '../support/cluster.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { BASE_ARGS, jobsHarness, npusOf, runningPods, sleep, uidOf } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const NS = 'volcano-system';
const CM = 'volcano-scheduler-configmap';
const conf = (plugins: readonly string[]): string =>
  `actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n${plugins.map((p) => `  - name: ${p}\n`).join('')}- plugins:\n  - name: drf\n  - name: predicates\n`;
const WITH_PLUGIN = conf(['gang', 'volcano-npu_v26.1.0', 'priority']);
const STOCK = conf(['priority', 'gang', 'conformance']);

describe('never two deleters: the ascend plugin in Volcano\'s scheduler configuration', () => {
  const h = jobsHarness();
  const { client } = h;
  const managers: Manager[] = [];

  const putConf = async (text: string): Promise<void> => {
    await ensureNamespace(client, NS);
    const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(NS, CM));
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CM, namespace: NS }, data: { 'volcano-scheduler.conf': text } };
    if (existing === undefined) await client.create(paths.configMaps(NS), body);
    else await client.replace(paths.configMap(NS, CM), { ...body, metadata: { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion } });
  };
  /** A Manager as main.ts builds it, its log recorded, and main.ts's restart hook counted. */
  const start = async (args: readonly string[] = []): Promise<{ manager: Manager; metrics: Metrics; lines: LogLine[]; regained: () => number }> => {
    const metrics = new Metrics({ processMetrics: false });
    const lines: LogLine[] = [];
    let regained = 0;
    const manager = new Manager({ clock: realClock, client, options: parseOptions([...BASE_ARGS, '--grpc-port=0', ...args], {}), log: recordingLogger(lines), metrics, onReschedulingRoleRegained: () => { regained++; } });
    managers.push(manager);
    await manager.start();
    return { manager, metrics, lines, regained: () => regained };
  };
  const yielded = async (m: Metrics): Promise<number> => (await m.reschedulingYielded.get()).values[0]?.value ?? -1;
  const forceJob = async (world: World, name: string): Promise<KubeObject> => {
    await client.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name, replicas: 1, npus: 2, labels: { 'fault-scheduling': 'force' } }));
    const [pod] = await runningPods(client, world.ns, name, 1);
    return pod!;
  };
  const fault = async (world: World, pod: KubeObject): Promise<void> => {
    await world.dp.injectChipFault({ node: (pod as { spec?: { nodeName?: string } }).spec!.nodeName!, npu: npusOf(pod)[0]!, code: '80E18402', level: 'SeparateNPU' });
  };

  afterEach(async () => {
    for (const m of managers.splice(0)) await m.stop();
    await client.delete(paths.configMap(NS, CM)).catch(() => undefined);
  });

  it('configured: a force job\'s SeparateNPU deletes no pod, and says why; --reschedule-beside-ascend-plugin deletes it', async () => {
    await putConf(WITH_PLUGIN);
    const world = await h.startWorld({ nodes: 1, prefix: 'role' });
    const { manager, metrics, lines } = await start();
    expect(await yielded(metrics)).toBe(1);
    expect(lines.find((l) => l.msg.startsWith('rescheduling yielded to Huawei\'s ascend plugin'))).toMatchObject({ level: 'warn', plugin: 'volcano-npu_v26.1.0', configMap: `${NS}/${CM}` });
    const readyz = await (await fetch(`http://127.0.0.1:${manager.httpPort}/readyz?verbose`)).text();
    expect(readyz).toContain(`rescheduling: yielded to Huawei's ascend plugin volcano-npu_v26.1.0 configured in ${NS}/${CM}`);
    await eventually(async () => (await client.list<{ reason?: string; involvedObject?: { name?: string } }>(paths.events(NS))).items
      .some((e) => e.reason === 'ReschedulingYielded' && e.involvedObject?.name === CM), 10_000);

    const pod = await forceJob(world, 'beside');
    await fault(world, pod);
    await sleep(5_000);
    expect(world.peer.statsOf('beside').deletedUids.size).toBe(0);

    // The same fault, the role taken anyway: deleted.
    for (const m of managers.splice(0)) await m.stop();
    const taken = await start(['--reschedule-beside-ascend-plugin']);
    expect(await yielded(taken.metrics)).toBe(0);
    await eventually(() => world.peer.statsOf('beside').deletedUids.has(uidOf(pod)), 15_000);
  }, 120_000);

  it('configured after start: the jobs flow stops at once; removed again: the role is taken by a new process', async () => {
    await putConf(STOCK);
    const world = await h.startWorld({ nodes: 1, prefix: 'role2' });
    const { metrics, lines, regained } = await start();
    expect(await yielded(metrics)).toBe(0);
    await putConf(WITH_PLUGIN);
    await eventually(async () => (await yielded(metrics)) === 1, 10_000);
    const pod = await forceJob(world, 'later');
    await fault(world, pod);
    await sleep(5_000);
    expect(world.peer.statsOf('later').deletedUids.size).toBe(0);

    await putConf(STOCK);
    await eventually(() => regained() === 1, 10_000);
    expect(await yielded(metrics)).toBe(0);
    expect(lines.some((l) => l.msg.startsWith('rescheduling role regained'))).toBe(true);
  }, 120_000);
});
