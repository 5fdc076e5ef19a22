/**
 * A Deployment's first container as a `podman run` command line, the way a kubelet would start it
 * on this host: the image, its args (the entrypoint stays the image's), env with the downward-API
 * fieldRefs resolved, the pod's and container's user and group, a read-only root filesystem when
 * the securityContext asks for it, dropped capabilities, emptyDir volumes as tmpfs, and the
 * ServiceAccount token folder with the KUBERNETES_SERVICE_* variables a pod gets. Host network: the
 * control plane listens on the host's loopback.
 */
import { readFileSync } from 'node:fs';

interface EnvVar { readonly name: string; readonly value?: string; readonly valueFrom?: { readonly fieldRef?: { readonly fieldPath: string } } }
interface SecurityContext {
  readonly runAsUser?: number; readonly runAsGroup?: number; readonly readOnlyRootFilesystem?: boolean;
  readonly allowPrivilegeEscalation?: boolean; readonly capabilities?: { readonly drop?: readonly string[] };
}
interface Container {
  readonly image: string; readonly command?: readonly string[]; readonly args?: readonly string[]; readonly env?: readonly EnvVar[];
  readonly securityContext?: SecurityContext; readonly volumeMounts?: readonly { readonly name: string; readonly mountPath: string; readonly readOnly?: boolean }[];
}
interface Volume { readonly name: string; readonly emptyDir?: { readonly sizeLimit?: string } }
export interface DeploymentSpec {
  readonly spec: { readonly template: { readonly spec: {
    readonly containers: readonly Container[]; readonly volumes?: readonly Volume[];
    readonly securityContext?: SecurityContext; readonly automountServiceAccountToken?: boolean;
  } } };
}

export interface PodSite {
  /** Container name for podman (also the pod name the downward API reports). */
  readonly name: string;
  readonly namespace: string;
  readonly nodeName: string;
  readonly podIp: string;
  /** The apiserver as a pod sees it: KUBERNETES_SERVICE_HOST / _PORT. */
  readonly apiHost: string;
  readonly apiPort: number;
  /** Folder with token, ca.crt and namespace, mounted where client libraries look for them. */
  readonly serviceAccountDir: string;
}

const SA_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The process's own soft and hard limit for one /proc/self/limits row. */
function ownLimit(row: string): string {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith(row));
  const [soft, hard] = line?.slice(row.length).trim().split(/\s+/) ?? [];
  if (soft === undefined || hard === undefined) throw new Error(`no ${row} in /proc/self/limits`);
  return `${soft}:${hard}`.replaceAll('unlimited', '-1');
}

export function podmanRunArgs(dep: DeploymentSpec, site: PodSite): string[] {
  const pod = dep.spec.template.spec;
  const c = pod.containers[0]!;
  const sc = { ...pod.securityContext, ...c.securityContext };
  const out = ['run', '--rm', '--name', site.name, '--network', 'host', '--pull', 'never'];
  // podman's defaults ask for 1,048,576 files and 4,194,304 processes, which needs CAP_SYS_RESOURCE
  // that a sandboxed host may not give; a kubelet's runtime passes the node's limits on instead.
  out.push('--ulimit', `nofile=${ownLimit('Max open files')}`, '--ulimit', 'nproc=4096:4096');
  if (sc.runAsUser !== undefined) out.push('--user', `${sc.runAsUser}${sc.runAsGroup !== undefined ? `:${sc.runAsGroup}` : ''}`);
  if (sc.readOnlyRootFilesystem === true) out.push('--read-only', '--read-only-tmpfs=false');
  if (sc.allowPrivilegeEscalation === false) out.push('--security-opt', 'no-new-privileges');
  for (const cap of sc.capabilities?.drop ?? []) out.push('--cap-drop', cap);
  for (const m of c.volumeMounts ?? []) {
    const v = pod.volumes?.find((x) => x.name === m.name);
    if (v?.emptyDir === undefined) throw new Error(`volume ${m.name}: only emptyDir is run here`);
    const size = v.emptyDir.sizeLimit === undefined ? '' : `,tmpfs-size=${v.emptyDir.sizeLimit.replace(/i$/, '')}`;
    out.push('--mount', `type=tmpfs,destination=${m.mountPath}${size}${m.readOnly === true ? ',ro' : ''}`);
  }
  if (pod.automountServiceAccountToken !== false) {
    out.push('--mount', `type=bind,source=${site.serviceAccountDir},destination=${SA_MOUNT},ro`);
    out.push('--env', `KUBERNETES_SERVICE_HOST=${site.apiHost}`, '--env', `KUBERNETES_SERVICE_PORT=${site.apiPort}`);
  }
  const fields: Record<string, string> = {
    'metadata.name': site.name, 'metadata.namespace': site.namespace, 'spec.nodeName': site.nodeName, 'status.podIP': site.podIp,
  };
  for (const e of c.env ?? []) {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    const value = path === undefined ? e.value : fields[path];
    if (value === undefined) throw new Error(`env ${e.name}: cannot resolve ${JSON.stringify(e.valueFrom)}`);
    out.push('--env', `${e.name}=${value}`);
  }
  if (c.command !== undefined) throw new Error('the container overrides the image entrypoint; not run here');
  out.push(c.image, ...(c.args ?? []));
  return out;
}
