/**
 * The caller check of the gRPC server (grpc/peer.ts) against the informer caches: a call may act on
 * a job only from the address of one of the job's pods, since TaskD, the Elastic Agent and MindIO
 * run inside them (a Go TaskD through LOCAL_PROXY_ENABLE dials a proxy in the same pod, so the
 * address is still the pod's). A hostNetwork pod's address is its node's. Pods that are over
 * (Succeeded / Failed) have given their address back, and it may already be another pod's.
 * ClusterD checks no caller (component/clusterd/pkg/application/recover/fault_recover_service.go);
 * `--grpc-caller-check=off` restores that.
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

/** `jobPods(jobId)`: the job's pods from the caches, undefined when the job is unknown. */
export function podIpCallerCheck(jobPods: (jobId: string) => readonly Pod[] | undefined): CallerCheck {
  return (jobId, ip) => (jobPods(jobId) ?? []).some((pod) => podCallerIps(pod).includes(ip));
}
