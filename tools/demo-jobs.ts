/**
 * The demo's sample workload: a Volcano Job (4 workers x 8 NPUs, fault-scheduling=force) as a user
 * writes it for the real Volcano with the admission webhook off (queue, scheduler, minAvailable and
 * maxRetry spelled out: tools/volcano/README.md), with the PodEvicted -> RestartJob policy of
 * Huawei's sample jobs. vc-controller-manager creates and re-creates its pods.
 */
import type { KubeObject } from '../runtime/kube-client.ts';

export const DEMO_JOB = 'llama-pretrain';

export function sampleVcJob(ns: string, name = DEMO_JOB, replicas = 4): KubeObject {
  const npus = '8';
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'force', 'fault-retry-times': '3' } },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: replicas, maxRetry: 3,
      policies: [{ event: 'PodEvicted', action: 'RestartJob' }],
      tasks: [{
        name: 'worker', replicas, minAvailable: replicas, maxRetry: 3,
        template: {
          metadata: { labels: { app: 'pytorch', 'ring-controller.atlas': 'ascend-910' } },
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'ascend', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': npus }, limits: { 'huawei.com/Ascend910': npus } } }],
          },
        },
      }],
    },
  };
}
