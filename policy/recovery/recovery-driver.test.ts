/**
 * Every timeout of the recovery FSMs in rxjs virtual time (docs/CONVENTIONS.md#tests): 15 min, 270 s, 135 s,
 * 1 min, 30/150/15 s each cost milliseconds of wall time. The driver fires the state's timers on the
 * TestScheduler; `execute` acknowledges commands and plays a scripted TaskD where needed.
 */
import { EMPTY, merge, of, map, timer, type Observable, type ObservableInput } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { graceToleranceTimings, initialGraceState, type GraceEvent } from './graceful-tolerance.ts';
import { initialHotSwitchState, type HotSwitchEvent, type HotSwitchPod } from './hot-switch-fsm.ts';
import { jobConfig, podsOf } from '../../test/support/recovery-fixtures.ts';
import { runFsm$ } from './recovery-driver.ts';
import { initialRecoveryState } from './recovery-fsm.ts';
import type { CommandMeta, EffectResult } from './recovery-kit.ts';
import type { RecoveryCommand, RecoveryEvent, RecoveryJobConfig } from './recovery-types.ts';

const newScheduler = (): TestScheduler => new TestScheduler((a, b) => expect(a).toEqual(b));
const ack = <E>(c: CommandMeta): ObservableInput<E> => (c.awaitResult ? of({ type: 'effectResult', commandId: c.id, ok: true } satisfies EffectResult as E) : EMPTY);

/** Runs a driver under virtual time; returns [virtual ms, phase] at each phase change and the commands with their times. */
function record<S extends { phase: string }, C>(ts: TestScheduler, out$: Observable<{ state: S; commands: readonly C[] }>) {
  const phases: [number, string][] = [];
  const commands: [number, C][] = [];
  out$.subscribe((r) => {
    if (phases.at(-1)?.[1] !== r.state.phase) phases.push([ts.now(), r.state.phase]);
    for (const c of r.commands) commands.push([ts.now(), c]);
  });
  return { phases, commands, at: (phase: string) => phases.find(([, p]) => p === phase)?.[0] };
}

const recovery = (over: Partial<RecoveryJobConfig> = {}) => initialRecoveryState({ config: jobConfig({ ranksPerPod: 2, ...over }), pods: podsOf(4) });
const processFault: RecoveryEvent = { type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] };

/** A TaskD that answers stopTrain after 2 s and globalFault with `strategies` after 1 s. */
function taskd(ts: TestScheduler, strategies: string[] | null) {
  return (c: RecoveryCommand): ObservableInput<RecoveryEvent> => {
    const answers: Observable<RecoveryEvent>[] = [];
    if (c.type === 'sendSignal' && c.signal.signalType === 'stopTrain') answers.push(timer(2_000, ts).pipe(map(() => ({ type: 'stopCompleteReported', code: 0 }) as const)));
    if (c.type === 'sendSignal' && c.signal.signalType === 'globalFault' && strategies !== null) {
      answers.push(timer(1_000, ts).pipe(map(() => ({ type: 'recoverStrategyReported', strategies }) as const)));
    }
    return merge(of(...(c.awaitResult ? [{ type: 'effectResult', commandId: c.id, ok: true } as const] : [])), ...answers);
  };
}

describe('recovery FSM timeouts in virtual time', () => {
  it('15 min without ReportStopComplete -> clear -> fault retry (label pause)', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<RecoveryEvent>('a', { a: processFault });
      const rec = record(ts, runFsm$(events$, recovery(), ts, { execute: (c) => ack<RecoveryEvent>(c) }));
      flush();
      expect(rec.at('WaitReportStopCompleteState')).toBe(0);
      expect(rec.at('FaultRetryState')).toBe(15 * 60_000);
      const pause = rec.commands.find(([, c]) => c.type === 'setPodGroupLabel');
      expect(pause).toEqual([900_000, expect.objectContaining({ value: 'pause' })]);
    });
  });

  it('270 s wait-reschedule-timeout: recover chosen, pods never rescheduled -> clear -> fault retry; 135 s later killMaster', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      // The PodGroup leaves Running after the pause (Volcano restarts the job) and never runs again.
      const events$ = hot<RecoveryEvent>('a 283s p', { a: processFault, p: { type: 'podGroupObserved', exists: true, phase: 'Pending' } });
      const rec = record(ts, runFsm$(events$, recovery(), ts, { execute: taskd(ts, ['recover']) }));
      flush();
      // stop complete at 2 s, flush 1 s, force release 10 s -> globalFault at 13 s; strategies at 14 s.
      expect(rec.at('WaitReportRecoverStrategyState')).toBe(13_000);
      expect(rec.at('WaitReportProcessRecoverStatusState')).toBe(14_000);
      expect(rec.at('FaultClearState')).toBe(13_000 + 270_000);
      expect(rec.at('FaultRetryState')).toBe(283_000);
      const kill = rec.commands.find(([, c]) => c.type === 'sendSignal' && c.signal.signalType === 'killMaster');
      expect(kill?.[0]).toBe(283_000 + 135_000);
      expect(rec.phases.at(-1)).toEqual([418_000, 'INIT']);
    });
  });

  it('wait-reschedule-timeout from the PodGroup annotation (30 s)', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<RecoveryEvent>('a', { a: processFault });
      const rec = record(ts, runFsm$(events$, recovery({ waitRescheduleTimeoutS: 30 }), ts, { execute: taskd(ts, ['recover']) }));
      flush();
      expect(rec.at('FaultClearState')).toBe(13_000 + 30_000);
    });
  });

  it('135 s budget: the job runs again with new pods after 100 s -> label back to on', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<RecoveryEvent>('a 15m p 99998ms (bc)', {
        a: processFault,
        p: { type: 'podGroupObserved', exists: true, phase: 'Pending' }, // Volcano restarts the job after the pause
        b: { type: 'podsObserved', pods: podsOf(4, 1) },
        c: { type: 'podGroupObserved', exists: true, phase: 'Running' },
      });
      const rec = record(ts, runFsm$(events$, recovery(), ts, { execute: (c) => ack<RecoveryEvent>(c) }));
      flush();
      expect(rec.at('FaultRetryState')).toBe(900_000);
      const on = rec.commands.find(([, c]) => c.type === 'setPodGroupLabel' && c.value === 'on');
      expect(on?.[0]).toBe(1_000_000); // 'a' takes 1 frame: 1 + 15 min + 99 999 ms
      expect(rec.phases.at(-1)).toEqual([1_000_000, 'INIT']);
    });
  });

  it('1 s flush and 10 s preExit waits', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const fault: RecoveryEvent = { type: 'faultObserved', jobHealth: 'UnHealthy', ranks: [{ rankId: 3, faultType: '1' }] };
      const events$ = hot<RecoveryEvent>('a', { a: fault });
      const rec = record(ts, runFsm$(events$, recovery(), ts, { execute: (c) => ack<RecoveryEvent>(c) }));
      flush();
      const preExit = rec.commands.find(([, c]) => c.type === 'sendSignal' && c.signal.signalType === 'preExitProcess');
      expect(preExit?.[0]).toBe(10_000);
    });
  });
});

describe('hot switch timeouts in virtual time', () => {
  const pods = (backupPhase?: string): HotSwitchPod[] => [
    { name: 'w-0', uid: 'u0', podRank: 0, phase: 'Running', annotations: {} },
    { name: 'w-1', uid: 'u1', podRank: 1, phase: 'Running', annotations: {} },
    ...(backupPhase ? [{ name: 'w-1-hot-1', uid: 'ub', podRank: 1, phase: backupPhase, annotations: { podType: 'backup', backupSourcePodName: 'w-1' } }] : []),
  ];
  const begin: HotSwitchEvent = { type: 'subHealthFault', faultyPods: [{ podName: 'w-1', podRank: 1, rankIds: [8] }], recoveryIdle: true };

  it('1 min for the backup pod: stop switch and persisted downgrade at 60 s', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<HotSwitchEvent>('a b', { a: { type: 'podsObserved', pods: pods() }, b: begin });
      const rec = record(ts, runFsm$(events$, initialHotSwitchState({ jobId: 'j' }), ts, { execute: (c) => ack<HotSwitchEvent>(c) }));
      flush();
      const down = rec.commands.find(([, c]) => c.type === 'persistDowngrade');
      expect(down?.[0]).toBe(1 + 60_000);
      expect(rec.phases.at(-1)).toEqual([60_001, 'INIT']);
    });
  });

  it('15 min for the pause report, then stop job', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<HotSwitchEvent>('a b 10s c', { a: { type: 'podsObserved', pods: pods() }, b: begin, c: { type: 'podsObserved', pods: pods('Running') } });
      const rec = record(ts, runFsm$(events$, initialHotSwitchState({ jobId: 'j' }), ts, { execute: (c) => ack<HotSwitchEvent>(c) }));
      flush();
      expect(rec.at('WaitReportPauseResultState')).toBe(10_002);
      expect(rec.at('NotifyStopJobState')).toBe(10_002 + 15 * 60_000);
    });
  });
});

describe('graceful tolerance timeouts in virtual time (30 / 150 / 15 s)', () => {
  const fault = (policy: 'restart' | 'reset', codes = [1]): GraceEvent => ({ type: 'deviceFaults', devices: [{ logicId: 0, rankId: 0, policy, errorCodes: codes }] });

  it('reset not done in WaitDeviceResetTime 150 s -> failed, then WaitProcessReadCMTime 30 s -> idle', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<GraceEvent>('a b', { a: fault('reset'), b: { type: 'processCount', count: 0 } });
      const rec = record(ts, runFsm$(events$, initialGraceState('job', graceToleranceTimings()), ts));
      flush();
      expect(rec.at('resetting')).toBe(1);
      expect(rec.at('reporting')).toBe(150_001);
      expect(rec.phases.at(-1)).toEqual([180_001, 'idle']);
    });
  });

  it('restart self-heals in WaitFaultSelfHealingTime 15 s', () => {
    const ts = newScheduler();
    ts.run(({ hot, flush }) => {
      const events$ = hot<GraceEvent>('a b c', { a: fault('restart'), b: { type: 'processCount', count: 0 }, c: fault('restart', []) });
      const rec = record(ts, runFsm$(events$, initialGraceState('job'), ts));
      flush();
      expect(rec.at('selfHealing')).toBe(1);
      expect(rec.at('reporting')).toBe(15_001);
      const recovered = rec.commands.find(([, c]) => c.type === 'writeResetConfig' && c.rankList[0]?.Status === 'recovered');
      expect(recovered?.[0]).toBe(15_001);
      expect(rec.phases.at(-1)).toEqual([45_001, 'idle']);
    });
  });
});
