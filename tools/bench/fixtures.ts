/**
 * Objects the benchmark puts in the cluster (or feeds in-process): training jobs as Volcano Jobs, their
 * PodGroups and pods, one pod per node taking every NPU of it, shaped like what Volcano and the Ascend
 * device plugin leave on them (owner references, `scheduling.k8s.io/group-name`, `hccl/rankIndex`,
 * `huawei.com/AscendReal`). Pure builders: no I/O.
 */
import type { KubeObject } from '../../runtime/kube-client.ts';
import { NPU_RESOURCE } from '../simulator/nodes.ts';

export const BENCH_NAMESPACE = 'bench';
export const VCJOB_API_VERSION = 'batch.volcano.sh/v1alpha1';

export interface JobSpec {
  readonly index: number;
  readonly name: string;
  /** The nodes of its pods, rank order. */
  readonly nodes: readonly string[];
  readonly npus: number;
  /** Set once the Volcano Job exists (its uid names the PodGroup). */
  uid: string;
}

/** `nodes.length / podsPerJob` jobs, each over consecutive nodes; left-over nodes run nothing. */
export function planJobs(nodes: readonly string[], podsPerJob: number, npus: number): JobSpec[] {
  const out: JobSpec[] = [];
  for (let j = 0; (j + 1) * podsPerJob <= nodes.length; j++) {
    out.push({ index: j, name: `job-${String(j).padStart(4, '0')}`, nodes: nodes.slice(j * podsPerJob, (j + 1) * podsPerJob), npus, uid: '' });
  }
  return out;
}

export const podGroupName = (job: JobSpec): string => `${job.name}-${job.uid}`;
export const podName = (job: JobSpec, rank: number): string => `${job.name}-worker-${rank}`;
export const jobKey = (job: JobSpec): string => `${BENCH_NAMESPACE}/${podGroupName(job)}`;

/** fault-scheduling=force: job-level rescheduling deletes the pods at once (no grace period). */
const JOB_LABELS = { 'fault-scheduling': 'force', 'bench.clusterd-ts.io/job': 'true' } as const;

const chipList = (npus: number): string => Array.from({ length: npus }, (_, i) => `Ascend910-${i}`).join(',');

export function vcJobObject(job: JobSpec): KubeObject {
  return {
    apiVersion: VCJOB_API_VERSION, kind: 'Job',
    metadata: { name: job.name, namespace: BENCH_NAMESPACE, labels: { ...JOB_LABELS } },
    spec: {
      minAvailable: job.nodes.length, schedulerName: 'volcano', maxRetry: 3,
      tasks: [{ name: 'worker', replicas: job.nodes.length, template: { spec: { containers: [{ name: 'main', image: 'bench/train:latest' }] } } }],
    },
  };
}

const controllerRef = (job: JobSpec) => ({ apiVersion: VCJOB_API_VERSION, kind: 'Job', name: job.name, uid: job.uid, controller: true, blockOwnerDeletion: true });

export function podGroupObject(job: JobSpec): KubeObject {
  return {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: podGroupName(job), namespace: BENCH_NAMESPACE, labels: { ...JOB_LABELS }, ownerReferences: [controllerRef(job)] },
    spec: { minMember: job.nodes.length, queue: 'default', minResources: { [NPU_RESOURCE]: String(job.nodes.length * job.npus) } },
    // The PodGroup CRD has no status subresource (as upstream): the status goes in with the create.
    status: { phase: 'Running', running: job.nodes.length },
  };
}

/** The pod of one rank, bound to its node (no scheduler needed); kwok marks it Running. */
export function podObject(job: JobSpec, rank: number): KubeObject {
  const npus = String(job.npus);
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: podName(job, rank), namespace: BENCH_NAMESPACE,
      labels: { 'volcano.sh/job-name': job.name, 'volcano.sh/task-spec': 'worker', 'bench.clusterd-ts.io/job': 'true' },
      annotations: {
        'scheduling.k8s.io/group-name': podGroupName(job), 'volcano.sh/job-name': job.name, 'volcano.sh/task-spec': 'worker',
        'hccl/rankIndex': String(rank), 'huawei.com/AscendReal': chipList(job.npus),
      },
      ownerReferences: [controllerRef(job)],
    },
    spec: {
      nodeName: job.nodes[rank], schedulerName: 'volcano', terminationGracePeriodSeconds: 30,
      tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'main', image: 'bench/train:latest', resources: { limits: { [NPU_RESOURCE]: npus }, requests: { [NPU_RESOURCE]: npus } } }],
    },
  };
}

/** The pod as an informer would cache it once kwok has marked it Running (for the in-process scale run). */
export function runningPodObject(job: JobSpec, rank: number, nowIso: string, uid: string): KubeObject {
  const p = podObject(job, rank);
  return {
    ...p,
    metadata: { ...p.metadata, uid, resourceVersion: '1', creationTimestamp: nowIso },
    status: {
      phase: 'Running', hostIP: '10.0.0.1', podIP: '10.1.0.1', startTime: nowIso,
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastTransitionTime: nowIso })),
      containerStatuses: [{ name: 'main', image: 'bench/train:latest', ready: true, restartCount: 0, state: { running: { startedAt: nowIso } } }],
    },
  };
}

/** p-th percentile (nearest rank) of an unsorted sample; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
