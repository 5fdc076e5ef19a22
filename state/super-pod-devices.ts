/**
 * Pingmesh's memory between events (docs/rules.md#pingmesh.super-pod-devices): which nodes each super
 * pod holds, the super pods that lost their last node (their ConfigMap is deleted), and whether
 * detection is on. It follows ClusterD's store (component/clusterd/pkg/domain/superpod/superpod_storage.go,
 * component/clusterd/pkg/application/pingmesh/collector.go): a node is saved under the super pod its
 * annotations name and removed from it only when the node is deleted, so a node whose annotations
 * later fail to parse keeps its last entry; a super pod's version is its first node's server type.
 */
import type { NodeDevice, PingMeshNode } from '../schemas/pingmesh/super-pod-device.ts';

/** superpod_storage.go maxSuperPodNum / maxNodeNumPerSuperPod. */
export const MAX_SUPER_PODS = 1024;
export const MAX_NODES_PER_SUPER_POD = 256;

export interface SuperPodEntry {
  readonly id: string;
  /** The first node's server type (`A3` or `npu`). */
  readonly version: string;
  /** The first node's accelerator type (A5; "" on A3). */
  readonly acceleratorType: string;
  readonly nodes: ReadonlyMap<string, NodeDevice>;
}

/** Why a node was not saved (logged and counted by the caller). */
export type SaveRefusal = 'too_many_super_pods' | 'super_pod_full' | 'version_mismatch';

interface MutableEntry {
  readonly id: string;
  readonly version: string;
  readonly acceleratorType: string;
  readonly nodes: Map<string, NodeDevice>;
}

export class SuperPodDevices {
  private readonly pods = new Map<string, MutableEntry>();
  private readonly emptied = new Set<string>();
  private detecting = false;

  /** Detection is on (the last pingmesh-config ClusterD took has an item `on`). */
  get detect(): boolean {
    return this.detecting;
  }

  /** Returns whether the switch changed. */
  setDetect(on: boolean): boolean {
    const changed = on !== this.detecting;
    this.detecting = on;
    return changed;
  }

  /** ClusterD's SaveNode: the node replaces its entry in its super pod; undefined when saved. */
  save(n: PingMeshNode): SaveRefusal | undefined {
    let pod = this.pods.get(n.superPodId);
    if (pod === undefined) {
      if (this.pods.size >= MAX_SUPER_PODS) return 'too_many_super_pods';
      pod = { id: n.superPodId, version: n.serverType, acceleratorType: n.acceleratorType, nodes: new Map() };
      this.pods.set(n.superPodId, pod);
      this.emptied.delete(n.superPodId);
    }
    if (n.serverType !== pod.version) return 'version_mismatch';
    // ClusterD checks the count before it looks whether the node is already there.
    if (pod.nodes.size >= MAX_NODES_PER_SUPER_POD) return 'super_pod_full';
    pod.nodes.set(n.device.NodeName, n.device);
    return undefined;
  }

  /**
   * ClusterD's DeleteNode for a deleted Node: the super pod its annotations name forgets it. A super
   * pod left without nodes, or that was never there, has its ConfigMap deleted (ClusterD queues a
   * delete whenever the super pod is gone after a node's delete).
   */
  remove(superPodId: string, nodeName: string): void {
    const pod = this.pods.get(superPodId);
    pod?.nodes.delete(nodeName);
    if (pod !== undefined && pod.nodes.size > 0) return;
    this.pods.delete(superPodId);
    this.emptied.add(superPodId);
  }

  superPods(): readonly SuperPodEntry[] {
    return [...this.pods.values()];
  }

  /** Super pods gone since their ConfigMap was last deleted. */
  gone(): readonly string[] {
    return [...this.emptied];
  }

  /** The ConfigMap of a gone super pod was deleted (or was not there). */
  forgetGone(superPodId: string): void {
    this.emptied.delete(superPodId);
  }
}
