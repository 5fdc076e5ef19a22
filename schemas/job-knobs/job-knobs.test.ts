import {
  KNOB_KEYS,
  jobReschedulingEnabled,
  parseJobKnobs,
  recoverStrategyEnabled,
  strategyMenu,
  type JobKnobs,
} from './job-knobs.ts';

const knobs = (labels?: Record<string, string>, annotations?: Record<string, string>): JobKnobs => {
  const r = parseJobKnobs(labels, annotations);
  expect(r.warnings).toEqual([]);
  return r.knobs;
};
const warned = (labels?: Record<string, unknown>, annotations?: Record<string, unknown>) =>
  parseJobKnobs(labels as Record<string, string>, annotations as Record<string, string>);

const DEFAULTS: JobKnobs = {
  faultScheduling: 'off',
  podRescheduling: false,
  faultRetryTimes: 0,
  subHealthyStrategy: 'ignore',
  processRecoverEnable: 'off',
  recoverStrategies: [],
  recoverPolicyPath: undefined,
  waitRescheduleTimeoutS: 270,
  platformMode: false,
  processRecoverStrategy: undefined,
  processConfirmFault: undefined,
  processResultFault: undefined,
  processRecoverStatus: undefined,
  rankTableReady: false,
  filterFaultCodes: new Map(),
  filterFaultLevels: new Map(),
  customJobId: undefined,
  framework: undefined,
  schedulePolicy: undefined,
  spBlockNpus: undefined,
  raBlockNpus: undefined,
  affinityLevel1: undefined,
};

describe('block escalation knobs (docs/rules.md#resched.block-escalation)', () => {
  it('reads schedule_policy, sp-block, ra-block and the level1 of affinity-config', () => {
    const { knobs, warnings } = parseJobKnobs({}, { 'huawei.com/schedule_policy': 'chip8-node8-ra64-sp', 'sp-block': '32', 'ra-block': '16', 'huawei.com/affinity-config': 'level2=8,level1=4' });
    expect(knobs).toMatchObject({ schedulePolicy: 'chip8-node8-ra64-sp', spBlockNpus: 32, raBlockNpus: 16, affinityLevel1: 4 });
    expect(warnings).toEqual([]);
  });
  it('ignores bad values with a warning', () => {
    const { knobs, warnings } = parseJobKnobs({}, { 'sp-block': '-3', 'ra-block': 'x', 'huawei.com/affinity-config': 'level2=8' });
    expect(knobs).toMatchObject({ spBlockNpus: undefined, raBlockNpus: undefined, affinityLevel1: undefined });
    expect(warnings).toHaveLength(3);
  });
});

describe('defaults', () => {
  it('no labels or annotations', () => {
    expect(knobs(undefined, undefined)).toEqual(DEFAULTS);
    expect(knobs({}, {})).toEqual(DEFAULTS);
  });
  it('empty strings read as absent', () => {
    expect(knobs({ 'fault-scheduling': '', 'fault-retry-times': '', 'process-recover-enable': '', subHealthyStrategy: '' },
      { 'wait-reschedule-timeout': '', 'recover-strategy': '' })).toEqual(DEFAULTS);
  });
});

describe('a fully configured acjob PodGroup', () => {
  const k = knobs(
    {
      'fault-scheduling': 'grace', 'pod-rescheduling': 'on', 'fault-retry-times': '3', subHealthyStrategy: 'hotSwitch',
      'process-recover-enable': 'on', framework: 'pytorch', 'custom-job-id': 'label-id', 'ring-controller.atlas': 'ascend-910',
    },
    {
      'recover-strategy': 'retry, recover-in-place,recover,dump,exit,elastic-training',
      'huawei.com/recover_policy_path': 'pod',
      'wait-reschedule-timeout': '120',
      ProcessRecoverStrategy: 'recover',
      ProcessConfirmFault: '8:0,9:1',
      ProcessResultFault: '',
      ProcessRecoverStatus: 'recover-success',
      RankTableReady: 'true',
      'huawei.com/schedule.filter.faultCode': '80E01801:30，81078603, [0x08520003,na,L2,na]:600',
      'huawei.com/schedule.filter.faultLevel': 'RestartRequest：90',
      'custom-job-id': 'platform-42',
    },
  );
  it('reads every knob', () => {
    expect(k).toEqual({
      faultScheduling: 'grace',
      podRescheduling: true,
      faultRetryTimes: 3,
      subHealthyStrategy: 'hotSwitch',
      processRecoverEnable: 'on',
      recoverStrategies: ['retry', 'recover-in-place', 'recover', 'dump', 'exit', 'elastic-training'],
      recoverPolicyPath: 'pod',
      waitRescheduleTimeoutS: 120,
      platformMode: true,
      processRecoverStrategy: 'recover',
      processConfirmFault: [{ rankId: 8, faultType: '0' }, { rankId: 9, faultType: '1' }],
      processResultFault: [],
      processRecoverStatus: 'recover-success',
      rankTableReady: true,
      filterFaultCodes: new Map([['80E01801', 30], ['81078603', 60], ['[0x08520003,na,L2,na]', 600]]),
      filterFaultLevels: new Map([['RestartRequest', 90]]),
      customJobId: 'platform-42',
      framework: 'pytorch',
    });
  });
  it('derived facts', () => {
    expect(jobReschedulingEnabled(k)).toBe(true);
    expect(recoverStrategyEnabled(k, 'recover-in-place')).toBe(true);
    expect(recoverStrategyEnabled({ ...k, processRecoverEnable: 'pause' }, 'recover-in-place')).toBe(false);
    expect(strategyMenu(k)).toEqual(['retry', 'recover-in-place', 'recover', 'elastic-training', 'dump', 'exit', 'job-rescheduling', 'pod-rescheduling']);
    expect(strategyMenu(DEFAULTS)).toEqual(['exit']);
  });
});

describe('accepted values', () => {
  it.each(['grace', 'force', 'off', 'external-grace', 'external-force'] as const)('fault-scheduling %s', (v) => {
    expect(knobs({ 'fault-scheduling': v }).faultScheduling).toBe(v);
  });
  it.each(['ignore', 'graceExit', 'forceExit', 'hotSwitch'] as const)('subHealthyStrategy %s', (v) => {
    expect(knobs({ subHealthyStrategy: v }).subHealthyStrategy).toBe(v);
  });
  it.each([['0', 0], ['100', 100], ['+7', 7], ['007', 7]])('fault-retry-times %s', (v, n) => {
    expect(knobs({ 'fault-retry-times': v }).faultRetryTimes).toBe(n);
  });
  it.each([['30', 30], ['270', 270]])('wait-reschedule-timeout %s', (v, n) => {
    expect(knobs({}, { 'wait-reschedule-timeout': v }).waitRescheduleTimeoutS).toBe(n);
  });
  it('ProcessRecoverStrategy present but empty = platform mode, waiting', () => {
    expect(knobs({}, { ProcessRecoverStrategy: '' })).toMatchObject({ platformMode: true, processRecoverStrategy: '' });
  });
  it('pod-rescheduling off is silent', () => expect(knobs({ 'pod-rescheduling': 'off' }).podRescheduling).toBe(false));
  it('custom-job-id falls back to the label', () => expect(knobs({ 'custom-job-id': 'l' }).customJobId).toBe('l'));
});

describe('hostile and out-of-range values: fallback plus a warning, never a throw', () => {
  const one = (labels: Record<string, unknown>, annotations: Record<string, unknown> = {}) => {
    const r = warned(labels, annotations);
    expect(r.warnings.length).toBeGreaterThan(0);
    for (const w of r.warnings) expect(w.length).toBeLessThan(300);
    return r.knobs;
  };
  it.each(['-1', '101', 'abc', '1.5', '1e2', ' 3', '0x10', '99999999999999999999'])('fault-retry-times %j -> 0', (v) => {
    expect(one({ 'fault-retry-times': v }).faultRetryTimes).toBe(0);
  });
  it.each(['29', '271', '-30', 'ten', '30s', '1e3'])('wait-reschedule-timeout %j -> 270', (v) => {
    expect(one({}, { 'wait-reschedule-timeout': v }).waitRescheduleTimeoutS).toBe(270);
  });
  it.each(['Grace', 'graceful', 'on', 'external'])('fault-scheduling %j -> off', (v) => {
    expect(one({ 'fault-scheduling': v }).faultScheduling).toBe('off');
  });
  it('other enums', () => {
    expect(one({ subHealthyStrategy: 'GraceExit' }).subHealthyStrategy).toBe('ignore');
    expect(one({ 'process-recover-enable': 'yes' }).processRecoverEnable).toBe('off');
    expect(one({ 'pod-rescheduling': 'true' }).podRescheduling).toBe(false);
    expect(one({}, { 'huawei.com/recover_policy_path': 'job' }).recoverPolicyPath).toBeUndefined();
    expect(one({}, { ProcessRecoverStrategy: 'exit' })).toMatchObject({ platformMode: true, processRecoverStrategy: '' });
    expect(one({}, { ProcessRecoverStatus: 'done' }).processRecoverStatus).toBeUndefined();
  });
  it('recover-strategy drops unknown and duplicate items', () => {
    const r = warned({}, { 'recover-strategy': 'retry,retry,foo,,recover-in-place,RECOVER' });
    expect(r.knobs.recoverStrategies).toEqual(['retry', 'recover-in-place']);
    expect(r.warnings).toHaveLength(3);
  });
  it('10 kB values are ignored and not echoed', () => {
    const big = 'x'.repeat(10_000);
    const r = warned(
      { 'fault-scheduling': big, 'fault-retry-times': big, subHealthyStrategy: big, framework: big },
      {
        'recover-strategy': big, 'wait-reschedule-timeout': big, 'huawei.com/schedule.filter.faultCode': 'a:1,'.repeat(5000),
        ProcessConfirmFault: '1:0,'.repeat(40_000), 'custom-job-id': big, ProcessRecoverStrategy: big,
      },
    );
    expect(r.knobs).toEqual({ ...DEFAULTS, platformMode: true, processRecoverStrategy: '', processConfirmFault: [] });
    expect(r.warnings.length).toBeGreaterThanOrEqual(9);
    for (const w of r.warnings) expect(w.length).toBeLessThan(300);
  });
  it('fault filter: bad seconds give 60 s, empty names are skipped', () => {
    const r = warned({}, { 'huawei.com/schedule.filter.faultCode': 'A:-5,B:abc,C:86401,D:86400,:7, ,E:' });
    expect(r.knobs.filterFaultCodes).toEqual(new Map([['A', 60], ['B', 60], ['C', 60], ['D', 86400], ['E', 60]]));
    expect(r.warnings).toHaveLength(5);
  });
  it('fault filter: at most 1000 entries', () => {
    const value = Array.from({ length: 1500 }, (_, i) => `C${i}`).join(',');
    const r = warned({}, { 'huawei.com/schedule.filter.faultLevel': value });
    expect(r.knobs.filterFaultLevels.size).toBe(1000);
    expect(r.warnings).toHaveLength(1);
  });
  it('process fault lists drop malformed items', () => {
    const r = warned({}, { ProcessResultFault: ',8:0,x:1,9,10:1:2,-1:0,11:1,' });
    expect(r.knobs.processResultFault).toEqual([{ rankId: 8, faultType: '0' }, { rankId: 11, faultType: '1' }]);
    expect(r.warnings).toHaveLength(4);
  });
  it('non-string map values and non-map inputs', () => {
    const r = warned({ 'fault-retry-times': 5, 'fault-scheduling': 'force' }, ['x'] as unknown as Record<string, unknown>);
    expect(r.knobs.faultRetryTimes).toBe(0);
    expect(r.knobs.faultScheduling).toBe('force');
    expect(r.warnings).toEqual([
      'labels: value of "fault-retry-times" is not a string; ignored',
      'annotations: not a string map; ignored',
    ]);
    expect(parseJobKnobs(null as unknown as undefined, 'x' as unknown as undefined).knobs).toEqual(DEFAULTS);
  });
  it('__proto__ keys are plain data', () => {
    const labels = JSON.parse('{"__proto__":{"fault-scheduling":"force"}}') as Record<string, string>;
    const r = parseJobKnobs(labels, undefined);
    expect(r.knobs.faultScheduling).toBe('off');
  });
  it('keys are exact (ClusterD reads these names verbatim)', () => {
    expect(KNOB_KEYS.recoverPolicyPath).toBe('huawei.com/recover_policy_path');
    expect(knobs({ 'Fault-Scheduling': 'force' }).faultScheduling).toBe('off');
  });
});
