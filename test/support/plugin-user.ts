/**
 * The operator the `kubectl clusterd` tests act as: a ServiceAccount with a token, bound only to the
 * shipped least-privilege RBAC (cli/rbac.yaml), and ConfigMaps put as the device plugin or a hand edit would.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { paths, type HttpKubeClient, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { ensureNamespace, newNamespace } from './cluster.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

export interface PluginUser {
  /** system:serviceaccount:<ns>:<name>, what SelfSubjectReview answers. */
  readonly user: string;
  readonly token: string;
  readonly ns: string;
  readonly sa: string;
}

/** A ServiceAccount `sre` in a new namespace and a one-hour token for it; no permissions yet. */
export async function newPluginUser(admin: HttpKubeClient): Promise<PluginUser> {
  const ns = await newNamespace(admin, 'ops');
  await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sre' } });
  const tr = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${ns}/serviceaccounts/sre/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return { user: `system:serviceaccount:${ns}:sre`, token: tr.status.token, ns, sa: 'sre' };
}

/**
 * cli/rbac.yaml applied as shipped, with `cluster-system` replaced by `csNs`, each name suffixed with
 * `id`, bound to the user. `controllerNs`: the Roles of mindx-dl also there (a breaker of the test's own).
 */
export async function grantPluginRbac(client: KubeClient, user: PluginUser, csNs: string, id: string, controllerNs?: string): Promise<void> {
  const docs = parseAllDocuments(readFileSync(join(REPO, 'cli', 'rbac.yaml'), 'utf8')).map((d) => d.toJS() as KubeObject & { kind: string; metadata: { name: string; namespace?: string } });
  const subjects = [{ kind: 'ServiceAccount', name: user.sa, namespace: user.ns }];
  const copies = controllerNs === undefined ? [] : docs.filter((d) => d.metadata.namespace === 'mindx-dl').map((d) => ({ ...d, metadata: { ...d.metadata, namespace: controllerNs } }));
  for (const d of [...docs, ...copies]) {
    const ns = d.metadata.namespace === 'cluster-system' ? csNs : d.metadata.namespace;
    const name = `${d.metadata.name}-${id}`;
    if (d.kind === 'ClusterRole') {
      await client.create('/apis/rbac.authorization.k8s.io/v1/clusterroles', { ...d, metadata: { name } });
      await client.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects,
      } as KubeObject);
    } else {
      await ensureNamespace(client, ns!);
      await client.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, { ...d, metadata: { name, namespace: ns } });
      await client.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace: ns }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects,
      } as KubeObject);
    }
  }
}

/** Creates the ConfigMap, or replaces its data. */
export async function putCm(client: KubeClient, ns: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}): Promise<void> {
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
  if (existing === undefined) await client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels }, data });
  else await client.replace(paths.configMap(ns, name), { ...existing, data });
}
