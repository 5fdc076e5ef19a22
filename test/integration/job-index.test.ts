/**
 * One job index, owned by the sources (controllers/sources/job-index-feed.ts), on the Manager as
 * main.ts builds it: the filters, the relation faults, the jobs flow and the recovery flow read the
 * same index, and each pod event is indexed once, not once per reader.
 */
import type { Subscription } from 'rxjs';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { realClock } from '../../runtime/clock.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { removeJobs } from '../support/tenant.ts';

describe('the job index', () => {
  const client = adminClient();
  let manager: Manager;
  let ns = '';
  let podEvents = 0;
  let counting: Subscription | undefined;

  beforeAll(async () => {
    ns = await newNamespace(client, 'jidx');
    const csNs = await newNamespace(client, 'cs');
    manager = new Manager({ clock: realClock,
      client, log: silentLogger, metrics: new Metrics({ processMetrics: false }),
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', `--cluster-system-namespace=${csNs}`], {}),
    });
    // Every pod event the informer emits, from its initial list on.
    counting = manager.sources.pods.events$.subscribe(() => { podEvents++; });
    await manager.start();
  }, 60_000);

  afterAll(async () => {
    counting?.unsubscribe();
    await manager?.stop();
    await removeJobs(client, [ns]);
  });

  /** The indexes the readers of jobs hold (one, shared). */
  const readers = () => ({ filters: manager.filters.index, relations: manager.relations.index, jobs: manager.jobs.index, recovery: manager.recovery.index });

  it('every reader of jobs holds the sources\' one index, and each pod event is indexed once', async () => {
    const job = await client.create<KubeObject>(paths.vcJobs(ns), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: 'llama', namespace: ns }, spec: { minAvailable: 2, tasks: [] } });
    const uid = job.metadata!.uid!;
    const key = `${ns}/llama-${uid}`;
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'llama', uid, controller: true };
    await client.create(paths.podGroups(ns), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: `llama-${uid}`, namespace: ns, ownerReferences: [owner] }, spec: { minMember: 2 },
    });
    for (const rank of [0, 1]) {
      await client.create(paths.pods(ns), {
        apiVersion: 'v1', kind: 'Pod',
        metadata: { name: `llama-worker-${rank}`, namespace: ns, ownerReferences: [owner], annotations: { 'hccl/rankIndex': String(rank), 'huawei.com/AscendReal': `Ascend910-${rank}` } },
        spec: { nodeName: `jidx-node-${rank}`, restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'train', image: 'training:latest' }] },
      });
    }
    await eventually(() => manager.jobs.index.job(key)?.view.pods.length === 2);
    await client.patch(paths.pod(ns, 'llama-worker-1'), { metadata: { labels: { touched: 'yes' } } });
    await eventually(() => manager.sources.pods.get(`${ns}/llama-worker-1`)?.metadata?.labels?.['touched'] === 'yes');

    // Indexed once per event: the pod events applied by all the readers' indexes together are the informer's.
    const applied = [...new Set(Object.values(readers()))].reduce((n, index) => n + index.eventsApplied.pods, 0);
    expect(podEvents).toBeGreaterThanOrEqual(3);
    expect(applied).toBe(podEvents);
    // One instance: the sources' own.
    const shared = manager.sources.jobIndex.index;
    expect(Object.entries(readers()).filter(([, index]) => index !== shared).map(([reader]) => reader)).toEqual([]);
    // The PodGroup's claim is indexed for the recovery flow's jobId lookups from the same events.
    expect(manager.recovery.lookup(uid)?.key).toBe(key);
  }, 60_000);
});
