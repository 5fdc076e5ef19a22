/**
 * renderClusterInfo with the scheduler-view filters wired as the Manager wires them (docs/rules.md#filter.custom, #filter.two-views): while a job's custom filter hides a fault, the chip the device plugin put in `-Unhealthy`
 * for it and the UB switch code are out of what Volcano reads; when the window ends they are back.
 */
import { FaultStore } from '../state/fault-store.ts';
import { FaultFiltersController } from '../controllers/fault-filters.controller.ts';
import { fakeSources, pod, podGroup } from '../test/support/fault-filters-fakes.ts';
import { ManualClock } from '../test/support/fault-policy-test-kit.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { switchInfoCmName } from '../schemas/device-info/switch-info.ts';
import { renderClusterInfo } from './cluster-info.reconciler.ts';

const P = 'huawei.com/Ascend910';
const SEP = '[0x00f103b0,155904,na,na]';
const SUB = '[0x08520003,na,L2,na]';
const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
const ev = (code: string, port: number, time: number): string =>
  JSON.stringify({ EventType: 11, AssembledFaultCode: code, PeerPortDevice: 1, PeerPortId: 3, SwitchChipId: 0, SwitchPortId: port, Severity: 2, Assertion: 1, AlarmRaisedTime: time });

function setup(annotations: Record<string, string>) {
  const clock = new ManualClock();
  const t0 = clock.now();
  const store = new FaultStore();
  const bad = ['Ascend910-1', 'Ascend910-7'];
  const faults = bad.map((c) => makeDeviceFault('CardUnhealthy', c, [{ code: '80E18402', level: 'SeparateNPU', timeMs: t0 }]));
  const data = encodeDeviceInfoData({
    available: chips.filter((c) => !bad.includes(c)), unhealthy: bad, faults, updateTimeS: Math.floor(t0 / 1000),
    switchInfo: {
      FaultCode: [ev(SEP, 7, t0), ev(SUB, 2, t0)], FaultLevel: 'Separate', UpdateTime: Math.floor(t0 / 1000), NodeStatus: 'UnHealthy',
      FaultTimeAndLevelMap: { [`${SEP}_0_7`]: { fault_time: t0, fault_level: 'Separate' }, [`${SUB}_0_2`]: { fault_time: t0, fault_level: 'SubHealthFault' } },
    },
  });
  expect(store.applyDeviceInfo({ metadata: { name: deviceInfoCmName('n1'), namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data }, t0)).toBeUndefined();
  const { pods, podGroups, sources } = fakeSources();
  const filters = new FaultFiltersController({ sources, log: silentLogger, clock, jobView: (n) => store.records(n), notify: () => undefined });
  filters.start();
  podGroups.put(podGroup('team-a', 'llama', 'u1', { annotations }));
  pods.put(pod('team-a', 'llama', 'u1', 0, 'n1', ['Ascend910-0', 'Ascend910-1']));
  const view = () => {
    const v = renderClusterInfo(store, (n) => filters.schedulerView(n, store.records(n), clock.now()), clock.now(), (n) => filters.withheld(n));
    const list = v.device[deviceInfoCmName('n1')]!.DeviceList;
    const codes = (JSON.parse(list[`${P}-Fault`]!) as Array<{ npu_name: string; fault_code: string }>).map((f) => `${f.npu_name}/${f.fault_code}`);
    return { unhealthy: list[`${P}-Unhealthy`], available: list[P], codes, sw: v.switch[switchInfoCmName('n1')] };
  };
  return { clock, filters, view };
}

describe('renderClusterInfo with the scheduler-view filters', () => {
  it('a custom-filtered fault is out of -Unhealthy, -Fault and the switch entry while hidden, and back when the window ends', () => {
    const s = setup({ 'huawei.com/schedule.filter.faultCode': '80E18402:5', 'huawei.com/schedule.filter.faultLevel': 'Separate:5' });
    s.clock.advance(1_000);
    const hidden = s.view();
    // Ascend910-7 is used by no job: its identical fault stays (so the filter, not the code, decides).
    expect(hidden.unhealthy).toBe('Ascend910-7');
    expect(hidden.codes).toEqual(['Ascend910-7/80E18402']);
    expect(hidden.available).toBe('Ascend910-0,Ascend910-2,Ascend910-3,Ascend910-4,Ascend910-5,Ascend910-6');
    expect(hidden.sw).toMatchObject({ FaultLevel: 'SubHealthFault', NodeStatus: 'SubHealthy' });
    expect(Object.keys(hidden.sw?.FaultTimeAndLevelMap ?? {})).toEqual([`${SUB}_0_2`]);

    s.clock.advance(5_000);
    const shown = s.view();
    expect(shown.unhealthy).toBe('Ascend910-1,Ascend910-7');
    expect(shown.codes).toEqual(['Ascend910-1/80E18402', 'Ascend910-7/80E18402']);
    expect(shown.sw).toMatchObject({ FaultLevel: 'Separate', NodeStatus: 'UnHealthy' });
    expect(s.filters.withheld('n1')).toEqual([]);
  });

  it('without a filter the device plugin lists pass unchanged', () => {
    const s = setup({});
    const v = s.view();
    expect(v.unhealthy).toBe('Ascend910-1,Ascend910-7');
    expect(v.sw).toMatchObject({ FaultLevel: 'Separate', NodeStatus: 'UnHealthy' });
    expect(v.sw?.FaultCode).toHaveLength(2);
  });
});
