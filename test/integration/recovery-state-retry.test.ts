/**
 * The recovery state of a registered job reaches its ConfigMap even when the apiserver refuses the
 * write for a while (reconcilers/recovery-state.reconciler.ts): the write is retried through the work
 * queue until it lands. The store it replaced retried 5 times on a private timer and then dropped the
 * state, so a failover after such an outage forgot the registration.
 *
 * The refusal is the apiserver's own: a ValidatingAdmissionPolicy that denies writes of exactly this
 * job's ConfigMap (and a probe), so no other test on the shared control plane is affected.
 */
import { Client, credentials } from '@grpc/grpc-js';
import type { Manager } from '../../controllers/manager.ts';
import { unaryCall } from '../../grpc/testing.ts';
import { ApiError, paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { RECOVERY_STATE_KEY, RECOVERY_STATE_NAMESPACE, parseRecoveryRecord, recoveryStateCmName } from '../../reconcilers/recovery-state.reconciler.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, rand, startManager } from './recovery-fixtures.ts';

const VAP = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';
const VAP_BINDING = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';

describe('recovery state persistence', () => {
  const client = adminClient();

  it('a registration whose state write is refused more than 5 times is stored once the apiserver accepts it again', async () => {
    const nodes = await fakeNodes(client, `rsr-${rand()}`, 2);
    const job = await createJob(client, { ns: await newNamespace(client, 'rsr'), nodes, labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': 'retry,recover' } });
    const name = recoveryStateCmName(job.uid);
    const probe = `clusterd-ts-test-probe-${rand()}`;
    const policy = `clusterd-ts-test-refuse-${rand()}`;
    await client.create(VAP, {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: policy },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
        validations: [{ expression: `!(object.metadata.name in ['${name}', '${probe}'])`, message: 'refused by the test' }],
      },
    });
    await client.create(VAP_BINDING, {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: policy },
      spec: { policyName: policy, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': RECOVERY_STATE_NAMESPACE } } } },
    });
    let manager: Manager | undefined;
    let lifted = false;
    const lift = async (): Promise<void> => {
      if (lifted) return;
      lifted = true;
      await client.delete(`${VAP_BINDING}/${policy}`).catch(() => undefined);
      await client.delete(`${VAP}/${policy}`).catch(() => undefined);
    };
    try {
      // The policy is in force once the probe is refused (the apiserver loads policies asynchronously).
      await eventually(async () => {
        try {
          await client.create(paths.configMaps(RECOVERY_STATE_NAMESPACE), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: probe, namespace: RECOVERY_STATE_NAMESPACE } });
          await client.delete(paths.configMap(RECOVERY_STATE_NAMESPACE, probe));
          return false;
        } catch (e) {
          return e instanceof ApiError && e.statusCode >= 400 && e.statusCode < 500 && e.statusCode !== 409;
        }
      }, 15_000, 200);

      const started = await startManager(client);
      manager = started.manager;
      const m = manager;
      await eventually(() => m.recovery.lookup(job.uid) !== undefined);
      const refused = async (): Promise<number> =>
        (await started.metrics.apiWrites.get()).values.filter((v) => v.labels.kind === 'recovery_state' && v.labels.result !== 'success').reduce((a, v) => a + v.value, 0);

      const c = new Client(started.target, credentials.createInsecure());
      try {
        expect((await unaryCall<{ code: number }>(c, 'recover', 'Init', { jobId: job.uid, role: 'taskd' })).code).toBe(0);
        const registered = unaryCall(c, 'recover', 'Register', { jobId: job.uid, role: 'taskd' });
        // Six refused writes: the old store's first try and its 5 retries, after which it dropped the state.
        await eventually(async () => (await refused()) >= 6, 20_000, 100);
        expect(await registered).toEqual({ code: 0, info: 'register success' });
        expect(await client.getOrUndefined(paths.configMap(RECOVERY_STATE_NAMESPACE, name))).toBeUndefined();
        await lift();
        const cm = await eventually(() => client.getOrUndefined<ConfigMap>(paths.configMap(RECOVERY_STATE_NAMESPACE, name)), 30_000, 200);
        const stored = parseRecoveryRecord(cm.data?.[RECOVERY_STATE_KEY]);
        expect(stored.ok && stored.value.registered).toBe(true);
        expect(stored.ok && stored.value.jobId).toBe(job.uid);
      } finally {
        c.close();
      }
    } finally {
      await lift();
      await manager?.stop();
      await cleanUp(client, job, nodes);
    }
  }, 90_000);
});
