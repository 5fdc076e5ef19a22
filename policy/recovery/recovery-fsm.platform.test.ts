/**
 * docs/rules.md#recover.platform-mode: the AI platform mode of the recovery FSM with explicit time. The
 * platform's answers come in as PodGroup observations (the informer), its waits are the `platform`
 * timer (ClusterD's ProcessControlTimeout, 300 s).
 */
import { recoveryHarness, resetOps, signalsOf, signalTypes, type RecoveryHarness } from '../../test/support/recovery-fixtures.ts';
import { dedupeFaults, MAX_PLATFORM_FAULTS_CHARS, parsePlatformFaults, platformAnnotationProblems, platformResult, platformStrategy, rankTableState } from './platform-mode.ts';
import type { ObservedFaultRank, PlatformAnnotations } from './recovery-types.ts';

const feed = (h: RecoveryHarness, ranks: ObservedFaultRank[]) => h.feed({ type: 'faultObserved', jobHealth: 'UnHealthy', ranks });
const report = (h: RecoveryHarness, rank = 3, faultType = '1') => h.feed({ type: 'processFaultReported', faultRanks: [{ rankId: String(rank), faultType }] });
const pg = (h: RecoveryHarness, platform: PlatformAnnotations) => h.feed({ type: 'podGroupObserved', exists: true, phase: 'Running', platform });
const confirms = (h: RecoveryHarness): string[] =>
  h.commands('setPodGroupAnnotations').flatMap((c) => (c.annotations.ProcessConfirmFault === undefined ? [] : [c.annotations.ProcessConfirmFault]));
const timer = (h: RecoveryHarness, id: string) => h.state.timers.find((t) => t.id === id);

const STRATEGIES = { ranksPerPod: 2, strategies: ['retry' as const, 'recover' as const, 'dump' as const, 'exit' as const], platformMode: true };

/** Fault on rank 3, the platform's strategy `recover` given, stopTrain answered: the FSM is in the exchange. */
function toExchange(over: PlatformAnnotations = {}): RecoveryHarness {
  const h = recoveryHarness(STRATEGIES);
  pg(h, { strategy: 'recover', ...over });
  feed(h, [{ rankId: 3, faultType: '1' }]);
  report(h);
  h.feed({ type: 'stopCompleteReported', code: 0 });
  h.advance(11_000); // flush 1 s + force release 10 s
  return h;
}

describe('platform strategy wait (WaitPlatFormStrategyReady)', () => {
  it('waits for ProcessRecoverStrategy before FaultFlushing; exit is not accepted yet; the value is trimmed', () => {
    const h = recoveryHarness(STRATEGIES);
    pg(h, { strategy: '' });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(h.state).toMatchObject({ phase: 'NotifyWaitFaultFlushingState', step: 'platStrategy' });
    expect(timer(h, 'platform')?.dueAtMs).toBe(300_000);
    expect(resetOps(h)).toEqual([]);
    h.now += 3_000;
    pg(h, { strategy: 'exit' });
    expect(h.state.step).toBe('platStrategy');
    pg(h, { strategy: ' recover, ' });
    expect(h.state.platStrategy).toBe('recover');
    expect(resetOps(h)).toEqual(['notifyFaultFlushing']);
    expect(h.state.phase).toBe('WaitReportStopCompleteState');
    expect(timer(h, 'platform')).toBeUndefined();
  });

  it('the strategy already there: no wait', () => {
    const h = recoveryHarness(STRATEGIES);
    pg(h, { strategy: 'retry' });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(h.state.phase).toBe('WaitReportStopCompleteState');
    expect(h.state.platStrategy).toBe('retry');
  });

  it('no strategy within ProcessControlTimeout: fault retry (row 3)', () => {
    const h = recoveryHarness(STRATEGIES);
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.advance(299_999);
    expect(h.state.phase).toBe('NotifyWaitFaultFlushingState');
    h.advance(1);
    expect(h.state.phase).toBe('FaultRetryState');
    expect(h.commands('setPodGroupLabel').at(-1)).toMatchObject({ value: 'pause' });
    expect(h.reasons.join('\n')).toContain('NotifyWaitFaultFlushingState -(waitPlatStrategyTimeout)-> FaultRetryState');
  });

  it('the timeout follows --recovery-timings processControl', () => {
    const h = recoveryHarness(STRATEGIES, { timings: { processControlMs: 2_000 } });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.advance(2_000);
    expect(h.state.phase).toBe('FaultRetryState');
  });

  it('the platform chose dump (dump configured, job unhealthy): dump on fault though recover is configured', () => {
    const h = recoveryHarness(STRATEGIES);
    pg(h, { strategy: 'dump' });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(h.state.phase).toBe('WaitReportDumpStatusState');
    expect(signalTypes(h)).toContain('saveAndExit');
  });

  it('not platform mode: no wait at all', () => {
    const h = recoveryHarness({ ...STRATEGIES, platformMode: false });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    expect(h.state.phase).toBe('WaitReportStopCompleteState');
  });
});

describe('fault exchange (UpdateProcessConfirmFault, WaitProcessResultFault)', () => {
  it('writes ProcessConfirmFault, waits for ProcessResultFault, merges its faults into the global fault', () => {
    const h = toExchange();
    expect(confirms(h)).toEqual(['3:1']);
    expect(h.state).toMatchObject({ phase: 'NotifyGlobalFaultState', step: 'platResult' });
    expect(signalTypes(h)).not.toContain('globalFault');
    expect(timer(h, 'platform')?.dueAtMs).toBe(h.now + 300_000);
    pg(h, { strategy: 'recover', confirm: '3:1', result: '5:1' });
    const g = signalsOf(h).find((s) => s.signalType === 'globalFault')!;
    expect(g.faultRanks.map((f) => f.rankId)).toEqual(['2', '3', '4', '5']);
    expect(h.commands('writeResetConfig').at(-1)).toMatchObject({ op: 'fault', rankIds: [2, 3, 4, 5] });
    expect(h.state.phase).toBe('WaitReportRecoverStrategyState');
    expect(timer(h, 'platform')).toBeUndefined();
  });

  it('an empty ProcessResultFault is an answer', () => {
    const h = toExchange();
    expect(h.state.step).toBe('platResult');
    pg(h, { strategy: 'recover', confirm: '3:1', result: '' });
    expect(h.state.phase).toBe('WaitReportRecoverStrategyState');
    expect(signalTypes(h)).toContain('globalFault');
  });

  it('refuses to write while the platform has not cleared the previous ProcessConfirmFault: fault retry (row 16)', () => {
    const h = toExchange({ confirm: '1:1' });
    expect(confirms(h)).toEqual([]);
    expect(h.state.phase).toBe('FaultRetryState');
    expect(h.reasons.join('\n')).toContain('did not clear the previous ProcessConfirmFault');
  });

  it('the write fails: fault retry', () => {
    const h = recoveryHarness(STRATEGIES, { failWhen: (c) => c.type === 'setPodGroupAnnotations' });
    pg(h, { strategy: 'recover' });
    feed(h, [{ rankId: 3, faultType: '1' }]);
    report(h);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    h.advance(11_000);
    expect(h.state.phase).toBe('FaultRetryState');
  });

  it('no ProcessResultFault within ProcessControlTimeout: fault retry (row 16)', () => {
    const h = toExchange();
    h.advance(300_000);
    expect(h.state.phase).toBe('FaultRetryState');
    expect(h.reasons.join('\n')).toContain('NotifyGlobalFaultState -(writeConfirmFaultOrWaitResultFaultTimeout)-> FaultRetryState');
  });

  it('the strategy is unreadable when the result comes: fault retry', () => {
    const h = toExchange();
    pg(h, { strategy: 'later', confirm: '3:1', result: '3:1' });
    expect(h.state.phase).toBe('FaultRetryState');
  });

  it('malformed result items are dropped with a reason line, the rest is used', () => {
    const h = toExchange();
    pg(h, { strategy: 'recover', confirm: '3:1', result: 'x:1,7,5:1' });
    expect(h.reasons.join('\n')).toContain('malformed fault items ignored: "x:1", "7"');
    expect(signalsOf(h).find((s) => s.signalType === 'globalFault')!.faultRanks.map((f) => f.rankId)).toEqual(['2', '3', '4', '5']);
  });
});

describe('strategy choice in platform mode', () => {
  it('the platform confirmed exit: exit though recover is configured and reported', () => {
    const h = toExchange();
    pg(h, { strategy: 'exit', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['retry', 'recover', 'dump'] });
    expect(signalTypes(h)).toContain('changeStrategy:exit');
    expect(signalTypes(h)).not.toContain('changeStrategy:recover');
  });

  it('the platform confirmed dump: dump', () => {
    const h = toExchange();
    pg(h, { strategy: 'dump', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'dump'] });
    expect(signalTypes(h).at(-1)).toBe('changeStrategy:dump');
  });

  it('recover waits for RankTableReady=true', () => {
    const h = toExchange();
    pg(h, { strategy: 'recover', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'dump'] });
    expect(h.state).toMatchObject({ phase: 'NotifyDecidedStrategyState', step: 'rankTable' });
    expect(signalTypes(h)).not.toContain('changeStrategy:recover');
    pg(h, { strategy: 'recover', confirm: '3:1', result: '', rankTableReady: 'true' });
    expect(signalTypes(h).at(-1)).toBe('changeStrategy:recover');
    expect(h.state.phase).toBe('WaitReportProcessRecoverStatusState');
  });

  it('RankTableReady other than true fails at once: the strategy is read again, dump when the platform says dump', () => {
    const h = toExchange();
    pg(h, { strategy: 'recover', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'dump'] });
    pg(h, { strategy: 'dump', confirm: '3:1', result: '', rankTableReady: 'false' });
    expect(signalTypes(h).at(-1)).toBe('changeStrategy:dump');
    expect(h.state.current).toBe('dump');
  });

  it('RankTableReady timeout, the platform still says recover: exit (chooseForRecoverFail)', () => {
    const h = toExchange();
    pg(h, { strategy: 'recover', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'dump'] });
    h.advance(299_999);
    expect(h.state.step).toBe('rankTable');
    expect(signalTypes(h).filter((t) => t.startsWith('changeStrategy'))).toEqual([]);
    h.advance(1);
    expect(signalTypes(h).at(-1)).toBe('changeStrategy:exit');
    expect(h.state.current).toBe('exit');
  });

  it('RankTableReady failed and the strategy unreadable: handler error, the job resets', () => {
    const h = toExchange();
    pg(h, { strategy: 'recover', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover', 'dump'] });
    pg(h, { strategy: 'maybe', confirm: '3:1', result: '', rankTableReady: 'no' });
    expect(h.state.phase).toBe('INIT');
    expect(h.reasons.join('\n')).toContain('flush platform strategy failed');
  });

  it('after exit: no schedule wait and no RetryTime+1 wait (handleListenScheduleResult, handleWaitRestartAllProcess)', () => {
    const h = toExchange();
    pg(h, { strategy: 'exit', confirm: '3:1', result: '' });
    h.feed({ type: 'recoverStrategyReported', strategies: ['recover'] });
    expect(resetOps(h).slice(-2)).toEqual(['restartAllProcess', 'clear']);
    expect(h.state.phase).toBe('FaultRetryState');
  });
});

describe('retry faults in platform mode', () => {
  function retryCase(strategy: string): RecoveryHarness {
    const h = recoveryHarness(STRATEGIES);
    pg(h, { strategy });
    feed(h, [{ rankId: 3, faultType: '0' }]);
    h.feed({ type: 'stopCompleteReported', code: 0 });
    return h;
  }

  it('the platform chose retry: the retry ranks are confirmed, a retry-only answer sends the retry global fault', () => {
    const h = retryCase('retry');
    expect(confirms(h)).toEqual(['3:0']);
    pg(h, { strategy: 'retry', confirm: '3:0', result: '' });
    const g = signalsOf(h).find((s) => s.signalType === 'globalFault')!;
    expect(g).toMatchObject({ actions: ['on_global_rank'], faultRanks: [{ rankId: '3', faultType: '0' }] });
    h.feed({ type: 'recoverStrategyReported', strategies: ['retry', 'recover'] });
    expect(signalTypes(h).at(-1)).toBe('changeStrategy:retry');
  });

  it('the platform answered with a normal fault: the normal global fault with the merged ranks', () => {
    const h = retryCase('retry');
    pg(h, { strategy: 'recover', confirm: '3:0', result: '3:1' });
    const g = signalsOf(h).find((s) => s.signalType === 'globalFault')!;
    expect(g.actions).toEqual(['on_global_rank', 'fault_nodes_exit']);
    expect(g.faultRanks.map((f) => `${f.rankId}:${f.faultType}`)).toEqual(['2:1', '3:1']);
    expect(h.state.retryPath).toBe(false);
  });

  it('the platform chose recover: the retry faults become normal at the flush wait', () => {
    const h = retryCase('recover');
    expect(h.state.retryPath).toBe(false);
    expect(h.state.faults).toMatchObject([{ rankId: 3, faultType: '1' }]);
    expect(h.state.phase).toBe('WaitFaultFlushFinishedState');
  });
});

describe('platform annotation parsing (platform-mode.ts)', () => {
  it('ProcessRecoverStrategy: trimmed of spaces then commas; exit only when confirming', () => {
    expect(platformStrategy({ strategy: ' ,dump,' }, false)).toEqual({ ok: true, value: 'dump' });
    expect(platformStrategy({ strategy: 'exit' }, false).ok).toBe(false);
    expect(platformStrategy({ strategy: 'exit' }, true)).toEqual({ ok: true, value: 'exit' });
    expect(platformStrategy({}, true).ok).toBe(false);
    expect(platformStrategy({ strategy: 'recover-in-place' }, true).ok).toBe(false);
  });

  it('fault lists: rank:type items; bad items reported', () => {
    expect(parsePlatformFaults(' ,1:0,2:1,')).toEqual({ faults: [{ rankId: 1, faultType: '0' }, { rankId: 2, faultType: '1' }], bad: [] });
    expect(parsePlatformFaults('1:0:1,a:1,3:9,4:2').bad).toEqual(['1:0:1', 'a:1', '3:9']);
    expect(parsePlatformFaults(undefined)).toEqual({ faults: [], bad: [] });
  });

  it('de-duplication: a retry type gives way to a later type, a normal one stays', () => {
    expect(dedupeFaults([{ rankId: 2, faultType: '0' }, { rankId: 1, faultType: '1' }, { rankId: 2, faultType: '1' }, { rankId: 1, faultType: '0' }]))
      .toEqual([{ rankId: 1, faultType: '1' }, { rankId: 2, faultType: '1' }]);
  });

  it('result: absent = no answer; result and confirm merged', () => {
    expect(platformResult({ confirm: '1:1' })).toEqual({ answered: false });
    expect(platformResult({ confirm: '1:0', result: '1:1,2:1' })).toEqual({ answered: true, faults: [{ rankId: 1, faultType: '1' }, { rankId: 2, faultType: '1' }], bad: [] });
  });

  it('bad input: the problems named for the log line and the metric; an oversized list is not parsed', () => {
    expect(platformAnnotationProblems({ strategy: 'retry', confirm: '1:0', result: '', rankTableReady: 'false' })).toEqual([]);
    expect(platformAnnotationProblems({ strategy: 'later', result: '1:1,x', rankTableReady: 'yes' })).toEqual([
      'ProcessRecoverStrategy: unknown strategy "later"',
      'ProcessResultFault: malformed items "x"',
      'RankTableReady: "yes" is neither true nor false (taken as failed)',
    ]);
    const huge = '1:1,'.repeat(MAX_PLATFORM_FAULTS_CHARS / 4 + 1);
    expect(parsePlatformFaults(huge).faults).toEqual([]);
    expect(platformAnnotationProblems({ confirm: huge })[0]).toContain('exceeds');
  });

  it('RankTableReady: true ready, absent or empty wait, else failed', () => {
    expect(rankTableState({ rankTableReady: 'true' })).toBe('ready');
    expect(rankTableState({})).toBe('wait');
    expect(rankTableState({ rankTableReady: '' })).toBe('wait');
    expect(rankTableState({ rankTableReady: 'True' })).toBe('failed');
  });
});
