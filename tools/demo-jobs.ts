/**
 * The demo's sample workload: a Volcano Job (4 workers x 8 NPUs, fault-scheduling=force) kept alive
 * by the job peer (tools/job-peer, which recreates deleted pods as Volcano's job controller does),
 * and an AscendJob (2 workers) with the PodGroup and pods the Ascend Operator would create.
 */
import { paths, type KubeClient, type KubeObject } from '../runtime/kube-client.ts';

export interface SampleJobs {
  readonly vcjobName: string;
  readonly acjobName: string;
  stop(): Promise<void>;
}

const workerTemplate = (npus: number) => ({
  spec: {
    containers: [{ name: 'ascend', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': String(npus) }, limits: { 'huawei.com/Ascend910': String(npus) } } }],
    restartPolicy: 'Never',
  },
});

export function sampleVcJob(ns: string, name: string, replicas = 4): KubeObject {
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'force', 'fault-retry-times': '3' } },
    spec: { minAvailable: replicas, schedulerName: 'volcano', maxRetry: 3, tasks: [{ name: 'worker', replicas, template: workerTemplate(8) }] },
  };
}

async function createAscendJob(client: KubeClient, ns: string, name: string): Promise<void> {
  const labels = { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'grace', framework: 'pytorch' };
  const job = await client.create<KubeObject>(paths.ascendJobs(ns), {
    apiVersion: 'mindxdl.gitee.com/v1', kind: 'AscendJob', metadata: { name, namespace: ns, labels },
    spec: { schedulerName: 'volcano', runPolicy: { schedulingPolicy: { minAvailable: 2 } }, replicaSpecs: { Worker: { replicas: 2, template: workerTemplate(8) } } },
  });
  const uid = job.metadata!.uid!;
  const owner = { apiVersion: 'mindxdl.gitee.com/v1', kind: 'AscendJob', name, uid, controller: true };
  // The Ascend Operator names the PodGroup <job>-<uid> and copies the job's labels onto it.
  await client.create(paths.podGroups(ns), {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: `${name}-${uid}`, namespace: ns, labels, ownerReferences: [owner] },
    spec: { minMember: 2 },
  });
  for (let rank = 0; rank < 2; rank++) {
    await client.create(paths.pods(ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name: `${name}-worker-${rank}`, namespace: ns, ownerReferences: [owner],
        labels: { ...labels, 'training.kubeflow.org/job-name': name, 'training.kubeflow.org/replica-type': 'worker' },
        annotations: { 'hccl/rankIndex': String(rank), 'scheduling.k8s.io/group-name': `${name}-${uid}` },
      },
      ...workerTemplate(8),
    });
  }
}

export async function startSampleJobs(client: KubeClient, ns: string): Promise<SampleJobs> {
  const vcjobName = 'llama-pretrain';
  const acjobName = 'bert-finetune';
  const peerModule = '../tools/job-peer/job-peer.ts';
  let stopPeer: () => Promise<void> = async () => undefined;
  try {
    const peer = (await import(peerModule)) as { startJobPeer?: (c: KubeClient, o: { namespace: string }) => Promise<{ stop(): Promise<void> | void }> };
    if (peer.startJobPeer !== undefined) {
      const p = await peer.startJobPeer(client, { namespace: ns });
      stopPeer = async () => { await p.stop(); };
    }
  } catch {
    // no peer: the Volcano Job's pods are not recreated after deletion
  }
  await client.create(paths.vcJobs(ns), sampleVcJob(ns, vcjobName));
  await createAscendJob(client, ns, acjobName);
  return { vcjobName, acjobName, stop: () => stopPeer() };
}
