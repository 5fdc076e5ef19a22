/** What an integration test uses to reach the shared real control plane. */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { HttpKubeClient, paths, type KubeClient } from '../../runtime/kube-client.ts';
import { kubeconfigYaml, type ControlPlaneInfo } from '../../tools/control-plane/control-plane.ts';

export function controlPlaneInfo(): ControlPlaneInfo {
  const file = process.env.CLUSTERD_TS_CONTROL_PLANE;
  if (file === undefined) throw new Error('no control plane: run integration tests through jest --selectProjects integration');
  return JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneInfo;
}

export function adminClient(info = controlPlaneInfo()): HttpKubeClient {
  return HttpKubeClient.fromString(kubeconfigYaml(info.servers[0]!, info.adminToken));
}

/** Creates a fresh namespace (one per test, never deleted: there is no namespace controller). */
export async function newNamespace(client: KubeClient, prefix = 't'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}

/** Creates namespace ns if missing. */
export async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  if ((await client.getOrUndefined(`/api/v1/namespaces/${name}`)) === undefined) {
    await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }
}

/** A client acting as ServiceAccount ns/name, with a token from the TokenRequest API. */
export async function serviceAccountClient(admin: HttpKubeClient, ns: string, name: string, info = controlPlaneInfo()): Promise<HttpKubeClient> {
  if ((await admin.getOrUndefined(`/api/v1/namespaces/${ns}/serviceaccounts/${name}`)) === undefined) {
    await admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
  }
  const tr = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return HttpKubeClient.fromString(kubeconfigYaml(info.servers[0]!, tr.status.token, `system:serviceaccount:${ns}:${name}`));
}

/** Polls until check returns a value other than undefined/false, or fails with the last error. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
