/** Strategy menu and choice (docs/rules.md#recover.register, #recover.strategy-choice, #recover.dump). */
import { chooseStrategy, dumpFirst, strategyMenu, waitRescheduleTimeoutS, type ChoiceInput } from './recovery-choice.ts';

const all = ['retry', 'recover-in-place', 'recover', 'elastic-training', 'dump', 'exit'] as const;
const input = (over: Partial<ChoiceInput> = {}): ChoiceInput => ({
  after: 'first',
  configured: all,
  agent: ['retry', 'recover', 'downgrade', 'dump'],
  retryPath: false,
  hasNormalFaults: true,
  canRestartInPlace: false,
  rank0PodFaulty: false,
  scaleIn: 'allowed',
  ...over,
});
const pick = (over: Partial<ChoiceInput>) => chooseStrategy(input(over)).strategy;

describe('strategyMenu (Init, docs/rules.md#recover.register)', () => {
  it('keeps known strategies in priority order, always adds exit', () => {
    expect(strategyMenu({ recoverStrategy: 'dump, recover,bogus,retry' }).strategies).toEqual(['retry', 'recover', 'dump', 'exit']);
    expect(strategyMenu({}).strategies).toEqual(['exit']);
  });
  it('job-rescheduling for fault-scheduling grace/force, pod-rescheduling for on', () => {
    expect(strategyMenu({ faultScheduling: 'grace', podRescheduling: 'on' })).toMatchObject({ jobRescheduling: true, podRescheduling: true });
    expect(strategyMenu({ faultScheduling: 'off', podRescheduling: 'off' })).toMatchObject({ jobRescheduling: false, podRescheduling: false });
  });
});

describe('first choice: retry -> recover-in-place -> recover -> elastic-training -> dump -> exit', () => {
  it.each([
    [{ hasNormalFaults: false }, 'retry'],
    [{ canRestartInPlace: true }, 'recover-in-place'],
    [{}, 'recover'],
    [{ agent: ['downgrade', 'dump'] }, 'elastic-training'],
    [{ agent: ['downgrade', 'dump'], rank0PodFaulty: true }, 'dump'],
    [{ agent: ['downgrade', 'dump'], scaleIn: 'blocked' }, 'dump'],
    [{ agent: [] }, 'exit'],
    [{ configured: ['recover', 'exit'], agent: ['retry'] }, 'exit'],
  ] as [Partial<ChoiceInput>, string][])('%j -> %s', (over, expected) => {
    expect(pick(over)).toBe(expected);
  });

  it('asks to wait before a scale-in when rescheduling may still bring the pods back', () => {
    expect(chooseStrategy(input({ agent: ['downgrade'], scaleIn: 'wait' }))).toMatchObject({ strategy: 'elastic-training', waitForScaleIn: true });
  });

  it('retry path without agent retry: convert the retry faults, dump or exit', () => {
    expect(chooseStrategy(input({ retryPath: true, hasNormalFaults: false, agent: ['recover', 'dump'] }))).toMatchObject({ strategy: 'dump', convertRetryFaults: true });
    expect(chooseStrategy(input({ retryPath: true, hasNormalFaults: false, agent: ['recover'] }))).toMatchObject({ strategy: 'exit', convertRetryFaults: true });
  });
});

describe('fallbacks', () => {
  it('after a failed retry: recover-in-place -> recover -> scale-in -> dump -> exit', () => {
    expect(pick({ after: 'retry-failed', hasNormalFaults: false })).toBe('recover');
    expect(pick({ after: 'retry-failed', agent: ['dump'] })).toBe('dump');
  });
  it('after a failed recover / scale-in / scale-out: dump -> exit', () => {
    expect(pick({ after: 'recover-failed' })).toBe('dump');
    expect(pick({ after: 'recover-failed', agent: ['recover'] })).toBe('exit');
  });
  it('after anything else: exit', () => {
    expect(pick({ after: 'other-failed' })).toBe('exit');
  });
  it('explains what it skipped', () => {
    expect(chooseStrategy(input({ agent: ['dump'] })).reason).toBe(
      'first choice: dump (skipped retry: agent does not support it; recover-in-place: agent does not support it; recover: agent does not support it; elastic-training: agent does not support it)',
    );
  });
});

describe('knobs', () => {
  it('dump first only when nothing above dump is configured (docs/rules.md#recover.dump)', () => {
    expect(dumpFirst(['dump', 'exit'])).toBe(true);
    expect(dumpFirst(['recover', 'dump', 'exit'])).toBe(false);
  });
  it('wait-reschedule-timeout: integer 30-270, else 270', () => {
    expect([undefined, '30', '270', '29', '271', 'x', 100, '12.5'].map(waitRescheduleTimeoutS)).toEqual([270, 30, 270, 270, 270, 270, 100, 270]);
  });
});
