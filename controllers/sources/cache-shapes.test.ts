import { podCallerIps } from '../grpc-caller.ts';
import { describe, expect, it } from '@jest/globals';
import { CUSTOM_JOB_ID_ANNOTATION, DATA_TRACE_MOUNT_PATH, digestClusterInfo, digestJobSummary, isJobSummaryName, trimJobObject, trimNode, trimPod, trimPodGroup, trimPublicFault } from './cache-shapes.ts';
import { podMetaOf } from '../../state/job-index.ts';
import { summaryPodOf } from '../job-summary.controller.ts';
import { podUse } from '../../state/npu-usage.ts';
import { ranksPerPodOf } from '../../policy/recovery/recovery-feed.ts';
import { FaultStore } from '../../state/fault-store.ts';
import { dataDigest } from '../../runtime/data-digest.ts';
import type { KubeObject } from '../../runtime/kube-client.ts';
import type { Node, Pod } from '../../runtime/kube-objects.ts';

const T = '2026-11-26T05:29:50Z';

/** A Volcano training pod as the apiserver returns it: far more than the flows read. */
function fullPod(): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: 'job-a-default-test-0', namespace: 'team', uid: 'u-1', resourceVersion: '42', creationTimestamp: T, generation: 1,
      labels: { 'volcano.sh/job-name': 'job-a', 'training.kubeflow.org/replica-type': 'Worker' },
      annotations: { 'huawei.com/AscendReal': 'Ascend910-0,Ascend910-1', 'hccl/rankIndex': '0', 'scheduling.k8s.io/group-name': 'job-a-u-job', 'huawei.com/schedule_policy': 'chip1-softShareDev' },
      ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'job-a', uid: 'u-job', controller: true, blockOwnerDeletion: true } as never],
      managedFields: [{ manager: 'volcano', fieldsV1: { 'f:spec': {} } }],
    },
    spec: {
      nodeName: 'node-0001', schedulerName: 'volcano', restartPolicy: 'Never',
      volumes: [{ name: 'ascend-driver', hostPath: { path: '/usr/local/Ascend/driver' } }],
      tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'host-arch', operator: 'In', values: ['huawei-arm'] }] }] } } },
      containers: [{
        name: 'main', image: 'train:latest', command: ['/bin/bash', '-c', 'python train.py'],
        env: [{ name: 'MINDX_TASK_ID', value: '0' }, { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
        resources: { limits: { 'huawei.com/Ascend910': '2', cpu: '8' }, requests: { 'huawei.com/Ascend910': '2' } },
        volumeMounts: [{ name: 'ascend-driver', mountPath: '/usr/local/Ascend/driver' }],
      }],
    },
    status: {
      phase: 'Running', reason: 'Evicted', message: 'gone', hostIP: '10.0.0.1', podIP: '10.1.0.1', startTime: T,
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T }, { type: 'PodScheduled', status: 'True', lastTransitionTime: T }],
      containerStatuses: [{
        name: 'main', containerID: 'containerd://abc', image: 'train:latest', imageID: 'sha256:1', ready: true, restartCount: 1,
        state: { running: { startedAt: T } }, lastState: { terminated: { exitCode: 137, reason: 'Error', startedAt: T, finishedAt: T } },
      }],
    },
  };
}

function fullNode(): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name: 'node-0001', uid: 'n-1', resourceVersion: '7', labels: { 'kubernetes.io/hostname': 'node-0001' }, annotations: { 'product-serial-number': 'SN1' }, managedFields: [{}] },
    spec: { podCIDR: '10.1.0.0/24', taints: [{ key: 'huawei.com/clusterd-fault', value: 'L1', effect: 'NoSchedule', timeAdded: T }] },
    status: {
      capacity: { 'huawei.com/Ascend910': '8' }, allocatable: { 'huawei.com/Ascend910': '8' },
      conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'x', lastHeartbeatTime: T, lastTransitionTime: T }],
      addresses: [{ type: 'InternalIP', address: '10.0.0.1' }, { type: 'Hostname', address: 'node-0001' }],
      images: [{ names: ['train:latest'], sizeBytes: 1 }], nodeInfo: { kubeletVersion: 'v1.35' },
    },
  };
}

describe('what the informers keep (cache-shapes)', () => {
  it('a trimmed pod reads the same as the whole pod in every pod reader', () => {
    const full = fullPod() as Pod; // the whole object, read through the same (closed) type
    const kept = trimPod(fullPod());
    expect(podMetaOf(kept)).toEqual(podMetaOf(full));
    expect(podMetaOf(kept).containerFailed).toBe(true); // the exit code survives the trim
    expect(summaryPodOf(kept)).toEqual(summaryPodOf(full));
    expect(podUse(kept)).toEqual(podUse(full));
    const view = [{ name: 'job-a-default-test-0', npus: [] }] as unknown as Parameters<typeof ranksPerPodOf>[0];
    expect(ranksPerPodOf(view, () => kept)).toBe(2);
    expect(podCallerIps(kept)).toEqual(podCallerIps(full));
    expect(kept.status).toEqual({
      phase: 'Running', reason: 'Evicted', message: 'gone', podIP: '10.1.0.1', hostIP: '10.0.0.1',
      conditions: [{ type: 'Ready', status: 'True' }, { type: 'PodScheduled', status: 'True' }],
      containerStatuses: [{ name: 'main', containerID: 'containerd://abc', state: {}, lastState: { terminated: { exitCode: 137 } } }],
    });
    // Mounts: only the data-trace path (TrainingDataTrace asks whether every pod mounts it).
    expect(JSON.stringify(kept)).not.toMatch(/volumes|volumeMounts|tolerations|affinity|managedFields|image/);
    const mounting = fullPod() as { spec: { containers: Array<{ volumeMounts: unknown[] }> } };
    mounting.spec.containers[0]!.volumeMounts.push({ name: 'dt', mountPath: DATA_TRACE_MOUNT_PATH });
    expect(trimPod(mounting as never).spec?.containers?.[0]?.volumeMounts).toEqual([{ mountPath: DATA_TRACE_MOUNT_PATH }]);
  });

  it('a trimmed node reads the same: readiness, serial number, taints and addresses', () => {
    const kept = trimNode(fullNode());
    const a = new FaultStore();
    const b = new FaultStore();
    a.applyNode(kept, Date.parse(T) + 60_000);
    b.applyNode(fullNode() as Node, Date.parse(T) + 60_000);
    expect(a.nodeState('node-0001')).toEqual(b.nodeState('node-0001'));
    expect(a.nodeState('node-0001')?.notReadySinceMs).toBe(Date.parse(T));
    expect(kept.spec?.taints).toEqual((fullNode().spec as { taints: unknown }).taints);
    expect(kept.status?.addresses?.find((x) => x.type === 'InternalIP')?.address).toBe('10.0.0.1');
    expect(kept.metadata?.annotations?.['product-serial-number']).toBe('SN1');
    expect(JSON.stringify(kept)).not.toMatch(/images|allocatable|nodeInfo|managedFields|Heartbeat/);
  });

  it('keeps the digest of our cluster-info shards instead of their data, and other mindx-dl ConfigMaps whole', () => {
    const data = { 'cluster-info-device-0': '{"mindx-dl-deviceinfo-node-0001":{}}' };
    const shard = digestClusterInfo({ metadata: { name: 'cluster-info-device-0', namespace: 'mindx-dl', resourceVersion: '3' }, data: { ...data } });
    expect(shard.data).toBeUndefined();
    expect(shard.dataDigest).toBe(dataDigest(data));
    expect(shard.dataDigest).not.toBe(dataDigest({ 'cluster-info-device-0': '{}' }));
    const state = digestClusterInfo({ metadata: { name: 'job-reschedule-reason', namespace: 'mindx-dl' }, data: { a: 'b' } });
    expect(state.data).toEqual({ a: 'b' });
    expect(state.dataDigest).toBeUndefined();
  });
});

describe('tenant-writable objects: what the job-summary and job caches keep', () => {
  it('job summaries: only job-summary-* names, as identity, our two labels and the digest of the data', () => {
    const cm = {
      metadata: { name: 'job-summary-a', namespace: 'team', uid: 'u', resourceVersion: '7', labels: { 'outside-job-info': 'true', 'ring-controller.atlas': 'ascend-910', big: 'x' }, annotations: { note: 'n'.repeat(1000) } },
      data: { 'hccl.json': 'y'.repeat(10_000), job_id: 'j' },
    } as KubeObject;
    expect(isJobSummaryName(cm)).toBe(true);
    expect(isJobSummaryName({ metadata: { name: 'flood-1' } })).toBe(false);
    expect(digestJobSummary(cm)).toEqual({
      metadata: { name: 'job-summary-a', namespace: 'team', uid: 'u', resourceVersion: '7', labels: { 'outside-job-info': 'true', 'ring-controller.atlas': 'ascend-910' } },
      dataDigest: dataDigest({ 'hccl.json': 'y'.repeat(10_000), job_id: 'j' }),
    });
  });

  it('job objects: identity, custom-job-id cut one past the bound, phase and conditions; nothing of the spec', () => {
    const job = {
      metadata: { name: 'j', namespace: 'team', uid: 'u', resourceVersion: '3', labels: { a: 'b' }, annotations: { [CUSTOM_JOB_ID_ANNOTATION]: 'c'.repeat(5000), other: 'o' } },
      spec: { tasks: [{ template: { spec: { containers: [{ image: 'x' }] } } }] },
      status: { state: { phase: 'Running', reason: 'r' }, conditions: [{ type: 'Running', status: 'True', reason: 'x', message: 'm', lastTransitionTime: T }], succeeded: 1 },
    } as KubeObject;
    expect(trimJobObject(253)(job)).toEqual({
      metadata: { name: 'j', namespace: 'team', uid: 'u', resourceVersion: '3', annotations: { [CUSTOM_JOB_ID_ANNOTATION]: 'c'.repeat(254) } },
      status: { state: { phase: 'Running' }, conditions: [{ type: 'Running', status: 'True', reason: 'x', message: 'm' }] },
    });
    expect(trimJobObject(undefined)(job).metadata?.annotations?.[CUSTOM_JOB_ID_ANNOTATION]).toHaveLength(5000);
    expect(trimJobObject(253)({ metadata: { name: 'k', namespace: 'n' } })).toEqual({ metadata: { name: 'k', namespace: 'n' } });
  });

  it('public-fault ConfigMaps: identity and the PublicFault key only', () => {
    const cm = { metadata: { name: 'pf', namespace: 'team', uid: 'u', resourceVersion: '1', labels: { 'mc-consumer-publicfault': 'true', x: 'y' }, annotations: { a: 'b'.repeat(100) } }, data: { PublicFault: '{}', other: 'z'.repeat(100) } } as KubeObject;
    expect(trimPublicFault(cm)).toEqual({ metadata: { name: 'pf', namespace: 'team', uid: 'u', resourceVersion: '1' }, data: { PublicFault: '{}' } });
    expect(trimPublicFault({ metadata: { name: 'pf', namespace: 'team' } })).toEqual({ metadata: { name: 'pf', namespace: 'team' } });
  });

  it('PodGroups: metadata whole, minMember/queue/minResources keys, phase and conditions with messages cut one past the bound', () => {
    const pg = {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: 'pg', namespace: 'team', uid: 'u', labels: { 'fault-scheduling': 'grace' }, annotations: { a: 'b' }, ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'j', uid: 'ju', controller: true }], managedFields: [{}] },
      spec: { minMember: 2, queue: 'q', minResources: { 'huawei.com/npu': '16', cpu: '8' }, priorityClassName: 'x', minTaskMember: { w: 2 } },
      status: { phase: 'Pending', running: 1, conditions: [{ type: 'Unschedulable', status: 'True', reason: 'JobEnqueueFailed', message: 'm'.repeat(10_000), lastTransitionTime: T, transitionID: 'x' }] },
    } as KubeObject;
    expect(trimPodGroup(4096)(pg)).toEqual({
      metadata: { name: 'pg', namespace: 'team', uid: 'u', labels: { 'fault-scheduling': 'grace' }, annotations: { a: 'b' }, ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'j', uid: 'ju', controller: true }] },
      spec: { minMember: 2, queue: 'q', minResources: { 'huawei.com/npu': '', cpu: '' } },
      status: { phase: 'Pending', conditions: [{ type: 'Unschedulable', status: 'True', reason: 'JobEnqueueFailed', message: 'm'.repeat(4097) }] },
    });
    expect(trimPodGroup(undefined)(pg).status?.conditions).toEqual([expect.objectContaining({ message: 'm'.repeat(10_000) })]);
    expect(trimPodGroup(4096)({ metadata: { name: 'p' }, spec: { minResources: null } }).spec).toEqual({ minResources: null });
  });
});
