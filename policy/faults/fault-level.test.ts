import { DEFAULT_FAULT_CODE_TABLE } from '../../schemas/fault-code/fault-code.ts';
import { DEFAULT_SWITCH_FAULT_CODE_CONFIG, buildSwitchFaultCodeTable } from '../../schemas/fault-config-cm/switch-fault-code.ts';
import type { FaultRecord, FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { deviceVerdicts } from './device-verdict.ts';
import { isNormalLevel, levelFromSeverity, mostSeriousLevel, resolveFaultLevel, type LevelTables } from './fault-level.ts';
import { formatChain, reason } from '../reasons.ts';

const rec = (code: string, level: NpuFaultLevel, source: FaultSource = 'npu', reportedLevel: string = level): FaultRecord => ({
  node: 'n1',
  ...(source === 'switch' ? {} : { device: 'Ascend910-3' }),
  source,
  code,
  level,
  reportedLevel,
  firstSeenMs: 0,
});
const central: LevelTables = { ...DEFAULT_FAULT_CODE_TABLE, switchCodes: buildSwitchFaultCodeTable(DEFAULT_SWITCH_FAULT_CODE_CONFIG) };

describe('fault levels (docs/rules.md#levels)', () => {
  it('trusts the reported level without a central config', () => {
    const l = resolveFaultLevel(rec('80E18005', 'SeparateNPU'));
    expect(l.level).toBe('SeparateNPU');
    expect(l.reasons[0]).toMatchObject({ rule: 'reported', code: '80E18005', level: 'SeparateNPU' });
  });

  it('re-levels chip codes from faultCode.json when the central config is present', () => {
    const l = resolveFaultLevel(rec('80e18005', 'SeparateNPU'), central);
    expect(l.level).toBe('RestartNPU');
    expect(formatChain(l.reasons)).toBe('80e18005 -> RestartNPU (faultCode.json [levels.chip-levels]: chip code listed as RestartNPU)');
  });

  it('81078603 is a NotHandleFault network code (escalation is separate)', () => {
    expect(resolveFaultLevel(rec('81078603', 'PreSeparateNPU', 'network'), central).level).toBe('NotHandleFault');
  });

  it('unknown codes: by severity when known, else the reported level; unknown network codes -> PreSeparateNPU', () => {
    expect(resolveFaultLevel(rec('DEADBEEF', 'RestartNPU'), central, 'Minor').level).toBe('NotHandleFault');
    expect(resolveFaultLevel(rec('DEADBEEF', 'RestartNPU'), central, 'major').level).toBe('SeparateNPU');
    expect(resolveFaultLevel(rec('DEADBEEF', 'RestartNPU'), central).level).toBe('RestartNPU');
    expect(resolveFaultLevel(rec('DEADBEEF', 'NotHandleFault', 'network'), central)).toMatchObject({ level: 'PreSeparateNPU', reasons: [{ rule: 'unknown-network-code' }] });
  });

  it.each([
    ['info', 'NotHandleFault'],
    ['minor', 'NotHandleFault'],
    ['Hint', 'NotHandleFault'],
    ['suggestion', 'NotHandleFault'],
    ['major', 'SeparateNPU'],
    ['critical', 'SeparateNPU'],
    [undefined, 'SeparateNPU'],
    [0, 'NotHandleFault'],
    [1, 'NotHandleFault'],
    [2, 'SeparateNPU'],
  ] as const)('severity %j -> %s', (sev, level) => {
    expect(levelFromSeverity(sev)).toBe(level);
  });

  it('never re-levels the ManuallySeparateNPU pseudo-code, node faults or unknown switch codes', () => {
    expect(resolveFaultLevel(rec('ManuallySeparateNPU', 'ManuallySeparateNPU'), central).level).toBe('ManuallySeparateNPU');
    expect(resolveFaultLevel(rec('0000001D', 'PreSeparateNPU', 'node', 'PreSeparateFault'), central).level).toBe('PreSeparateNPU');
    expect(resolveFaultLevel(rec('[0x1,2,na,na]', 'SubHealthFault', 'switch', 'SubHealthFault'), central).level).toBe('SubHealthFault');
  });

  it('re-levels known switch codes from SwitchFaultCode.json', () => {
    expect(resolveFaultLevel(rec('[0x00f103b0,155904,na,na]', 'NotHandleFault', 'switch', 'NotHandle'), central)).toMatchObject({ level: 'SeparateNPU', reasons: [{ rule: 'SwitchFaultCode.json' }] });
  });

  it('precedence: ManuallySeparateNPU > SeparateNPU > PreSeparateNPU > RestartNPU > FreeRestartNPU > RestartBusiness > RestartRequest > SubHealthFault > NotHandleFault', () => {
    const order: NpuFaultLevel[] = ['ManuallySeparateNPU', 'SeparateNPU', 'PreSeparateNPU', 'RestartNPU', 'FreeRestartNPU', 'RestartBusiness', 'RestartRequest', 'SubHealthFault', 'NotHandleFault'];
    for (let i = 0; i < order.length; i++) {
      const items = order.slice(i).reverse().map((level) => ({ level, reasons: [reason('reported', level)] }));
      expect(mostSeriousLevel(items).level).toBe(order[i]);
    }
    expect(mostSeriousLevel([]).level).toBe('NormalNPU');
    expect(isNormalLevel('SubHealthFault') && isNormalLevel('NormalNetwork') && !isNormalLevel('PreSeparateNPU')).toBe(true);
  });
});

describe('device verdicts', () => {
  it('combines faults, escalations and manual separation; the winner gives the chain', () => {
    const link = resolveFaultLevel(rec('81078603', 'NotHandleFault', 'network'), central);
    const v = deviceVerdicts(
      [link, resolveFaultLevel({ ...rec('80C98008', 'RestartRequest'), device: 'Ascend910-4' }, central)],
      [{ node: 'n1', device: 'Ascend910-3', code: '81078603', level: 'PreSeparateNPU', rule: 'FaultDuration', sinceMs: 1, reasons: [reason('FaultDuration', 'held', { level: 'PreSeparateNPU' })] }],
      [{ node: 'n1', device: 'Ascend910-4', codes: ['8C084E00'], reasons: [reason('manual-separation', 'x', { level: 'ManuallySeparateNPU' })] }],
    );
    expect(v.map((d) => [d.device, d.level, d.codes.join(','), d.reasons.at(-1)?.rule])).toEqual([
      ['Ascend910-3', 'PreSeparateNPU', '81078603', 'FaultDuration'],
      ['Ascend910-4', 'ManuallySeparateNPU', '80C98008,8C084E00', 'manual-separation'],
    ]);
  });
});
