import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import { recoverInPlaceVerdicts } from './recover-in-place-filter.ts';

const S = 1000;
const lf = (code: string, level: NpuFaultLevel, firstSeenMs = 0): LeveledFault => ({
  fault: { node: 'n1', device: 'Ascend910-0', source: 'npu', code, level, reportedLevel: level, firstSeenMs },
  level,
  reasons: [],
});
const job = { recoverInPlace: true };
const actions = (m: Map<number, Array<{ action: string }>>) => Object.fromEntries([...m].map(([k, v]) => [k, v.map((x) => x.action)]));

describe('recover-in-place filter (docs/rules.md#filter.recover-in-place)', () => {
  it('hides the L2/L3 faults of a pod rank that can restart in place (< 60 s old)', () => {
    const v = recoverInPlaceVerdicts(job, [{ podRank: 1, faults: [lf('80C98008', 'RestartRequest'), lf('80E21007', 'NotHandleFault')] }], 59 * S);
    expect(actions(v)).toEqual({ 1: ['hide'] });
    expect(v.get(1)?.[0]).toMatchObject({ untilMs: 60 * S });
  });

  it('does not hide faults 60 s old or older, or with a more serious fault on the rank', () => {
    expect(actions(recoverInPlaceVerdicts(job, [{ podRank: 1, faults: [lf('80C98008', 'RestartRequest')] }], 60 * S))).toEqual({ 1: ['pass'] });
    expect(actions(recoverInPlaceVerdicts(job, [{ podRank: 1, faults: [lf('80C98008', 'RestartRequest'), lf('40F84E00', 'RestartNPU')] }], S))).toEqual({ 1: ['pass'] });
  });

  it('SubHealthFault is tolerated only with subHealthyStrategy ignore', () => {
    const ranks = [{ podRank: 1, faults: [lf('8C204E00', 'RestartBusiness'), lf('8C2FA001', 'SubHealthFault')] }];
    expect(actions(recoverInPlaceVerdicts(job, ranks, S))).toEqual({ 1: ['hide'] });
    expect(actions(recoverInPlaceVerdicts({ ...job, subHealthyStrategy: 'graceExit' }, ranks, S))).toEqual({ 1: ['pass'] });
  });

  it('a must-exit report after the fault stops it; rank 0 must qualify too', () => {
    expect(actions(recoverInPlaceVerdicts(job, [{ podRank: 1, faults: [lf('80C98008', 'RestartRequest')], mustExitReportedMs: S }], 2 * S))).toEqual({ 1: ['pass'] });
    const ranks = [
      { podRank: 0, faults: [lf('40F84E00', 'RestartNPU')] },
      { podRank: 1, faults: [lf('80C98008', 'RestartRequest')] },
    ];
    expect(actions(recoverInPlaceVerdicts(job, ranks, S))).toEqual({ 1: ['pass'] });
    expect(recoverInPlaceVerdicts({ recoverInPlace: false }, ranks, S).size).toBe(0);
  });
});
