import {
  ESCALATION_STATE_CM_NAME,
  ESCALATION_STATE_CM_NAMESPACE,
  ESCALATION_STATE_KEY,
  emptyEscalationStateDoc,
  encodeEscalationState,
  parseEscalationState,
  type CodeTrack,
  type EscalationStateDoc,
} from './escalation-state.ts';

const track = (i: number, over: Partial<CodeTrack> = {}): CodeTrack => ({
  node: `node-${i}`,
  device: 'Ascend910-0',
  code: '80E18005',
  baseLevel: 'RestartNPU',
  active: false,
  instanceMs: i,
  duration: null,
  occurrences: [i],
  lastFaultMs: i,
  lastRecoverMs: i + 1,
  upgrade: null,
  ...over,
});

const sample: EscalationStateDoc = {
  version: 1,
  savedAtMs: 1_732_182_000_000,
  escalation: {
    tracks: {
      'n1/Ascend910-3/81078603': track(1, { node: 'n1', device: 'Ascend910-3', code: '81078603', baseLevel: 'NotHandleFault', active: true, duration: { phase: 'timedOut', sinceMs: 20_001, escalatedAtMs: 20_001 }, occurrences: [20_001], upgrade: { level: 'ManuallySeparateNPU', sinceMs: 20_001 } }),
    },
  },
  manualSeparation: {
    lastSeen: { 'n1/Ascend910-1/8C084E00': 5 },
    pending: { 'default/job-uid': { windowStartMs: 5, faults: [{ node: 'n1', device: 'Ascend910-1', code: '8C084E00', atMs: 5 }] } },
    counters: { 'n1/Ascend910-1/8C084E00': [1, 2, 5] },
    separated: { 'n1/Ascend910-1': { node: 'n1', device: 'Ascend910-1', observedInCm: true, entries: [{ code: '8C084E00', lastSeparateTimeMs: 6 }] } },
  },
  relation: {
    jobs: {
      'default/job-uid': {
        firstSeenMs: 0,
        a3: true,
        candidates: [{ node: 'n1', device: null, code: '[0x08520003,na,L2,na]', kind: 'faultSwitch', atMs: 1, deadlineMs: 300_001 }],
        triggers: [{ node: 'n2', device: 'Ascend910-0', code: '8C1F8608', atMs: 2 }],
        strategies: { n1: 'Separate' },
      },
    },
  },
  filters: {
    uceAccompany: { 'n1/Ascend910-0/npu/80C98009@3': 'drop' },
    linkDowns: { 'n1/Ascend910-3/81078603': { node: 'n1', device: 'Ascend910-3', code: '81078603', lastSeenMs: 9 } },
  },
};

describe('escalation state ConfigMap', () => {
  it('is our own ConfigMap', () => {
    expect([ESCALATION_STATE_CM_NAMESPACE, ESCALATION_STATE_CM_NAME, ESCALATION_STATE_KEY]).toEqual(['cluster-system', 'clusterd-ts-escalation-state', 'escalation-state.json']);
  });

  it('round-trips; equal states encode to equal bytes regardless of key insertion order', () => {
    const enc = encodeEscalationState(sample);
    expect(enc.ok).toBe(true);
    if (!enc.ok) return;
    expect(enc.evicted).toEqual([]);
    expect(parseEscalationState(enc.text)).toEqual({ ok: true, value: sample });
    const reordered: EscalationStateDoc = { ...sample, manualSeparation: { ...sample.manualSeparation, counters: { zz: [1], ...sample.manualSeparation.counters } } };
    const other: EscalationStateDoc = { ...sample, manualSeparation: { ...sample.manualSeparation, counters: { ...sample.manualSeparation.counters, zz: [1] } } };
    expect(encodeEscalationState(reordered)).toEqual(encodeEscalationState(other));
  });

  it('encodes the empty state', () => {
    const enc = encodeEscalationState(emptyEscalationStateDoc(7));
    expect(enc).toEqual({
      ok: true,
      text: '{"version":1,"savedAtMs":7,"escalation":{"tracks":{}},"manualSeparation":{"lastSeen":{},"pending":{},"counters":{},"separated":{}},"relation":{"jobs":{}},"filters":{"uceAccompany":{},"linkDowns":{}}}',
      evicted: [],
    });
  });

  it.each([
    ['malformed JSON', '{'],
    ['another version', JSON.stringify({ ...sample, version: 2 })],
    ['a missing section', JSON.stringify({ ...sample, relation: undefined })],
    ['a negative time', JSON.stringify({ ...sample, savedAtMs: -1 })],
    ['a fractional time', JSON.stringify({ ...sample, savedAtMs: 1.5 })],
    ['an unknown phase', JSON.stringify({ ...sample, escalation: { tracks: { k: { ...track(1), duration: { phase: 'x', sinceMs: 1, escalatedAtMs: null } } } } })],
    ['an extra field', JSON.stringify({ ...sample, escalation: { tracks: { k: { ...track(1), extra: 1 } } } })],
    ['a bad strategy', JSON.stringify({ ...sample, relation: { jobs: { j: { ...sample.relation.jobs['default/job-uid'], strategies: { n1: 'Reboot' } } } } })],
    ['a string count', JSON.stringify({ ...sample, manualSeparation: { ...sample.manualSeparation, counters: { k: ['1'] } } })],
  ])('rejects %s', (_n, text) => {
    expect(parseEscalationState(text).ok).toBe(false);
  });

  it('keeps within the size bound by evicting the least valuable entries first, oldest first', () => {
    const tracks: Record<string, CodeTrack> = {};
    for (let i = 0; i < 400; i++) tracks[`node-${i}/Ascend910-0/80E18005`] = track(i);
    tracks['keep/Ascend910-0/80E18005'] = track(0, { node: 'keep', upgrade: { level: 'ManuallySeparateNPU', sinceMs: 0 } });
    const doc: EscalationStateDoc = { ...emptyEscalationStateDoc(0), escalation: { tracks } };
    const full = encodeEscalationState(doc);
    expect(full.ok && full.evicted.length === 0).toBe(true);
    const size = full.ok ? Buffer.byteLength(full.text) : 0;
    const bounded = encodeEscalationState(doc, Math.floor(size / 2));
    expect(bounded.ok).toBe(true);
    if (!bounded.ok) return;
    expect(Buffer.byteLength(bounded.text)).toBeLessThanOrEqual(size / 2);
    expect(bounded.evicted[0]).toBe('escalation.tracks/node-0/Ascend910-0/80E18005');
    const kept = parseEscalationState(bounded.text);
    expect(kept.ok && Object.hasOwn(kept.value.escalation.tracks, 'keep/Ascend910-0/80E18005')).toBe(true);
    expect(kept.ok && Object.hasOwn(kept.value.escalation.tracks, 'node-399/Ascend910-0/80E18005')).toBe(true);
  });

  it('fails when escalations in force alone exceed the bound', () => {
    const r = encodeEscalationState(sample, 100);
    expect(r.ok).toBe(false);
  });
});
