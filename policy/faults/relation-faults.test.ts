import { EMPTY_RELATION_STATE, type RelationState } from '../../schemas/escalation-state/escalation-state.ts';
import type { FaultSource } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from './fault-level.ts';
import { drivePolicy } from '../drive-policy.ts';
import type { ConfigChange } from '../policy-operator.ts';
import { DEFAULT_RELATION_FAULT_CONFIG, SWITCH_LINK_DOWN, validateRelationFaultConfig, type RelationFaultConfig } from './relation-fault-config.ts';
import { relationFaultPolicy, relationStrategies, type RelationInput, type RelationOutput } from './relation-faults.ts';

const S = 1000;
const JOB = 'default/train-uid1';

function f(node: string, code: string, atMs: number, source: FaultSource = 'npu', device: string | undefined = 'Ascend910-0'): LeveledFault {
  return {
    fault: { node, ...(source === 'switch' ? {} : { device }), source, code, level: 'NotHandleFault', reportedLevel: 'NotHandleFault', firstSeenMs: atMs },
    level: 'NotHandleFault',
    reasons: [],
  };
}
const linkDown = (node: string, at: number) => f(node, '81078603', at, 'network');
const observe = (faults: LeveledFault[], a3 = false): RelationInput => ({ type: 'observe', jobKey: JOB, a3, faults });
const drive = (inputs: Array<readonly [number, RelationInput | ConfigChange<RelationFaultConfig>]>, until?: number, config = DEFAULT_RELATION_FAULT_CONFIG, state: RelationState = EMPTY_RELATION_STATE) =>
  drivePolicy(relationFaultPolicy, { state, config }, inputs, until);
const brief = (o: { atMs: number; output: RelationOutput }) => `${o.atMs}:${o.output.node}:${o.output.strategy}`;

describe('relation faults (docs/rules.md#job.relation-faults)', () => {
  it('link-down + HCCL retry trigger on the same job -> Separate for the link-down node', () => {
    const r = drive([[0, observe([])], [5 * S, observe([linkDown('n1', 5 * S)])], [15 * S, observe([linkDown('n1', 5 * S), f('n2', '8C1F860B', 15 * S)])]]);
    expect(r.outputs.map(brief)).toEqual([`${15 * S}:n1:Separate`]);
    expect(relationStrategies(r.state, JOB)).toEqual({ n1: 'Separate' });
    expect(r.outputs[0]?.output.reasons.map((x) => x.detail)).toEqual([
      'relation fault 81078603 on n1/Ascend910-0 at 5000',
      'trigger 8C1F860B on n2 at 15000',
    ]);
  });

  it('8C1F8609 gives SubHealth; a later Separate trigger upgrades; Separate is sticky', () => {
    const ld = linkDown('n1', S);
    const r = drive([
      [0, observe([])],
      [S, observe([ld, f('n1', '8C1F8609', S)])],
      [10 * S, observe([ld, f('n1', '8C1F8608', 10 * S)])],
      [20 * S, observe([ld, f('n1', '8C1F8609', 20 * S)])],
    ]);
    expect(r.outputs.map(brief)).toEqual([`${S}:n1:SubHealth`, `${10 * S}:n1:Separate`]);
  });

  it('a trigger outside the window does not match', () => {
    const r = drive([[0, observe([])], [S, observe([f('n1', '8C1F860B', S)])], [400 * S, observe([f('n1', '8C1F860B', S), linkDown('n1', 400 * S)])]], 800 * S);
    expect(r.outputs).toEqual([]);
  });

  it('switch link-down + HCCL retry -> Separate, and the later timeout does not downgrade it', () => {
    const sw = f('n3', SWITCH_LINK_DOWN, 0, 'switch');
    const r = drive([[0, observe([sw])], [30 * S, observe([sw, f('n1', '8C1F860B', 30 * S)])]], 600 * S);
    expect(r.outputs.map(brief)).toEqual([`${30 * S}:n3:Separate`]);
  });

  describe('device link-down timing out', () => {
    // Without the CQE rules, only the A3 late-trigger path can separate.
    const noCqeRules: RelationFaultConfig = { ...DEFAULT_RELATION_FAULT_CONFIG, rules: DEFAULT_RELATION_FAULT_CONFIG.rules.filter((r) => !['8C1F8608', '4C1F8608'].includes(r.TriggerFault)) };
    const inputs = (a3: boolean) =>
      [
        [0, observe([linkDown('n1', 0)], a3)],
        [100 * S, observe([linkDown('n1', 0), f('n2', '4C1F8608', 100 * S)], a3)],
        [110 * S, observe([linkDown('n1', 0)], a3)],
      ] as const;

    it('on an A3 job with a CQE trigger inside the window -> Separate at 300 s', () => {
      expect(drive([...inputs(true)], 600 * S, noCqeRules).outputs.map(brief)).toEqual([`${300 * S}:n1:Separate`]);
    });
    it('on a non-A3 job -> nothing', () => {
      const r = drive([...inputs(false)], 600 * S, noCqeRules);
      expect(r.outputs).toEqual([]);
      expect(r.state.jobs[JOB]?.candidates).toEqual([]);
    });
  });

  describe('A3 CQE late trigger (ClusterD: a CQE of an A3 job is only a timeout trigger)', () => {
    const inputs = (a3: boolean) =>
      [
        [0, observe([], a3)],
        [10 * S, observe([linkDown('n1', 10 * S)], a3)],
        [40 * S, observe([linkDown('n1', 10 * S), f('n2', '8C1F8608', 40 * S)], a3)],
        [50 * S, observe([linkDown('n1', 10 * S)], a3)],
      ] as const;

    it('on an A3 job the CQE does not match the 8C1F8608 rule at once; the link-down timing out is separated then', () => {
      expect(drive([...inputs(true)], 600 * S).outputs.map(brief)).toEqual([`${310 * S}:n1:Separate`]);
    });
    it('on a non-A3 job the CQE is an ordinary trigger: Separate at once', () => {
      expect(drive([...inputs(false)], 600 * S).outputs.map(brief)).toEqual([`${40 * S}:n1:Separate`]);
    });
  });

  describe('a relation fault no longer reported (ClusterD: it leaves the relation faults)', () => {
    const sw = f('n3', SWITCH_LINK_DOWN, 10 * S, 'switch');

    it('meets no later non-CQE trigger and gets no default at its timeout', () => {
      const r = drive([[0, observe([])], [10 * S, observe([sw])], [20 * S, observe([])], [60 * S, observe([f('n1', '8C1F860B', 60 * S)])]], 600 * S);
      expect(r.outputs).toEqual([]);
      expect(r.state.jobs[JOB]?.candidates).toEqual([]);
    });
    it('reported again (forced in on an HCCL retry) it meets the trigger', () => {
      const r = drive([[0, observe([])], [10 * S, observe([sw])], [20 * S, observe([])], [60 * S, observe([sw, f('n1', '8C1F860B', 60 * S)])]], 600 * S);
      expect(r.outputs.map(brief)).toEqual([`${60 * S}:n3:Separate`]);
    });
    it('on a non-A3 job a CQE still meets a recovered device link-down inside its window', () => {
      const r = drive([[0, observe([])], [10 * S, observe([linkDown('n1', 10 * S)])], [20 * S, observe([])], [60 * S, observe([f('n2', '4C1F8608', 60 * S)])]], 600 * S);
      expect(r.outputs.map(brief)).toEqual([`${60 * S}:n1:Separate`]);
    });
  });

  it('a fault older than the job\'s first sight still matches a trigger (as ClusterD)', () => {
    const r = drive([[100 * S, observe([linkDown('n1', 50 * S), f('n1', '8C1F860B', 100 * S)])]], 600 * S);
    expect(r.outputs.map(brief)).toEqual([`${100 * S}:n1:Separate`]);
  });

  it('a fault older than the job\'s first sight gets no default strategy at its timeout', () => {
    const sw = f('n3', SWITCH_LINK_DOWN, 50 * S, 'switch');
    const r = drive([[100 * S, observe([sw])]], 600 * S);
    expect(r.outputs).toEqual([]);
    expect(r.steps.flatMap((s) => s.reasons.map((x) => x.detail)).join('\n')).toMatch(/older than the job's first sight: no default strategy/);
  });

  it('the window survives a restart through the persisted state', () => {
    const sw = f('n3', SWITCH_LINK_DOWN, 0, 'switch');
    const before = drive([[0, observe([sw])]], 100 * S);
    const restored = JSON.parse(JSON.stringify(before.state)) as RelationState;
    const after = drive([[200 * S, observe([sw])]], 400 * S, DEFAULT_RELATION_FAULT_CONFIG, restored);
    expect(after.outputs.map(brief)).toEqual([`${300 * S}:n3:SubHealth`]);
  });

  it('forget drops the job', () => {
    const r = drive([[0, observe([linkDown('n1', 0)])], [S, { type: 'forget', jobKey: JOB }]], 600 * S);
    expect(r.state.jobs).toEqual({});
    expect(r.outputs).toEqual([]);
  });

  it.each([
    ['rules not an array', {}, []],
    ['a rule without RelationFaults', [{ TriggerFault: 'x', FaultStrategy: 'Separate' }], []],
    ['an unknown strategy', [{ TriggerFault: 'x', RelationFaults: ['y'], FaultStrategy: 'Reboot' }], []],
    ['a zero interval', [], [{ FaultCode: 'x', FaultType: 'faultDevice', TimeOutInterval: 0 }]],
    ['an unknown fault type', [], [{ FaultCode: 'x', FaultType: 'node', TimeOutInterval: 300 }]],
  ])('config validation rejects %s', (_n, rules, durations) => {
    expect(validateRelationFaultConfig(rules, durations).ok).toBe(false);
  });

  it('config validation accepts the shipped files', () => {
    expect(validateRelationFaultConfig(DEFAULT_RELATION_FAULT_CONFIG.rules, DEFAULT_RELATION_FAULT_CONFIG.durations)).toEqual({ ok: true, value: DEFAULT_RELATION_FAULT_CONFIG });
  });
});
