import { customFilterRules } from './custom-filter.ts';
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { CONTESTED, filterNode, type NodeFilterInput } from './fault-filters.ts';
import { filterJob, podView, rec } from '../../test/support/fault-filters-fakes.ts';

const S = 1000;
const T0 = 1_700_000_000_000;
const N = 'node-1';
const codes = (rs: readonly { code: string }[]): string[] => rs.map((r) => r.code);
const outcomeCodes = (os: readonly { record: FaultRecord }[]): string[] => os.map((o) => o.record.code);
const base = (over: Partial<NodeFilterInput>): NodeFilterInput => ({ node: N, records: [], nowMs: T0, jobs: [], uce: {}, ...over });

const job = (annotations: Record<string, string>, over = {}) =>
  filterJob('ns/train-uid', [podView('train-0', N, ['Ascend910-0', 'Ascend910-1'], 0), podView('train-1', 'node-2', ['Ascend910-0'], 1)], { rules: customFilterRules(annotations), ...over });

describe('fault filter chain of one node', () => {
  it('custom filter (docs/rules.md#filter.custom): a code rule hides the fault on the job NPU for its window, then reports it', () => {
    const j = job({ 'huawei.com/schedule.filter.faultCode': '80E18402:30' });
    const records = [rec(N, 'Ascend910-0', '80E18402', 'SeparateNPU', T0), rec(N, 'Ascend910-5', '80E18402', 'SeparateNPU', T0)];
    const r = filterNode(base({ records, jobs: [j], nowMs: T0 + 10 * S }));
    expect(outcomeCodes(r.hidden)).toEqual(['80E18402']);
    expect(r.hidden[0]).toMatchObject({ by: 'custom-filter', untilMs: T0 + 30 * S + 1, record: { device: 'Ascend910-0' } });
    expect(r.visible.map((x) => x.device)).toEqual(['Ascend910-5']); // not the job's NPU
    expect(r.recheckAtMs).toBe(T0 + 30 * S + 1);
    const later = filterNode(base({ records, jobs: [j], nowMs: T0 + 31 * S }));
    expect(later.hidden).toEqual([]);
    expect(later.visible).toHaveLength(2);
    expect(later.reported[0]?.reasons.map((x) => x.detail)).toEqual([expect.stringContaining('expired; reported')]);
  });

  it('custom filter: a level rule hides by level; code rules take precedence', () => {
    const j = job({ 'huawei.com/schedule.filter.faultLevel': 'RestartNPU:3600', 'huawei.com/schedule.filter.faultCode': '8C03A000:5' });
    const records = [rec(N, 'Ascend910-0', '40F84E00', 'RestartNPU', T0), rec(N, 'Ascend910-1', '8C03A000', 'RestartNPU', T0), rec(N, 'Ascend910-1', '80E18402', 'SeparateNPU', T0)];
    const r = filterNode(base({ records, jobs: [j], nowMs: T0 + 10 * S }));
    expect(outcomeCodes(r.hidden)).toEqual(['40F84E00']);
    expect(codes(r.visible)).toEqual(['8C03A000', '80E18402']);
  });

  it('custom filter: a UB switch fault is hidden only when every NPU job on the node hides it', () => {
    const sw = rec(N, undefined, '[0x08520003,na,L2,na]', 'SeparateNPU', T0, 'switch');
    const a = job({ 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:60' });
    const b = filterJob('ns/other-uid', [podView('other-0', N, ['Ascend910-4'], 0)]);
    expect(filterNode(base({ records: [sw], jobs: [a], nowMs: T0 + S })).hidden).toHaveLength(1);
    expect(filterNode(base({ records: [sw], jobs: [a, b], nowMs: T0 + S })).hidden).toHaveLength(0);
  });

  it('MindIE hold (docs/rules.md#filter.mindie-hold): RestartRequest hidden 60 s for a subscribed MindIE server job', () => {
    const j = job({}, { rules: customFilterRules({}, { mindIeServerSubscribed: true }) });
    const records = [rec(N, 'Ascend910-0', '80C98008', 'RestartRequest', T0)];
    expect(filterNode(base({ records, jobs: [j], nowMs: T0 + 59 * S })).hidden[0]).toMatchObject({ by: 'custom-filter', untilMs: T0 + 60 * S + 1 });
    expect(filterNode(base({ records, jobs: [j], nowMs: T0 + 61 * S })).hidden).toEqual([]);
  });

  it('UCE-accompany (docs/rules.md#filter.uce-accompany): an AIC error within 5 s of a UCE is dropped; alone it waits 5 s, then is reported', () => {
    const uce = rec(N, 'Ascend910-2', '80E01801', 'RestartBusiness', T0);
    const aic = rec(N, 'Ascend910-2', '80C98009', 'RestartRequest', T0 + 2 * S);
    const r = filterNode(base({ records: [uce, aic], nowMs: T0 + 2 * S }));
    expect(outcomeCodes(r.dropped)).toEqual(['80C98009']);
    expect(r.dropped[0]?.by).toBe('uce-accompany');
    expect(codes(r.visible)).toEqual(['80E01801']);
    expect(Object.values(r.uce)).toEqual(['drop']);

    const alone = rec(N, 'Ascend910-3', '80C98009', 'RestartRequest', T0);
    const w = filterNode(base({ records: [alone], nowMs: T0 + S }));
    expect(w.hidden[0]).toMatchObject({ by: 'uce-accompany', untilMs: T0 + 5 * S });
    expect(w.recheckAtMs).toBe(T0 + 5 * S);
    const after = filterNode(base({ records: [alone], nowMs: T0 + 5 * S, uce: w.uce }));
    expect(codes(after.visible)).toEqual(['80C98009']);
    expect(after.reported[0]?.by).toBe('uce-accompany');
    // the decision sticks: a UCE arriving later does not drop an AIC error already reported
    const sticky = filterNode(base({ records: [alone, rec(N, 'Ascend910-3', '80E01801', 'RestartBusiness', T0 + 6 * S)], nowMs: T0 + 6 * S, uce: after.uce }));
    expect(codes(sticky.visible)).toEqual(['80C98009', '80E01801']);
  });

  it('step retry (docs/rules.md#filter.step-retry): the recovery stage hides and re-levels in its place in the chain', () => {
    const hccl = rec(N, 'Ascend910-0', '8C1F860B', 'NotHandleFault', T0);
    const ucef = rec(N, 'Ascend910-1', '80E01801', 'RestartBusiness', T0);
    const stage = (rs: readonly FaultRecord[]): FaultRecord[] => rs.flatMap((x) => (x.code === '80E01801' ? [] : x.code === '8C1F860B' ? [{ ...x, level: 'RestartBusiness' as const }] : [x]));
    const r = filterNode(base({ records: [hccl, ucef], nowMs: T0 + 3 * S, stepRetry: stage }));
    expect(r.hidden[0]).toMatchObject({ by: 'step-retry', untilMs: T0 + 10 * S + 1, record: { code: '80E01801' } });
    expect(r.relevelled[0]).toMatchObject({ by: 'step-retry', from: 'NotHandleFault', record: { code: '8C1F860B', level: 'RestartBusiness' } });
    expect(r.visible.map((x) => `${x.code}:${x.level}`)).toEqual(['8C1F860B:RestartBusiness']);
    // once the 10 s window is over a hide held by the FSM is open-ended
    expect(filterNode(base({ records: [ucef], nowMs: T0 + 20 * S, stepRetry: stage })).hidden[0]?.untilMs).toBeUndefined();
  });

  it('step retry: with a switch link-down remembered on the job\'s nodes an unabsorbed HCCL retry keeps its level and the link-down of its node is forced in', () => {
    const hccl = rec(N, 'Ascend910-0', '8C1F860B', 'NotHandleFault', T0);
    const stage = (rs: readonly FaultRecord[]): FaultRecord[] => rs.map((x) => (x.code === '8C1F860B' ? { ...x, level: 'RestartBusiness' as const } : x));
    const sw = { node: N, device: null, code: '[0x08520003,na,L2,na]', lastSeenMs: T0 - 5 * S, firstSeenMs: T0 - 60 * S, level: 'NotHandleFault', reportedLevel: 'NotHandleFault' };
    const j = job({});
    const r = filterNode(base({ records: [hccl], jobs: [j], nowMs: T0 + 11 * S, stepRetry: stage, linkDowns: [sw] }));
    expect(r.visible.map((x) => `${x.source}:${x.code}:${x.level}`)).toEqual(['npu:8C1F860B:NotHandleFault', 'switch:[0x08520003,na,L2,na]:NotHandleFault']);
    expect(r.visible[1]?.firstSeenMs).toBe(T0 - 60 * S);
    expect(r.relevelled).toEqual([]);
    expect(r.reported.map((o) => `${o.by}:${o.record.code}`)).toEqual(['step-retry:8C1F860B', 'step-retry:[0x08520003,na,L2,na]']);
    expect(r.reported[1]?.reasons.map((x) => x.detail).join(' ')).toMatch(/forced in/);
    // a link-down remembered on a node of no job holding the chip: the HCCL retry is re-levelled, nothing forced in
    const elsewhere = filterNode(base({ records: [hccl], jobs: [j], nowMs: T0 + 11 * S, stepRetry: stage, linkDowns: [{ ...sw, node: 'node-9' }] }));
    expect(elsewhere.visible.map((x) => `${x.code}:${x.level}`)).toEqual(['8C1F860B:RestartBusiness']);
    // on another node of the job: the HCCL retry keeps its level; that node's link-down is forced in there, not here
    const peer = filterNode(base({ records: [hccl], jobs: [j], nowMs: T0 + 11 * S, stepRetry: stage, linkDowns: [{ ...sw, node: 'node-2' }] }));
    expect(peer.visible.map((x) => `${x.code}:${x.level}`)).toEqual(['8C1F860B:NotHandleFault']);
    // the link-down still reported is not added twice
    const live = rec(N, undefined, '[0x08520003,na,L2,na]', 'NotHandleFault', T0 - 60 * S, 'switch');
    expect(filterNode(base({ records: [hccl, live], jobs: [j], nowMs: T0 + 11 * S, stepRetry: stage, linkDowns: [sw] })).visible).toHaveLength(2);
  });

  it('recover-in-place (docs/rules.md#filter.recover-in-place): L2/L3 faults hidden for 60 s while every faulty rank qualifies, across nodes', () => {
    const rip = { recoverInPlace: { recoverInPlace: true, subHealthyStrategy: 'ignore' } };
    const j = job({}, rip);
    const l3 = rec(N, 'Ascend910-1', '80E01801', 'RestartBusiness', T0);
    const other = (faults: FaultRecord[]) => (n: string): FaultRecord[] => faults.filter((f) => f.node === n);
    const r = filterNode(base({ records: [l3], jobs: [j], nowMs: T0 + 5 * S, otherNode: other([]) }));
    expect(r.hidden[0]).toMatchObject({ by: 'recover-in-place', untilMs: T0 + 60 * S });
    // rank 1 (node-2) has a SeparateNPU: rank 0's L3 may still restart in place; but a bad rank 0 blocks all
    expect(filterNode(base({ records: [l3], jobs: [j], nowMs: T0 + 5 * S, otherNode: other([rec('node-2', 'Ascend910-0', '80E18402', 'SeparateNPU', T0)]) })).hidden).toHaveLength(1);
    const bad0 = [l3, rec(N, 'Ascend910-0', '80E18402', 'SeparateNPU', T0)];
    expect(filterNode(base({ records: bad0, jobs: [j], nowMs: T0 + 5 * S, otherNode: other([]) })).hidden).toEqual([]);
    expect(filterNode(base({ records: [l3], jobs: [j], nowMs: T0 + 61 * S, otherNode: other([]) })).hidden).toEqual([]);
    expect(filterNode(base({ records: [l3], jobs: [job({})], nowMs: T0 + 5 * S })).hidden).toEqual([]);
  });

  it('stress test (docs/rules.md#filter.stress-test): stress-test codes hidden on nodes under test', () => {
    const r = filterNode(base({ records: [rec(N, 'Ascend910-0', '80818C05', 'SeparateNPU', T0)], stressTestNodes: new Set([N]) }));
    expect(r.hidden[0]).toMatchObject({ by: 'stress-test' });
    expect(r.hidden[0]?.untilMs).toBeUndefined();
  });

  it('node-wide faults and faults on NPUs of no job pass untouched; no records is a no-op', () => {
    const j = job({ 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:60' });
    const records = [rec(N, undefined, '2C000031', 'SeparateNPU', T0, 'node'), rec(N, 'Ascend910-7', '80E18402', 'SeparateNPU', T0)];
    const r = filterNode(base({ records, jobs: [j], nowMs: T0 + S }));
    expect(r.visible).toEqual(records);
    expect(r.reported).toEqual([]);
    expect(filterNode(base({ nowMs: T0 })).visible).toEqual([]);
  });

  it('a chip two jobs claim is contested: no job\'s filter hides its faults (openClaims, ClusterD: the first claimant\'s does)', () => {
    const hider = job({ 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:86400' });
    const victim = filterJob('ns/victim-uid', [podView('victim-0', N, ['Ascend910-1'], 0)]);
    const f = rec(N, 'Ascend910-1', '80E18402', 'SeparateNPU', T0);
    for (const jobs of [[hider, victim], [victim, hider]]) {
      const r = filterNode(base({ records: [f], jobs, nowMs: T0 + S }));
      expect(r.hidden).toEqual([]);
      expect(codes(r.visible)).toEqual(['80E18402']);
      expect(r.reported[0]?.reasons.at(-1)).toMatchObject({ rule: 'custom-filter', level: CONTESTED, detail: expect.stringContaining('claimed by pods of 2 jobs (') });
    }
    expect(filterNode(base({ records: [f], jobs: [hider, victim], nowMs: T0 + S, openClaims: true })).hidden).toHaveLength(1);
    // the hider's own chip, which nobody else claims, is still hidden
    expect(filterNode(base({ records: [rec(N, 'Ascend910-0', '80E18402', 'SeparateNPU', T0)], jobs: [hider, victim], nowMs: T0 + S })).hidden).toHaveLength(1);
    // a finished or terminating pod's claim does not contest
    const gone = filterJob('ns/victim-uid', [{ ...podView('victim-0', N, ['Ascend910-1'], 0), terminating: true }]);
    expect(filterNode(base({ records: [f], jobs: [hider, gone], nowMs: T0 + S })).hidden).toHaveLength(1);
  });

  it('recover-in-place withholds only what the job alone holds: not a contested chip, not a node-wide fault of a shared node', () => {
    const rip = job({}, { recoverInPlace: { recoverInPlace: true, subHealthyStrategy: 'ignore' } });
    const other = (): FaultRecord[] => [];
    const onChip = rec(N, 'Ascend910-1', '80E01801', 'RestartBusiness', T0);
    const nodeWide = rec(N, undefined, '2C000031', 'RestartBusiness', T0, 'node');
    const claimant = filterJob('ns/victim-uid', [podView('victim-0', N, ['Ascend910-1'], 0)]);
    const neighbour = filterJob('ns/victim-uid', [podView('victim-0', N, ['Ascend910-5'], 0)]);
    expect(filterNode(base({ records: [onChip], jobs: [rip, claimant], nowMs: T0 + 5 * S, otherNode: other })).hidden).toEqual([]);
    expect(filterNode(base({ records: [onChip], jobs: [rip, neighbour], nowMs: T0 + 5 * S, otherNode: other })).hidden).toHaveLength(1);
    expect(filterNode(base({ records: [nodeWide], jobs: [rip, neighbour], nowMs: T0 + 5 * S, otherNode: other })).hidden).toEqual([]);
    expect(filterNode(base({ records: [nodeWide], jobs: [rip], nowMs: T0 + 5 * S, otherNode: other })).hidden).toHaveLength(1);
    expect(filterNode(base({ records: [onChip], jobs: [rip, claimant], nowMs: T0 + 5 * S, otherNode: other, openClaims: true })).hidden).toHaveLength(1);
  });
});
