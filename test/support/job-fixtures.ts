/**
 * Builders for the job policy tests (pure data; no test framework imports). A "4-pod vcjob" is the
 * reference job: ranks 0-3 on node-0..node-3, 8 NPUs each (`Ascend910-0..7`).
 */
import type { FaultRecord, FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { aggregateJob, type HiddenFault, type JobFaultAggregate } from '../../policy/jobs/job-aggregation.ts';
import type { JobRescheduleState } from '../../policy/jobs/job-decision-types.ts';
import { decideJob, type JobDecisionOutput } from '../../policy/jobs/job-restart.ts';
import { jobKeyOf, type JobKnobsInput, type JobPodView, type JobView } from '../../policy/jobs/job-view.ts';

export const NPUS = ['Ascend910-0', 'Ascend910-1', 'Ascend910-2', 'Ascend910-3', 'Ascend910-4', 'Ascend910-5', 'Ascend910-6', 'Ascend910-7'];

export function podOf(name: string, rank: number | undefined, node: string | undefined, extra: Partial<JobPodView> = {}): JobPodView {
  return {
    name, uid: `${name}-uid`, ...(node === undefined ? {} : { node }), ...(rank === undefined ? {} : { rank }),
    npus: node === undefined ? [] : NPUS, phase: node === undefined ? 'Pending' : 'Running', ready: node !== undefined, ...extra,
  };
}

export function jobOf(pods: readonly JobPodView[], uid = 'job-uid-1', name = 'llama'): JobView {
  return { key: jobKeyOf('team-a', name, uid), namespace: 'team-a', name, uid, kind: 'vcjob', pods };
}

/** ranks 0-3 on node-0..node-3, pods `llama-worker-<i>`. */
export const fourPodJob = (uid = 'job-uid-1'): JobView =>
  jobOf([0, 1, 2, 3].map((i) => podOf(`llama-worker-${i}`, i, `node-${i}`)), uid);

export function chipFault(node: string, device: string | undefined, level: NpuFaultLevel, code = '80E18005', source: FaultSource = 'npu'): FaultRecord {
  return { node, ...(device === undefined ? {} : { device }), source, code, level, reportedLevel: level, firstSeenMs: 0 };
}

export const nodeNotReady = (node: string): FaultRecord =>
  ({ node, source: 'node-ready', code: 'NodeNotReady', level: 'SeparateNPU', reportedLevel: 'NotReady', firstSeenMs: 0 });

export const mapPods = (job: JobView, f: (p: JobPodView) => JobPodView | undefined): JobView =>
  ({ ...job, pods: job.pods.flatMap((p) => { const q = f(p); return q === undefined ? [] : [q]; }) });

/** Mark pods terminating (graceful deletion in progress). */
export const terminating = (job: JobView, names: readonly string[]): JobView =>
  mapPods(job, (p) => (names.includes(p.name) ? { ...p, terminating: true } : p));

/** Replace pods by new incarnations (new UID, same name/rank); `node` undefined = still pending. */
export function replaced(job: JobView, names: readonly string[], node: (p: JobPodView) => string | undefined, gen = 2): JobView {
  return mapPods(job, (p) => {
    if (!names.includes(p.name)) return p;
    const n = node(p);
    const { node: _old, terminating: _t, containerFailed: _c, ...rest } = p;
    return { ...rest, uid: `${p.name}-uid-g${gen}`, ...(n === undefined ? {} : { node: n }), npus: n === undefined ? [] : NPUS,
      phase: n === undefined ? 'Pending' : 'Running', ready: n !== undefined };
  });
}

export const allNames = (job: JobView): string[] => job.pods.map((p) => p.name);

export interface Step {
  readonly job: JobView;
  readonly faults?: readonly FaultRecord[];
  readonly hidden?: ReadonlyMap<string, HiddenFault>;
  readonly knobs: JobKnobsInput;
  readonly state?: JobRescheduleState;
  readonly nowMs: number;
  readonly registered?: boolean;
}

export const aggregateOf = (s: Pick<Step, 'job' | 'faults' | 'hidden'>): JobFaultAggregate =>
  aggregateJob({ job: s.job, faults: s.faults ?? [], ...(s.hidden ? { hidden: s.hidden } : {}) });

export function decide(s: Step): JobDecisionOutput {
  return decideJob({
    aggregate: aggregateOf(s), knobs: s.knobs, state: s.state, nowMs: s.nowMs, ...(s.registered === undefined ? {} : { registered: s.registered }),
  });
}
