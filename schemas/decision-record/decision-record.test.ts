import { buildDecisionRecord, decisionRecordName, parseDecisionRecord, RECORD_LIMITS, type DecisionRecordInput } from './decision-record.ts';

const input = (over: Partial<DecisionRecordInput> = {}): DecisionRecordInput => ({
  job: { namespace: 'team', name: 'llama', podGroup: 'llama-0a1b', uid: '0a1b-uid' },
  decisionId: '0a1b-uid/g1/start/00ff', atMs: Date.UTC(2026, 0, 2, 3, 4, 5, 678), kind: 'job', phase: 'start', row: 11, outcome: 'acted',
  faults: [{ node: 'n1', device: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU', faultType: 'CardUnhealthy', note: '' }],
  reasons: [{ stage: 'fault', detail: '80E18402 on n1/Ascend910-3' }, { stage: 'action', detail: 'decision.job-level: job-level force' }],
  actions: ['forceDeletePods(llama-0,llama-1)'],
  ...over,
});

describe('DecisionRecord', () => {
  it('builds a record named by the decision id (a replay gets the same name; held is a record of its own)', () => {
    const r = buildDecisionRecord(input());
    expect(r.metadata.name).toBe(decisionRecordName('llama', '0a1b-uid/g1/start/00ff', 'acted'));
    expect(decisionRecordName('llama', '0a1b-uid/g1/start/00ff', 'no_action')).toBe(r.metadata.name);
    expect(decisionRecordName('llama', '0a1b-uid/g1/start/00ff', 'held')).not.toBe(r.metadata.name);
    expect(r.metadata.name).toMatch(/^llama-[0-9a-f]{16}$/);
    expect(r.metadata.labels).toEqual({ 'app.kubernetes.io/managed-by': 'clusterd-ts', 'clusterd-ts.io/outcome': 'acted', 'clusterd-ts.io/job': 'llama', 'clusterd-ts.io/job-uid': '0a1b-uid' });
    expect(r.spec).toMatchObject({ decidedAt: '2026-01-02T03:04:05.678Z', kind: 'job', row: 11, rule: 'decision.job-level', summary: '80E18402(SeparateNPU): decision.job-level: job-level force' });
    expect(r.spec.faults[0]).not.toHaveProperty('note'); // empty strings are left out
    expect(r.spec.truncated).toBeUndefined();
    const back = parseDecisionRecord(JSON.parse(JSON.stringify(r)));
    expect(back.ok && back.value.atMs).toBe(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  });

  it('caps lists and strings and says so; a long or odd job name still makes a valid name', () => {
    const r = buildDecisionRecord(input({
      job: { namespace: 'team', name: `Job.With_Odd-${'x'.repeat(80)}`, uid: 'u' },
      faults: Array.from({ length: 100 }, (_, i) => ({ code: `C${i}` })),
      reasons: [{ stage: 'rule', detail: 'y'.repeat(5_000) }],
    }));
    expect(r.spec.faults).toHaveLength(RECORD_LIMITS.faults);
    expect(r.spec.reasons[0]!.detail.length).toBe(RECORD_LIMITS.detail);
    expect(r.spec.truncated).toBe(true);
    expect(r.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(r.metadata.name.length).toBeLessThanOrEqual(63);
    expect(r.metadata.labels['clusterd-ts.io/job']).toBeUndefined(); // not a valid label value
    expect(JSON.stringify(r).length).toBeLessThan(16 * 1024);
  });

  it('parse refuses what is not a record, never throws', () => {
    for (const bad of [null, 3, {}, { metadata: { name: 'a', namespace: 'b' } }, { metadata: { name: 'a', namespace: 'b' }, spec: { job: { name: 'j', uid: 'u' }, decisionId: 'd', decidedAt: 'not a time' } }]) {
      expect(parseDecisionRecord(bad).ok).toBe(false);
    }
  });
});
