/**
 * The demo's sample workloads: Volcano Jobs (workers x 8 NPUs, fault-scheduling=force) as a user
 * writes them for the real Volcano with the admission webhook off (queue, scheduler, minAvailable and
 * maxRetry spelled out: tools/volcano/README.md), with the PodEvicted -> RestartJob policy of
 * Huawei's sample jobs. vc-controller-manager creates and re-creates their pods.
 * Story 1 runs `llama-pretrain` (4 workers) off the super-pod; story 2 runs a 2-worker step-retry job
 * (process-recover-enable=on, recover-strategy=retry, no RestartJob policy) on the A3 super-pod's nodes.
 */
import type { KubeObject } from '../runtime/kube-client.ts';

export const DEMO_JOB = 'llama-pretrain';
export const A3_JOB = 'a3-step-retry';

/** Node label of Huawei's A3 super-pod servers; the demo's node-012..node-015 carry it. */
export const ACCELERATOR_TYPE_LABEL = 'accelerator-type';
export const A3_SUPER_POD_TYPE = 'module-a3-8-super-pod';

export interface SampleJobOptions {
  readonly replicas?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** Pods on the super-pod only (true) or off it (false). */
  readonly superPod?: boolean;
  /**
   * Volcano restarts the whole job when a pod is evicted (Huawei's samples; default true). Off, it
   * re-creates only the pods deleted, so a decision on the fault pods only keeps the others.
   */
  readonly restartJobOnEviction?: boolean;
}

export function sampleVcJob(ns: string, name = DEMO_JOB, opts: SampleJobOptions = {}): KubeObject {
  const npus = '8';
  const replicas = opts.replicas ?? 4;
  const placement = opts.superPod === true
    ? { nodeSelector: { [ACCELERATOR_TYPE_LABEL]: A3_SUPER_POD_TYPE } }
    : { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: ACCELERATOR_TYPE_LABEL, operator: 'NotIn', values: [A3_SUPER_POD_TYPE] }] }] } } } };
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: {
      name, namespace: ns,
      labels: { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'force', 'fault-retry-times': '3', ...opts.labels },
      ...(opts.annotations === undefined ? {} : { annotations: { ...opts.annotations } }),
    },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: replicas, maxRetry: 3,
      policies: opts.restartJobOnEviction === false ? [] : [{ event: 'PodEvicted', action: 'RestartJob' }],
      tasks: [{
        name: 'worker', replicas, minAvailable: replicas, maxRetry: 3,
        template: {
          metadata: { labels: { app: 'pytorch', 'ring-controller.atlas': 'ascend-910' } },
          spec: {
            restartPolicy: 'Never', ...placement,
            containers: [{ name: 'ascend', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': npus }, limits: { 'huawei.com/Ascend910': npus } } }],
          },
        },
      }],
    },
  };
}
