/**
 * Node NotReady / Ready for kwok nodes. kwok's node-initialize stage marks any node it manages Ready
 * again (tools/control-plane/kwok-stages.yaml), so NotReady first removes the kwok.x-k8s.io/node
 * annotation (kwok lets go of the node), then sets the Ready condition to False as kubelet would.
 * Ready sets the condition back and restores the annotation (kwok takes the node over again).
 */
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { msToRfc3339 } from '../../schemas/node-info/node-info.ts';
import { KWOK_ANNOTATION } from './nodes.ts';

export interface ReadyAck {
  readonly node: string;
  readonly ready: boolean;
  /** resourceVersion of the Node after the status patch. */
  readonly resourceVersion: string;
  readonly atMs: number;
}

export interface NotReadyOptions {
  /** `False` as kubelet reports it (default), or `Unknown` as the node lifecycle controller does. */
  readonly status?: 'False' | 'Unknown';
  /** Default KubeletNotReady (False) / NodeStatusUnknown (Unknown). */
  readonly reason?: string;
  readonly message?: string;
  readonly now?: () => number;
}

type NodeObj = KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } };

function readyCondition(status: string, reason: string, message: string, ms: number): Record<string, string> {
  const t = msToRfc3339(ms);
  return { type: 'Ready', status, reason, message, lastHeartbeatTime: t, lastTransitionTime: t };
}

/** Makes a node NotReady (kwok released first). */
export async function setNodeNotReady(client: KubeClient, node: string, opts: NotReadyOptions = {}): Promise<ReadyAck> {
  const now = opts.now ?? Date.now;
  const status = opts.status ?? 'False';
  const reason = opts.reason ?? (status === 'False' ? 'KubeletNotReady' : 'NodeStatusUnknown');
  const message = opts.message ?? (status === 'False' ? 'simulated: container runtime is down' : 'Kubelet stopped posting node status.');
  await client.patch(paths.node(node), { metadata: { annotations: { [KWOK_ANNOTATION]: null } } }, 'merge');
  const saved = await client.patch<NodeObj>(paths.nodeStatus(node), { status: { conditions: [readyCondition(status, reason, message, now())] } }, 'strategic');
  return { node, ready: false, resourceVersion: saved.metadata?.resourceVersion ?? '', atMs: now() };
}

/** Makes a node Ready again and hands it back to kwok. */
export async function setNodeReady(client: KubeClient, node: string, now: () => number = Date.now): Promise<ReadyAck> {
  const saved = await client.patch<NodeObj>(paths.nodeStatus(node), { status: { conditions: [readyCondition('True', 'KubeletReady', 'kubelet is posting ready status', now())] } }, 'strategic');
  const atMs = now();
  await client.patch(paths.node(node), { metadata: { annotations: { [KWOK_ANNOTATION]: 'fake' } } }, 'merge');
  return { node, ready: true, resourceVersion: saved.metadata?.resourceVersion ?? '', atMs };
}

/** The Ready condition status of a node (`True`, `False`, `Unknown`), undefined when absent. */
export async function nodeReadyStatus(client: KubeClient, node: string): Promise<string | undefined> {
  const n = await client.get<NodeObj>(paths.node(node));
  return n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}
