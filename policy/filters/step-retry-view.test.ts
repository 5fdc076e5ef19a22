/** The step-retry filter applied to a node's records (what the rescheduler sees), with the job lookup. */
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { parseJobKnobs } from '../../schemas/job-knobs/job-knobs.ts';
import { podViewFromMeta } from '../jobs/job-view.ts';
import type { JobFacts, JobLookup } from '../jobs/job-facts.ts';
import { retryFaultWindowEnds, stepRetryJobOf, stepRetrySchedulerView } from './step-retry-view.ts';

const S = 1000;
const rec = (code: string, device: string | undefined, firstSeenMs = 0): FaultRecord => ({
  node: 'n1', source: device === undefined ? 'node' : 'npu', code, level: 'NotHandleFault', reportedLevel: 'NotHandleFault', firstSeenMs, ...(device === undefined ? {} : { device }),
});

function lookup(retry: boolean, terminating = false): JobLookup {
  const labels = { 'process-recover-enable': retry ? 'on' : 'off' };
  const annotations = { 'recover-strategy': 'retry,recover' };
  const pod = podViewFromMeta({ name: 'w-0', uid: 'p0', nodeName: 'n1', phase: 'Running', terminating, annotations: { 'hccl/rankIndex': '0', 'huawei.com/AscendReal': 'Ascend910-0,Ascend910-1' } });
  const job: JobFacts = {
    view: { key: 'ns/job-u1', namespace: 'ns', name: 'job', uid: 'u1', kind: 'vcjob', pods: [pod] },
    knobs: parseJobKnobs(labels, annotations).knobs,
    podGroup: { metadata: { labels, annotations } },
  };
  return { jobKeysOnNodes: (nodes) => new Set([...nodes].includes('n1') ? ['ns/job-u1'] : []), job: (k) => (k === 'ns/job-u1' ? job : undefined) };
}
const facts = (jobId: string, retryEnabled: boolean) => ({ retryEnabled, ...(jobId === 'u1' ? {} : { recoverTimeMs: -1 }) });

describe('step-retry scheduler view', () => {
  it('finds the step-retry job holding a chip on a node (live pods only)', () => {
    expect(stepRetryJobOf(lookup(true), facts, 'n1', 'Ascend910-1')).toEqual({ retryEnabled: true });
    expect(stepRetryJobOf(lookup(false), facts, 'n1', 'Ascend910-1')).toEqual({ retryEnabled: false });
    expect(stepRetryJobOf(lookup(true), facts, 'n1', 'Ascend910-7')).toBeUndefined();
    expect(stepRetryJobOf(lookup(true), facts, 'n2', 'Ascend910-1')).toBeUndefined();
    expect(stepRetryJobOf(lookup(true, true), facts, 'n1', 'Ascend910-1')).toBeUndefined();
  });

  it('a chip pods of two jobs claim is held by none (openClaims, ClusterD: by the first)', () => {
    const a = lookup(true);
    const other = podViewFromMeta({ name: 'x-0', uid: 'x0', nodeName: 'n1', phase: 'Running', annotations: { 'huawei.com/AscendReal': 'Ascend910-1' } });
    const b: JobFacts = { ...a.job('ns/job-u1')!, view: { key: 'ns/x-u2', namespace: 'ns', name: 'x', uid: 'u2', kind: 'vcjob', pods: [other] } };
    const both: JobLookup = { jobKeysOnNodes: () => new Set(['ns/job-u1', 'ns/x-u2']), job: (k) => (k === 'ns/x-u2' ? b : a.job(k)) };
    expect(stepRetryJobOf(both, facts, 'n1', 'Ascend910-1')).toBeUndefined();
    expect(stepRetryJobOf(both, facts, 'n1', 'Ascend910-0')).toEqual({ retryEnabled: true });
    expect(stepRetryJobOf(both, facts, 'n1', 'Ascend910-1', true)).toEqual({ retryEnabled: true });
  });

  it('hides a young retry fault of a step-retry job, re-levels an old HCCL one, and passes the rest', () => {
    const jobOf = (d: string) => stepRetryJobOf(lookup(true), facts, 'n1', d);
    const uce = rec('80E01801', 'Ascend910-0');
    const hccl = rec('8C1F860B', 'Ascend910-1');
    const other = rec('80C98009', 'Ascend910-0');
    const elsewhere = rec('80E01801', 'Ascend910-5');
    expect(stepRetrySchedulerView([uce, hccl, other, elsewhere], jobOf, 5 * S)).toEqual([other, elsewhere]);
    expect(stepRetrySchedulerView([uce, hccl, other], jobOf, 20 * S)).toEqual([uce, { ...hccl, level: 'RestartBusiness' }, other]);
    const plain = [other, rec('80E01801', undefined)];
    expect(stepRetrySchedulerView(plain, jobOf, 0)).toBe(plain);
  });

  it('names when each retry fault\'s 10 s window ends', () => {
    expect(retryFaultWindowEnds([rec('80E01801', 'Ascend910-0', 3 * S), rec('80C98009', 'Ascend910-0', 0), rec('8c1f860b', 'Ascend910-1', 7 * S)])).toEqual([13 * S, 17 * S]);
  });
});
