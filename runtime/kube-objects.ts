/**
 * The Kubernetes objects the controller reads and writes, as raw JSON (see kube-client.ts for why
 * raw). They sit in runtime/ beside the client so sources, reconcilers and actions share them
 * without importing upward.
 *
 * Pod and Node are what the informers keep (controllers/sources/cache-shapes.ts trims them on
 * receipt): closed types, so a reader that needs a field the cache drops does not compile. Code that
 * needs the whole object (the hot-switch backup copies a pod's spec) GETs it (`FullPod`).
 */
import type { KubeObject } from './kube-client.ts';

export type ConfigMap = KubeObject & {
  data?: Record<string, string>;
  /**
   * Set instead of `data` on ConfigMaps whose content the controller writes and already holds
   * (cluster-info shards): the digest of `data` (runtime/data-digest.ts). Never sent to the apiserver.
   */
  dataDigest?: string;
};

/** The metadata an informer keeps (managedFields and the rest dropped). */
export type CachedMeta = {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
  deletionTimestamp?: string;
  creationTimestamp?: string;
};

type Terminated = { terminated?: { exitCode?: number } };

/** A Pod as the pod informer keeps it: only what the flows read. */
export type Pod = {
  apiVersion?: string;
  kind?: string;
  metadata?: CachedMeta;
  spec?: {
    nodeName?: string;
    containers?: Array<{
      name: string; env?: Array<{ name: string; value?: string }>; resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
      /** Kept only for the data-trace mount path (controllers/sources/cache-shapes.ts trimPod). */
      volumeMounts?: Array<{ mountPath: string }>;
    }>;
  };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    /** The pod's address(es), which the gRPC caller check compares with a caller's. */
    podIP?: string;
    podIPs?: Array<{ ip: string }>;
    hostIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; containerID?: string; state?: Terminated; lastState?: Terminated }>;
  };
};

/** A Pod as the apiserver returns it (GET), for code that copies parts the cache does not keep. */
export type FullPod = KubeObject & { spec?: Record<string, unknown> & { nodeName?: string } };

/** A Node as the node informer keeps it: only what the flows read. */
export type Node = {
  apiVersion?: string;
  kind?: string;
  metadata?: CachedMeta;
  spec?: { unschedulable?: boolean; taints?: Array<{ key: string; value?: string; effect: string; timeAdded?: string }> };
  status?: {
    conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }>;
    addresses?: Array<{ type: string; address: string }>;
  };
};
export type PodGroup = KubeObject & { spec?: Record<string, unknown>; status?: { phase?: string; [k: string]: unknown } };
/**
 * A Volcano Job or AscendJob as the controller's informers keep it (controllers/sources/cache-shapes.ts
 * trimJobObject): closed, so a reader of a field the cache drops does not compile.
 */
export type JobObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: CachedMeta;
  status?: {
    state?: { phase?: string };
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
  };
};
export type VcJob = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
export type AscendJob = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
