/**
 * SwitchInfoCfg quarantine (bad input refused alone) and the switch entry of cluster-info-switch-N as
 * ClusterD writes it: a malformed SwitchInfoCfg is refused alone, counted with its
 * reason, and the node's last good switch state (records and entry) stays; the rest of the
 * device-info is taken. Every device-info that carries the key has an entry, the empty default too.
 */
import { FaultStore } from './fault-store.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { switchInfoCmName, ZERO_SWITCH_INFO, type SwitchFaultInfo } from '../schemas/device-info/switch-info.ts';
import { encodeClusterInfo } from '../schemas/cluster-info/cluster-info.ts';
import { renderClusterInfo } from '../reconcilers/cluster-info.reconciler.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

const T0 = 1_780_000_000_000;
const SEP = '[0x00f103b0,155904,na,na]';
const ev = (port: number): string =>
  JSON.stringify({ EventType: 11, AssembledFaultCode: SEP, PeerPortDevice: 1, PeerPortId: 3, SwitchChipId: 0, SwitchPortId: port, Severity: 2, Assertion: 1, AlarmRaisedTime: T0 });
const SEPARATE: SwitchFaultInfo = {
  FaultCode: [ev(7)], FaultLevel: 'Separate', UpdateTime: T0 / 1000, NodeStatus: 'UnHealthy',
  FaultTimeAndLevelMap: { [`${SEP}_0_7`]: { fault_time: T0, fault_level: 'Separate' } },
};
const cm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: deviceInfoCmName('n1'), namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
const deviceInfo = (switchInfo: SwitchFaultInfo | undefined, unhealthy: string[] = []): Record<string, string> => encodeDeviceInfoData({
  available: ['Ascend910-0', 'Ascend910-1'].filter((c) => !unhealthy.includes(c)), unhealthy, updateTimeS: T0 / 1000,
  faults: unhealthy.map((c) => makeDeviceFault('CardUnhealthy', c, [{ code: '80E18402', level: 'SeparateNPU', timeMs: T0 }])),
  ...(switchInfo === undefined ? {} : { switchInfo }),
});
const switchText = (store: FaultStore): string => encodeClusterInfo(renderClusterInfo(store, (n) => store.records(n), T0).switch);

describe('SwitchInfoCfg quarantine', () => {
  it('keeps the last good switch fault when SwitchInfoCfg turns malformed, takes the rest, and says why', () => {
    const store = new FaultStore();
    expect(store.applyDeviceInfo(cm(deviceInfo(SEPARATE)), T0)).toBeUndefined();
    const before = switchText(store);
    expect(store.records('n1').filter((r) => r.source === 'switch')).toEqual([expect.objectContaining({ code: SEP, level: 'SeparateNPU' })]);

    const bad = { ...deviceInfo(SEPARATE, ['Ascend910-1']), SwitchInfoCfg: '{"FaultCode":[' };
    expect(store.applyDeviceInfo(cm(bad), T0 + 1000)).toBeUndefined();
    expect(store.drainPartial()).toEqual([expect.objectContaining({ format: 'device-info', kind: 'malformed_json', kept: expect.stringMatching(/last good SwitchInfoCfg/), reason: expect.stringMatching(/^SwitchInfoCfg: malformed JSON/) })]);
    expect(store.records('n1').filter((r) => r.source === 'switch')).toEqual([expect.objectContaining({ code: SEP, level: 'SeparateNPU', firstSeenMs: T0 })]);
    expect(store.records('n1').filter((r) => r.source === 'npu').map((r) => r.device)).toEqual(['Ascend910-1']);
    expect(switchText(store)).toBe(before);

    // Out of range, wrong type: the same, each with its reason.
    store.applyDeviceInfo(cm({ ...bad, SwitchInfoCfg: JSON.stringify({ ...SEPARATE, UpdateTime: 1e21 }) }), T0 + 2000);
    store.applyDeviceInfo(cm({ ...bad, SwitchInfoCfg: JSON.stringify({ ...SEPARATE, FaultLevel: 7 }) }), T0 + 3000);
    expect(store.drainPartial().map((p) => p.kind)).toEqual(['out_of_range', 'schema']);
    expect(switchText(store)).toBe(before);

    // A good one replaces it.
    store.applyDeviceInfo(cm(deviceInfo(ZERO_SWITCH_INFO)), T0 + 4000);
    expect(store.drainPartial()).toEqual([]);
    expect(store.records('n1').filter((r) => r.source === 'switch')).toEqual([]);
  });

  it('a malformed SwitchInfoCfg on a node without a good one yet: counted, no switch state, the device faults taken', () => {
    const store = new FaultStore();
    store.applyDeviceInfo(cm({ ...deviceInfo(undefined, ['Ascend910-0']), SwitchInfoCfg: 'null' }), T0);
    expect(store.drainPartial()).toEqual([expect.objectContaining({ kind: 'schema', kept: expect.stringMatching(/no switch state/) })]);
    expect(store.records('n1').map((r) => r.device)).toEqual(['Ascend910-0']);
    expect(switchText(store)).toBe('');
  });

  it('a device-info without the key keeps the switch state it had (ClusterD only handles the key when present)', () => {
    const store = new FaultStore();
    store.applyDeviceInfo(cm(deviceInfo(SEPARATE)), T0);
    const before = switchText(store);
    store.applyDeviceInfo(cm(deviceInfo(undefined)), T0 + 1000);
    expect(switchText(store)).toBe(before);
  });
});

describe('cluster-info-switch entry (ClusterD getReportSwitchInfo)', () => {
  it('writes the empty default of a device-info that carries SwitchInfoCfg, FaultCode [] and map null, CmName last', () => {
    const store = new FaultStore();
    store.applyDeviceInfo(cm(deviceInfo(ZERO_SWITCH_INFO)), T0);
    expect(switchText(store)).toBe(`{"${switchInfoCmName('n1')}":{"FaultCode":[],"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null,"CmName":"${switchInfoCmName('n1')}"}}`);
  });

  it('writes no entry for a device-info without SwitchInfoCfg', () => {
    const store = new FaultStore();
    store.applyDeviceInfo(cm(deviceInfo(undefined)), T0);
    expect(switchText(store)).toBe('');
  });
});
