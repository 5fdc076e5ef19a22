import type { FaultSource } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import { isStepRetryJob, linkDownRecord, linkDownsToForceAdd, rememberLinkDowns, stepRetryVerdict, freshBusinessReports } from './step-retry-filter.ts';

const S = 1000;
const lf = (code: string, firstSeenMs: number, source: FaultSource = 'npu', node = 'n1'): LeveledFault => ({
  fault: { node, ...(source === 'switch' ? {} : { device: 'Ascend910-0' }), source, code, level: 'NotHandleFault', reportedLevel: 'NotHandleFault', firstSeenMs },
  level: 'NotHandleFault',
  reasons: [],
});
const retry = { retryEnabled: true };

describe('step-retry filter (docs/rules.md#filter.step-retry)', () => {
  it('recognises retry jobs from the PodGroup', () => {
    expect(isStepRetryJob({ 'process-recover-enable': 'on' }, { 'recover-strategy': 'recover, retry' })).toBe(true);
    expect(isStepRetryJob({ 'process-recover-enable': 'pause' }, { 'recover-strategy': 'retry' })).toBe(false);
    expect(isStepRetryJob({ 'process-recover-enable': 'on' }, { 'recover-strategy': 'recover' })).toBe(false);
  });

  it('hides a retry fault for 10 s', () => {
    expect(stepRetryVerdict(lf('80E01801', 0), retry, false, 10 * S)).toMatchObject({ action: 'hide', untilMs: 10 * S + 1 });
    expect(stepRetryVerdict(lf('80E01801', 0), retry, false, 10 * S + 1).action).toBe('pass');
    expect(stepRetryVerdict(lf('80E01801', 0), { retryEnabled: false }, false, 0).action).toBe('pass');
    expect(stepRetryVerdict(lf('80C98009', 0), retry, false, 0).action).toBe('pass');
  });

  it('keeps hiding while the job recovers (RecoverTime within 10 s of the fault), up to 30 s or until completion', () => {
    const job = { retryEnabled: true, recoverTimeMs: 5 * S };
    expect(stepRetryVerdict(lf('80E01801', 0), job, false, 35 * S)).toMatchObject({ action: 'hide', untilMs: 35 * S + 1 });
    expect(stepRetryVerdict(lf('80E01801', 0), job, false, 36 * S).action).toBe('pass');
    expect(stepRetryVerdict(lf('80E01801', 0), { ...job, completeTimeMs: 20 * S }, false, 100 * S).action).toBe('hide');
    expect(stepRetryVerdict(lf('80E01801', 0), { ...job, recoverTimeMs: 11 * S }, false, 20 * S).action).toBe('pass');
  });

  it('an unabsorbed HCCL retry fault becomes RestartBusiness unless a link-down is known', () => {
    expect(stepRetryVerdict(lf('8C1F860B', 0), retry, false, 20 * S)).toMatchObject({ action: 'relevel', level: 'RestartBusiness' });
    expect(stepRetryVerdict(lf('8C1F860B', 0), retry, true, 20 * S).action).toBe('pass');
  });

  it('remembers UB switch link-downs (not device ones, as ClusterD) for 180 s or --link-down-memory-seconds; force-adds those on the job nodes', () => {
    const sw = lf('[0x08520003,na,L2,na]', 5 * S, 'switch', 'n2').fault;
    let mem = rememberLinkDowns({}, 'n2', [lf('81078603', 0, 'npu', 'n2').fault, sw, lf('80E01801', 0, 'npu', 'n2').fault], 10 * S);
    expect(Object.keys(mem)).toEqual(['n2/-/[0x08520003,na,L2,na]']);
    mem = rememberLinkDowns(mem, 'n2', [], 100 * S);
    expect(linkDownsToForceAdd(mem, new Set(['n1']), 100 * S)).toEqual([]);
    const [e] = linkDownsToForceAdd(mem, new Set(['n2']), 100 * S);
    expect(e).toMatchObject({ node: 'n2', device: null, lastSeenMs: 10 * S });
    expect(linkDownRecord(e!)).toEqual(sw);
    expect(rememberLinkDowns(mem, 'n2', [], 191 * S)).toEqual({});
    expect(rememberLinkDowns(mem, 'n2', [], 41 * S, 30 * S)).toEqual({});
    expect(linkDownsToForceAdd(mem, new Set(['n2']), 41 * S, 30 * S)).toEqual([]);
  });

  it('business-plane reports expire after 60 s', () => {
    expect(freshBusinessReports([{ atMs: 0 }, { atMs: 50 * S }], 61 * S)).toEqual([{ atMs: 50 * S }]);
  });
});
