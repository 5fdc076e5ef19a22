import { encodeJobState, jobStateCmName, jobUidOfStateCm, parseJobState, type JobStateRecord } from './job-state.ts';

const record: JobStateRecord = {
  version: 1, jobKey: 'team-a/llama-u1', jobUid: 'u1',
  state: {
    jobUid: 'u1', generation: 1, retry: { uid: 'u1', times: 2 }, acted: ['u1/g1/start/00aa'],
    active: {
      decisionId: 'u1/g1/start/00aa', kind: 'job', row: 11, scope: 'job', mode: 'force', startedMs: 1000,
      targets: [{ name: 'llama-worker-0', uid: 'p0', node: 'node-0' }], minAvailable: 1, jobReason: 'CardUnhealthy',
      countsAgainstBudget: false, resetGracefulExit: false, bumpRetryTimeOnSuccess: false, escalationBlock: 'not-pod-level',
      reasonTasks: [{ RescheduleReason: 'CardUnhealthy', PodName: 'llama-worker-0', NodeName: 'node-0', NodeRankIndex: '0' }],
      evictionReasons: [{ podName: 'llama-worker-0', nodeName: 'node-0', rank: '0', faultType: 'CardUnhealthy', faultCode: '80E18402', faultLevel: 'SeparateNPU' }],
    },
  },
  pending: {
    decisionId: 'u1/g1/start/00aa', atMs: 1000, kind: 'job', phase: 'start', row: 11, chain: 'a -> b <c>', faultSinceMs: 900,
    actions: [
      { type: 'forceDeletePods', pods: [{ name: 'llama-worker-0', uid: 'p0' }], reasons: [] },
      { type: 'podRescheduledResetConfig', retryTime: 3, updateTimeS: 1 },
      { type: 'recordRescheduleReason', atMs: 1000, tasks: [] },
    ],
  },
};

describe('job-state format', () => {
  it('round-trips byte for byte, in one field order whatever the input order', () => {
    const text = encodeJobState(record);
    const parsed = parseJobState(text);
    expect(parsed.ok && encodeJobState(parsed.value)).toBe(text);
    const reordered = JSON.parse(text, (_k, v: unknown) => (v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).reverse()) : v)) as JobStateRecord;
    expect(encodeJobState(reordered)).toBe(text);
    expect(text).toContain('"chain":"a -\\u003e b \\u003cc\\u003e"');
  });

  it.each([
    ['not JSON', '{'],
    ['missing state', '{"version":1,"jobKey":"k","jobUid":"u"}'],
    ['unknown action', JSON.stringify({ ...record, pending: { ...record.pending, actions: [{ type: 'rmRf' }] } })],
    ['foreign state', JSON.stringify({ ...record, jobUid: 'u2' })],
    ['future version', JSON.stringify({ ...record, version: 2 })],
  ])('rejects %s without throwing', (_what, text) => {
    expect(parseJobState(text).ok).toBe(false);
  });

  it('names one ConfigMap per job uid', () => {
    expect(jobStateCmName('u1')).toBe('clusterd-ts-job-state-u1');
    expect(jobUidOfStateCm('clusterd-ts-job-state-u1')).toBe('u1');
    expect(jobUidOfStateCm('job-reschedule-reason')).toBeUndefined();
  });
});
