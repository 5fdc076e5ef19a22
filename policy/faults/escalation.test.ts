import { EMPTY_ESCALATION_STATE, type EscalationState } from '../../schemas/escalation-state/escalation-state.ts';
import { DEFAULT_FAULT_CUSTOMIZATION, type FaultCustomization } from '../../schemas/fault-customization/fault-customization.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from './fault-level.ts';
import { activeEscalations, escalationPolicy, type EscalationInput, type EscalationOutput } from './escalation.ts';
import { drivePolicy } from '../drive-policy.ts';
import type { ConfigChange } from '../policy-operator.ts';
import { formatChain } from '../reasons.ts';

const S = 1000;
const H = 3600 * S;
const DEV = 'Ascend910-3';
const LINK_DOWN = '81078603';

function fault(code: string, firstSeenMs: number, level: NpuFaultLevel = 'NotHandleFault', device = DEV): LeveledFault {
  return {
    fault: { node: 'n1', device, source: code === LINK_DOWN ? 'network' : 'npu', code, level, reportedLevel: level, firstSeenMs },
    level,
    reasons: [],
  };
}
const observe = (...faults: LeveledFault[]): EscalationInput => ({ type: 'observe', node: 'n1', faults });
const drive = (inputs: Array<readonly [number, EscalationInput | ConfigChange<FaultCustomization>]>, until?: number, config = DEFAULT_FAULT_CUSTOMIZATION, state: EscalationState = EMPTY_ESCALATION_STATE) =>
  drivePolicy(escalationPolicy, { state, config }, inputs, until);
const brief = (o: { atMs: number; output: EscalationOutput }) =>
  `${o.atMs}:${o.output.type}${'level' in o.output ? `:${o.output.level}` : ''}${'cause' in o.output ? `:${o.output.cause}` : ''}`;

/** A fault present from `at` for `holdMs`, observed at both edges. */
const episode = (code: string, at: number, holdMs: number, level?: NpuFaultLevel) =>
  [[at, observe(fault(code, at, level))], [at + holdMs, observe()]] as const;

describe('parameter plane 20 s rule (81078603, default FaultDuration)', () => {
  it('a link-down held exactly 20 s stays a NotHandleFault network fault', () => {
    const r = drive([...episode(LINK_DOWN, 0, 20 * S)], 10 * 60 * S);
    expect(r.outputs).toEqual([]);
    expect(r.state.tracks).toEqual({});
  });

  it('held longer than 20 s -> PreSeparateNPU at 20.001 s, kept for RecoverTimeout 60 s after recovery', () => {
    const r = drive([...episode(LINK_DOWN, 0, 30 * S)], 10 * 60 * S);
    expect(r.outputs.map(brief)).toEqual(['20001:duration-timeout:PreSeparateNPU', '90001:duration-recovered']);
    const during = drive([...episode(LINK_DOWN, 0, 30 * S)], 60 * S);
    const [e] = activeEscalations(during.state, DEFAULT_FAULT_CUSTOMIZATION);
    expect(e).toMatchObject({ node: 'n1', device: DEV, code: LINK_DOWN, level: 'PreSeparateNPU', rule: 'FaultDuration', sinceMs: 20_001 });
    expect(formatChain(e!.reasons)).toMatch(/^81078603 -> NotHandleFault \(base-level.*-> PreSeparateNPU \(FaultDuration \[detect\.duration-escalation\]: held longer than FaultTimeout 20 s/);
  });

  it('a fault that comes back while recovering is escalated again at once (no new 20 s grace)', () => {
    const r = drive([...episode(LINK_DOWN, 0, 30 * S), [50 * S, observe(fault(LINK_DOWN, 50 * S))]], 50 * S);
    expect(activeEscalations(r.state, DEFAULT_FAULT_CUSTOMIZATION).map((e) => e.level)).toEqual(['PreSeparateNPU']);
    expect(r.outputs.map(brief)).toEqual(['20001:duration-timeout:PreSeparateNPU']);
  });

  it('a fault first seen long ago (restart without state) is judged on its real age', () => {
    const r = drive([[100 * S, observe(fault(LINK_DOWN, 10 * S))]]);
    expect(r.outputs.map((o) => [o.atMs, o.output.type, o.output.atMs])).toEqual([[100 * S, 'duration-timeout', 30_001]]);
  });
});

describe('FaultFrequency', () => {
  it('80E18005 three times in 24 h -> ManuallySeparateNPU, never released automatically', () => {
    const r = drive([...episode('80E18005', 0, S, 'RestartNPU'), ...episode('80E18005', 12 * H, S, 'RestartNPU'), ...episode('80E18005', 24 * H, S, 'RestartNPU')], 30 * 24 * H);
    expect(r.outputs.map(brief)).toEqual([`${24 * H}:frequency-upgrade:ManuallySeparateNPU`]);
    expect(activeEscalations(r.state, DEFAULT_FAULT_CUSTOMIZATION)).toEqual([expect.objectContaining({ level: 'ManuallySeparateNPU', rule: 'FaultFrequency', sinceMs: 24 * H })]);
  });

  it('three occurrences spread over 24 h + 1 ms do not escalate', () => {
    const r = drive([...episode('80E18005', 0, S), ...episode('80E18005', 12 * H, S), ...episode('80E18005', 24 * H + 1, S)], 48 * H);
    expect(r.outputs).toEqual([]);
  });

  it('HBM codes (2 x 24 h) count per NPU and per code', () => {
    const other = fault('80E01801', 10 * S, 'RestartBusiness', 'Ascend910-4');
    const r = drive([[0, observe(fault('80E01801', 0, 'RestartBusiness'))], [5 * S, observe()], [10 * S, observe(other)], [20 * S, observe()]]);
    expect(r.outputs).toEqual([]);
    const again = drive([[30 * S, observe(fault('80E01801', 30 * S, 'RestartBusiness'))]], undefined, DEFAULT_FAULT_CUSTOMIZATION, r.state);
    expect(again.outputs.map(brief)).toEqual([`${30 * S}:frequency-upgrade:ManuallySeparateNPU`]);
  });

  it('an operator release clears the escalation and its count', () => {
    const r = drive([...episode('80E18005', 0, S), ...episode('80E18005', H, S), ...episode('80E18005', 2 * H, S), [3 * H, { type: 'release', node: 'n1', device: DEV }], ...episode('80E18005', 4 * H, S)]);
    expect(r.outputs.map(brief)).toEqual([`${2 * H}:frequency-upgrade:ManuallySeparateNPU`, `${3 * H}:frequency-release:operator`]);
    expect(activeEscalations(r.state, DEFAULT_FAULT_CUSTOMIZATION)).toEqual([]);
  });

  it('the same instance reported again (same firstSeenMs) is not counted twice', () => {
    const f = fault('80E18005', 0);
    const r = drive([[0, observe(f)], [S, observe()], [2 * S, observe(f)], [3 * S, observe()], [4 * S, observe(f)], [5 * S, observe()]]);
    expect(r.outputs).toEqual([]);
  });

  it('a non-manual level with ReleaseTimeWindow is released once the count drops and the fault stayed away', () => {
    const config: FaultCustomization = { ...DEFAULT_FAULT_CUSTOMIZATION, FaultFrequency: [{ EventId: ['80C98008'], TimeWindow: 600, Times: 2, FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 60 }] };
    const r = drive([...episode('80C98008', 0, S), ...episode('80C98008', 10 * S, S)], 3600 * S, config);
    // released when the first occurrence leaves the 600 s window (601 s), recovery long past 60 s
    expect(r.outputs.map(brief)).toEqual([`${10 * S}:frequency-upgrade:SeparateNPU`, '600001:frequency-release:ReleaseTimeWindow']);
  });
});

describe('81078603: FaultDuration and FaultFrequency combined', () => {
  it('5 link-downs longer than 20 s in 24 h -> ManuallySeparateNPU; released 48 h after the last recovery (+60 s)', () => {
    const downs = [0, 4, 8, 12, 16].flatMap((h) => episode(LINK_DOWN, h * H, 30 * S));
    const r = drive(downs, 30 * 24 * H);
    const last = 16 * H;
    const recoveredAt = last + 30 * S + 60 * S + 1; // end of RecoverTimeout
    expect(r.outputs.map(brief).filter((s) => s.includes('frequency'))).toEqual([
      `${last + 20 * S + 1}:frequency-upgrade:ManuallySeparateNPU`,
      `${recoveredAt + 172_800 * S + 1}:frequency-release:ReleaseTimeWindow`,
    ]);
    expect(r.state.tracks).toEqual({});
  });

  it('short link-downs (<= 20 s) do not count toward the 5', () => {
    const downs = [0, 1, 2, 3, 4, 5, 6].flatMap((h) => episode(LINK_DOWN, h * H, 20 * S));
    expect(drive([...downs, ...episode(LINK_DOWN, 7 * H, 21 * S)], 8 * H).outputs.map(brief).filter((s) => s.includes('frequency'))).toEqual([]);
  });
});

describe('persistence and configuration', () => {
  it('restored state + the same snapshot after a restart counts nothing again', () => {
    const first = drive([...episode('80E18005', 0, S), [H, observe(fault('80E18005', H))]]);
    const restored = JSON.parse(JSON.stringify(first.state)) as EscalationState;
    const again = drive([[H + 10 * S, observe(fault('80E18005', H))]], undefined, DEFAULT_FAULT_CUSTOMIZATION, restored);
    expect(again.outputs).toEqual([]);
    expect(again.state.tracks['n1/Ascend910-3/80E18005']?.occurrences).toEqual([0, H]);
  });

  it('removing a rule releases its escalation', () => {
    const r = drive([...episode('80E18005', 0, S), ...episode('80E18005', H, S), ...episode('80E18005', 2 * H, S), [3 * H, { type: 'config', config: { ...DEFAULT_FAULT_CUSTOMIZATION, FaultFrequency: [] } }]]);
    expect(r.outputs.map(brief)).toEqual([`${2 * H}:frequency-upgrade:ManuallySeparateNPU`, `${3 * H}:frequency-release:config-change`]);
    expect(r.state.tracks).toEqual({});
  });

  it('FaultTimeout 0 escalates at once; codes without rules are not tracked', () => {
    const config: FaultCustomization = { ...DEFAULT_FAULT_CUSTOMIZATION, FaultDuration: [{ EventId: ['80E01801'], FaultTimeout: 0, RecoverTimeout: 0, FaultHandling: 'SeparateNPU' }] };
    const r = drive([[0, observe(fault('80E01801', 0), fault('80C98009', 0))], [S, observe()]], 10 * S, config);
    expect(r.outputs.map(brief)).toEqual(['0:duration-timeout:SeparateNPU', '1000:duration-recovered']);
  });

  it('ignores faults of other nodes and faults without a device', () => {
    const other = { ...fault(LINK_DOWN, 0), fault: { ...fault(LINK_DOWN, 0).fault, node: 'n2' } };
    const nodeWide = { ...fault(LINK_DOWN, 0), fault: { ...fault(LINK_DOWN, 0).fault, device: undefined } };
    const r = drive([[0, observe(other, nodeWide)]], 60 * S);
    expect(r.outputs).toEqual([]);
  });
});
