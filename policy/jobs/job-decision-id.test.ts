import { alreadyActed, decisionIdOf, fingerprintHash, markActed } from './job-decision-id.ts';
import { DEFAULT_POD_ESCALATION_PENDING_MS, evaluatePending, escalationBlockFor } from './job-pending-escalation.ts';

describe('decision ids', () => {
  it('are stable and sensitive to uid, generation, step and fingerprint', () => {
    expect(fingerprintHash('')).toBe('cbf29ce484222325');
    expect(fingerprintHash('a')).toBe('af63dc4c8601ec8c');
    const id = decisionIdOf('u', 1, 'start', 'fp');
    expect(decisionIdOf('u', 1, 'start', 'fp')).toBe(id);
    expect(new Set([id, decisionIdOf('v', 1, 'start', 'fp'), decisionIdOf('u', 2, 'start', 'fp'),
      decisionIdOf('u', 1, 'force', 'fp'), decisionIdOf('u', 1, 'start', 'fq')]).size).toBe(5);
  });

  it('markActed records ids once, capped; alreadyActed finds them', () => {
    let s = { acted: [] as readonly string[] };
    for (let i = 0; i < 5; i++) s = markActed(s, { decisionId: `d${i}` }, 3);
    s = markActed(s, { decisionId: 'd4' }, 3);
    expect(s.acted).toEqual(['d2', 'd3', 'd4']);
    expect(alreadyActed(s, { decisionId: 'd3' })).toBe(true);
    expect(alreadyActed(s, { decisionId: 'd0' })).toBe(false);
    expect(alreadyActed(undefined, { decisionId: 'd3' })).toBe(false);
  });
});

describe('pending escalation', () => {
  it('escalates pod level after the pending time unless blocked', () => {
    expect(DEFAULT_POD_ESCALATION_PENDING_MS).toBe(15_000);
    expect(evaluatePending(undefined, false, 0, 15_000, undefined)).toEqual({ escalate: false, detail: 'replacements not pending' });
    expect(evaluatePending(undefined, true, 100, 15_000, undefined)).toMatchObject({ escalate: false, pendingSinceMs: 100, requeueAfterMs: 15_000 });
    expect(evaluatePending(100, true, 15_100, 15_000, undefined)).toMatchObject({ escalate: true });
    expect(evaluatePending(100, true, 99_999, 15_000, 'recover_policy_path=pod')).toMatchObject({ escalate: false, pendingSinceMs: 100 });
    expect(evaluatePending(100, true, 99_999, 15_000, 'recover_policy_path=pod').requeueAfterMs).toBeUndefined();
  });

  it('knows which restarts may never escalate', () => {
    expect(escalationBlockFor({ podRescheduling: true }, 'pod', false)).toBeUndefined();
    expect(escalationBlockFor({ recoverPolicyPath: 'pod' }, 'pod', false)).toBe('recover_policy_path=pod');
    expect(escalationBlockFor({ processRecoverEnable: 'on' }, 'pod', false)).toBe('process-recover-enable=on');
    expect(escalationBlockFor({}, 'pod', true)).toBe('hot-switch');
    expect(escalationBlockFor({}, 'job', false)).toBe('not-pod-level');
  });
});
