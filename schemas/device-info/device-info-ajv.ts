/** The device-info JSON Schema, compiled once (formats.md 1.1). */
import { Ajv, type ValidateFunction } from 'ajv';
import schema from './device-info.schema.json' with { type: 'json' };
import type { DeviceFault } from './device-fault.ts';
import type { DeviceInfoCfg, UpgradeReason } from './device-info.ts';
import type { SwitchFaultEvent, SwitchFaultInfo } from './switch-info.ts';

const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
ajv.addSchema(schema);
const def = <T>(name: string): ValidateFunction<T> => {
  const v = ajv.getSchema<T>(`${schema.$id}#/$defs/${name}`);
  if (v === undefined) throw new Error(`device-info schema has no $defs/${name}`);
  return v;
};

export const validateDeviceFaultList = def<DeviceFault[]>('DeviceFaultList');
export const validateDeviceInfoCfg = def<DeviceInfoCfg>('DeviceInfoCfg');
export const validateSwitchFaultInfo = def<SwitchFaultInfo>('SwitchFaultInfo');
export const validateSwitchFaultEvent = def<SwitchFaultEvent>('SwitchFaultEvent');
export const validateUpgradeFaultReason = def<Record<string, UpgradeReason[] | null> | null>('UpgradeFaultReason');
