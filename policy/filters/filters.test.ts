import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import { customFilterRules, customFilterVerdict } from './custom-filter.ts';
import { applyFilters, type FaultFilter } from './filters.ts';
import { preSeparateChip, preSeparateNodeStatus } from '../faults/pre-separate.ts';
import { stepRetryVerdict } from './step-retry-filter.ts';
import { stressTestVerdict } from './stress-test-filter.ts';

const S = 1000;
const lf = (code: string, level: NpuFaultLevel, firstSeenMs = 0, node = 'n1'): LeveledFault => ({
  fault: { node, device: 'Ascend910-0', source: 'npu', code, level, reportedLevel: level, firstSeenMs },
  level,
  reasons: [],
});

describe('filter chain', () => {
  it('first hide/drop wins, relevels accumulate, recheck time is the earliest hold', () => {
    const now = 20 * S;
    const rules = customFilterRules({ 'huawei.com/schedule.filter.faultCode': '80C98009:30' });
    const chain: FaultFilter[] = [
      (f) => customFilterVerdict(f, rules, now),
      (f) => stepRetryVerdict(f, { retryEnabled: true }, false, now),
      (f) => stressTestVerdict(f, new Set(['n2'])),
    ];
    const view = applyFilters([lf('80C98009', 'RestartRequest'), lf('8C1F860B', 'NotHandleFault'), lf('80818C05', 'SeparateNPU', 0, 'n2'), lf('40F84E00', 'RestartNPU')], chain);
    expect(view.visible.map((f) => [f.fault.code, f.level])).toEqual([['8C1F860B', 'RestartBusiness'], ['40F84E00', 'RestartNPU']]);
    expect(view.hidden.map((h) => h.fault.fault.code)).toEqual(['80C98009', '80818C05']);
    expect(view.recheckAtMs).toBe(30 * S + 1);
    expect(view.visible[0]?.reasons.map((r) => r.rule)).toEqual(['step-retry']);
  });
});

describe('stress-test filter (docs/rules.md#filter.stress-test)', () => {
  it('hides stress-test codes only on nodes under test', () => {
    expect(stressTestVerdict(lf('80818C06', 'SubHealthFault'), new Set(['n1'])).action).toBe('hide');
    expect(stressTestVerdict(lf('80818C06', 'SubHealthFault'), new Set()).action).toBe('pass');
    expect(stressTestVerdict(lf('40F84E00', 'RestartNPU'), new Set(['n1'])).action).toBe('pass');
  });
});

describe('pre-separate (docs/rules.md#ingest.pre-separate)', () => {
  it('a PreSeparateNPU chip leaves the available list; unhealthy only when idle', () => {
    expect(preSeparateChip('80E3A202', 'PreSeparateNPU', true)).toMatchObject({ available: false, unhealthy: false });
    expect(preSeparateChip('80E3A202', 'PreSeparateNPU', false)).toMatchObject({ available: false, unhealthy: true });
  });
  it('parameter-plane codes and other levels are not pre-separate markings', () => {
    expect(preSeparateChip('81078603', 'PreSeparateNPU', false)).toBeUndefined();
    expect(preSeparateChip('110001024', 'PreSeparateNPU', false)).toBeUndefined();
    expect(preSeparateChip('80E3A202', 'SeparateNPU', false)).toBeUndefined();
  });
  it('a PreSeparate node is Healthy while NPU pods run on it, else UnHealthy; other statuses unchanged', () => {
    expect(preSeparateNodeStatus('PreSeparate', true).status).toBe('Healthy');
    expect(preSeparateNodeStatus('PreSeparate', false).status).toBe('UnHealthy');
    expect(preSeparateNodeStatus('UnHealthy', true).status).toBe('UnHealthy');
  });
});
