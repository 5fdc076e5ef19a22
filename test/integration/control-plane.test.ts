/** The harness itself: RBAC is on, and a test can act as any ServiceAccount. */
import { ApiError, paths } from '../../runtime/kube-client.ts';
import { adminClient, eventually, newNamespace, serviceAccountClient } from '../support/cluster.ts';

describe('test control plane', () => {
  const admin = adminClient();

  it('serves the CRDs the controller watches', async () => {
    for (const p of [paths.podGroups(), paths.vcJobs(), paths.ascendJobs(), '/apis/scheduling.volcano.sh/v1beta1/queues', '/apis/bus.volcano.sh/v1alpha1/commands']) {
      await expect(admin.list(p)).resolves.toEqual(expect.objectContaining({ items: expect.any(Array) }));
    }
  });

  it('lets a test act as a ServiceAccount, with RBAC deciding what it may do', async () => {
    const ns = await newNamespace(admin);
    const sa = await serviceAccountClient(admin, ns, 'reader');
    const denied = await sa.list(paths.pods(ns)).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(ApiError);
    expect((denied as ApiError).statusCode).toBe(403);

    await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'pod-reader' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
    });
    await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'pod-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
    });
    // The apiserver's RBAC authorizer learns a new binding from its informer, a moment after the create.
    await expect(eventually(() => sa.list(paths.pods(ns)), 10_000)).resolves.toEqual(expect.objectContaining({ items: [] }));
    const secrets = await sa.list(`/api/v1/namespaces/${ns}/secrets`).catch((e: unknown) => e);
    expect((secrets as ApiError).statusCode).toBe(403);
  });
});
