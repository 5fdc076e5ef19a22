import { checkExceptions, VCJOB_TYPE, type ExceptionInputs, type ExceptionJob } from './scheduling-exception.ts';
import { encodeJobException } from '../../schemas/scheduling-exception/scheduling-exception.ts';

const UID = 'ce662fb8-6331-4fc2-bbdc-3d38f2bcb5a0';
const none: ExceptionInputs = { jobs: [], podGroup: () => undefined, pods: () => [], jobObjects: [] };

describe('scheduling-exception-report entries (ClusterD schedulingexception collector)', () => {
  it('a Volcano Job Volcano never initialised: the bytes ClusterD wrote in the process-recovery scenario', () => {
    const { report } = checkExceptions(new Map(), { ...none, jobObjects: [{ uid: UID, name: 'pr-job', namespace: 'training', kind: 'vcjob', phase: '', conditions: [] }] });
    expect([...report.keys()]).toEqual([`pr-job.${UID}`]);
    expect(encodeJobException(report.get(`pr-job.${UID}`)!)).toBe(
      '{"jobName":"pr-job","jobType":"batch.volcano.sh/v1alpha1, Kind=Job","nameSpace":"training","conditions":{"status":"JobEmptyStatus","reason":"JobNoInitialized","message":"job condition is empty, volcano-controller maybe not running, you can check the status by executing command: kubectl get pod -n volcano-system -l app=volcano-controller"}}',
    );
    expect(VCJOB_TYPE).toBe('batch.volcano.sh/v1alpha1, Kind=Job');
  });

  it('a job of the summary: skipped once running; a changed condition is reported one check later; memory dropped when the job is gone', () => {
    const job: ExceptionJob = { key: 'k1', name: 'llama', jobType: 'Job', namespace: 'ns', status: 'pending', pgName: 'llama-pg' };
    const pg = { phase: 'Pending', conditions: [], minMember: 1, queue: 'q1' };
    const inputs = (over: Partial<ExceptionInputs>): ExceptionInputs => ({ ...none, jobs: [job], podGroup: () => pg, ...over });
    const c1 = checkExceptions(new Map(), inputs({}));
    expect(JSON.parse(encodeJobException(c1.report.get('llama.k1')!))).toEqual({ jobName: 'llama', jobType: 'Job', nameSpace: 'ns', conditions: { status: 'PodGroupPending', reason: 'JobEnqueueFailed', message: 'the resources such as cpu, memory is not enough in Queue, you can check them by executing command: kubectl describe q q1, or view the log of volcano-scheduler' } });
    // The PodGroup now carries an Unschedulable condition: a different condition, not reported this check.
    const changed = inputs({ podGroup: () => ({ ...pg, phase: 'Inqueue', conditions: [{ type: 'Unschedulable', status: 'True', reason: 'NotEnoughResources', message: '<2/2> nodes <unavailable>' }] }) });
    const c2 = checkExceptions(c1.memory, changed);
    expect(c2.report.size).toBe(0);
    const c3 = checkExceptions(c2.memory, changed);
    expect(JSON.parse(encodeJobException(c3.report.get('llama.k1')!)).conditions.message).toBe(' 2/2 nodes  unavailable the number of pods is less than minMember, you can check the job status by excuting command: kubectl describe [job-type, eg vcjob,acjob] -n ns llama'); // `<` -> space, `>` dropped; fewer pods than minMember
    expect(checkExceptions(c3.memory, inputs({ jobs: [{ ...job, status: 'running' }] })).report.size).toBe(0);
    expect(checkExceptions(c3.memory, none).memory.size).toBe(0);
  });

  it('a Volcano Job that is also in the job summary (its PodGroup\'s owner) is judged from the summary only', () => {
    const job: ExceptionJob = { key: UID, name: 'pr-job', jobType: 'Job', namespace: 'training', status: 'running', pgName: 'pg' };
    const { report } = checkExceptions(new Map(), { ...none, jobs: [job], jobObjects: [{ uid: UID, name: 'pr-job', namespace: 'training', kind: 'vcjob', phase: '', conditions: [] }] });
    expect(report.size).toBe(0);
  });
});
