/**
 * `faultCode.json`: the device plugin's chip fault code -> level table (docs/formats.md#fault-code-json).
 * Top-level keys are arrays of upper-case hex codes; each key names the level its codes get.
 * A code listed under several keys takes the most serious level (A2301001 in the default file).
 */
import { validate as generated } from './fault-code.validators.gen.ts';
import { goJson } from '../go-json.ts';
import { ok, parseValidated, type Parsed, type SchemaValidator } from '../parsed.ts';
import { severityRank, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';

/** Chip lists, in the order the default file declares them, with the level each emits. */
export const FAULT_CODE_KEYS = {
  NotHandleFaultCodes: 'NotHandleFault',
  SubHealthFaultCodes: 'SubHealthFault',
  RestartRequestCodes: 'RestartRequest',
  RestartBusinessCodes: 'RestartBusiness',
  FreeRestartNPUCodes: 'FreeRestartNPU',
  RestartNPUCodes: 'RestartNPU',
  PreSeparateNPUCodes: 'PreSeparateNPU',
  SeparateNPUCodes: 'SeparateNPU',
} as const satisfies Record<string, NpuFaultLevel>;

/** Optional network (parameter-plane) lists; absent from the default file. */
export const FAULT_CODE_NETWORK_KEYS = {
  NotHandleFaultNetworkCodes: 'NotHandleFault',
  PreSeparateNPUNetworkCodes: 'PreSeparateNPU',
  SeparateNPUNetworkCodes: 'SeparateNPU',
  SubHealthFaultNetworkCodes: 'SubHealthFault',
} as const satisfies Record<string, NpuFaultLevel>;

export type FaultCodeChipKey = keyof typeof FAULT_CODE_KEYS;
export type FaultCodeNetworkKey = keyof typeof FAULT_CODE_NETWORK_KEYS;

/** Parsed faultCode.json. A chip key missing from the file is an empty list (Go nil slice). */
export type FaultCodeConfig = { readonly [K in FaultCodeChipKey]: readonly string[] } & {
  readonly [K in FaultCodeNetworkKey]?: readonly string[];
};

/** Parameter-plane codes: when placed in chip lists they are mirrored into the network lists. */
export const PARAMETER_PLANE_CODES: readonly string[] = ['81078603', '81078607', '110001024', '110000002'];

/** Lookup tables built from a FaultCodeConfig; keys are upper-case codes. */
export interface FaultCodeTable {
  readonly chip: ReadonlyMap<string, NpuFaultLevel>;
  readonly network: ReadonlyMap<string, NpuFaultLevel>;
}

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated as SchemaValidator<Record<string, unknown>>;

/** Parses faultCode.json text. Unknown keys are ignored; a wrong type or a non-hex code rejects the file. */
export function parseFaultCode(text: string): Parsed<FaultCodeConfig> {
  const p = parseValidated('faultCode.json', text, validate);
  if (!p.ok) return p;
  const raw = p.value;
  const list = (k: string): readonly string[] | undefined => {
    const v = raw[k];
    return Array.isArray(v) ? (v as string[]) : undefined;
  };
  const chip = Object.fromEntries(Object.keys(FAULT_CODE_KEYS).map((k) => [k, list(k) ?? []]));
  const network = Object.fromEntries(
    Object.keys(FAULT_CODE_NETWORK_KEYS).flatMap((k) => (list(k) === undefined ? [] : [[k, list(k)]])),
  );
  return ok({ ...chip, ...network } as FaultCodeConfig);
}

/** faultCode.json text (Go encoding, keys in declaration order, optional network lists only when present). */
export function encodeFaultCode(config: FaultCodeConfig): string {
  const out: Record<string, readonly string[]> = {};
  for (const k of Object.keys(FAULT_CODE_KEYS) as FaultCodeChipKey[]) out[k] = config[k];
  for (const k of Object.keys(FAULT_CODE_NETWORK_KEYS) as FaultCodeNetworkKey[]) {
    const v = config[k];
    if (v !== undefined) out[k] = v;
  }
  return goJson(out);
}

function put(map: Map<string, NpuFaultLevel>, code: string, level: NpuFaultLevel): void {
  const key = code.toUpperCase();
  const prev = map.get(key);
  if (prev === undefined || severityRank(level) > severityRank(prev)) map.set(key, level);
}

/** Levels a network (parameter-plane) code can take; a chip list with another level maps it to NotHandleFault. */
const NETWORK_LEVELS: readonly NpuFaultLevel[] = Object.values(FAULT_CODE_NETWORK_KEYS);

/**
 * Builds the code -> level lookup. Duplicates keep the most serious level. Parameter-plane codes in the
 * chip lists are mirrored into the network table; from a restart list they arrive as NotHandleFault,
 * since a network fault cannot be restarted.
 */
export function buildFaultCodeTable(config: FaultCodeConfig): FaultCodeTable {
  // Configs are read-only values: one table per config object (every controller start builds the
  // built-in one, a few hundred codes).
  const hit = tables.get(config);
  if (hit !== undefined) return hit;
  const table = buildTable(config);
  tables.set(config, table);
  return table;
}

const tables = new WeakMap<FaultCodeConfig, FaultCodeTable>();

function buildTable(config: FaultCodeConfig): FaultCodeTable {
  const chip = new Map<string, NpuFaultLevel>();
  const network = new Map<string, NpuFaultLevel>();
  for (const [k, level] of Object.entries(FAULT_CODE_KEYS) as Array<[FaultCodeChipKey, NpuFaultLevel]>) {
    for (const code of config[k]) {
      put(chip, code, level);
      if (PARAMETER_PLANE_CODES.includes(code.toUpperCase())) put(network, code, NETWORK_LEVELS.includes(level) ? level : 'NotHandleFault');
    }
  }
  for (const [k, level] of Object.entries(FAULT_CODE_NETWORK_KEYS) as Array<[FaultCodeNetworkKey, NpuFaultLevel]>) {
    for (const code of config[k] ?? []) put(network, code, level);
  }
  return { chip, network };
}

/**
 * The default table this project ships: every code the spec and the user's documents name, at the level
 * the shipped faultCode.json gives it (`component/ascend-device-plugin/build/faultCode.json`).
 * The real default file has 802 unique codes; the spec does not list them, so codes not here are
 * classified by the reported level/severity (policy/faults/fault-level.ts).
 */
export const DEFAULT_FAULT_CODE_CONFIG: FaultCodeConfig = {
  NotHandleFaultCodes: [
    '81078603', // RoCE link down: escalated only by faultCustomization.json (20 s -> PreSeparateNPU)
    '81078607', // UBoE port down
    '81B18603', // UB port down
    '8C1F8609', // relation trigger (SubHealth)
    '8C1F860B', // HCCL retry fault, relation trigger (Separate)
    '8C1F8608', // device CQE error, relation trigger
    '4C1F8608', // host CQE error, relation trigger
    '8C2FA009', // reset finished
    '80E21007', // example used by the docs for re-levelling
  ],
  SubHealthFaultCodes: ['110000002', '81A3880C', '8C2FA001', '80818C06'],
  RestartRequestCodes: ['80C98009', '80CB8009', '80C98008'],
  RestartBusinessCodes: ['80E01801', '8C204E00', 'A2301001', 'B4060011', 'B4060011'],
  FreeRestartNPUCodes: ['8C084E00'],
  RestartNPUCodes: ['40F84E00', '8C03A000', '80E18005', '80E18008', '80DE1801'],
  PreSeparateNPUCodes: ['110001024'],
  SeparateNPUCodes: ['80E18402', '80E3A201', '80818C05', 'A2301001'],
};

export const DEFAULT_FAULT_CODE_TABLE: FaultCodeTable = buildFaultCodeTable(DEFAULT_FAULT_CODE_CONFIG);
