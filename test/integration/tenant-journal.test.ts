/**
 * Tenant isolation, the shared job journal (README "Threat model"): the apiserver does not validate
 * an ownerReference's uid, and the journal keys each job's record by it in ConfigMaps shared by
 * every job (schemas/job-state). A tenant, under its namespace-scoped ServiceAccount, creates
 * PodGroups (and pods owned by them) whose owner uid is `bad uid !`, with faults on their chips, on
 * the node where another team's job runs; that job's SeparateNPU must still delete its pod within
 * the normal time and its record must be written. The tenant's jobs are refused before any write:
 * a made-up owner uid names no Volcano Job, so the job-identity check (policy/jobs/job-identity.ts)
 * refuses those first; a real Job whose name is too long for `reset-config-<name>` passes that check
 * and is refused by the key-and-name check (schemas/kube-names.ts), the one
 * --refuse-malformed-job-identity turns off.
 */
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import { adminClient, eventually } from '../support/cluster.ts';
import { newTenant, removeJobs } from '../support/tenant.ts';
import { vcJob, NPU_RESOURCE, type PodObj } from '../../tools/job-peer/world.ts';
import { JOB_JOURNAL_LABELS, JOB_STATE_NAMESPACE, JOB_STATE_VERSION, encodeJobState, journalCmName } from '../../schemas/job-state/job-state.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { BASE_ARGS, jobState, jobsHarness, npusOf, podGroupEvents, runningPods, uidOf } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const BAD_UIDS = Array.from({ length: 5 }, (_, i) => (i % 3 === 0 ? `bad uid ${i}!` : i % 3 === 1 ? `Bad/Uid-${i}` : `x y ${i}`));
/** A Volcano Job name the apiserver takes (<= 253) that `reset-config-<name>` cannot carry. */
const LONG_NAME = `long-${'x'.repeat(240)}`;
const TENANT_CHIPS = [...BAD_UIDS.map((_, i) => `Ascend910-${2 + i}`), 'Ascend910-7'];

/** A PodGroup and one pod on `node` holding `chip`, both owned by the Volcano Job `owner` names (made up, or real). */
async function tenantJob(client: KubeClient, ns: string, i: number | string, owned: { name?: string; uid: string }, node: string, chip: string): Promise<void> {
  const name = `evil-${i}`;
  const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: owned.name ?? name, uid: owned.uid, controller: true };
  await client.create(paths.podGroups(ns), {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name, namespace: ns, labels: { 'fault-scheduling': 'force' }, ownerReferences: [owner] },
    spec: { minMember: 1 },
  });
  await client.create(paths.pods(ns), {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${name}-worker-0`, namespace: ns, ownerReferences: [owner],
      annotations: { 'scheduling.k8s.io/group-name': name, 'hccl/rankIndex': '0', 'huawei.com/AscendReal': chip },
    },
    spec: {
      nodeName: node, restartPolicy: 'Never', terminationGracePeriodSeconds: 1,
      containers: [{ name: 'ascend', image: 'training:latest', resources: { requests: { [NPU_RESOURCE]: '1' }, limits: { [NPU_RESOURCE]: '1' } } }],
    },
  });
}

/** The made-up-uid jobs on chips 2-6, and a real Job with a too-long name on chip 7, all Running; the long job's uid. */
async function tenantJobs(client: KubeClient, ns: string, node: string): Promise<string> {
  for (const [i, bad] of BAD_UIDS.entries()) await tenantJob(client, ns, i, { uid: bad }, node, TENANT_CHIPS[i]!);
  // No Volcano controller serves the tenant's namespace here: the Job stays inert, the tenant makes its PodGroup and pod.
  const long = await client.create(paths.vcJobs(ns), vcJob(ns, { name: LONG_NAME, replicas: 1, npus: 1, labels: { 'fault-scheduling': 'force' } }));
  await tenantJob(client, ns, 'long', { name: LONG_NAME, uid: long.metadata!.uid! }, node, TENANT_CHIPS[BAD_UIDS.length]!);
  await eventually(async () => {
    const pods = (await client.list<PodObj>(paths.pods(ns))).items;
    return pods.length === TENANT_CHIPS.length && pods.every((p) => p.status?.phase === 'Running');
  }, 30_000);
  return long.metadata!.uid!;
}

async function journalKeys(client: KubeClient): Promise<string[]> {
  const sel = Object.entries(JOB_JOURNAL_LABELS).map(([k, v]) => `${k}=${v}`).join(',');
  const cms = (await client.list<ConfigMap>(paths.configMaps(JOB_STATE_NAMESPACE), { labelSelector: sel })).items;
  return cms.flatMap((c) => Object.keys(c.data ?? {}));
}

const tenantNamespaces: string[] = [];
afterAll(async () => { await removeJobs(adminClient(), tenantNamespaces); }, 60_000);

describe('tenant isolation: the shared job journal', () => {
  const h = jobsHarness();
  const { client } = h;

  it('PodGroups with malformed owner uids do not delay another job\'s SeparateNPU: its pod goes within seconds and its record is written', async () => {
    const world = await h.startWorld({ nodes: 1, prefix: 'tjournal' });
    const { metrics } = await h.startManager(['--grpc-port=0']);
    const { ns } = world;
    const node = world.nodes[0]!;

    // The tenant's jobs sit on the node the victim will use, one per chip on chips 2-7 (in a real
    // cluster the device plugin annotates the chips; the allocator here serves the world's namespace).
    const tenant = await newTenant(client, 'tjournal-tenant');
    tenantNamespaces.push(tenant.ns);
    const longUid = await tenantJobs(tenant.client, tenant.ns, node);
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'victim', replicas: 1, npus: 2, labels: { 'fault-scheduling': 'force' } }));
    const uid = job.metadata!.uid!;
    const [victim] = await runningPods(client, ns, 'victim', 1);
    const victimChips = npusOf(victim!);
    expect(victimChips.filter((c) => TENANT_CHIPS.includes(c))).toEqual([]);

    // One device-info write: the tenant's chips and the victim's fail together, so all the jobs are
    // decided in one burst and (before the fix) their write-aheads share group commits.
    const t0 = Date.now();
    await Promise.all([...TENANT_CHIPS, victimChips[0]!].map((npu) => world.dp.injectChipFault({ node, npu, code: '80E18402', level: 'SeparateNPU' })));
    await eventually(() => world.peer.goneAtMs(uidOf(victim!)), 30_000, 50);
    const tookMs = world.peer.goneAtMs(uidOf(victim!))! - t0;
    process.stdout.write(`[tenant-journal] victim pod deleted ${tookMs} ms after its SeparateNPU\n`);
    expect(tookMs).toBeLessThan(5_000);
    const record = await eventually(async () => (await jobState(client, uid))?.state.acted.length ? jobState(client, uid) : undefined, 10_000);
    expect(record?.jobKey).toBe(`${ns}/victim-${uid}`);

    // The tenant's jobs were refused before any write: no record, no pod deleted, counted, an Event each.
    expect((await journalKeys(client)).filter((k) => BAD_UIDS.includes(k) || k === longUid)).toEqual([]);
    const tenantPods = (await client.list<PodObj>(paths.pods(tenant.ns))).items;
    expect(tenantPods.filter((p) => p.metadata?.deletionTimestamp !== undefined)).toEqual([]);
    expect(tenantPods).toHaveLength(TENANT_CHIPS.length);
    await eventually(async () => (await metrics.jobsRefused.get()).values.find((v) => v.labels.reason === 'name')?.value === 1, 15_000);
    await eventually(async () => (await metrics.jobIdentityRefused.get()).values.find((v) => v.labels.reason === 'owner_not_found')?.value === BAD_UIDS.length, 30_000);
    await eventually(async () => (await podGroupEvents(client, tenant.ns, 'evil-0')).some((e) => e.reason === 'JobIdentityRefused'), 30_000);
    await eventually(async () => (await podGroupEvents(client, tenant.ns, 'evil-long')).some((e) => e.reason === 'JobIdentityRefused'), 10_000);
  }, 180_000);
});

describe('tenant isolation: the shared job journal with --refuse-malformed-job-identity=false (ClusterD)', () => {
  const h = jobsHarness();
  const { client } = h;

  it('the tenant\'s job whose name cannot name its objects is acted on as ClusterD would; made-up owners stay refused; the other job is not delayed', async () => {
    const world = await h.startWorld({ nodes: 1, prefix: 'tjcd' });
    const { metrics } = await h.startManager(['--grpc-port=0', '--refuse-malformed-job-identity=false']);
    const { ns } = world;
    const node = world.nodes[0]!;
    const tenant = await newTenant(client, 'tjcd-tenant');
    tenantNamespaces.push(tenant.ns);
    await tenantJobs(tenant.client, tenant.ns, node);
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'victim', replicas: 1, npus: 2, labels: { 'fault-scheduling': 'force' } }));
    const uid = job.metadata!.uid!;
    const [victim] = await runningPods(client, ns, 'victim', 1);
    const t0 = Date.now();
    await Promise.all([...TENANT_CHIPS, npusOf(victim!)[0]!].map((npu) => world.dp.injectChipFault({ node, npu, code: '80E18402', level: 'SeparateNPU' })));
    await eventually(() => world.peer.goneAtMs(uidOf(victim!)), 30_000, 50);
    expect(world.peer.goneAtMs(uidOf(victim!))! - t0).toBeLessThan(5_000);
    await eventually(async () => ((await jobState(client, uid))?.state.acted.length ?? 0) > 0, 10_000);
    // The long-named job is acted on (its pod deleted), nothing refused for its name; the made-up
    // owners are no jobs whatever this flag says, so their pods stay and no key of theirs is written.
    await eventually(async () => (await client.getOrUndefined<PodObj>(paths.pod(tenant.ns, 'evil-long-worker-0')))?.metadata?.deletionTimestamp !== undefined
      || (await client.getOrUndefined<PodObj>(paths.pod(tenant.ns, 'evil-long-worker-0'))) === undefined, 15_000);
    const pods = (await client.list<PodObj>(paths.pods(tenant.ns))).items.filter((p) => p.metadata?.name !== 'evil-long-worker-0');
    expect(pods.filter((p) => p.metadata?.deletionTimestamp !== undefined)).toEqual([]);
    expect((await journalKeys(client)).filter((k) => BAD_UIDS.includes(k))).toEqual([]);
    expect((await metrics.jobsRefused.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
    expect((await metrics.jobJournalKeyFailures.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
  }, 180_000);
});

describe('damaged state: an unreadable journal record', () => {
  const h = jobsHarness();
  const { client } = h;
  const SHARD = journalCmName(7); // a shard of its own, so other tests' records stay out of it
  afterAll(async () => { await client.delete(paths.configMap(JOB_STATE_NAMESPACE, SHARD)).catch(() => undefined); });

  it('names that one job\'s record and a command that drops only it; the job is not decided until then, its shard neighbour keeps its record', async () => {
    const world = await h.startWorld({ nodes: 1, prefix: 'tdamaged' });
    const { ns } = world;
    const make = async (name: string) => {
      const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name, replicas: 1, npus: 2, labels: { 'fault-scheduling': 'force' } }));
      return { uid: job.metadata!.uid!, key: `${ns}/${name}-${job.metadata!.uid!}`, pod: (await runningPods(client, ns, name, 1))[0]! };
    };
    const damaged = await make('damaged');
    const neighbour = await make('neighbour');
    const neighbourText = encodeJobState({ version: JOB_STATE_VERSION, jobKey: neighbour.key, jobUid: neighbour.uid, state: { jobUid: neighbour.uid, generation: 1, acted: [`${neighbour.uid}/g1/job`] } });
    const garbage = '{"version":1,"jobKey":"trunc';
    await client.create(paths.configMaps(JOB_STATE_NAMESPACE), {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: SHARD, namespace: JOB_STATE_NAMESPACE, labels: { ...JOB_JOURNAL_LABELS } },
      data: { [damaged.uid]: garbage, [neighbour.uid]: neighbourText },
    });
    const shard = async () => (await client.getOrUndefined<ConfigMap>(paths.configMap(JOB_STATE_NAMESPACE, SHARD)))?.data ?? {};

    const lines: LogLine[] = [];
    const metrics = new Metrics({ processMetrics: false });
    const manager = new Manager({ clock: realClock, client, log: recordingLogger(lines), metrics, options: parseOptions([...BASE_ARGS, '--grpc-port=0'], {}) });
    try {
      await manager.start();
      await world.dp.injectChipFault({ node: damaged.pod.spec!.nodeName!, npu: npusOf(damaged.pod)[0]!, code: '80E18402', level: 'SeparateNPU' });
      const line = await eventually(() => lines.find((l) => l.msg.startsWith('job state unreadable') && l.job === damaged.key), 15_000);
      const remedy = String(line.remedy);
      expect(line.configMap).toBe(SHARD);
      expect(line.dataKey).toBe(damaged.uid);
      expect(remedy).toBe(`kubectl -n mindx-dl patch configmap ${SHARD} --type=json -p '[{"op":"remove","path":"/data/${damaged.uid}"}]'`);
      expect(lines.some((l) => /delete (the )?ConfigMap/i.test(`${l.msg} ${String(l.remedy ?? '')}`))).toBe(false);
      await eventually(async () => (await podGroupEvents(client, ns, `damaged-${damaged.uid}`)).some((e) => e.reason === 'JobStateUnreadable' && (e.message ?? '').includes(remedy)), 10_000);
      expect((await metrics.jobStateUnreadable.get()).values[0]?.value).toBe(1);

      // Not decided meanwhile (the record may hold a restart already done): its pod stays, the shard is untouched.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(world.peer.goneAtMs(uidOf(damaged.pod))).toBeUndefined();
      expect(await shard()).toEqual({ [damaged.uid]: garbage, [neighbour.uid]: neighbourText });

      // The remedy, exactly as logged: only that key goes; the job is then decided with no state.
      const patch = /-p '(.*)'$/.exec(remedy)![1]!;
      await client.patch(paths.configMap(JOB_STATE_NAMESPACE, SHARD), JSON.parse(patch), 'json');
      await eventually(() => world.peer.goneAtMs(uidOf(damaged.pod)), 20_000);
      const record = await eventually(async () => (await jobState(client, damaged.uid))?.state.acted.length ? jobState(client, damaged.uid) : undefined, 10_000);
      expect(record?.jobKey).toBe(damaged.key);
      expect((await shard())[neighbour.uid]).toBe(neighbourText);
    } finally {
      await manager.stop();
    }
  }, 120_000);
});
