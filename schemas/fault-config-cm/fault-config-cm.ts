/**
 * `kube-system/mindx-dl-fault-config` (docs/formats.md#mindx-dl-fault-config): the user-editable override of the device
 * plugin's fault configuration. Each data key is optional; a missing key means "use the built-in
 * file", a missing ConfigMap means "use the built-in files". Its presence is also what makes the
 * controller re-level codes centrally (policy/faults/fault-level.ts).
 */
import schema from './fault-config-cm.schema.json' with { type: 'json' };
import { buildFaultCodeTable, parseFaultCode, type FaultCodeConfig, type FaultCodeTable } from '../fault-code/fault-code.ts';
import {
  parseFaultCustomization,
  type FaultCustomization,
  type FaultCustomizationResult,
} from '../fault-customization/fault-customization.ts';
import type { Parsed } from '../parsed.ts';
import { buildSwitchFaultCodeTable, parseSwitchFaultCode, type SwitchFaultCodeConfig, type SwitchFaultCodeParse } from './switch-fault-code.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';

export const FAULT_CONFIG_CM_NAMESPACE = 'kube-system';
export const FAULT_CONFIG_CM_NAME = 'mindx-dl-fault-config';
export const FAULT_CONFIG_KEYS = {
  faultCode: 'faultCode.json',
  faultCustomization: 'faultCustomization.json',
  switchFaultCode: 'SwitchFaultCode.json',
  pollInterval: 'PollInterval',
} as const;
/** PollInterval in seconds: how often the device plugin re-reads the ConfigMap. */
export const POLL_INTERVAL_RANGE = { min: 30, max: 3600, def: 300 } as const;

/** The ConfigMap's data schema (documentation; every key optional, all values strings). */
export const FAULT_CONFIG_CM_SCHEMA: unknown = schema;

/** Each key's parse result; undefined = key absent (built-in file applies). */
export interface FaultConfigCm {
  readonly faultCode?: Parsed<FaultCodeConfig>;
  readonly faultCustomization?: FaultCustomizationResult;
  readonly switchFaultCode?: Parsed<SwitchFaultCodeParse>;
  readonly pollIntervalSec: number;
  readonly warnings: readonly string[];
}

/** Parses the ConfigMap's `data`. Never throws; per-key failures are in the per-key results. */
export function parseFaultConfigCm(data: Readonly<Record<string, string>> | undefined): FaultConfigCm {
  const d = data ?? {};
  const warnings: string[] = [];
  const text = (k: string): string | undefined => (Object.hasOwn(d, k) && typeof d[k] === 'string' ? d[k] : undefined);
  const fc = text(FAULT_CONFIG_KEYS.faultCode);
  const cus = text(FAULT_CONFIG_KEYS.faultCustomization);
  const sw = text(FAULT_CONFIG_KEYS.switchFaultCode);
  const poll = text(FAULT_CONFIG_KEYS.pollInterval);
  let pollIntervalSec: number = POLL_INTERVAL_RANGE.def;
  if (poll !== undefined) {
    const n = /^\s*\d+\s*$/.test(poll) ? Number(poll) : Number.NaN;
    if (n >= POLL_INTERVAL_RANGE.min && n <= POLL_INTERVAL_RANGE.max) pollIntervalSec = n;
    else warnings.push(`PollInterval ${JSON.stringify(poll)} outside ${POLL_INTERVAL_RANGE.min}-${POLL_INTERVAL_RANGE.max}; default ${POLL_INTERVAL_RANGE.def} used`);
  }
  const out: { -readonly [K in keyof FaultConfigCm]: FaultConfigCm[K] } = { pollIntervalSec, warnings };
  if (fc !== undefined) out.faultCode = parseFaultCode(fc);
  if (cus !== undefined) out.faultCustomization = parseFaultCustomization(cus);
  if (sw !== undefined) out.switchFaultCode = parseSwitchFaultCode(sw);
  return out;
}

/** What the rest of the controller uses: the effective configuration and whether it is central. */
export interface EffectiveFaultConfig {
  /** True when mindx-dl-fault-config exists: codes are re-levelled from `faultCodes`. */
  readonly central: boolean;
  readonly faultCode: FaultCodeConfig;
  readonly faultCodeTable: FaultCodeTable;
  readonly switchCodeTable: ReadonlyMap<string, NpuFaultLevel>;
  readonly customization: FaultCustomization;
  readonly warnings: readonly string[];
}

export interface FaultConfigFallback {
  readonly faultCode: FaultCodeConfig;
  readonly customization: FaultCustomization;
  readonly switchFaultCode: SwitchFaultCodeConfig;
}

/**
 * Combines the parsed ConfigMap (undefined = no ConfigMap) with fallbacks: the built-in files, or the
 * controller's last good values. A key that is absent or rejected uses its fallback.
 */
export function effectiveFaultConfig(cm: FaultConfigCm | undefined, fallback: FaultConfigFallback): EffectiveFaultConfig {
  const warnings: string[] = [...(cm?.warnings ?? [])];
  let faultCode = fallback.faultCode;
  if (cm?.faultCode?.ok === true) faultCode = cm.faultCode.value;
  else if (cm?.faultCode?.ok === false) warnings.push(`${cm.faultCode.reason}; previous faultCode.json kept`);
  let switchFaultCode = fallback.switchFaultCode;
  if (cm?.switchFaultCode?.ok === true) {
    switchFaultCode = cm.switchFaultCode.value.config;
    warnings.push(...cm.switchFaultCode.value.warnings);
  } else if (cm?.switchFaultCode?.ok === false) warnings.push(`${cm.switchFaultCode.reason}; previous SwitchFaultCode.json kept`);
  const customization = cm?.faultCustomization?.config ?? fallback.customization;
  warnings.push(...(cm?.faultCustomization?.warnings ?? []));
  return {
    central: cm !== undefined,
    faultCode,
    faultCodeTable: buildFaultCodeTable(faultCode),
    switchCodeTable: buildSwitchFaultCodeTable(switchFaultCode),
    customization,
    warnings,
  };
}
