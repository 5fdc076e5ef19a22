import { deviceInfoDataOfPublished } from './published-device-info.ts';
import { parseDeviceInfoData } from '../device-info/device-info.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../device-info/device-info-encode.ts';
import { parseDeviceInfoCfg } from '../device-info/device-info.ts';

describe('a published cluster-info-device entry as device-info data', () => {
  it('parses and passes its CheckCode, with the faults and lists of the entry', () => {
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: 1_732_182_000_123 }]);
    const src = encodeDeviceInfoData({ available: ['Ascend910-0', 'Ascend910-1'], unhealthy: ['Ascend910-3'], faults: [fault], updateTimeS: 1_732_182_160 });
    const cfg = parseDeviceInfoCfg(src.DeviceInfoCfg!);
    if (!cfg.ok) throw new Error(cfg.reason);
    const entry = { DeviceList: cfg.value.DeviceInfo.DeviceList, UpdateTime: 1_732_182_160, CmName: 'mindx-dl-deviceinfo-n1', SuperPodID: -1, RackID: 0, ServerIndex: -1 };
    const data = deviceInfoDataOfPublished(entry);
    const parsed = parseDeviceInfoData(data, 1_732_182_200_000);
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(data.DeviceInfoCfg).toBe(src.DeviceInfoCfg);
    expect(parsed.value.cfg.DeviceInfo.DeviceList['huawei.com/Ascend910-Unhealthy']).toBe('Ascend910-3');
  });
});
