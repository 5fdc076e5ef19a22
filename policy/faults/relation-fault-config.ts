/**
 * ClusterD's relation-fault configuration (docs/formats.md#clusterd-config-files): `relationFaultCustomization.json`
 * (trigger + relation codes -> strategy) and `faultDuration.json` (how long a relation candidate waits
 * for its trigger). Both ship in ClusterD's image; the defaults below are the shipped files.
 */
import type { Parsed } from '../../schemas/parsed.ts';

export type RelationFaultStrategy = 'SubHealth' | 'Separate';

export interface RelationFaultRule {
  readonly TriggerFault: string;
  readonly RelationFaults: readonly string[];
  readonly FaultStrategy: RelationFaultStrategy;
}

export interface RelationFaultDuration {
  readonly FaultCode: string;
  readonly FaultType: 'faultDevice' | 'faultSwitch';
  /** Seconds. */
  readonly TimeOutInterval: number;
}

export interface RelationFaultConfig {
  readonly rules: readonly RelationFaultRule[];
  readonly durations: readonly RelationFaultDuration[];
}

export const SWITCH_LINK_DOWN = '[0x08520003,na,L2,na]';
/** CQE errors: on A3 jobs also the late trigger for timed-out device link-downs. */
export const CQE_TRIGGER_CODES: readonly string[] = ['8C1F8608', '4C1F8608'];

export const DEFAULT_RELATION_FAULT_CONFIG: RelationFaultConfig = {
  rules: [
    { TriggerFault: '8C1F8609', RelationFaults: ['81078603'], FaultStrategy: 'SubHealth' },
    { TriggerFault: '8C1F860B', RelationFaults: ['81078603'], FaultStrategy: 'Separate' },
    { TriggerFault: '8C1F860B', RelationFaults: [SWITCH_LINK_DOWN], FaultStrategy: 'Separate' },
    { TriggerFault: '8C1F8608', RelationFaults: ['81078603'], FaultStrategy: 'Separate' },
    { TriggerFault: '4C1F8608', RelationFaults: ['81078603'], FaultStrategy: 'Separate' },
  ],
  durations: [
    { FaultCode: '81078603', FaultType: 'faultDevice', TimeOutInterval: 300 },
    { FaultCode: SWITCH_LINK_DOWN, FaultType: 'faultSwitch', TimeOutInterval: 300 },
  ],
};

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string' && s !== '');
const fail = (reason: string): Parsed<RelationFaultConfig> => ({ ok: false, reason });

/** Validates the two files' decoded JSON values (e.g. for a user-supplied override). Never throws. */
export function validateRelationFaultConfig(rules: unknown, durations: unknown): Parsed<RelationFaultConfig> {
  if (!Array.isArray(rules)) return fail('relationFaultCustomization.json must be an array');
  if (!Array.isArray(durations)) return fail('faultDuration.json must be an array');
  const r: RelationFaultRule[] = [];
  for (const [i, x] of rules.entries()) {
    if (!isObj(x) || typeof x['TriggerFault'] !== 'string' || x['TriggerFault'] === '' || !strings(x['RelationFaults']) || x['RelationFaults'].length === 0) {
      return fail(`relationFaultCustomization.json[${i}] needs TriggerFault and a non-empty RelationFaults`);
    }
    if (x['FaultStrategy'] !== 'SubHealth' && x['FaultStrategy'] !== 'Separate') return fail(`relationFaultCustomization.json[${i}].FaultStrategy must be SubHealth or Separate`);
    r.push({ TriggerFault: x['TriggerFault'], RelationFaults: x['RelationFaults'], FaultStrategy: x['FaultStrategy'] });
  }
  const d: RelationFaultDuration[] = [];
  for (const [i, x] of durations.entries()) {
    if (!isObj(x) || typeof x['FaultCode'] !== 'string' || x['FaultCode'] === '') return fail(`faultDuration.json[${i}] needs FaultCode`);
    if (x['FaultType'] !== 'faultDevice' && x['FaultType'] !== 'faultSwitch') return fail(`faultDuration.json[${i}].FaultType must be faultDevice or faultSwitch`);
    const t = x['TimeOutInterval'];
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > 86_400) return fail(`faultDuration.json[${i}].TimeOutInterval must be 1-86400 s`);
    d.push({ FaultCode: x['FaultCode'], FaultType: x['FaultType'], TimeOutInterval: t });
  }
  return { ok: true, value: { rules: r, durations: d } };
}
