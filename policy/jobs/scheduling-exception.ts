/**
 * ClusterD's scheduling exception collector as a pure step (clusterd application/schedulingexception
 * collector.go): every check, each job of the job summary that is neither running nor complete is
 * judged from its PodGroup's phase and Unschedulable conditions and its pods; each Volcano Job /
 * AscendJob not in the job summary from its own status. A job is reported when its condition is the
 * one remembered from the previous check (a new job's condition is remembered at once, so it is
 * reported at its first check; a changed condition waits one check). Memory of jobs that are gone
 * from both views is dropped.
 */
import type { ExceptionCondition, JobException } from '../../schemas/scheduling-exception/scheduling-exception.ts';
import { exceptionKey } from '../../schemas/scheduling-exception/scheduling-exception.ts';

export interface ExceptionJob {
  readonly key: string;
  readonly name: string;
  readonly jobType: string;
  readonly namespace: string;
  readonly status: string;
  readonly pgName: string;
}

export interface ExceptionPodGroup {
  readonly phase: string;
  readonly conditions: ReadonlyArray<{ readonly type: string; readonly status: string; readonly reason: string; readonly message: string }>;
  readonly minMember: number;
  readonly queue: string;
}

export interface ExceptionPod {
  readonly namespace: string;
  readonly name: string;
  readonly phase: string;
  readonly reason: string;
  readonly message: string;
}

/** A Volcano Job or an AscendJob object (kube.ListObjects). */
export interface ExceptionJobObject {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  /** vcjob: status.state.phase; acjob: status.conditions. */
  readonly kind: 'vcjob' | 'acjob';
  readonly phase: string;
  readonly conditions: ReadonlyArray<{ readonly type: string; readonly status: string; readonly reason: string; readonly message: string }>;
}

export interface ExceptionInputs {
  readonly jobs: readonly ExceptionJob[];
  readonly podGroup: (namespace: string, name: string) => ExceptionPodGroup | undefined;
  readonly pods: (jobKey: string) => readonly ExceptionPod[];
  readonly jobObjects: readonly ExceptionJobObject[];
}

/** gvk.String() of the two job kinds, as ClusterD writes jobType for them. */
export const VCJOB_TYPE = 'batch.volcano.sh/v1alpha1, Kind=Job';
export const ACJOB_TYPE = 'mindxdl.gitee.com/v1, Kind=AscendJob';

const cond = (status: ExceptionCondition['status'], reason: string, message: string): ExceptionCondition => ({ status, reason, message });

function podFailed(p: ExceptionPod): ExceptionCondition {
  if (p.reason === 'UnexpectedAdmissionError' && p.message.includes('not get valid pod')) {
    return cond('PodGroupUnknown', 'PodFailed', 'This pod may not be scheduled by the volcano scheduler or this pod is not valid for allocation.' +
      'Please check whether the annotation huawei.com/Ascend910=<some-value> is present in the pod. If it is missing, ' +
      'inspect the Volcano scheduler logs for the keyword `Failed to get plugin volcano-npu_***` using the following command: ' +
      'kubectl logs -f -n volcano-system -l app=volcano-scheduler, if exist, check the config in configmap volcano-scheduler-configmap and the plugin  in the dir of /plugins of the container of the volcano-scheduler');
  }
  return cond('PodGroupUnknown', 'PodFailed', `pod is failed, please check the pod status using the following command: kubectl describe pod -n ${p.namespace} ${p.name}`);
}

function podGroupUnknown(pods: readonly ExceptionPod[]): ExceptionCondition | undefined {
  for (const p of pods) {
    if (p.phase === 'Pending') return cond('PodGroupUnknown', 'PodPending', `pod is pending, please check the pod status, executing command: kubectl describe pod -n ${p.namespace} ${p.name}`);
    if (p.phase === 'Failed') return podFailed(p);
  }
  return undefined;
}

const REASONS = ['JobEnqueueFailed', 'JobValidateFailed', 'NodePredicateFailed', 'BatchOrderFailed', 'NotEnoughResources'] as const;

/** The last Unschedulable=True condition of each known reason. */
function unschedulable(pg: ExceptionPodGroup): Map<string, { reason: string; message: string }> {
  const out = new Map<string, { reason: string; message: string }>();
  for (const c of pg.conditions) if (c.type === 'Unschedulable' && c.status === 'True' && (REASONS as readonly string[]).includes(c.reason)) out.set(c.reason, c);
  return out;
}

function podGroupCondition(pg: ExceptionPodGroup, pods: readonly ExceptionPod[], job: ExceptionJob): ExceptionCondition | undefined {
  const u = unschedulable(pg);
  switch (pg.phase) {
    case '':
      return cond('PodGroupCreated', 'PgNotInitialized', 'pg phase is empty, volcano-scheduler maybe not running, you can check the status byexecuting command: kubectl get pod -n volcano-system -l app=volcano-scheduler');
    case 'Unknown':
      return podGroupUnknown(pods);
    case 'Inqueue': {
      const batch = u.get('BatchOrderFailed');
      const pred = u.get('NodePredicateFailed');
      if (batch !== undefined) return cond('PodGroupInqueue', batch.reason, pred === undefined ? batch.message : `${batch.message}; ${pred.message}`);
      if (pred !== undefined) return cond('PodGroupInqueue', pred.reason, pred.message);
      const valid = u.get('JobValidateFailed');
      if (valid !== undefined) return cond('PodGroupInqueue', valid.reason, valid.message);
      const res = u.get('NotEnoughResources');
      if (res === undefined) return undefined;
      const extra = pods.length < pg.minMember
        ? ` the number of pods is less than minMember, you can check the job status by excuting command: kubectl describe [job-type, eg vcjob,acjob] -n ${job.namespace} ${job.name}`
        : '';
      return cond('PodGroupInqueue', res.reason, res.message + extra);
    }
    case 'Pending': {
      const enq = u.get('JobEnqueueFailed');
      if (enq !== undefined) return cond('PodGroupPending', enq.reason, enq.message);
      return cond('PodGroupPending', 'JobEnqueueFailed', `the resources such as cpu, memory is not enough in Queue, you can check them by executing command: kubectl describe q ${pg.queue}, or view the log of volcano-scheduler`);
    }
    case 'Running':
      for (const p of pods) {
        if (p.phase === 'Failed') return podFailed(p);
        if (p.phase === 'Pending') return cond('PodGroupRunning', 'PodPending', `pod is pending, please check the pod status using the following command: kubectl describe pod -n ${p.namespace} ${p.name}`);
      }
      return undefined;
    default:
      return undefined;
  }
}

function jobObjectCondition(j: ExceptionJobObject): ExceptionCondition | undefined {
  if (j.kind === 'vcjob') {
    switch (j.phase) {
      case '': return cond('JobEmptyStatus', 'JobNoInitialized', 'job condition is empty, volcano-controller maybe not running, you can check the status by executing command: kubectl get pod -n volcano-system -l app=volcano-controller');
      case 'Pending': return cond('JobInitialized', 'JobPending', `job is pending, you can check the job status by executing command: kubectl describe vcjob -n ${j.namespace} ${j.name}`);
      case 'Failed': return cond('JobFailed', 'JobFailed', `job is failed, you can check the job status by executing command: kubectl describe vcjob -n ${j.namespace} ${j.name}`);
      default: return undefined;
    }
  }
  if (j.conditions.length === 0) {
    return cond('JobEmptyStatus', 'JobNoInitialized', 'job condition is empty, ascend-operator maybe not running, you can check the status by executing command: kubectl get pod -n mindx-dl -l app=controller-manager');
  }
  const last = (type: string) => [...j.conditions].reverse().find((c) => c.type === type && c.status === 'True');
  const failed = last('Failed');
  if (failed !== undefined) return cond('JobFailed', failed.reason, failed.message);
  const created = last('Created');
  return created === undefined ? undefined : cond('JobInitialized', created.reason, created.message);
}

const same = (a: ExceptionCondition, b: ExceptionCondition): boolean => a.status === b.status && a.reason === b.reason && a.message === b.message;

/** One check: the report's entries (data key -> entry) and the memory for the next check. */
export function checkExceptions(memory: ReadonlyMap<string, JobException>, inputs: ExceptionInputs): { report: Map<string, JobException>; memory: Map<string, JobException> } {
  const next = new Map(memory);
  const report = new Map<string, JobException>();
  const observe = (key: string, name: string, info: () => Omit<JobException, 'condition'>, c: ExceptionCondition | undefined): void => {
    if (c === undefined) return;
    const prev = next.get(key) ?? { ...info(), condition: c };
    if (same(prev.condition, c)) report.set(exceptionKey(name, key), prev);
    next.set(key, { ...prev, condition: c });
  };
  const summaryKeys = new Set(inputs.jobs.map((j) => j.key));
  for (const j of inputs.jobs) {
    if (j.status === 'running' || j.status === 'complete') { next.delete(j.key); continue; }
    const pods = inputs.pods(j.key);
    const pg = inputs.podGroup(j.namespace, j.pgName);
    const c = pg === undefined ? podGroupUnknown(pods) : podGroupCondition(pg, pods, j);
    observe(j.key, j.name, () => ({ jobName: j.name, jobType: j.jobType, nameSpace: j.namespace }), c);
  }
  const objectKeys = new Set<string>();
  for (const o of inputs.jobObjects) {
    if (summaryKeys.has(o.uid)) continue;
    objectKeys.add(o.uid);
    observe(o.uid, o.name, () => ({ jobName: o.name, jobType: o.kind === 'vcjob' ? VCJOB_TYPE : ACJOB_TYPE, nameSpace: o.namespace }), jobObjectCondition(o));
  }
  for (const k of next.keys()) if (!summaryKeys.has(k) && !objectKeys.has(k)) next.delete(k);
  return { report, memory: next };
}
