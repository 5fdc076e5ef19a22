/**
 * The caller check of the gRPC server (grpc/peer.ts) against the informer caches. Recover calls may
 * act on a job only from the address of one of the job's pods, since TaskD, the Elastic Agent and
 * MindIO run inside them (a Go TaskD through LOCAL_PROXY_ENABLE dials a proxy in the same pod, so
 * the address is still the pod's). fault.Fault calls for a job only from a pod in the job's
 * namespace (a MindIE controller subscribes for its server job from a pod of its own). A
 * hostNetwork pod's address is its node's. Pods that are over (Succeeded / Failed) have given their
 * address back, and it may already be another pod's.
 * ClusterD checks no caller (component/clusterd/pkg/application/recover/fault_recover_service.go,
 * application/fault/grpc_service.go); `--grpc-caller-check=off` restores that.
 */
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
    const age = this.now() - this.builtAtMs;
    if (age > MAX_AGE_MS) this.rebuild();
    else if (this.byIp.get(ip)?.has(namespace) !== true && age > REBUILD_ON_MISS_MS) this.rebuild();
    return this.byIp.get(ip)?.has(namespace) === true;
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

export interface CallerCheckDeps {
  /** The job's namespace and pods (its PodGroup's, from the caches); undefined when the job is unknown. */
  readonly job: (jobId: string) => { readonly namespace: string; readonly pods: readonly Pod[] } | undefined;
  readonly addresses: Pick<PodAddressIndex, 'has'>;
}

export function podIpCallerCheck(d: CallerCheckDeps): CallerCheck {
  return (jobId, ip, scope) => {
    const job = d.job(jobId);
    if (job === undefined) return false;
    if (job.pods.some((pod) => podCallerIps(pod).includes(ip))) return true;
    return scope === 'namespace' && d.addresses.has(ip, job.namespace);
  };
}
