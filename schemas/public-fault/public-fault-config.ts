/**
 * `publicFaultConfiguration.json` (ClusterD build file; overridden by
 * `/user1/mindx-dl/clusterd/publicCustomization.json`), docs/formats.md#clusterd-config-files: level per public code and the
 * allowed senders.
 */
import { mostSerious, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { ok, parseValidated, rejected, type Parsed } from '../parsed.ts';
import { validatePublicFaultConfiguration } from './public-fault-ajv.ts';

export const PUBLIC_FAULT_CONFIG_PATH = '/home/hwMindX/publicFaultConfiguration.json';
export const PUBLIC_FAULT_CUSTOMIZATION_PATH = '/user1/mindx-dl/clusterd/publicCustomization.json';

/** Config list key -> level it assigns. */
export const PUBLIC_CODE_LISTS = {
  NotHandleFaultCodes: 'NotHandleFault',
  SubHealthFaultCodes: 'SubHealthFault',
  SeparateNPUCodes: 'SeparateNPU',
  PreSeparateNPUCodes: 'PreSeparateNPU',
} as const satisfies Record<string, NpuFaultLevel>;
export type PublicCodeListKey = keyof typeof PUBLIC_CODE_LISTS;
export type PublicFaultLevel = (typeof PUBLIC_CODE_LISTS)[PublicCodeListKey];

export interface PublicFaultConfig {
  readonly publicFaultCode: Readonly<Partial<Record<PublicCodeListKey, readonly string[]>>>;
  readonly publicFaultResource: readonly string[];
}

/**
 * Defaults: the publicFaultConfiguration.json ClusterD ships (component/clusterd/build); all of its codes, not only the representative ones.
 */
export const DEFAULT_PUBLIC_FAULT_CONFIG: PublicFaultConfig = {
  publicFaultCode: {
    NotHandleFaultCodes: ['200001006', '200001010', '200001011', '200001012', '100001011'],
    SubHealthFaultCodes: ['010001001', '010001004', '310001005', '210001007', '210001008', '210001009', '110001010', '110001020', '110001021', '010001002'],
    SeparateNPUCodes: ['220001001', '220001002', '220001003', '220001004', '220001005', '220001006', '220001007', '120001001', '020001001', '020001004', '020001003', '120001002', '120001003'],
    PreSeparateNPUCodes: ['110001022', '110001023'],
  },
  publicFaultResource: ['CCAE', 'fd-online', 'pingmesh', 'Netmind', 'dpcStorage', 'dtfsStorage'],
};

/** Level of a public code: the most severe list it is in; undefined = unknown code (discarded). */
export function publicFaultLevel(cfg: PublicFaultConfig, code: string): PublicFaultLevel | undefined {
  const levels: PublicFaultLevel[] = [];
  for (const [key, level] of Object.entries(PUBLIC_CODE_LISTS) as Array<[PublicCodeListKey, PublicFaultLevel]>) {
    if (cfg.publicFaultCode[key]?.includes(code)) levels.push(level);
  }
  return mostSerious(levels);
}

const CODE_RE = /^[0-9]{9}$/;

/** Parses a publicFaultConfiguration.json / publicCustomization.json text. */
export function parsePublicFaultConfig(text: string): Parsed<PublicFaultConfig> {
  const where = 'publicFaultConfiguration';
  const json = parseValidated(where, text, validatePublicFaultConfiguration);
  if (!json.ok) return json;
  const raw = json.value;
  const codes: Partial<Record<PublicCodeListKey, readonly string[]>> = {};
  for (const key of Object.keys(PUBLIC_CODE_LISTS) as PublicCodeListKey[]) {
    const list = raw.publicFaultCode[key];
    if (list === undefined || list === null) continue;
    const bad = list.find((c) => !CODE_RE.test(c));
    if (bad !== undefined) return rejected(`${where}: ${key} has a code that is not 9 digits: ${JSON.stringify(bad)}`);
    codes[key] = [...list];
  }
  return ok({ publicFaultCode: codes, publicFaultResource: [...(raw.publicFaultResource ?? [])] });
}
