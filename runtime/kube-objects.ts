/**
 * The Kubernetes objects the controller reads and writes, as raw JSON (see kube-client.ts for why
 * raw). They sit in runtime/ beside the client so sources, reconcilers and actions share them
 * without importing upward.
 */
import type { KubeObject } from './kube-client.ts';

export type ConfigMap = KubeObject & { data?: Record<string, string> };
export type Pod = KubeObject & {
  spec?: { nodeName?: string; containers?: Array<{ name: string; resources?: { limits?: Record<string, string>; requests?: Record<string, string> } }>; [k: string]: unknown };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }>; [k: string]: unknown };
};
export type Node = KubeObject & {
  spec?: { unschedulable?: boolean; taints?: Array<{ key: string; value?: string; effect: string }>; [k: string]: unknown };
  status?: { conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }>; allocatable?: Record<string, string>; capacity?: Record<string, string>; [k: string]: unknown };
};
export type PodGroup = KubeObject & { spec?: Record<string, unknown>; status?: { phase?: string; [k: string]: unknown } };
export type VcJob = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
export type AscendJob = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
