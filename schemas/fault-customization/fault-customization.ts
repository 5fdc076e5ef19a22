/**
 * `faultCustomization.json`: the device plugin's escalation rules (docs/formats.md#fault-customization-json).
 * Parsing is lenient by section, as the device plugin is:
 * - GraceTolerance: each value missing, mistyped or out of range falls back to its own default;
 * - FaultFrequency / FaultDuration: a section whose shape is wrong (not an array, an entry with a
 *   wrongly typed field) falls back to the default section; an entry whose values are out of range is
 *   ignored; for each EventId only the first valid entry counts;
 * - 81078603 in FaultDuration accepts only NotHandleFault, PreSeparateNPU or SeparateNPU; any other
 *   handling becomes NotHandleFault.
 * `parseFaultCustomization` never throws; it returns the effective config and the warnings.
 * All times in the file are seconds.
 */
import schema from './fault-customization.schema.json' with { type: 'json' };
import { goJson } from '../go-json.ts';
import { parseJson } from '../parsed.ts';
import { NPU_LEVELS_BY_SEVERITY, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';

export interface GraceTolerance {
  readonly WaitProcessReadCMTime: number;
  readonly WaitDeviceResetTime: number;
  readonly WaitFaultSelfHealingTime: number;
}

export interface FaultFrequencyRule {
  /** Upper-case hex codes. After parsing, no code appears in two rules. */
  readonly EventId: readonly string[];
  readonly TimeWindow: number;
  readonly Times: number;
  readonly FaultHandling: NpuFaultLevel;
  /** Seconds; undefined = no automatic release (allowed only with ManuallySeparateNPU). */
  readonly ReleaseTimeWindow?: number;
}

export interface FaultDurationRule {
  readonly EventId: readonly string[];
  readonly FaultTimeout: number;
  readonly RecoverTimeout: number;
  readonly FaultHandling: NpuFaultLevel;
}

export interface FaultCustomization {
  readonly GraceTolerance: GraceTolerance;
  readonly FaultFrequency: readonly FaultFrequencyRule[];
  readonly FaultDuration: readonly FaultDurationRule[];
}

export interface FaultCustomizationResult {
  readonly config: FaultCustomization;
  readonly warnings: readonly string[];
}

/** The JSON Schema of a well-formed file (documentation and tests; parsing is hand-written to stay lenient). */
export const FAULT_CUSTOMIZATION_SCHEMA: unknown = schema;

export const LINK_DOWN_CODE = '81078603';
/** FaultDuration handlings 81078603 accepts; others become NotHandleFault. */
export const LINK_DOWN_DURATION_HANDLINGS: readonly NpuFaultLevel[] = ['NotHandleFault', 'PreSeparateNPU', 'SeparateNPU'];

/** Ranges in seconds (docs/formats.md#fault-customization-json, docs/rules.md#timing.node-agents). */
export const GRACE_TOLERANCE_RANGES = {
  WaitProcessReadCMTime: { min: 5, max: 90, def: 30 },
  WaitDeviceResetTime: { min: 60, max: 180, def: 150 },
  WaitFaultSelfHealingTime: { min: 1, max: 30, def: 15 },
} as const;
export const FREQUENCY_RANGES = {
  TimeWindow: { min: 60, max: 864_000 },
  Times: { min: 1, max: 100 },
  ReleaseTimeWindow: { min: 60, max: 2 ** 32 },
} as const;
export const DURATION_RANGES = {
  FaultTimeout: { min: 0, max: 600 },
  RecoverTimeout: { min: 0, max: 86_400 },
} as const;

const HBM_FREQUENCY_CODES: readonly string[] = [
  '80C98000', '80B78000', '80B58000', '80A18008', '80A38008', '80A58008', '80B98000', '80B98008', '80BB8000',
  '80BB8008', '80BD8000', '80BD8008', '80C78008', '80C98008', '80CB8008', '80CD8008', '80CF8008', '80D98008',
  '80DF8008', '80DE1801', '80E01801', '80E18008', '80E38008', '80E39200', '80E3A202', '80E3A203', '80E78000',
  '80E78008', '80F18000', '80F18008', '80F38008', '80F78008', '81318008', '81338008', '813B8008', '81478008',
  '81578008', '815F8008', '81938008', '81958008', '81978008',
];

/** The shipped faultCustomization.json (docs/formats.md#fault-customization-json). */
export const DEFAULT_FAULT_CUSTOMIZATION: FaultCustomization = {
  GraceTolerance: { WaitProcessReadCMTime: 30, WaitDeviceResetTime: 150, WaitFaultSelfHealingTime: 15 },
  FaultFrequency: [
    { EventId: HBM_FREQUENCY_CODES, TimeWindow: 86_400, Times: 2, FaultHandling: 'ManuallySeparateNPU' },
    { EventId: ['80E18005'], TimeWindow: 86_400, Times: 3, FaultHandling: 'ManuallySeparateNPU' },
    { EventId: [LINK_DOWN_CODE], TimeWindow: 86_400, Times: 5, FaultHandling: 'ManuallySeparateNPU', ReleaseTimeWindow: 172_800 },
  ],
  FaultDuration: [{ EventId: [LINK_DOWN_CODE], FaultTimeout: 20, RecoverTimeout: 60, FaultHandling: 'PreSeparateNPU' }],
};

const LEVELS: readonly string[] = NPU_LEVELS_BY_SEVERITY.filter((l) => l !== 'NormalNPU');
const CODE_RE = /^[0-9A-Fa-f]{1,16}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const inRange = (v: number, r: { readonly min: number; readonly max: number }): boolean => v >= r.min && v <= r.max;

/** Thrown inside section parsing to fall back to the default section (never escapes this module). */
class MalformedSection extends Error {}

/** Integer field; absent = Go zero value 0; present with another type = malformed. */
function intField(entry: Record<string, unknown>, key: string, where: string): number | undefined {
  const v = entry[key];
  if (v === undefined || v === null) return undefined;
  if (!isInt(v)) throw new MalformedSection(`${where}.${key} must be an integer, got ${JSON.stringify(v)}`);
  return v;
}

function stringField(entry: Record<string, unknown>, key: string, where: string): string {
  const v = entry[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new MalformedSection(`${where}.${key} must be a string`);
  return v;
}

function eventIds(entry: Record<string, unknown>, where: string): string[] {
  const v = entry['EventId'];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((c) => typeof c !== 'string')) throw new MalformedSection(`${where}.EventId must be an array of strings`);
  return v as string[];
}

function parseGrace(raw: unknown, warnings: string[]): GraceTolerance {
  const src = isObject(raw) ? raw : {};
  if (raw !== undefined && !isObject(raw)) warnings.push('GraceTolerance is not an object; defaults used');
  const out: Record<string, number> = {};
  for (const [k, r] of Object.entries(GRACE_TOLERANCE_RANGES)) {
    const v = src[k];
    if (isInt(v) && inRange(v, r)) out[k] = v;
    else {
      if (v !== undefined) warnings.push(`GraceTolerance.${k}=${JSON.stringify(v)} outside ${r.min}-${r.max}; default ${r.def} used`);
      out[k] = r.def;
    }
  }
  return out as unknown as GraceTolerance;
}

/** Validates codes of one entry; keeps only codes not yet claimed by an earlier valid entry. */
function claimCodes(ids: readonly string[], claimed: Set<string>, where: string, warnings: string[]): string[] {
  const out: string[] = [];
  for (const raw of ids) {
    const code = raw.toUpperCase();
    if (claimed.has(code)) {
      warnings.push(`${where}: EventId ${code} already configured by an earlier entry; ignored here`);
      continue;
    }
    claimed.add(code);
    out.push(code);
  }
  return out;
}

function parseFrequency(raw: unknown, warnings: string[]): readonly FaultFrequencyRule[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new MalformedSection('FaultFrequency must be an array');
  const checked = raw.map((e: unknown, i) => {
    const where = `FaultFrequency[${i}]`;
    if (!isObject(e)) throw new MalformedSection(`${where} must be an object`);
    return {
      where,
      ids: eventIds(e, where),
      TimeWindow: intField(e, 'TimeWindow', where) ?? 0,
      Times: intField(e, 'Times', where) ?? 0,
      FaultHandling: stringField(e, 'FaultHandling', where),
      ReleaseTimeWindow: intField(e, 'ReleaseTimeWindow', where) ?? 0,
    };
  });
  const claimed = new Set<string>();
  const rules: FaultFrequencyRule[] = [];
  for (const e of checked) {
    const bad = frequencyRangeError(e);
    if (bad !== undefined) {
      warnings.push(`${e.where} ignored: ${bad}`);
      continue;
    }
    const codes = claimCodes(e.ids, claimed, e.where, warnings);
    if (codes.length === 0) continue;
    const rule = { EventId: codes, TimeWindow: e.TimeWindow, Times: e.Times, FaultHandling: e.FaultHandling as NpuFaultLevel };
    rules.push(e.ReleaseTimeWindow === 0 ? rule : { ...rule, ReleaseTimeWindow: e.ReleaseTimeWindow });
  }
  return rules;
}

function frequencyRangeError(e: { ids: string[]; TimeWindow: number; Times: number; FaultHandling: string; ReleaseTimeWindow: number }): string | undefined {
  if (e.ids.length === 0) return 'empty EventId';
  if (e.ids.some((c) => !CODE_RE.test(c))) return `EventId must be hex codes, got ${JSON.stringify(e.ids)}`;
  if (!inRange(e.TimeWindow, FREQUENCY_RANGES.TimeWindow)) return `TimeWindow ${e.TimeWindow} outside 60-864000`;
  if (!inRange(e.Times, FREQUENCY_RANGES.Times)) return `Times ${e.Times} outside 1-100`;
  if (e.ReleaseTimeWindow !== 0 && !inRange(e.ReleaseTimeWindow, FREQUENCY_RANGES.ReleaseTimeWindow)) {
    return `ReleaseTimeWindow ${e.ReleaseTimeWindow} outside 60-${2 ** 32}`;
  }
  if (!LEVELS.includes(e.FaultHandling)) return `FaultHandling ${JSON.stringify(e.FaultHandling)} is not a fault level`;
  if (e.FaultHandling !== 'ManuallySeparateNPU' && e.ReleaseTimeWindow === 0) {
    return `FaultHandling ${e.FaultHandling} needs a ReleaseTimeWindow`;
  }
  return undefined;
}

function parseDuration(raw: unknown, warnings: string[]): readonly FaultDurationRule[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new MalformedSection('FaultDuration must be an array');
  const checked = raw.map((e: unknown, i) => {
    const where = `FaultDuration[${i}]`;
    if (!isObject(e)) throw new MalformedSection(`${where} must be an object`);
    return {
      where,
      ids: eventIds(e, where),
      FaultTimeout: intField(e, 'FaultTimeout', where) ?? 0,
      RecoverTimeout: intField(e, 'RecoverTimeout', where) ?? 0,
      FaultHandling: stringField(e, 'FaultHandling', where),
    };
  });
  const claimed = new Set<string>();
  const rules: FaultDurationRule[] = [];
  for (const e of checked) {
    const bad = durationRangeError(e);
    if (bad !== undefined) {
      warnings.push(`${e.where} ignored: ${bad}`);
      continue;
    }
    const codes = claimCodes(e.ids, claimed, e.where, warnings);
    const base = { FaultTimeout: e.FaultTimeout, RecoverTimeout: e.RecoverTimeout };
    const handling = e.FaultHandling as NpuFaultLevel;
    if (codes.includes(LINK_DOWN_CODE) && !LINK_DOWN_DURATION_HANDLINGS.includes(handling)) {
      warnings.push(`${e.where}: ${LINK_DOWN_CODE} cannot be handled as ${handling}; NotHandleFault used`);
      const others = codes.filter((c) => c !== LINK_DOWN_CODE);
      if (others.length > 0) rules.push({ EventId: others, ...base, FaultHandling: handling });
      rules.push({ EventId: [LINK_DOWN_CODE], ...base, FaultHandling: 'NotHandleFault' });
      continue;
    }
    if (codes.length > 0) rules.push({ EventId: codes, ...base, FaultHandling: handling });
  }
  return rules;
}

function durationRangeError(e: { ids: string[]; FaultTimeout: number; RecoverTimeout: number; FaultHandling: string }): string | undefined {
  if (e.ids.length === 0) return 'empty EventId';
  if (e.ids.some((c) => !CODE_RE.test(c))) return `EventId must be hex codes, got ${JSON.stringify(e.ids)}`;
  if (!inRange(e.FaultTimeout, DURATION_RANGES.FaultTimeout)) return `FaultTimeout ${e.FaultTimeout} outside 0-600`;
  if (!inRange(e.RecoverTimeout, DURATION_RANGES.RecoverTimeout)) return `RecoverTimeout ${e.RecoverTimeout} outside 0-86400`;
  if (!LEVELS.includes(e.FaultHandling) || e.FaultHandling === 'ManuallySeparateNPU') {
    return `FaultHandling ${JSON.stringify(e.FaultHandling)} is not allowed in FaultDuration`;
  }
  return undefined;
}

/** Runs one section parser; a MalformedSection gives the default section and drops the section's warnings. */
function section<T>(name: string, parse: (local: string[]) => T, fallback: T, warnings: string[]): T {
  const local: string[] = [];
  try {
    const v = parse(local);
    warnings.push(...local);
    return v;
  } catch (e) {
    if (!(e instanceof MalformedSection)) throw e;
    warnings.push(`${name} malformed (${e.message}); default ${name} used`);
    return fallback;
  }
}

/**
 * Parses faultCustomization.json. Never throws: malformed JSON or a non-object document gives the
 * defaults (with a warning); see the module comment for the per-section rules.
 */
export function parseFaultCustomization(text: string): FaultCustomizationResult {
  const warnings: string[] = [];
  const json = parseJson('faultCustomization.json', text);
  if (!json.ok) return { config: DEFAULT_FAULT_CUSTOMIZATION, warnings: [`${json.reason}; defaults used`] };
  const raw = json.value;
  if (!isObject(raw)) {
    return { config: DEFAULT_FAULT_CUSTOMIZATION, warnings: ['faultCustomization.json: not a JSON object; defaults used'] };
  }
  const config: FaultCustomization = {
    GraceTolerance: parseGrace(raw['GraceTolerance'], warnings),
    FaultFrequency: section('FaultFrequency', (w) => parseFrequency(raw['FaultFrequency'], w), DEFAULT_FAULT_CUSTOMIZATION.FaultFrequency, warnings),
    FaultDuration: section('FaultDuration', (w) => parseDuration(raw['FaultDuration'], w), DEFAULT_FAULT_CUSTOMIZATION.FaultDuration, warnings),
  };
  return { config, warnings };
}

/** faultCustomization.json text (Go struct order; ReleaseTimeWindow only when set). */
export function encodeFaultCustomization(c: FaultCustomization): string {
  return goJson({
    GraceTolerance: {
      WaitProcessReadCMTime: c.GraceTolerance.WaitProcessReadCMTime,
      WaitDeviceResetTime: c.GraceTolerance.WaitDeviceResetTime,
      WaitFaultSelfHealingTime: c.GraceTolerance.WaitFaultSelfHealingTime,
    },
    FaultFrequency: c.FaultFrequency.map((r) => ({
      EventId: r.EventId,
      TimeWindow: r.TimeWindow,
      Times: r.Times,
      FaultHandling: r.FaultHandling,
      ReleaseTimeWindow: r.ReleaseTimeWindow,
    })),
    FaultDuration: c.FaultDuration.map((r) => ({
      EventId: r.EventId,
      FaultTimeout: r.FaultTimeout,
      RecoverTimeout: r.RecoverTimeout,
      FaultHandling: r.FaultHandling,
    })),
  });
}

/** Index: code -> its frequency / duration rule (codes are unique after parsing). */
export interface FaultCustomizationIndex {
  readonly frequency: ReadonlyMap<string, FaultFrequencyRule>;
  readonly duration: ReadonlyMap<string, FaultDurationRule>;
}

export function indexFaultCustomization(c: FaultCustomization): FaultCustomizationIndex {
  const frequency = new Map<string, FaultFrequencyRule>();
  const duration = new Map<string, FaultDurationRule>();
  for (const r of c.FaultFrequency) for (const code of r.EventId) if (!frequency.has(code.toUpperCase())) frequency.set(code.toUpperCase(), r);
  for (const r of c.FaultDuration) for (const code of r.EventId) if (!duration.has(code.toUpperCase())) duration.set(code.toUpperCase(), r);
  return { frequency, duration };
}
