/**
 * Tenant isolation, job identity (README "Threat model"): a tenant that may create PodGroups and
 * Pods in its own namespace only writes ownerReferences naming another job's UID. A job is the
 * Volcano Job or AscendJob that exists with the namespace, name and UID the PodGroup claims
 * (policy/jobs/job-identity.ts); the tenant's PodGroup is none, so it is refused (counted, an Event
 * on it) and never reads or writes the victim's journal record, DecisionRecords, job summary or gRPC
 * mapping, not when it faults, not when it goes away.
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { decisionRecordsPath } from '../../schemas/decision-record/decision-record.ts';
import { adminClient, eventually } from '../support/cluster.ts';
import { newTenant, removeJobs } from '../support/tenant.ts';
import { jobPods, vcJob } from '../../tools/job-peer/world.ts';
import { jobsHarness, jobState, npusOf, podGroupEvents, runningPods, sleep, uidOf } from '../support/jobs-support.ts';

describe('tenant isolation: job identity', () => {
  const h = jobsHarness();
  const tenantNamespaces: string[] = [];
  afterAll(async () => { await removeJobs(adminClient(), tenantNamespaces); });
  const { client: admin } = h;

  const recordNames = async (ns: string): Promise<string[]> =>
    (await admin.list<KubeObject>(decisionRecordsPath(ns))).items.map((r) => r.metadata?.name ?? '').sort();
  /** ClusterD's job summaries (`job-summary-<job>`, keyed by the owner UID as ClusterD keys them) in a namespace. */
  const summaries = async (ns: string): Promise<Record<string, Record<string, string> | undefined>> =>
    Object.fromEntries((await admin.list<KubeObject & { data?: Record<string, string> }>(paths.configMaps(ns), { labelSelector: 'outside-job-info=true' })).items.map((c) => [c.metadata?.name ?? '', c.data]));

  it('a PodGroup claiming another job\'s UID is refused and leaves that job\'s journal, history and gRPC mapping alone', async () => {
    const world = await h.startWorld({ nodes: 3, prefix: 'tid' });
    // One record per job: a record of the tenant's under the victim's UID would prune the victim's.
    const { manager, metrics } = await h.startManager(['--decision-history-per-job=1']);
    const { ns } = world;

    // The victim: a Volcano Job restarted once for a chip fault (journal record, DecisionRecord).
    const job = await admin.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'victim', replicas: 1, npus: 8, labels: { 'fault-scheduling': 'force' } }));
    const victimUid = job.metadata!.uid!;
    const victimPg = `victim-${victimUid}`;
    const victimKey = `${ns}/${victimPg}`;
    const [first] = await runningPods(admin, ns, 'victim', 1);
    await world.dp.injectChipFault({ node: first!.spec!.nodeName!, npu: npusOf(first!)[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => (await jobPods(admin, ns, 'victim')).every((p) => uidOf(p) !== uidOf(first!)), 20_000);
    const [second] = await runningPods(admin, ns, 'victim', 1);
    await eventually(async () => { const r = await jobState(admin, victimUid); return r !== undefined && r.pending === undefined && r.state.active === undefined; }, 15_000);
    await eventually(async () => (await recordNames(ns)).length > 0, 10_000);
    await sleep(3_000);
    const journalBefore = await jobState(admin, victimUid);
    const recordsBefore = await recordNames(ns);
    const summariesBefore = await summaries(ns);
    expect(journalBefore?.jobKey).toBe(victimKey);
    expect(manager.recovery.lookup(victimUid)?.key).toBe(victimKey);

    // The tenant: a PodGroup and a pod in its own namespace whose ownerReferences name the victim.
    const tenant = await newTenant(admin, 'tid-tenant');
    tenantNamespaces.push(tenant.ns);
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'victim', uid: victimUid, controller: true };
    const node = world.nodes.find((n) => n !== first!.spec!.nodeName && n !== second!.spec!.nodeName)!;
    await tenant.client.create(paths.podGroups(tenant.ns), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: victimPg, namespace: tenant.ns, labels: { 'fault-scheduling': 'force' }, ownerReferences: [owner] }, spec: { minMember: 1 },
    });
    await tenant.client.create(paths.pods(tenant.ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name: 'victim-worker-0', namespace: tenant.ns, ownerReferences: [owner],
        annotations: { 'hccl/rankIndex': '0', 'scheduling.k8s.io/group-name': victimPg, 'huawei.com/AscendReal': 'Ascend910-0' },
      },
      spec: { nodeName: node, restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'train', image: 'training:latest' }] },
    });
    // A fault on the chip the tenant's pod claims.
    await world.dp.injectChipFault({ node, npu: 'Ascend910-0', code: '80E18402', level: 'SeparateNPU' });
    const refused = async (): Promise<number> => (await metrics.jobIdentityRefused.get()).values.reduce((n, v) => n + v.value, 0);
    const refusedSoFar = (): Promise<number> => refused().catch(() => 0); // (the metric is new)
    const tenantPodGone = async (): Promise<boolean> => (await admin.getOrUndefined(paths.pod(tenant.ns, 'victim-worker-0'))) === undefined;
    // Whichever comes first: the controller acted for the tenant (the pod deleted) or refused it.
    await eventually(async () => (await tenantPodGone()) || (await refusedSoFar()) > 0, 20_000);
    await sleep(3_000);
    const grpcJobWhileTenant = manager.recovery.lookup(victimUid)?.key;
    const journalWhileTenant = await jobState(admin, victimUid);

    // The tenant removes its PodGroup (or a garbage collector does: its owner is not in its namespace).
    await tenant.client.delete(paths.podGroup(tenant.ns, victimPg));
    await sleep(2_000);
    // The victim's pod changes afterwards (as pods do): its job is looked at again, PodGroup and all.
    await admin.patch(paths.pod(ns, second!.metadata!.name!), { metadata: { labels: { touched: 'after-tenant' } } }, 'merge');
    await sleep(2_000);

    // Everything observed at once, so a failure shows every way the tenant got through.
    const events = await podGroupEvents(admin, tenant.ns, victimPg);
    expect({
      grpcJobWhileTenant, journalWhileTenant,
      journal: await jobState(admin, victimUid), victimRecords: await recordNames(ns), tenantRecords: await recordNames(tenant.ns),
      victimSummaries: await summaries(ns), tenantSummaries: await summaries(tenant.ns),
      grpcJob: manager.recovery.lookup(victimUid)?.key, tenantPodDeleted: await tenantPodGone(),
      refusedCounted: (await refusedSoFar()) > 0, refusedEvent: events.some((e) => e.reason === 'JobIdentityRefused'),
    }).toEqual({
      grpcJobWhileTenant: victimKey, journalWhileTenant: journalBefore,
      journal: journalBefore, victimRecords: recordsBefore, tenantRecords: [],
      victimSummaries: summariesBefore, tenantSummaries: {},
      grpcJob: victimKey, tenantPodDeleted: false,
      refusedCounted: true, refusedEvent: true,
    });
  }, 150_000);
});
