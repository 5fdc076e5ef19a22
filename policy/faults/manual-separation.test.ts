import { EMPTY_MANUAL_SEPARATION_STATE, type ManualSeparationState } from '../../schemas/escalation-state/escalation-state.ts';
import { DEFAULT_MANUAL_SEPARATE_POLICY, type ManualSeparatePolicy } from '../../schemas/manual-separate-policy/manual-separate-policy.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { drivePolicy } from '../drive-policy.ts';
import {
  manualInfoView,
  manualSeparationPolicy,
  manuallySeparatedDevices,
  type ManualFaultObservation,
  type ManualSeparationInput,
  type ManualSeparationOutput,
} from './manual-separation.ts';
import type { ConfigChange } from '../policy-operator.ts';

const S = 1000;
const H = 3_600_000;
const JOB = 'default/job-a-uid1';

const f = (device: string, code: string, receivedMs: number, level: NpuFaultLevel = 'RestartNPU', jobKey: string | null = JOB): ManualFaultObservation =>
  jobKey === null ? { device, code, level, receivedMs } : { device, code, level, receivedMs, jobKey };
const observe = (...faults: ManualFaultObservation[]): ManualSeparationInput => ({ type: 'observe', node: 'n1', faults });
const drive = (
  inputs: Array<readonly [number, ManualSeparationInput | ConfigChange<ManualSeparatePolicy>]>,
  until?: number,
  policy: ManualSeparatePolicy = DEFAULT_MANUAL_SEPARATE_POLICY,
  state: ManualSeparationState = EMPTY_MANUAL_SEPARATION_STATE,
) => drivePolicy(manualSeparationPolicy, { state, config: policy }, inputs, until);
const brief = (o: { atMs: number; output: ManualSeparationOutput }): string => {
  const x = o.output;
  switch (x.type) {
    case 'software-fault':
      return `${o.atMs}:software:${x.code}:${x.devices.join('+')}`;
    case 'released':
      return `${o.atMs}:released:${x.device}:${x.cause}`;
    case 'counted':
      return `${o.atMs}:counted:${x.device}:${x.count}`;
    default:
      return `${o.atMs}:${x.type}:${x.device}:${x.code}`;
  }
};
/** A hardware fault on Ascend910-1 at `t` (seen at t, gone 1 s later). */
const hit = (t: number, code = '8C084E00', device = 'Ascend910-1') => [[t, observe(f(device, code, t))], [t + S, observe()]] as const;

describe('ClusterD manual separation (docs/rules.md#manual)', () => {
  it('3 hardware faults of one code on one NPU within 24 h -> separated after the 30 s judgement', () => {
    const r = drive([...hit(0), ...hit(10 * H), ...hit(23 * H)], 23 * H + 31 * S);
    expect(r.outputs.map(brief)).toEqual([
      `${30 * S}:counted:Ascend910-1:1`,
      `${10 * H + 30 * S}:counted:Ascend910-1:2`,
      `${23 * H + 30 * S}:counted:Ascend910-1:3`,
      `${23 * H + 30 * S}:separated:Ascend910-1:8C084E00`,
    ]);
    expect(manualInfoView(r.state)).toEqual({
      n1: { Total: ['Ascend910-1'], Detail: { 'Ascend910-1': [{ FaultCode: '8C084E00', FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: 23 * H }] } },
    });
    expect(manuallySeparatedDevices(r.state)).toEqual([expect.objectContaining({ node: 'n1', device: 'Ascend910-1', level: 'ManuallySeparateNPU', codes: ['8C084E00'] })]);
  });

  it('3 faults spanning 24 h or more do not separate', () => {
    const r = drive([...hit(0), ...hit(12 * H), ...hit(24 * H)], 25 * H);
    expect(r.outputs.map(brief).filter((s) => s.includes('separated'))).toEqual([]);
  });

  it('the same code on two NPUs of one job within 30 s is a software fault and is not counted', () => {
    const r = drive([[0, observe(f('Ascend910-1', '8C084E00', 0))], [10 * S, observe(f('Ascend910-1', '8C084E00', 0), f('Ascend910-2', '8C084E00', 10 * S))]], 60 * S);
    expect(r.outputs.map(brief)).toEqual([`${30 * S}:software:8C084E00:n1/Ascend910-1+n1/Ascend910-2`]);
    expect(r.state.counters).toEqual({});
  });

  it('the same code on two NPUs of different jobs is hardware on each', () => {
    const r = drive([[0, observe(f('Ascend910-1', '8C084E00', 0), f('Ascend910-2', '8C084E00', 0, 'RestartNPU', 'default/job-b'))]], 60 * S);
    expect(r.outputs.map(brief)).toEqual([`${30 * S}:counted:Ascend910-1:1`, `${30 * S}:counted:Ascend910-2:1`]);
  });

  it('ignores NotHandleFault/SubHealthFault, the ManuallySeparateNPU pseudo-code and NPUs with no job', () => {
    const r = drive([[0, observe(f('Ascend910-1', '81078603', 0, 'NotHandleFault'), f('Ascend910-1', '8C2FA001', 0, 'SubHealthFault'), f('Ascend910-1', 'ManuallySeparateNPU', 0, 'ManuallySeparateNPU'), f('Ascend910-2', '8C084E00', 0, 'RestartNPU', null))]], 60 * S);
    expect(r.outputs).toEqual([]);
    expect(r.steps[0]?.reasons.map((x) => x.detail)).toEqual(['n1/Ascend910-2/8C084E00: no job uses the NPU; not counted']);
  });

  it('a fault seen again with the same receive time (replay, restart) is counted once', () => {
    const first = drive([[0, observe(f('Ascend910-1', '8C084E00', 0))]], 31 * S);
    const restored = JSON.parse(JSON.stringify(first.state)) as ManualSeparationState;
    const again = drive([[40 * S, observe(f('Ascend910-1', '8C084E00', 0))]], 80 * S, DEFAULT_MANUAL_SEPARATE_POLICY, restored);
    expect(again.outputs).toEqual([]);
    expect(again.state.counters).toEqual({ 'n1/Ascend910-1/8C084E00': [0] });
  });

  it('the count restarts at separation: fault_threshold new occurrences while separated renew LastSeparateTime and so postpone the release', () => {
    const r = drive([...hit(0), ...hit(H), ...hit(2 * H), ...hit(40 * H), ...hit(41 * H), ...hit(42 * H)], 200 * H, { ...DEFAULT_MANUAL_SEPARATE_POLICY, separate: { fault_window_hours: 72, fault_threshold: 3 } });
    expect(r.outputs.map(brief)).toEqual([
      `${30 * S}:counted:Ascend910-1:1`,
      `${H + 30 * S}:counted:Ascend910-1:2`,
      `${2 * H + 30 * S}:counted:Ascend910-1:3`,
      `${2 * H + 30 * S}:separated:Ascend910-1:8C084E00`,
      `${40 * H + 30 * S}:counted:Ascend910-1:1`, // not a renewal: counting started again
      `${41 * H + 30 * S}:counted:Ascend910-1:2`,
      `${42 * H + 30 * S}:counted:Ascend910-1:3`,
      `${42 * H + 30 * S}:renewed:Ascend910-1:8C084E00`,
      `${90 * H}:released:Ascend910-1:fault_free_hours`,
    ]);
  });

  it('fault_free_hours -1 never releases', () => {
    const r = drive([...hit(0), ...hit(H), ...hit(2 * H)], 1000 * H, { ...DEFAULT_MANUAL_SEPARATE_POLICY, release: { fault_free_hours: -1 } });
    expect(Object.keys(r.state.separated)).toEqual(['n1/Ascend910-1']);
    expect(r.nextDeadlineMs).toBeUndefined();
  });

  it('LastSeparateTime is the receive time (the controller\'s clock at first sight), not the reported fault time', () => {
    // reported at 5 s, first seen at 100 s (ClusterD's FaultReceivedTime is its own clock)
    const r = drive([[100 * S, observe(f('Ascend910-1', '8C084E00', 5 * S))]], 200 * S, { ...DEFAULT_MANUAL_SEPARATE_POLICY, separate: { fault_window_hours: 1, fault_threshold: 1 } });
    expect(r.outputs.map(brief)).toContain(`${130 * S}:separated:Ascend910-1:8C084E00`);
    expect(manualInfoView(r.state).n1?.Detail['Ascend910-1']).toEqual([{ FaultCode: '8C084E00', FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: 100 * S }]);
  });

  it('threshold 1 separates on the first hardware fault', () => {
    const r = drive([...hit(0)], 60 * S, { ...DEFAULT_MANUAL_SEPARATE_POLICY, separate: { fault_window_hours: 1, fault_threshold: 1 } });
    expect(r.outputs.map(brief)).toContain(`${30 * S}:separated:Ascend910-1:8C084E00`);
  });

  describe('operator release through clusterd-manual-info-cm Total', () => {
    const separated = drive([...hit(0), ...hit(H), ...hit(2 * H)], 2 * H + 31 * S).state;
    const t = 2 * H + 40 * S;

    it('an NPU deleted from Total after it was written is released at once (well within 15 s), counters cleared', () => {
      const r = drive([[t, { type: 'manual-info', total: { n1: ['Ascend910-1'] } }], [t + 5 * S, { type: 'manual-info', total: { n1: [] } }]], undefined, DEFAULT_MANUAL_SEPARATE_POLICY, separated);
      expect(r.outputs.map(brief)).toEqual([`${t + 5 * S}:released:Ascend910-1:operator`]);
      expect(r.state.separated).toEqual({});
      expect(r.state.counters).toEqual({});
    });

    it('a ConfigMap that does not list the NPU yet (not written so far) does not release it', () => {
      const r = drive([[t, { type: 'manual-info', total: {} }]], undefined, DEFAULT_MANUAL_SEPARATE_POLICY, separated);
      expect(r.outputs).toEqual([]);
      expect(Object.keys(r.state.separated)).toEqual(['n1/Ascend910-1']);
    });
  });

  it('adopts an existing clusterd-manual-info-cm at start-up', () => {
    const r = drive([[5 * H, { type: 'adopt', info: { n2: { Total: ['Ascend910-7'], Detail: { 'Ascend910-7': [{ FaultCode: '80E18402', FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: 4 * H }] } } } }]], 60 * H);
    expect(r.outputs.map(brief)).toEqual([`${52 * H}:released:Ascend910-7:fault_free_hours`]);
  });

  it('disabling the policy clears everything and ignores input', () => {
    const r = drive([...hit(0), ...hit(H), ...hit(2 * H), [3 * H, { type: 'config', config: { ...DEFAULT_MANUAL_SEPARATE_POLICY, enabled: false } }], ...hit(4 * H)], 5 * H);
    expect(r.outputs.map(brief).filter((s) => !s.includes('counted'))).toEqual([`${2 * H + 30 * S}:separated:Ascend910-1:8C084E00`, `${3 * H}:released:Ascend910-1:disabled`]);
    expect(r.state).toEqual(EMPTY_MANUAL_SEPARATION_STATE);
  });
});
