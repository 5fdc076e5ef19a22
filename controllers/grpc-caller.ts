/**
 * The caller check of the gRPC server (grpc/peer.ts) against the informer caches. Recover calls may
 * act on a job only from the address of one of the job's pods, since TaskD, the Elastic Agent and
 * MindIO run inside them (a Go TaskD through LOCAL_PROXY_ENABLE dials a proxy in the same pod, so
 * the address is still the pod's). fault.Fault calls for a job only from a pod in the job's
 * namespace (a MindIE controller subscribes for its server job from a pod of its own). A
 * hostNetwork pod's address is its node's. Pods that are over (Succeeded / Failed) have given their
 * address back, and it may already be another pod's.
 *
 * Calls that name a namespace rather than a job (TrainingDataTrace Modify/Get, config.Config,
 * job.Job's signals) are served to a pod in that namespace or to a system caller: a pod of the
 * controller's own namespace or of `--grpc-system-namespaces`, or a loopback address no pod has
 * (kubectl port-forward, a sidecar). A hostNetwork pod's address is its node's, so every
 * hostNetwork pod on a node that runs a system daemonset (NodeD, the device plugin) is a system
 * caller too.
 * ClusterD checks no caller (component/clusterd/pkg/application/recover/fault_recover_service.go,
 * application/fault/grpc_service.go); `--grpc-caller-check=off` restores that.
 */
import { isIPv4 } from 'node:net';
import type { CallerCheck } from '../grpc/peer.ts';
import { normalizeIp } from '../grpc/peer.ts';
import type { Pod } from '../runtime/kube-objects.ts';

/** The addresses a pod may call from: status.podIPs and status.podIP, while it is not over. */
export function podCallerIps(pod: Pod): string[] {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return [];
  const ips = [...(pod.status?.podIPs ?? []).map((p) => p.ip ?? ''), pod.status?.podIP ?? ''];
  return [...new Set(ips.filter((ip) => ip !== '').map(normalizeIp))];
}

/** Rebuilt at most this often on a miss (a flood of strangers costs a few cache scans a second). */
const REBUILD_ON_MISS_MS = 250;
/** ...and at least this often. */
const MAX_AGE_MS = 5_000;

const NONE: ReadonlySet<string> = new Set();

/** Address -> namespaces of the pods at that address, from the pod cache, rebuilt lazily. */
export class PodAddressIndex {
  private byIp = new Map<string, Set<string>>();
  private builtAtMs = Number.NEGATIVE_INFINITY;
  private readonly pods: () => Iterable<Pod>;
  private readonly now: () => number;

  constructor(pods: () => Iterable<Pod>, now: () => number) {
    this.pods = pods;
    this.now = now;
  }

  /** Is there a pod in `namespace` at `ip`? */
  has(ip: string, namespace: string): boolean {
    return this.lookup(ip, (set) => set?.has(namespace) === true).has(namespace);
  }

  /** The namespaces with a pod at `ip` (empty: no pod's address). */
  namespacesAt(ip: string): ReadonlySet<string> {
    return this.lookup(ip, (set) => set !== undefined);
  }

  private lookup(ip: string, hit: (set: Set<string> | undefined) => boolean): ReadonlySet<string> {
    const age = this.now() - this.builtAtMs;
    if (age > MAX_AGE_MS) this.rebuild();
    else if (!hit(this.byIp.get(ip)) && age > REBUILD_ON_MISS_MS) this.rebuild();
    return this.byIp.get(ip) ?? NONE;
  }

  private rebuild(): void {
    const byIp = new Map<string, Set<string>>();
    for (const pod of this.pods()) {
      const ns = pod.metadata?.namespace ?? '';
      for (const ip of podCallerIps(pod)) {
        const set = byIp.get(ip);
        if (set === undefined) byIp.set(ip, new Set([ns]));
        else set.add(ns);
      }
    }
    this.byIp = byIp;
    this.builtAtMs = this.now();
  }
}

/** 127.0.0.0/8 or ::1 (an IPv4-mapped address is already normalised to its IPv4). */
export function isLoopback(ip: string): boolean {
  return ip === '::1' || (isIPv4(ip) && ip.startsWith('127.'));
}

export interface CallerCheckDeps {
  /** The job's namespace and pods (its PodGroup's, from the caches); undefined when the job is unknown. */
  readonly job: (jobId: string) => { readonly namespace: string; readonly pods: readonly Pod[] } | undefined;
  readonly addresses: Pick<PodAddressIndex, 'has' | 'namespacesAt'>;
  /** The controller's own namespace and `--grpc-system-namespaces`: their pods are system callers. */
  readonly systemNamespaces: ReadonlySet<string>;
}

export function podIpCallerCheck(d: CallerCheckDeps): CallerCheck {
  return {
    onJob: (jobId, ip, scope) => {
      const job = d.job(jobId);
      if (job === undefined) return false;
      if (job.pods.some((pod) => podCallerIps(pod).includes(ip))) return true;
      return scope === 'namespace' && d.addresses.has(ip, job.namespace);
    },
    whois: (ip) => {
      const namespaces = d.addresses.namespacesAt(ip);
      // A loopback address is no pod's in a cluster: the caller is in the controller's own pod
      // (a sidecar) or comes through the apiserver (kubectl port-forward), both an operator's.
      const system = namespaces.size === 0 ? isLoopback(ip) : [...namespaces].some((ns) => d.systemNamespaces.has(ns));
      return { system, namespaces };
    },
  };
}
