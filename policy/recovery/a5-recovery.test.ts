/**
 * docs/rules.md#recover.force-release-a5, #recover.rack-wait: the A5 job's global-fault notification,
 * as the decision and through the FSM from WaitFaultFlushFinishedState (row 13).
 */
import { jobConfig, podsOf } from '../../test/support/recovery-fixtures.ts';
import { jobOnA5, MAX_RACK_WAIT_TRIES, rackWaitStep } from './a5-recovery.ts';
import { initialRecoveryState, step, trigger } from './recovery-fsm.ts';
import type { StepResult } from './recovery-kit.ts';
import type { RecoveryCommand, RecoveryJobConfig, RecoveryState } from './recovery-types.ts';

const NOW = 1_700_000_000_000;
type R = StepResult<RecoveryState, RecoveryCommand>;

function flushed(config: Partial<RecoveryJobConfig>, phase = 'Running'): RecoveryState {
  const s = initialRecoveryState({ config: jobConfig({ ranksPerPod: 2, strategies: ['recover', 'dump', 'exit'], ...config }), pods: podsOf(4), podGroup: { exists: true, phase } });
  return { ...s, phase: 'WaitFaultFlushFinishedState', faults: [{ rankId: 3, faultType: '1', software: false, restartInPlace: false }], agentStrategies: ['recover', 'dump'], jobHealth: 'UnHealthy' };
}
const timers = (r: R): Record<string, number> => Object.fromEntries(r.commands.flatMap((c) => (c.type === 'startTimer' ? [[c.timer.id, c.timer.dueAtMs - NOW]] : [])));
const globalSent = (r: R): boolean => r.commands.some((c) => c.type === 'sendSignal' && c.signal.signalType === 'globalFault');
const publish = (r: R) => r.commands.find((c) => c.type === 'publishFaultJobInfo');

describe('rackWaitStep (dealWithRackScheduling)', () => {
  const base = { a5: true, rackBlock: true, podGroupRunning: false, tries: 0, waitMs: 3_000 };
  it('waits only for an A5 job with ra-block whose PodGroup is not Running', () => {
    expect(rackWaitStep({ ...base, a5: false })).toMatchObject({ wait: false, applies: false });
    expect(rackWaitStep({ ...base, rackBlock: false })).toMatchObject({ wait: false, applies: false });
    expect(rackWaitStep({ ...base, podGroupRunning: true })).toMatchObject({ wait: false, applies: true });
    expect(rackWaitStep(base)).toMatchObject({ wait: true, tries: 1 });
  });
  it('at most MaxRackReschedulingRetryTimes + 1 waits; a 0 ms wait skips the loop', () => {
    const waits: number[] = [];
    for (let tries = 0, d = rackWaitStep(base); d.wait; d = rackWaitStep({ ...base, tries })) { tries = d.tries; waits.push(tries); }
    expect(waits).toEqual([1, 2, 3, MAX_RACK_WAIT_TRIES + 1]);
    expect(rackWaitStep({ ...base, waitMs: 0 })).toMatchObject({ wait: false, applies: true });
  });
  it('jobOnA5: any pod on an A5 node', () => {
    const a5 = new Set(['n2']);
    expect(jobOnA5(['n1', 'n2'], (n) => a5.has(n))).toBe(true);
    expect(jobOnA5(['n1', ''], (n) => a5.has(n))).toBe(false);
  });
});

describe('global fault of an A5 job (FSM)', () => {
  it('A3: fault-job-info entry and the 10 s wait for NodeD before globalFault', () => {
    const r = trigger(flushed({}), 'flushFinished', NOW);
    expect(publish(r)).toMatchObject({ podRanks: [1] });
    expect(publish(r)).not.toHaveProperty('a5');
    expect(timers(r)).toEqual({ forceRelease: 10_000 });
    expect(globalSent(r)).toBe(false);
  });

  it('A5: no entry (the command says a5), no wait, globalFault at once', () => {
    const r = trigger(flushed({ a5: true }), 'flushFinished', NOW);
    expect(publish(r)).toMatchObject({ podRanks: [1], a5: true });
    expect(timers(r)).not.toHaveProperty('forceRelease');
    expect(globalSent(r)).toBe(true);
    expect(r.reasons.some((x) => x.includes('[recover.force-release-a5]'))).toBe(true);
  });

  it('A5 with ra-block: 3 s waits while the PodGroup is not Running, then on; Running ends the wait at its next look', () => {
    let r = trigger(flushed({ a5: true, rackBlock: true }, 'Pending'), 'flushFinished', NOW);
    expect(timers(r)).toEqual({ rackWait: 3_000 });
    expect(publish(r)).toBeUndefined();
    for (let k = 2; k <= 4; k++) {
      r = step(r.state, { type: 'timerFired', id: 'rackWait' }, NOW);
      expect(r.state.rackWaitTries).toBe(k);
      expect(globalSent(r)).toBe(false);
    }
    r = step(r.state, { type: 'timerFired', id: 'rackWait' }, NOW);
    expect(globalSent(r)).toBe(true);
    expect(r.reasons.some((x) => x.includes('not Running after 4 wait(s)'))).toBe(true);

    let q = trigger(flushed({ a5: true, rackBlock: true }, 'Pending'), 'flushFinished', NOW);
    q = step(q.state, { type: 'podGroupObserved', exists: true, phase: 'Running' }, NOW);
    expect(globalSent(q)).toBe(false);
    q = step(q.state, { type: 'timerFired', id: 'rackWait' }, NOW);
    expect(globalSent(q)).toBe(true);
    expect(q.reasons.some((x) => x.includes('Running after 1 wait(s) [recover.rack-wait]'))).toBe(true);
  });

  it('ra-block on a non-A5 job or a Running PodGroup: no rack wait', () => {
    expect(timers(trigger(flushed({ rackBlock: true }, 'Pending'), 'flushFinished', NOW))).toEqual({ forceRelease: 10_000 });
    expect(globalSent(trigger(flushed({ a5: true, rackBlock: true }), 'flushFinished', NOW))).toBe(true);
  });
});
