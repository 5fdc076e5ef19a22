import { emptyEscalationStateDoc, encodeEscalationState, parseEscalationState, type EscalationStateDoc } from '../../schemas/escalation-state/escalation-state.ts';
import { DEFAULT_FAULT_CUSTOMIZATION } from '../../schemas/fault-customization/fault-customization.ts';
import { DEFAULT_MANUAL_SEPARATE_POLICY } from '../../schemas/manual-separate-policy/manual-separate-policy.ts';
import { drivePolicy } from '../drive-policy.ts';
import { escalationPolicy } from './escalation.ts';
import { composeEscalationState, pruneEscalationState } from './escalation-persistence.ts';
import type { LeveledFault } from './fault-level.ts';
import { manualSeparationPolicy } from './manual-separation.ts';
import { DEFAULT_RELATION_FAULT_CONFIG } from './relation-fault-config.ts';

const H = 3_600_000;
const cfg = { customization: DEFAULT_FAULT_CUSTOMIZATION, relation: DEFAULT_RELATION_FAULT_CONFIG };
const lf = (code: string, t: number): LeveledFault => ({
  fault: { node: 'n1', device: 'Ascend910-0', source: 'npu', code, level: 'RestartNPU', reportedLevel: 'RestartNPU', firstSeenMs: t },
  level: 'RestartNPU',
  reasons: [],
});

describe('escalation state persistence', () => {
  it('prunes occurrences outside the window, idle tracks, old history, finished relation windows and link-down memories', () => {
    const doc: EscalationStateDoc = {
      ...emptyEscalationStateDoc(0),
      escalation: {
        tracks: {
          'n1/Ascend910-0/80E18005': { node: 'n1', device: 'Ascend910-0', code: '80E18005', baseLevel: 'RestartNPU', active: false, instanceMs: 0, duration: null, occurrences: [0, 30 * H], lastFaultMs: 30 * H, lastRecoverMs: 30 * H, upgrade: null },
          'n1/Ascend910-1/80E18005': { node: 'n1', device: 'Ascend910-1', code: '80E18005', baseLevel: 'RestartNPU', active: false, instanceMs: 0, duration: null, occurrences: [0], lastFaultMs: 0, lastRecoverMs: 1, upgrade: null },
        },
      },
      manualSeparation: { lastSeen: { a: 0, b: 800 * H }, pending: {}, counters: { a: [0, 750 * H] }, separated: {} },
      relation: {
        jobs: {
          done: { firstSeenMs: 0, a3: false, candidates: [{ node: 'n', device: null, code: 'x', kind: 'faultSwitch', atMs: 0, deadlineMs: 1 }], triggers: [], strategies: {} },
          sticky: { firstSeenMs: 0, a3: false, candidates: [], triggers: [], strategies: { n: 'Separate' } },
        },
      },
      filters: { uceAccompany: {}, linkDowns: { old: { node: 'n', device: null, code: 'c', lastSeenMs: 0 }, recent: { node: 'n', device: null, code: 'c', lastSeenMs: 800 * H } } },
    };
    const p = pruneEscalationState(doc, 800 * H, cfg);
    expect(Object.keys(p.escalation.tracks)).toEqual([]);
    const p2 = pruneEscalationState(doc, 40 * H, cfg);
    expect(p2.escalation.tracks['n1/Ascend910-0/80E18005']?.occurrences).toEqual([30 * H]);
    expect(p.manualSeparation).toEqual({ lastSeen: { b: 800 * H }, pending: {}, counters: { a: [750 * H] }, separated: {} });
    expect(Object.keys(p.relation.jobs)).toEqual(['sticky']);
    expect(Object.keys(p.filters.linkDowns)).toEqual(['recent']);
    expect(p.savedAtMs).toBe(800 * H);
  });

  it('a controller restart restores the counters ClusterD would lose (2 + 1 faults across the restart escalate)', () => {
    // before the restart: two 80E18005 occurrences; manual separation counted two hardware faults
    const esc = drivePolicy(escalationPolicy, { state: { tracks: {} }, config: DEFAULT_FAULT_CUSTOMIZATION }, [[0, { type: 'observe', node: 'n1', faults: [lf('80E18005', 0)] }], [H, { type: 'observe', node: 'n1', faults: [] }], [2 * H, { type: 'observe', node: 'n1', faults: [lf('80E18005', 2 * H)] }], [3 * H, { type: 'observe', node: 'n1', faults: [] }]]);
    const man = drivePolicy(manualSeparationPolicy, { state: { lastSeen: {}, pending: {}, counters: {}, separated: {} }, config: DEFAULT_MANUAL_SEPARATE_POLICY }, [[0, { type: 'observe', node: 'n1', faults: [{ device: 'Ascend910-0', code: '80E18005', level: 'RestartNPU', receivedMs: 0, jobKey: 'j' }] }], [2 * H, { type: 'observe', node: 'n1', faults: [{ device: 'Ascend910-0', code: '80E18005', level: 'RestartNPU', receivedMs: 2 * H, jobKey: 'j' }] }]], 3 * H);
    const doc = pruneEscalationState(composeEscalationState({ escalation: esc.state, manualSeparation: man.state, relation: { jobs: {} }, filters: { uceAccompany: {}, linkDowns: {} } }, 3 * H), 3 * H, cfg);
    const enc = encodeEscalationState(doc);
    if (!enc.ok) throw new Error(enc.reason);
    // ... restart ...
    const restored = parseEscalationState(enc.text);
    if (!restored.ok) throw new Error(restored.reason);
    const esc2 = drivePolicy(escalationPolicy, { state: restored.value.escalation, config: DEFAULT_FAULT_CUSTOMIZATION }, [[4 * H, { type: 'observe', node: 'n1', faults: [lf('80E18005', 4 * H)] }]]);
    expect(esc2.outputs.map((o) => o.output.type)).toEqual(['frequency-upgrade']);
    const man2 = drivePolicy(manualSeparationPolicy, { state: restored.value.manualSeparation, config: DEFAULT_MANUAL_SEPARATE_POLICY }, [[4 * H, { type: 'observe', node: 'n1', faults: [{ device: 'Ascend910-0', code: '80E18005', level: 'RestartNPU', receivedMs: 4 * H, jobKey: 'j' }] }]], 5 * H);
    expect(man2.outputs.map((o) => o.output.type)).toEqual(['counted', 'separated']);
  });
});
