/**
 * A hostile tenant for the tenant-isolation suite (README "Threat model"): a fresh namespace and a
 * ServiceAccount in it whose only rights are a Role in that namespace over what an ordinary
 * training user creates (Pods, ConfigMaps, Volcano Jobs, PodGroups, AscendJobs, Events). Its client
 * carries a token from the TokenRequest API, so the real apiserver's RBAC decides what it may do;
 * the test then asserts what the controller lets that reach.
 */
import { paths, type HttpKubeClient, type KubeClient } from '../../runtime/kube-client.ts';
import { eventually, newNamespace, serviceAccountClient } from './cluster.ts';

export interface Tenant {
  readonly ns: string;
  /** Acts as system:serviceaccount:<ns>:tenant, with the Role below only. */
  readonly client: HttpKubeClient;
}

/** What a namespace-scoped user may do in its own namespace, and nothing cluster-wide. */
export const TENANT_RULES = [
  { apiGroups: [''], resources: ['pods', 'configmaps', 'events'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: ['batch.volcano.sh'], resources: ['jobs'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: ['scheduling.volcano.sh'], resources: ['podgroups'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: ['mindxdl.gitee.com'], resources: ['ascendjobs'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
] as const;

/** A new namespace with a ServiceAccount `tenant` bound to TENANT_RULES there; its client. */
export async function newTenant(admin: HttpKubeClient, prefix = 'tenant'): Promise<Tenant> {
  const ns = await newNamespace(admin, prefix);
  await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'tenant', namespace: ns }, rules: TENANT_RULES,
  });
  await admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'tenant', namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant' },
    subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace: ns }],
  });
  const client = await serviceAccountClient(admin, ns, 'tenant');
  // The apiserver's RBAC authorizer learns the binding from its informer, a moment after the create:
  // hand the tenant over once its rights are in force, so no test reads a 403 as a finding.
  await eventually(() => client.list(paths.pods(ns)), 10_000);
  return { ns, client };
}

/**
 * Deletes the jobs a test left in these namespaces (Volcano Jobs, AscendJobs, PodGroups, Pods): the
 * apiserver is shared by every integration file and has no namespace controller, and cluster-wide
 * outputs (scheduling-exception-report, current-job-statistic) list every job that is left.
 */
export async function removeJobs(admin: KubeClient, namespaces: readonly string[]): Promise<void> {
  for (const ns of namespaces) {
    for (const kind of [paths.vcJobs(ns), paths.ascendJobs(ns), paths.podGroups(ns), paths.pods(ns)]) {
      const items = (await admin.list<{ metadata?: { name?: string } }>(kind).catch(() => ({ items: [] }))).items;
      for (const o of items) await admin.delete(`${kind}/${o.metadata!.name!}`, { gracePeriodSeconds: 0 }).catch(() => undefined);
    }
  }
}
