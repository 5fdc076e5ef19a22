/**
 * A node's last published cluster-info-device entry turned back into device-info data (CheckCode
 * computed): the fallback input for a node whose device-info is still invalid at start and whose
 * persisted last good copy is damaged (controllers/device-faults.controller.ts restoreLastGood).
 * It is the view after policy (escalated levels, public faults merged in), so it can hold more than
 * the device plugin reported, never less: a fault is kept rather than lost, until the device plugin
 * writes a valid device-info again.
 */
import { DEVICE_INFO_DESCRIPTION, DEVICE_INFO_KEYS, deviceInfoCheckCode, encodeDeviceInfoCfg, type DeviceInfo } from '../device-info/device-info.ts';
import type { DeviceInfoEntry } from './cluster-info.ts';

export function deviceInfoDataOfPublished(e: DeviceInfoEntry): Record<string, string> {
  const info: DeviceInfo = { DeviceList: { ...e.DeviceList }, UpdateTime: e.UpdateTime };
  return {
    [DEVICE_INFO_KEYS.deviceInfo]: encodeDeviceInfoCfg({
      DeviceInfo: info, SuperPodID: e.SuperPodID, ServerIndex: e.ServerIndex, CheckCode: deviceInfoCheckCode(info),
      ...(e.RackID === 0 ? {} : { RackID: e.RackID }), // Go's omitempty pointer: 0 is how an absent one is published
    }),
    [DEVICE_INFO_KEYS.manuallySeparateNpu]: '',
    [DEVICE_INFO_KEYS.description]: DEVICE_INFO_DESCRIPTION,
  };
}
