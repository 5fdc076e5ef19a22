import { Ajv } from 'ajv';
import { DEFAULT_FAULT_CODE_CONFIG, encodeFaultCode } from '../fault-code/fault-code.ts';
import { DEFAULT_FAULT_CUSTOMIZATION } from '../fault-customization/fault-customization.ts';
import {
  FAULT_CONFIG_CM_NAME,
  FAULT_CONFIG_CM_NAMESPACE,
  FAULT_CONFIG_CM_SCHEMA,
  effectiveFaultConfig,
  parseFaultConfigCm,
} from './fault-config-cm.ts';
import { DEFAULT_SWITCH_FAULT_CODE_CONFIG, buildSwitchFaultCodeTable, parseSwitchFaultCode } from './switch-fault-code.ts';

const builtin = { faultCode: DEFAULT_FAULT_CODE_CONFIG, customization: DEFAULT_FAULT_CUSTOMIZATION, switchFaultCode: DEFAULT_SWITCH_FAULT_CODE_CONFIG };

describe('mindx-dl-fault-config', () => {
  it('names the ConfigMap as the device plugin does', () => {
    expect([FAULT_CONFIG_CM_NAMESPACE, FAULT_CONFIG_CM_NAME]).toEqual(['kube-system', 'mindx-dl-fault-config']);
  });

  it('the data schema accepts the documented keys', () => {
    const v = new Ajv({ strict: true }).compile(FAULT_CONFIG_CM_SCHEMA as object);
    expect(v({ PollInterval: '300', 'faultCode.json': '{}' })).toBe(true);
    expect(v({ PollInterval: 300 })).toBe(false);
  });

  it('no ConfigMap: built-ins, not central', () => {
    const e = effectiveFaultConfig(undefined, builtin);
    expect(e.central).toBe(false);
    expect(e.customization).toBe(DEFAULT_FAULT_CUSTOMIZATION);
    expect(e.faultCodeTable.chip.get('80E18005')).toBe('RestartNPU');
  });

  it('a ConfigMap with only PollInterval is central with built-in files', () => {
    const cm = parseFaultConfigCm({ PollInterval: '60' });
    expect(cm.pollIntervalSec).toBe(60);
    const e = effectiveFaultConfig(cm, builtin);
    expect(e.central).toBe(true);
    expect(e.faultCode).toBe(DEFAULT_FAULT_CODE_CONFIG);
  });

  it.each([['29'], ['3601'], ['abc'], ['']])('PollInterval %j falls back to 300', (v) => {
    const cm = parseFaultConfigCm({ PollInterval: v });
    expect(cm.pollIntervalSec).toBe(300);
    expect(cm.warnings).toHaveLength(1);
  });

  it('re-levels from a supplied faultCode.json (the docs example 80E21007)', () => {
    const fc = { ...DEFAULT_FAULT_CODE_CONFIG, NotHandleFaultCodes: DEFAULT_FAULT_CODE_CONFIG.NotHandleFaultCodes.filter((c) => c !== '80E21007'), SeparateNPUCodes: ['80E21007'] };
    const e = effectiveFaultConfig(parseFaultConfigCm({ 'faultCode.json': encodeFaultCode(fc) }), builtin);
    expect(e.faultCodeTable.chip.get('80E21007')).toBe('SeparateNPU');
  });

  it('a rejected key keeps the fallback and says so; other keys still apply', () => {
    const cm = parseFaultConfigCm({ 'faultCode.json': '{"RestartNPUCodes":5}', 'faultCustomization.json': '{"FaultFrequency":[]}' });
    expect(cm.faultCode?.ok).toBe(false);
    const e = effectiveFaultConfig(cm, builtin);
    expect(e.faultCode).toBe(DEFAULT_FAULT_CODE_CONFIG);
    expect(e.customization.FaultFrequency).toEqual([]);
    expect(e.warnings.join()).toMatch(/previous faultCode.json kept/);
  });

  it('SwitchFaultCode.json: bad entries are dropped with a warning, Reset counts as Separate', () => {
    const r = parseSwitchFaultCode('{"ResetFaultCodes":["[0x1,a,b,c]"],"NotHandleFaultCodes":["0x1","[0x08520003,na,L2,na]"]}');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.warnings).toHaveLength(1);
    const t = buildSwitchFaultCodeTable(r.value.config);
    expect(t.get('[0X1,A,B,C]')).toBe('SeparateNPU');
    expect(t.get('[0X08520003,NA,L2,NA]')).toBe('NotHandleFault');
    expect(parseSwitchFaultCode('{"SeparateFaultCodes":"x"}').ok).toBe(false);
    expect(parseSwitchFaultCode('[').ok).toBe(false);
  });
});
