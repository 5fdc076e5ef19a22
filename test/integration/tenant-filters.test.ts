/**
 * Tenant isolation: a job's fault filter (`huawei.com/schedule.filter.*` on its PodGroup) acts only
 * on chips the job's pods legitimately hold (policy/jobs/npu-claims.ts, policy/filters/fault-filters.ts).
 *
 * The tenant acts under its namespace-scoped ServiceAccount (test/support/tenant.ts): a Volcano Job
 * of its own, a PodGroup owned by it with `faultLevel: SeparateNPU:86400`, and a pod bound to the
 * victim's node (spec.nodeName, no NPU request) whose self-written `huawei.com/AscendReal` names every
 * chip of the node. Before this was enforced, the filter hid SeparateNPU faults on the victim's chip
 * and on free chips from cluster-info (Volcano would place new pods on them) and from the victim's
 * decision (no restart). Now: the victim's fault stays in cluster-info and the victim restarts; a free
 * chip's fault stays in cluster-info; a legitimate filter on a chip its job holds still hides.
 */
import type { Subscription } from 'rxjs';
import { codesIn, deviceEntry } from '../support/cluster-info-read.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { newTenant, removeJobs, type Tenant } from '../support/tenant.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { BASE_ARGS, npusOf, rescheduleReasonOf } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const ALL_CHIPS = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);

describe('tenant fault filters: a filter hides faults only on chips its job holds', () => {
  const admin = adminClient();
  const lines: LogLine[] = [];
  const metrics = new Metrics({ processMetrics: false });
  let world: World;
  let tenant: Tenant;
  let manager: Manager;
  let node = '';
  let watch: Subscription | undefined;

  beforeAll(async () => {
    world = await startWorld(admin, { nodes: 1, prefix: 'tflt' });
    node = world.nodes[0]!;
    const csNs = await newNamespace(admin, 'cs');
    tenant = await newTenant(admin);
    manager = new Manager({ clock: realClock,
      client: admin, log: recordingLogger(lines), metrics,
      options: parseOptions([...BASE_ARGS, '--grpc-port=0', `--cluster-system-namespace=${csNs}`], {}),
    });
    await manager.start();
  }, 60_000);

  afterAll(async () => {
    watch?.unsubscribe();
    await manager?.stop();
    await world?.stop();
    if (tenant !== undefined) await removeJobs(admin, [tenant.ns]);
    const t = tenant?.client;
    if (t !== undefined) {
      for (const p of (await t.list<KubeObject>(paths.pods(tenant.ns))).items) await t.delete(paths.pod(tenant.ns, p.metadata!.name!), { gracePeriodSeconds: 0 }).catch(() => undefined);
      for (const g of (await t.list<KubeObject>(paths.podGroups(tenant.ns))).items) await t.delete(`${paths.podGroups(tenant.ns)}/${g.metadata!.name!}`).catch(() => undefined);
    }
  });

  async function runningJob(name: string, labels: Record<string, string>, annotations: Record<string, string> = {}): Promise<{ key: string; pods: PodObj[] }> {
    const job = await admin.create(paths.vcJobs(world.ns), vcJob(world.ns, { nodeSelector: world.nodeSelector, name, replicas: 1, npus: 2, labels, annotations }));
    const pods = await eventually(async () => { const ps = await jobPods(admin, world.ns, name); return ps.length === 1 && ps.every(runningWithNpus) ? ps : undefined; }, 30_000);
    const key = `${world.ns}/${name}-${job.metadata!.uid!}`;
    await eventually(() => manager.filters.index.job(key)?.view.pods.some((p) => p.npus.length > 0));
    return { key, pods };
  }

  it('a pod with no NPU request naming the victim\'s chips hides nothing; a legitimate filter still hides its own chip', async () => {
    // The tenant, first: its own Volcano Job, a PodGroup owned by it with the filter, and a pod bound
    // to the node naming all its chips (created before the victims, so its claim is the first one).
    const tjob = await tenant.client.create(paths.vcJobs(tenant.ns), vcJob(tenant.ns, { name: 'quiet', replicas: 1, npus: 1 }));
    const pg = `quiet-${tjob.metadata!.uid!}`;
    await tenant.client.create(paths.podGroups(tenant.ns), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: {
        name: pg, namespace: tenant.ns, annotations: { 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:86400' },
        ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'quiet', uid: tjob.metadata!.uid!, controller: true }],
      },
      spec: { minMember: 1 },
    });
    await tenant.client.create(paths.pods(tenant.ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'quiet-0', namespace: tenant.ns, annotations: { 'huawei.com/AscendReal': ALL_CHIPS.join(','), 'scheduling.k8s.io/group-name': pg, 'hccl/rankIndex': '0' } },
      spec: { nodeName: node, terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox' }] },
    });
    await eventually(async () => (await tenant.client.get<PodObj>(paths.pod(tenant.ns, 'quiet-0'))).status?.phase === 'Running', 30_000);
    await eventually(() => manager.filters.index.job(`${tenant.ns}/${pg}`)?.view.pods.length === 1);

    const victim = await runningJob('victim', { 'fault-scheduling': 'force' });
    const legit = await runningJob('legit', {}, { 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:600' });
    const vChip = npusOf(victim.pods[0]!)[0]!;
    const lChip = npusOf(legit.pods[0]!)[0]!;
    const held = new Set([...npusOf(victim.pods[0]!), ...npusOf(legit.pods[0]!)]);
    const free = [...ALL_CHIPS].reverse().find((c) => !held.has(c))!;

    // The victim's chip: in cluster-info, and the victim restarts with the reason written.
    await world.dp.injectChipFault({ node, npu: vChip, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => codesIn(await deviceEntry(admin, node), vChip).includes('80E18402'), 10_000);
    const reason = await eventually(() => rescheduleReasonOf(admin, victim.key), 15_000);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask?.[0]).toMatchObject({ RescheduleReason: 'CardUnhealthy', NodeName: node });
    expect(world.peer.goneAtMs(victim.pods[0]!.metadata!.uid!)).toBeDefined();

    // A free chip: in cluster-info (Volcano must not place pods on it).
    await world.dp.injectChipFault({ node, npu: free, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => codesIn(await deviceEntry(admin, node), free).includes('80E18402'), 10_000);

    // The legitimate job's own chip: its filter hides the fault (its claim is the only trusted one).
    await world.dp.injectChipFault({ node, npu: lChip, code: '80E18402', level: 'SeparateNPU' });
    const hidden = await eventually(() => lines.find((l) => l.msg === 'fault hidden from the scheduler by a filter' && l.node === node && l.npu === lChip));
    expect(hidden).toMatchObject({ filter: 'custom-filter', verdict: 'hide' });
    expect(codesIn(await deviceEntry(admin, node), lChip)).toEqual([]);
    expect(manager.recovery.jobView(node).some((r) => r.device === lChip && r.code === '80E18402')).toBe(true);

    // The tenant's claim was refused, said so once, and counted.
    expect(lines.find((l) => l.msg === 'pod NPU claim not trusted' && l.pod === `${tenant.ns}/quiet-0`)).toMatchObject({ reason: 'no-npu-request', node });
    const refused = (await metrics.npuClaimsUntrusted.get()).values;
    expect(refused.find((v) => v.labels.reason === 'no-npu-request')?.value).toBeGreaterThanOrEqual(1);
  }, 150_000);
});
