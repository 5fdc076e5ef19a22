/**
 * The device-info JSON Schema's validators (docs/formats.md#device-info), generated at build time from its
 * `$defs` (tools/gen-validators.ts): no schema compiler at run time. Each parser module asks for its
 * validator by `$defs` name and gives it its own type (so this module imports none of theirs).
 */
import type { SchemaValidator } from '../parsed.ts';
import * as generated from './device-info.validators.gen.ts';

export type DeviceInfoDef = 'DeviceInfoCfg' | 'UpgradeFaultReason' | 'DeviceFaultList' | 'SwitchFaultInfo' | 'SwitchFaultEvent';

export const deviceInfoValidator = <T>(name: DeviceInfoDef): SchemaValidator<T> => generated[`validate${name}`] as SchemaValidator<T>;
