/**
 * Fault levels and precedence (docs/rules.md#levels.chip-levels, #levels.most-severe, #levels.unknown-codes; docs/formats.md#fault-code-json).
 * By default the level the device plugin (or NodeD, or the switch) wrote is trusted. When the central
 * fault configuration (kube-system/mindx-dl-fault-config) exists, chip, network and switch codes are
 * re-levelled from its tables. Escalation (FaultFrequency/FaultDuration) is separate: policy/faults/escalation.ts.
 */
import { mostSerious, severityRank, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { reason, type Reason, type ReasonChain } from '../reasons.ts';

/** Code tables from faultCode.json / SwitchFaultCode.json (built by schemas/fault-code, schemas/fault-config-cm). */
export interface LevelTables {
  readonly chip: ReadonlyMap<string, NpuFaultLevel>;
  readonly network: ReadonlyMap<string, NpuFaultLevel>;
  readonly switchCodes?: ReadonlyMap<string, NpuFaultLevel>;
}

export interface LeveledFault {
  readonly fault: FaultRecord;
  readonly level: NpuFaultLevel;
  /** code -> level -> rule. */
  readonly reasons: ReasonChain;
}

/** Pseudo code the device plugin uses for its own manual separation; never re-levelled. */
export const MANUALLY_SEPARATE_PSEUDO_CODE = 'ManuallySeparateNPU';

/** Levels that leave a card healthy (docs/rules.md#levels.card-health). */
export const NORMAL_LEVELS: readonly NpuFaultLevel[] = ['NotHandleFault', 'SubHealthFault', 'NormalNPU'];
export const isNormalLevel = (level: string): boolean => (NORMAL_LEVELS as readonly string[]).includes(level) || level === 'NormalNetwork';

/** Severities that mean "no handling" (the device plugin's documented rule: info or minor; the driver also has hint/suggestion). */
const LOW_SEVERITIES = new Set(['info', 'minor', 'hint', 'suggestion']);
/** Driver numeric severity: 0 hint/suggestion, 1 minor, 2 major, 3 critical. */
const MINOR_SEVERITY = 1;

/**
 * Level of a code that is in no list (docs/rules.md#levels.unknown-codes): info/minor/hint/suggestion -> NotHandleFault;
 * major, critical or unknown severity -> SeparateNPU.
 */
export function levelFromSeverity(severity: string | number | undefined): NpuFaultLevel {
  if (typeof severity === 'number') return Number.isInteger(severity) && severity >= 0 && severity <= MINOR_SEVERITY ? 'NotHandleFault' : 'SeparateNPU';
  if (severity !== undefined && LOW_SEVERITIES.has(severity.trim().toLowerCase())) return 'NotHandleFault';
  return 'SeparateNPU';
}

const reported = (f: FaultRecord, why: string): LeveledFault => ({
  fault: f,
  level: f.level,
  reasons: [reason('reported', `${why}; ${f.source} reported ${f.reportedLevel}`, { code: f.code, level: f.level })],
});

/**
 * The level of one fault. `tables` undefined = trust the reported level. `severity` is the driver's
 * severity for codes absent from the tables; without it an unknown chip code keeps the level the device
 * plugin derived from that severity.
 */
export function resolveFaultLevel(f: FaultRecord, tables?: LevelTables, severity?: string | number): LeveledFault {
  if (tables === undefined) return reported(f, 'no central fault config');
  if (f.code === MANUALLY_SEPARATE_PSEUDO_CODE) return reported(f, 'device plugin manual separation');
  const code = f.code.toUpperCase();
  const viaTable = (level: NpuFaultLevel, rule: 'faultCode.json' | 'SwitchFaultCode.json', detail: string): LeveledFault => ({
    fault: f,
    level,
    reasons: [reason(rule, detail, { code: f.code, level })],
  });
  switch (f.source) {
    case 'npu': {
      const level = tables.chip.get(code);
      if (level !== undefined) return viaTable(level, 'faultCode.json', `chip code listed as ${level}`);
      if (severity !== undefined) {
        const l = levelFromSeverity(severity);
        return { fault: f, level: l, reasons: [reason('severity', `code not in faultCode.json; severity ${String(severity)}`, { code: f.code, level: l })] };
      }
      return reported(f, 'code not in faultCode.json, no severity known');
    }
    case 'network': {
      const level = tables.network.get(code);
      if (level !== undefined) return viaTable(level, 'faultCode.json', `network code listed as ${level}`);
      return { fault: f, level: 'PreSeparateNPU', reasons: [reason('unknown-network-code', 'network code not in faultCode.json', { code: f.code, level: 'PreSeparateNPU' })] };
    }
    case 'switch': {
      const level = tables.switchCodes?.get(code);
      if (level !== undefined) return viaTable(level, 'SwitchFaultCode.json', `switch code listed as ${level}`);
      return reported(f, 'code not in SwitchFaultCode.json');
    }
    default:
      return reported(f, `${f.source} faults are not re-levelled`);
  }
}

export const resolveFaultLevels = (faults: readonly FaultRecord[], tables?: LevelTables): LeveledFault[] =>
  faults.map((f) => resolveFaultLevel(f, tables));

/** A level from an escalation or a filter, added on top of a fault's own level. */
export interface LevelContribution {
  readonly level: NpuFaultLevel;
  readonly reasons: ReasonChain;
}

/**
 * Most serious level over a device's faults and any escalations (getMostSeriousFaultType,
 * docs/rules.md#levels.most-severe). The chain is the winner's chain. An empty input gives NormalNPU.
 */
export function mostSeriousLevel(items: ReadonlyArray<LevelContribution>): LevelContribution {
  const level = mostSerious(items.map((i) => i.level)) ?? 'NormalNPU';
  const winner = items.find((i) => i.level === level);
  return { level, reasons: winner?.reasons ?? [reason('reported', 'no faults', { level: 'NormalNPU' })] };
}

/** Orders levels most serious first (for reports and deterministic output). */
export const bySeverityDesc = (a: { level: string }, b: { level: string }): number => severityRank(b.level) - severityRank(a.level);

/** Appends a step to a chain. */
export const extendChain = (chain: ReasonChain, step: Reason): ReasonChain => [...chain, step];
