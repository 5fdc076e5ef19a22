/**
 * The declared flows at start, on the in-memory apiserver and a manual clock: the filters' and the
 * relation faults' memories are each handed back by their owner (`sideState`), so restoring the
 * filters' memory does not overwrite the relation faults' persisted one before they restore it.
 * Building and starting on an empty cluster never collates strings: the first localeCompare loads
 * ICU's collator, about 3 MiB resident for the life of the process (docs/benchmarks.md).
 */
import { jest } from '@jest/globals';
import { paths, type KubeObject } from '../runtime/kube-client.ts';
import { Manager } from './manager.ts';
import { parseOptions } from './options.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { MemoryApiServer } from '../test/support/sim/memory-apiserver.ts';
import { ManualClock } from '../test/support/manual-clock.ts';
import { ESCALATION_STATE_CM_NAME, ESCALATION_STATE_KEY, emptyEscalationStateDoc, type RelationJobState } from '../schemas/escalation-state/escalation-state.ts';

const NS = 'team';

/** The Manager as production builds it, on an in-memory apiserver, and a driver of its start/stop in virtual time. */
function virtualManager(server: MemoryApiServer, clock: ManualClock) {
  const m = new Manager({
    clock, client: server.client('clusterd-ts'), log: silentLogger, metrics: new Metrics({ processMetrics: false }),
    options: parseOptions(['--http-port=0', '--http-host=127.0.0.1', '--grpc-port=0', '--grpc-host=127.0.0.1'], {}),
  });
  const run = async (p: Promise<void>): Promise<void> => {
    let done = false;
    void p.finally(() => { done = true; });
    for (let i = 0; i < 200 && !done; i++) await clock.run(10);
    await p;
  };
  return { m, run };
}

describe('the built Manager at start', () => {
  it('restores the relation faults\' persisted memory (the filters\' restore hands back only its own)', async () => {
    const server = new MemoryApiServer();
    const admin = server.client('admin');
    const clock = new ManualClock();
    for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system', NS]) await admin.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const vc = await admin.create<KubeObject>(paths.vcJobs(NS), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: 'train', namespace: NS }, spec: { minAvailable: 1, tasks: [{ name: 'worker', replicas: 1 }] } });
    const uid = vc.metadata!.uid!;
    const pgName = `train-${uid}`;
    await admin.create<KubeObject>(paths.podGroups(NS), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: pgName, namespace: NS, ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'train', uid, controller: true }] },
      spec: { minMember: 1 }, status: { phase: 'Running' },
    });
    const persisted: RelationJobState = { firstSeenMs: clock.now() - 60_000, a3: false, candidates: [], triggers: [], strategies: { 'node-1': 'Separate' } };
    const doc = { ...emptyEscalationStateDoc(clock.now() - 1_000), relation: { jobs: { [`${NS}/${pgName}`]: persisted } } };
    await admin.create(paths.configMaps('cluster-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ESCALATION_STATE_CM_NAME, namespace: 'cluster-system' }, data: { [ESCALATION_STATE_KEY]: JSON.stringify(doc) } });

    const { m, run } = virtualManager(server, clock);
    try {
      await run(m.start());
      expect(m.relations.state().jobs[`${NS}/${pgName}`]?.strategies).toEqual({ 'node-1': 'Separate' });
      expect(m.faultPolicy.sideState.relation.jobs[`${NS}/${pgName}`]?.strategies).toEqual({ 'node-1': 'Separate' });
    } finally {
      await run(m.stop());
      server.close();
    }
  }, 30_000);

  it('never loads ICU\'s collator (no localeCompare) while building and starting on an empty cluster', async () => {
    const server = new MemoryApiServer();
    const admin = server.client('admin');
    const clock = new ManualClock();
    for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system']) await admin.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const collate = jest.spyOn(String.prototype, 'localeCompare');
    const { m, run } = virtualManager(server, clock);
    try {
      await run(m.start());
      expect(m.graph.edges.length).toBeGreaterThan(0);
      expect(collate).not.toHaveBeenCalled();
    } finally {
      collate.mockRestore();
      await run(m.stop());
      server.close();
    }
  }, 30_000);
});
