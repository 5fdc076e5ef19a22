import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { parseDeviceInfoData } from '../../schemas/device-info/device-info.ts';
import { splitDeviceFaults } from '../../schemas/device-info/device-info-records.ts';
import { changeSignature } from './device-plugin.ts';
import {
  addChipCode, chipLists, chipName, deviceInfoInput, newNodeState, nodeStateFromDeviceInfo, releaseManually, removeChipCodes, separateManually, setRecovering,
} from './npu-state.ts';
import { addSwitchFault, removeSwitchFaults } from './switch-state.ts';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const encode = (s: ReturnType<typeof newNodeState>, nowMs = NOW): Record<string, string> => encodeDeviceInfoData(deviceInfoInput(s, Math.floor(nowMs / 1000)));
const parsed = (data: Record<string, string>) => {
  const p = parseDeviceInfoData(data, NOW + 1000);
  if (!p.ok) throw new Error(p.reason);
  return p.value;
};

describe('simulated device plugin state', () => {
  it('writes a healthy node as 8 available chips, "[]" faults, zero switch struct, and a valid CheckCode', () => {
    const data = encode(newNodeState({ name: 'n1' }));
    expect(Object.keys(data)).toEqual(['DeviceInfoCfg', 'SwitchInfoCfg', 'ManuallySeparateNPU', 'UpgradeFaultReason', 'Description']);
    expect(data.SwitchInfoCfg).toBe('{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}');
    const d = parsed(data);
    expect(d.lists.available).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `Ascend910-${i}`));
    expect(d.lists.faults).toEqual([]);
    expect(d.cfg.DeviceInfo.DeviceList['huawei.com/Ascend910-Fault']).toBe('[]');
    expect(d.cfg.DeviceInfo.UpdateTime).toBe(Math.floor(NOW / 1000));
  });

  it('removes a chip with a SeparateNPU code from <P> into -Unhealthy; NotHandleFault and SubHealthFault keep it', () => {
    const s = newNodeState({ name: 'n1' });
    addChipCode(s, 'Ascend910-3', 'card', '80E18402', 'SeparateNPU', NOW);
    addChipCode(s, 'Ascend910-3', 'card', '80e18401', 'NotHandleFault', NOW);
    addChipCode(s, 'Ascend910-5', 'card', '8C2FA001', 'SubHealthFault', NOW);
    const d = parsed(encode(s));
    expect(d.lists.unhealthy).toEqual(['Ascend910-3']);
    expect(d.lists.available).not.toContain('Ascend910-3');
    expect(d.lists.available).toContain('Ascend910-5');
    const f3 = d.lists.faults.find((f) => f.npu_name === 'Ascend910-3')!;
    expect(f3).toMatchObject({ fault_type: 'CardUnhealthy', fault_level: 'SeparateNPU', fault_handling: 'SeparateNPU', fault_code: '80E18402,80E18401' });
    expect(f3.fault_time_and_level_map?.['80E18401']).toEqual({ fault_time: NOW, fault_level: 'NotHandleFault' });
  });

  it('lists a network fault above NotHandleFault in -NetworkUnhealthy but keeps the chip available', () => {
    const s = newNodeState({ name: 'n1' });
    addChipCode(s, 'Ascend910-6', 'network', '81078603', 'PreSeparateNPU', NOW);
    addChipCode(s, 'Ascend910-2', 'network', '81078603', 'NotHandleFault', NOW);
    const d = parsed(encode(s));
    expect(d.lists.networkUnhealthy).toEqual(['Ascend910-6']);
    expect(d.lists.available).toHaveLength(8);
    expect(d.lists.faults.map((f) => [f.npu_name, f.fault_type, f.fault_level])).toEqual([
      ['Ascend910-2', 'CardNetworkUnhealthy', 'NotHandleFault'],
      ['Ascend910-6', 'CardNetworkUnhealthy', 'PreSeparateNPU'],
    ]);
  });

  it('keeps a manually separated chip unhealthy after its code recovers, until released', () => {
    const s = newNodeState({ name: 'n1' });
    addChipCode(s, 'Ascend910-1', 'card', '80E18005', 'RestartNPU', NOW);
    separateManually(s, 'Ascend910-1', '80E18005', NOW);
    removeChipCodes(s, 'Ascend910-1', 'card', '80E18005');
    const data = encode(s);
    expect(data.ManuallySeparateNPU).toBe('Ascend910-1');
    const d = parsed(data);
    expect(d.lists.unhealthy).toEqual(['Ascend910-1']);
    expect(d.upgradeFaultReason['Ascend910-1']).toEqual([{ upgrade_time: NOW, fault_code: '80E18005', fault_level: 'ManuallySeparateNPU', upgrade_type: 'FaultFrequency' }]);
    expect(splitDeviceFaults('n1', d, NOW).map((r) => [r.device, r.code, r.level])).toEqual([['Ascend910-1', 'ManuallySeparateNPU', 'ManuallySeparateNPU']]);
    releaseManually(s, 'Ascend910-1');
    expect(chipLists(s).available).toHaveLength(8);
    expect(encode(s).UpgradeFaultReason).toBe('{}');
  });

  it('takes a recovering chip out of <P> into -Recovering', () => {
    const s = newNodeState({ name: 'n1', npus: 4 });
    setRecovering(s, 'Ascend910-0', true);
    expect(chipLists(s)).toEqual({ available: ['Ascend910-1', 'Ascend910-2', 'Ascend910-3'], unhealthy: [], networkUnhealthy: [], recovering: ['Ascend910-0'] });
  });

  it('reports switch faults in SwitchInfoCfg with the worst level and its NodeStatus', () => {
    const s = newNodeState({ name: 'n1' });
    addSwitchFault(s.switch, { code: '[0x08520003,na,L2,na]', level: 'NotHandle', switchPortId: 1, timeMs: NOW });
    addSwitchFault(s.switch, { code: '[0x00f103b0,155904,na,na]', level: 'Separate', switchPortId: 7, timeMs: NOW });
    const sw = parsed(encode(s)).switchInfo;
    expect(sw?.ok).toBe(true);
    if (sw?.ok !== true) return;
    expect(sw.value.info).toMatchObject({ FaultLevel: 'Separate', NodeStatus: 'UnHealthy', UpdateTime: Math.floor(NOW / 1000) });
    expect(Object.keys(sw.value.info.FaultTimeAndLevelMap ?? {})).toEqual(['[0x00f103b0,155904,na,na]_0_7', '[0x08520003,na,L2,na]_0_1']); // Go map: sorted
    removeSwitchFaults(s.switch, '[0x00f103b0,155904,na,na]');
    const after = parsed(encode(s)).switchInfo;
    expect(after?.ok === true && after.value.info).toMatchObject({ FaultLevel: 'NotHandle', NodeStatus: 'Healthy' });
  });

  it('rebuilds the same state from its own CM (what a fresh CLI process does)', () => {
    const s = newNodeState({ name: 'n1', switchMode: 'enabled' });
    addChipCode(s, 'Ascend910-3', 'card', '80E18402', 'SeparateNPU', NOW - 5);
    addChipCode(s, 'Ascend910-6', 'network', '81078603', 'NotHandleFault', NOW - 7);
    separateManually(s, 'Ascend910-7', 'AutofillFaultCode', NOW, 'FaultAutofill');
    setRecovering(s, 'Ascend910-0', true);
    addSwitchFault(s.switch, { code: '[0x00f103b0,155904,na,na]', level: 'Separate', timeMs: NOW });
    const data = encode(s);
    const again = nodeStateFromDeviceInfo('n1', 8, parsed(data));
    expect(encode(again)).toEqual(data);
  });

  it('change detection ignores fault_time, UpdateTime and CheckCode only', () => {
    const a = newNodeState({ name: 'n1' });
    const b = newNodeState({ name: 'n1' });
    addChipCode(a, 'Ascend910-3', 'card', '80E18402', 'SeparateNPU', NOW);
    addChipCode(b, 'Ascend910-3', 'card', '80E18402', 'SeparateNPU', NOW + 999);
    expect(changeSignature(encode(a, NOW))).toBe(changeSignature(encode(b, NOW + 60_000)));
    addChipCode(b, 'Ascend910-3', 'card', '80E18402', 'RestartNPU', NOW);
    expect(changeSignature(encode(a))).not.toBe(changeSignature(encode(b)));
  });

  it('names chips by physical id and refuses chips the node does not have', () => {
    const s = newNodeState({ name: 'n1', npus: 4 });
    expect(chipName(s, '2')).toBe('Ascend910-2');
    expect(chipName(s, 'Ascend910-3')).toBe('Ascend910-3');
    expect(() => chipName(s, 'Ascend910-4')).toThrow(/not a chip of node n1/);
  });
});
