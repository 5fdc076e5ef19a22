/**
 * Tenant isolation, bounded caches and outputs (README "Threat model"): a namespace-scoped tenant
 * (test/support/tenant.ts) creates ConfigMaps labelled `outside-job-info=true` (the label of
 * ClusterD's job summaries, which the controller watches in every namespace) and Volcano Jobs
 * with a 240 KB `custom-job-id` annotation. The controller's caches keep only what it reads of
 * them (controllers/sources/cache-shapes.ts), and `mindx-dl/current-job-statistic` keeps being
 * written for the other jobs. Likewise a PodGroup whose status (the tenant's to write: no status
 * subresource) carries a 1.1 MB condition message: `scheduling-exception-report` keeps being written.
 */
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import type { Reflector } from '../../runtime/reflector.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { JOB_STATISTIC_CM_NAME, parseJobStatistics } from '../../schemas/job-statistic/job-statistic.ts';
import { SCHEDULING_EXCEPTION_CM_NAME } from '../../schemas/scheduling-exception/scheduling-exception.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { adminClient, ensureNamespace, eventually, newNamespace } from '../support/cluster.ts';
import { newTenant, removeJobs, type Tenant } from '../support/tenant.ts';
import { realClock } from '../../runtime/clock.ts';

/** What a cache holds of one namespace, in bytes of JSON (the observable: no RSS). */
const cachedBytes = (r: Reflector<KubeObject>, ns: string): number =>
  [...r.store.entries()].filter(([k]) => k.startsWith(`${ns}/`)).reduce((n, [, o]) => n + JSON.stringify(o).length, 0);

const vcJob = (ns: string, name: string, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
  metadata: { name, namespace: ns, annotations },
  spec: { minAvailable: 1, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: 1, template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } } }] },
});

describe('tenant: bounded caches and outputs', () => {
  const admin = adminClient();
  const metrics = new Metrics({ processMetrics: false });
  const lines: LogLine[] = [];
  let manager: Manager;
  let tenant: Tenant;
  let t: KubeClient;
  let csNs = '';

  beforeAll(async () => {
    await ensureNamespace(admin, 'mindx-dl');
    tenant = await newTenant(admin, 'bounds');
    t = tenant.client;
    csNs = await newNamespace(admin, 'cs');
    manager = new Manager({ clock: realClock, client: admin, log: recordingLogger(lines), metrics, options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', `--cluster-system-namespace=${csNs}`], {}) });
    await manager.start();
  }, 60_000);

  const victims: string[] = [];
  afterAll(async () => {
    await manager.stop();
    await removeJobs(admin, [tenant.ns, ...victims]);
    await admin.delete(`/api/v1/namespaces/${tenant.ns}`).catch(() => undefined);
  });

  it('outside-job-info ConfigMaps of a tenant: only job-summary-* names are cached, as metadata and a digest', async () => {
    const big = 'x'.repeat(900 * 1024);
    const note = 'n'.repeat(200 * 1024);
    const cm = (name: string): ConfigMap => ({
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name, namespace: tenant.ns, labels: { 'outside-job-info': 'true', mine: 'yes' }, annotations: { note } },
      data: { 'hccl.json': big },
    });
    for (let i = 0; i < 5; i++) await t.create(paths.configMaps(tenant.ns), cm(`flood-${i}`));
    await t.create(paths.configMaps(tenant.ns), cm('job-summary-evil'));
    const store = manager.sources.jobSummaryConfigMaps;
    await eventually(() => store.get(`${tenant.ns}/job-summary-evil`) !== undefined, 20_000);
    const kept = [...store.store.keys()].filter((k) => k.startsWith(`${tenant.ns}/`));
    expect(kept).toEqual([`${tenant.ns}/job-summary-evil`]);
    // 6.3 MB created; one object of metadata and a digest kept.
    expect(cachedBytes(store as Reflector<KubeObject>, tenant.ns)).toBeLessThan(1_024);
  }, 60_000);

  it('a 240 KB custom-job-id: the job cache keeps no more than the bound, and current-job-statistic keeps updating for other jobs', async () => {
    const huge = 'c'.repeat(240 * 1024);
    // Five jobs: 1.2 MB of customID, past the 1 MiB a ConfigMap may hold.
    for (let i = 0; i < 5; i++) await t.create(paths.vcJobs(tenant.ns), vcJob(tenant.ns, `huge-${i}`, { 'custom-job-id': huge }));
    const jobs = manager.sources.vcJobs;
    await eventually(() => [...jobs.store.keys()].filter((k) => k.startsWith(`${tenant.ns}/huge-`)).length === 5, 20_000);
    expect(cachedBytes(jobs as Reflector<KubeObject>, tenant.ns)).toBeLessThan(5 * 2_048);

    const otherNs = await newNamespace(admin, 'victim');
    victims.push(otherNs);
    const victim = await admin.create<KubeObject>(paths.vcJobs(otherNs), vcJob(otherNs, 'victim', { 'custom-job-id': 'platform-42' }));
    const uid = victim.metadata!.uid!;
    const statistic = await eventually(async () => {
      const cm = await admin.getOrUndefined<ConfigMap>(paths.configMap('mindx-dl', JOB_STATISTIC_CM_NAME));
      const p = parseJobStatistics(cm?.data);
      return p.ok && p.entries.some((e) => e.id === uid) ? p.entries : undefined;
    }, 30_000);
    expect(statistic.find((e) => e.id === uid)?.customId).toBe('platform-42');
    // The tenant's jobs are there, without the over-long id.
    const theirs = statistic.filter((e) => e.customId !== 'platform-42' && e.customId.startsWith('c'));
    expect(theirs).toEqual([]);
    expect(lines.find((l) => l.msg.startsWith('custom-job-id too long'))).toMatchObject({ level: 'warn', maxChars: 253 });
  }, 90_000);

  it('a PodGroup condition message of 1.1 MB: the PodGroup cache keeps it cut, and scheduling-exception-report keeps updating for other jobs', async () => {
    const job = await t.create<KubeObject>(paths.vcJobs(tenant.ns), vcJob(tenant.ns, 'noisy'));
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'noisy', uid: job.metadata!.uid!, controller: true };
    await t.create(paths.podGroups(tenant.ns), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: 'noisy-pg', namespace: tenant.ns, ownerReferences: [owner] },
      spec: { minMember: 1, queue: 'default' },
      status: { phase: 'Pending', conditions: [{ type: 'Unschedulable', status: 'True', reason: 'JobEnqueueFailed', message: 'm'.repeat(1_100_000) }] },
    });
    const pgs = manager.sources.podGroups;
    await eventually(() => pgs.get(`${tenant.ns}/noisy-pg`) !== undefined, 20_000);
    expect(cachedBytes(pgs as Reflector<KubeObject>, tenant.ns)).toBeLessThan(8_192);

    const otherNs = await newNamespace(admin, 'victim');
    victims.push(otherNs);
    const victim = await admin.create<KubeObject>(paths.vcJobs(otherNs), vcJob(otherNs, 'quiet'));
    const report = await eventually(async () => {
      const cm = await admin.getOrUndefined<ConfigMap>(paths.configMap(csNs, SCHEDULING_EXCEPTION_CM_NAME));
      return cm?.data?.[`quiet.${victim.metadata!.uid!}`] !== undefined ? cm.data : undefined;
    }, 40_000);
    const noisy = JSON.parse(report[`noisy.${job.metadata!.uid!}`] ?? '{}') as { conditions?: { reason: string; message: string } };
    expect(noisy.conditions?.reason).toBe('JobEnqueueFailed');
    expect(noisy.conditions?.message).toBe(`${'m'.repeat(4096)} [cut]`);
  }, 90_000);
});
