/**
 * The stored recovery record: pod lists are left out, and documents written before a field existed
 * stay readable (`mustExitAtMs`, the recover-in-place must-exit stamps).
 */
import { initialHotSwitchState } from '../policy/hot-switch-fsm.ts';
import { initialRecoveryState } from '../policy/recovery-fsm.ts';
import { encodeRecoveryRecord, parseRecoveryRecord, type RecoveryRecord } from './recovery-state-store.ts';

function record(): RecoveryRecord {
  const recovery = initialRecoveryState({
    config: { jobId: 'u1', strategies: ['recover-in-place', 'recover', 'exit'], jobRescheduling: true, podRescheduling: false, subHealthyStrategy: 'ignore', ranksPerPod: 2, waitRescheduleTimeoutS: 270 },
    pods: [{ name: 'w-0', uid: 'p0', podRank: 0, phase: 'Running', npusAllocated: true }],
  });
  return {
    version: 1, jobId: 'u1', jobKey: 'ns/job-u1', registered: true, savedAtMs: 5,
    recovery: { ...recovery, mustExitAtMs: { 1: 26_000 } },
    hotSwitch: initialHotSwitchState({ jobId: 'u1', framework: 'pytorch', subHealthyStrategy: 'ignore' }),
  };
}

describe('recovery state record', () => {
  it('round-trips the must-exit stamps and drops the pod lists', () => {
    const parsed = parseRecoveryRecord(encodeRecoveryRecord(record()));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.value.recovery.mustExitAtMs).toEqual({ 1: 26_000 });
    expect(parsed.value.recovery.pods).toEqual([]);
  });

  it('a document stored before mustExitAtMs existed reads as "no pod reported as must exit"; junk stamps are dropped', () => {
    const old = JSON.parse(encodeRecoveryRecord(record())) as { recovery: Record<string, unknown> };
    delete old.recovery['mustExitAtMs'];
    const parsed = parseRecoveryRecord(JSON.stringify(old));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.value.recovery.mustExitAtMs).toEqual({});
    expect(parsed.value.recovery.phase).toBe('INIT');

    old.recovery['mustExitAtMs'] = { 1: 'soon', 2: 7 };
    const junk = parseRecoveryRecord(JSON.stringify(old));
    expect(junk.ok && junk.value.recovery.mustExitAtMs).toEqual({ 2: 7 });
    old.recovery['mustExitAtMs'] = [3];
    const list = parseRecoveryRecord(JSON.stringify(old));
    expect(list.ok && list.value.recovery.mustExitAtMs).toEqual({});
  });
});
