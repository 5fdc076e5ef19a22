import { PolicyConfigTracker } from './fault-policy-config.ts';
import { DEFAULT_FAULT_CUSTOMIZATION, encodeFaultCustomization } from '../schemas/fault-customization/fault-customization.ts';
import { DEFAULT_MANUAL_SEPARATE_POLICY, MANUAL_SEPARATE_POLICY_OFF } from '../schemas/manual-separate-policy/manual-separate-policy.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

let rv = 0;
const faultCm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'mindx-dl-fault-config', namespace: 'kube-system', uid: 'u1', resourceVersion: String(++rv) }, data });
const clusterdCm = (text: string): ConfigMap => ({ metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' }, data: { 'manually_separate_policy.conf': text } });

describe('fault policy configuration', () => {
  it('is not central without mindx-dl-fault-config and central while it exists', () => {
    const t = new PolicyConfigTracker();
    expect(t.updateFaultConfig(undefined)).toMatchObject({ levelsChanged: false, customizationChanged: false });
    expect(t.current.tables).toBeUndefined();
    expect(t.updateFaultConfig(faultCm({})).levelsChanged).toBe(true);
    expect(t.current.fault.central).toBe(true);
    expect(t.current.tables?.chip.get('80E18402')).toBe('SeparateNPU');
    expect(t.updateFaultConfig(undefined).levelsChanged).toBe(true);
    expect(t.current.tables).toBeUndefined();
  });

  it('ignores an out-of-range faultCustomization entry with a warning; the defaults apply', () => {
    const t = new PolicyConfigTracker();
    t.updateFaultConfig(undefined);
    const text = encodeFaultCustomization({
      ...DEFAULT_FAULT_CUSTOMIZATION,
      GraceTolerance: { ...DEFAULT_FAULT_CUSTOMIZATION.GraceTolerance, WaitProcessReadCMTime: 999 },
      FaultFrequency: [{ EventId: ['80E18005'], TimeWindow: 30, Times: 1, FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 60 }, ...DEFAULT_FAULT_CUSTOMIZATION.FaultFrequency],
    });
    const u = t.updateFaultConfig(faultCm({ 'faultCustomization.json': text }));
    expect(u.warnings).toEqual(expect.arrayContaining([
      expect.stringMatching(/^FaultFrequency\[0\] ignored: TimeWindow 30 outside 60-864000/),
      expect.stringMatching(/^GraceTolerance.WaitProcessReadCMTime=999 outside 5-90; default 30 used/),
    ]));
    expect(t.current.fault.customization).toEqual(DEFAULT_FAULT_CUSTOMIZATION);
    expect(u.customizationChanged).toBe(false);
  });

  it('keeps the last good faultCode.json when a new one is rejected', () => {
    const t = new PolicyConfigTracker();
    t.updateFaultConfig(faultCm({ 'faultCode.json': '{"SeparateNPUCodes":["80E21007"]}' }));
    expect(t.current.tables?.chip.get('80E21007')).toBe('SeparateNPU');
    const u = t.updateFaultConfig(faultCm({ 'faultCode.json': '{"SeparateNPUCodes":' }));
    expect(u.levelsChanged).toBe(false);
    expect(u.warnings.join()).toMatch(/previous faultCode.json kept/);
    expect(t.current.tables?.chip.get('80E21007')).toBe('SeparateNPU');
  });

  it('manual separation: absent = shipped default, invalid at start = off, invalid later = last good', () => {
    const t = new PolicyConfigTracker();
    t.updateClusterdConfig(undefined);
    expect(t.current.manual).toEqual(DEFAULT_MANUAL_SEPARATE_POLICY);
    const bad = new PolicyConfigTracker();
    expect(bad.updateClusterdConfig(clusterdCm('separate: {fault_threshold: 99}')).warnings[0]).toMatch(/outside 1-50.*manual separation off/);
    expect(bad.current.manual).toEqual(MANUAL_SEPARATE_POLICY_OFF);
    const u = t.updateClusterdConfig(clusterdCm('enabled: true\nseparate: {fault_threshold: 2}'));
    expect(u.manualChanged).toBe(true);
    expect(t.current.manual.separate.fault_threshold).toBe(2);
    expect(t.updateClusterdConfig(clusterdCm('enabled: maybe')).manualChanged).toBe(false);
    expect(t.current.manual.separate.fault_threshold).toBe(2);
  });
});
