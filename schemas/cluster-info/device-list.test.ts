/**
 * Faults withheld by the scheduler-view filters leave the lists Volcano reads (docs/rules.md#filter.custom to #filter.recover-in-place,
 * docs/rules.md#filter.two-views, #levels.card-health DelFaultAndFix): the device plugin's `-Unhealthy` / `-NetworkUnhealthy` and the UB switch
 * entry.
 */
import type { FaultRecord, FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { parseSwitchInfo, type SwitchFaultInfo, type SwitchInfoView } from '../device-info/switch-info.ts';
import { mergeDeviceFaults, recomputeDeviceList, type DeviceListInput } from './device-list.ts';
import { switchEntryInfo, withholdSwitchFaults } from './switch-view.ts';

const P = 'huawei.com/Ascend910';
const rec = (device: string, code: string, level: NpuFaultLevel, source: FaultSource = 'npu'): FaultRecord =>
  ({ node: 'n1', device, source, code, level, reportedLevel: level, firstSeenMs: 1_700_000_000_000 });
const codes = (list: Record<string, string>, chip: string): string[] =>
  (JSON.parse(list[`${P}-Fault`]!) as Array<{ npu_name: string; fault_code: string }>).filter((f) => f.npu_name === chip).flatMap((f) => f.fault_code.split(','));

/** The device plugin's lists for chips 0-7 with `bad` unhealthy and `netBad` network-unhealthy. */
function render(visible: FaultRecord[], withheld: FaultRecord[], dp: { bad?: string[]; netBad?: string[]; manual?: string[] } = {}): Record<string, string> {
  const bad = dp.bad ?? [];
  const input: DeviceListInput = {
    available: Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`).filter((c) => !bad.includes(c)),
    unhealthy: bad, networkUnhealthy: dp.netBad ?? [],
    faults: mergeDeviceFaults(visible),
    withheld: mergeDeviceFaults(withheld),
    pinned: dp.manual ?? [],
  };
  return recomputeDeviceList(input);
}

describe('recomputeDeviceList with withheld faults (DelFaultAndFix)', () => {
  it('a chip whose only fault is hidden leaves -Unhealthy and -Fault; it is not put back into <P>', () => {
    const hidden = rec('Ascend910-3', '80E18402', 'SeparateNPU');
    const without = render([], [hidden], { bad: ['Ascend910-3'] });
    expect(without[`${P}-Unhealthy`]).toBe('');
    expect(codes(without, 'Ascend910-3')).toEqual([]);
    expect(without[P]!.split(',')).not.toContain('Ascend910-3'); // a job may be using it
    // the same input with the fault visible: the chip is unhealthy (the assertion above can fail)
    const shown = render([hidden], [], { bad: ['Ascend910-3'] });
    expect(shown[`${P}-Unhealthy`]).toBe('Ascend910-3');
    expect(codes(shown, 'Ascend910-3')).toEqual(['80E18402']);
  });

  it('a chip with one hidden and one visible SeparateNPU fault stays unhealthy, listing only the visible code', () => {
    const list = render([rec('Ascend910-3', '80E18401', 'SeparateNPU')], [rec('Ascend910-3', '80E18402', 'SeparateNPU')], { bad: ['Ascend910-3'] });
    expect(list[`${P}-Unhealthy`]).toBe('Ascend910-3');
    expect(codes(list, 'Ascend910-3')).toEqual(['80E18401']);
  });

  it('a visible non-normal fault of another card type keeps it (PublicFault); a visible normal one does not', () => {
    const hidden = rec('Ascend910-2', '80E18402', 'SeparateNPU');
    expect(render([rec('Ascend910-2', '220001001', 'SeparateNPU', 'public')], [hidden], { bad: ['Ascend910-2'] })[`${P}-Unhealthy`]).toBe('Ascend910-2');
    expect(render([rec('Ascend910-2', '80E18401', 'NotHandleFault')], [hidden], { bad: ['Ascend910-2'] })[`${P}-Unhealthy`]).toBe('');
  });

  it('network and card lists are released separately', () => {
    const netHidden = render([], [rec('Ascend910-5', '81078603', 'PreSeparateNPU', 'network')], { netBad: ['Ascend910-5'] });
    expect(netHidden[`${P}-NetworkUnhealthy`]).toBe('');
    const cardHidden = render([rec('Ascend910-5', '81078603', 'PreSeparateNPU', 'network')], [rec('Ascend910-5', '80E18402', 'SeparateNPU')], { bad: ['Ascend910-5'], netBad: ['Ascend910-5'] });
    expect(cardHidden[`${P}-Unhealthy`]).toBe('');
    expect(cardHidden[`${P}-NetworkUnhealthy`]).toBe('Ascend910-5');
  });

  it('a dropped or hidden fault of a normal level releases nothing: the device plugin had another reason', () => {
    expect(render([], [rec('Ascend910-1', '80C98009', 'SubHealthFault')], { bad: ['Ascend910-1'] })[`${P}-Unhealthy`]).toBe('Ascend910-1');
  });

  it('manual separation is untouched: the device plugin ManuallySeparateNPU chips and a withheld ManuallySeparateNPU stay unhealthy', () => {
    const pinned = render([], [rec('Ascend910-4', '80E18402', 'SeparateNPU')], { bad: ['Ascend910-4'], manual: ['Ascend910-4'] });
    expect(pinned[`${P}-Unhealthy`]).toBe('Ascend910-4');
    const manual = render([], [rec('Ascend910-6', 'ManuallySeparateNPU', 'ManuallySeparateNPU'), rec('Ascend910-6', '80E18005', 'RestartNPU')], { bad: ['Ascend910-6'] });
    expect(manual[`${P}-Unhealthy`]).toBe('Ascend910-6');
  });

  it('chips with nothing withheld are untouched', () => {
    const list = render([], [rec('Ascend910-3', '80E18402', 'SeparateNPU')], { bad: ['Ascend910-3', 'Ascend910-7'] });
    expect(list[`${P}-Unhealthy`]).toBe('Ascend910-7');
  });
});

const ev = (code: string, chip: number, port: number, time: number): string =>
  JSON.stringify({ EventType: 11, AssembledFaultCode: code, PeerPortDevice: 1, PeerPortId: 3, SwitchChipId: chip, SwitchPortId: port, Severity: 2, Assertion: 1, AlarmRaisedTime: time });
const SEP = '[0x00f103b0,155904,na,na]';
const SUB = '[0x08520003,na,L2,na]';

function switchView(extra: string[] = []): { info: SwitchFaultInfo; view: SwitchInfoView } {
  const text = JSON.stringify({
    FaultCode: [ev(SEP, 0, 7, 1000), ev(SUB, 1, 2, 2000), ...extra], FaultLevel: 'Separate', UpdateTime: 10, NodeStatus: 'UnHealthy',
    FaultTimeAndLevelMap: { [`${SEP}_0_7`]: { fault_time: 1000, fault_level: 'Separate' }, [`${SUB}_1_2`]: { fault_time: 2000, fault_level: 'SubHealthFault' } },
  });
  const p = parseSwitchInfo(text, 10_000);
  if (!p.ok) throw new Error(p.reason);
  return { info: switchEntryInfo(p.value), view: p.value };
}

describe('switchEntryInfo', () => {
  it('re-encodes every event in Go field order and never writes a null FaultCode (ClusterD getReportSwitchInfo)', () => {
    const p = parseSwitchInfo('{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}', 10_000);
    if (!p.ok) throw new Error(p.reason);
    expect(switchEntryInfo(p.value)).toEqual({ FaultCode: [], FaultLevel: '', UpdateTime: 0, NodeStatus: '', FaultTimeAndLevelMap: null });
    const reordered = '{"Assertion":1,"EventType":11,"AssembledFaultCode":"[0x1,na,na,na]","PeerPortDevice":1,"PeerPortId":3,"SwitchChipId":0,"SwitchPortId":7,"Severity":2,"AlarmRaisedTime":5,"Extra":true}';
    const q = parseSwitchInfo(JSON.stringify({ FaultCode: [reordered], FaultLevel: 'Separate', UpdateTime: 1, NodeStatus: 'UnHealthy', FaultTimeAndLevelMap: null }), 10_000);
    if (!q.ok) throw new Error(q.reason);
    expect(switchEntryInfo(q.value).FaultCode).toEqual(['{"EventType":11,"AssembledFaultCode":"[0x1,na,na,na]","PeerPortDevice":1,"PeerPortId":3,"SwitchChipId":0,"SwitchPortId":7,"Severity":2,"Assertion":1,"AlarmRaisedTime":5}']);
  });
});

describe('withholdSwitchFaults', () => {
  it('removes the hidden code and recomputes FaultLevel and NodeStatus from what remains', () => {
    const { info, view } = switchView();
    const out = withholdSwitchFaults(info, new Set([SEP]), view);
    expect(out.FaultCode).toEqual([info.FaultCode![1]]);
    expect(Object.keys(out.FaultTimeAndLevelMap ?? {})).toEqual([`${SUB}_1_2`]);
    expect(out).toMatchObject({ FaultLevel: 'SubHealthFault', NodeStatus: 'SubHealthy', UpdateTime: 10 });
  });

  it('with every code hidden the entry reads as ClusterD writes it: FaultLevel NotHandleFault, NodeStatus Healthy', () => {
    const { info, view } = switchView();
    expect(withholdSwitchFaults(info, new Set([SEP, SUB]), view)).toEqual({ FaultCode: [], FaultLevel: 'NotHandleFault', UpdateTime: 10, NodeStatus: 'Healthy', FaultTimeAndLevelMap: {} });
  });

  it('keeps an event that has no FaultTimeAndLevelMap entry (ClusterD reports it as is)', () => {
    const { info, view } = switchView([ev(SEP, 3, 3, 3000)]);
    const out = withholdSwitchFaults(info, new Set([SEP]), view);
    expect(out.FaultCode).toEqual([info.FaultCode![1], info.FaultCode![2]]);
    expect(out).toMatchObject({ FaultLevel: 'SubHealthFault', NodeStatus: 'SubHealthy' });
  });

  it('returns the entry itself when nothing it holds is withheld', () => {
    const { info, view } = switchView();
    expect(withholdSwitchFaults(info, new Set(['[0x1,na,na,na]']), view)).toBe(info);
  });
});
