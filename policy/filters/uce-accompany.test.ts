import type { LeveledFault } from '../faults/fault-level.ts';
import { uceAccompany, type UceAccompanyState } from './uce-accompany.ts';

const S = 1000;
const lf = (code: string, firstSeenMs: number, device = 'Ascend910-0'): LeveledFault => ({
  fault: { node: 'n1', device, source: 'npu', code, level: 'RestartRequest', reportedLevel: 'RestartRequest', firstSeenMs },
  level: 'RestartRequest',
  reasons: [],
});
const key = 'n1/Ascend910-0/npu/80C98009';

describe('UCE-accompanying AIC/AIV filter (docs/rules.md#filter.uce-accompany)', () => {
  it('drops an AIC bus error within 5 s of a UCE on the same NPU, and remembers it', () => {
    const r = uceAccompany({}, { node: 'n1', faults: [lf('80C98009', 10 * S), lf('80E01801', 14 * S)] }, 15 * S);
    expect(r.verdicts.get(key)?.action).toBe('drop');
    // the UCE clears; the decision sticks to this AIC instance
    const later = uceAccompany(r.state, { node: 'n1', faults: [lf('80C98009', 10 * S)] }, 30 * S);
    expect(later.verdicts.get(key)?.action).toBe('drop');
  });

  it('hides a young AIC error until 5 s have passed, then reports it if no UCE came', () => {
    const young = uceAccompany({}, { node: 'n1', faults: [lf('80CB8009', 10 * S)] }, 12 * S);
    expect(young.verdicts.get('n1/Ascend910-0/npu/80CB8009')).toMatchObject({ action: 'hide', untilMs: 15 * S });
    expect(young.nextDeadlineMs).toBe(15 * S);
    const old = uceAccompany(young.state, { node: 'n1', faults: [lf('80CB8009', 10 * S)] }, 15 * S);
    expect(old.verdicts.get('n1/Ascend910-0/npu/80CB8009')?.action).toBe('pass');
  });

  it('a UCE from a business-plane report counts; a UCE on another NPU does not', () => {
    const r = uceAccompany({}, { node: 'n1', faults: [lf('80C98009', 10 * S), lf('80E01801', 10 * S, 'Ascend910-1')], businessUce: [{ device: 'Ascend910-0', atMs: 6 * S }] }, 11 * S);
    expect(r.verdicts.get(key)?.action).toBe('drop');
    const other = uceAccompany({}, { node: 'n1', faults: [lf('80C98009', 10 * S), lf('80E01801', 10 * S, 'Ascend910-1')] }, 20 * S);
    expect(other.verdicts.get(key)?.action).toBe('pass');
  });

  it('forgets instances that are no longer reported, only for the observed node', () => {
    const state: UceAccompanyState = { [`${key}@1`]: 'drop', 'n2/Ascend910-0/npu/80C98009@1': 'report' };
    expect(uceAccompany(state, { node: 'n1', faults: [] }, 0).state).toEqual({ 'n2/Ascend910-0/npu/80C98009@1': 'report' });
  });
});
