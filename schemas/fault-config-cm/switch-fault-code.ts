/**
 * `SwitchFaultCode.json` (docs/formats.md#switch-fault-code-json, A3 only): assembled UnifiedBus switch codes by level.
 * Entries look like `[0x00f103b0,155904,na,na]` (at most 50 characters, 4 comma-separated parts in
 * brackets). As in the device plugin, a malformed entry is ignored (with a warning), `ResetFaultCodes`
 * count as Separate, and a wrongly typed list rejects the file.
 */
import { ok, parseJson, rejected, type Parsed } from '../parsed.ts';
import { severityRank, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';

/** File key -> switch level (switch vocabulary) and the NPU level it stands for. */
export const SWITCH_FAULT_CODE_KEYS = {
  NotHandleFaultCodes: { switchLevel: 'NotHandle', npuLevel: 'NotHandleFault' },
  SubHealthFaultCodes: { switchLevel: 'SubHealthFault', npuLevel: 'SubHealthFault' },
  RestartRequestFaultCodes: { switchLevel: 'RestartRequest', npuLevel: 'RestartRequest' },
  PreSeparateFaultCodes: { switchLevel: 'PreSeparate', npuLevel: 'PreSeparateNPU' },
  ResetFaultCodes: { switchLevel: 'Separate', npuLevel: 'SeparateNPU' },
  SeparateFaultCodes: { switchLevel: 'Separate', npuLevel: 'SeparateNPU' },
} as const satisfies Record<string, { switchLevel: string; npuLevel: NpuFaultLevel }>;

export type SwitchFaultCodeKey = keyof typeof SWITCH_FAULT_CODE_KEYS;
export type SwitchFaultCodeConfig = { readonly [K in SwitchFaultCodeKey]: readonly string[] };
export interface SwitchFaultCodeParse {
  readonly config: SwitchFaultCodeConfig;
  readonly warnings: readonly string[];
}

export const MAX_SWITCH_FAULT_CODE_LENGTH = 50;

/** `[a,b,c,d]`, at most 50 characters. */
export const isValidSwitchFaultCode = (code: string): boolean =>
  code.length <= MAX_SWITCH_FAULT_CODE_LENGTH && code.startsWith('[') && code.endsWith(']') && code.split(',').length === 4;

export function parseSwitchFaultCode(text: string): Parsed<SwitchFaultCodeParse> {
  const json = parseJson('SwitchFaultCode.json', text);
  if (!json.ok) return json;
  const raw = json.value;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return rejected('SwitchFaultCode.json: not a JSON object');
  const src = raw as Record<string, unknown>;
  const warnings: string[] = [];
  const out: Record<string, string[]> = {};
  for (const key of Object.keys(SWITCH_FAULT_CODE_KEYS)) {
    const v = src[key];
    if (v === undefined || v === null) {
      out[key] = [];
      continue;
    }
    if (!Array.isArray(v) || v.some((c) => typeof c !== 'string')) return rejected(`SwitchFaultCode.json: ${key} must be an array of strings`);
    out[key] = (v as string[]).filter((c) => {
      if (isValidSwitchFaultCode(c)) return true;
      warnings.push(`SwitchFaultCode.json: ${key} entry ${JSON.stringify(c)} is not like [0x00f1ff09,155914,cpu,na]; ignored`);
      return false;
    });
  }
  return ok({ config: out as unknown as SwitchFaultCodeConfig, warnings });
}

/** Assembled code (case-insensitive, stored upper-case) -> NPU level; duplicates keep the most serious. */
export function buildSwitchFaultCodeTable(config: SwitchFaultCodeConfig): ReadonlyMap<string, NpuFaultLevel> {
  const table = new Map<string, NpuFaultLevel>();
  for (const [key, { npuLevel }] of Object.entries(SWITCH_FAULT_CODE_KEYS) as Array<[SwitchFaultCodeKey, { npuLevel: NpuFaultLevel }]>) {
    for (const code of config[key]) {
      const k = code.toUpperCase();
      const prev = table.get(k);
      if (prev === undefined || severityRank(npuLevel) > severityRank(prev)) table.set(k, npuLevel);
    }
  }
  return table;
}

/**
 * The entries of the shipped SwitchFaultCode.json that the spec names (`component/ascend-device-plugin/build/SwitchFaultCode.json`).
 * The real file has 30 entries (12 NotHandle, 8 SubHealth, 1 RestartRequest, 9 Separate); the others
 * are not in the spec, so switch faults with unlisted codes keep the level the device plugin reported.
 */
export const DEFAULT_SWITCH_FAULT_CODE_CONFIG: SwitchFaultCodeConfig = {
  NotHandleFaultCodes: ['[0x08520003,na,L2,na]'],
  SubHealthFaultCodes: [],
  RestartRequestFaultCodes: [],
  PreSeparateFaultCodes: [],
  ResetFaultCodes: [],
  SeparateFaultCodes: ['[0x00f103b0,155904,na,na]'],
};
