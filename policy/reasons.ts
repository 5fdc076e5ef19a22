/**
 * Reason chains: every decision in policy/ says why, as data (docs/CONVENTIONS.md#logs-and-metrics). A chain reads
 * code -> level -> rule(s) -> verdict, e.g.
 * `[{rule:'faultCode.json', code:'81078603', level:'NotHandleFault'}, {rule:'FaultDuration', level:'PreSeparateNPU', ...}]`.
 * The controller logs the chain, puts it on Events and, where a format has room, into ConfigMap records.
 */
import { RULE, type RuleId } from '../vocabulary/rule-ids.ts';

/** Names of the steps that can appear in a chain; RULE_OF gives the rule of docs/rules.md each applies. */
export type RuleName =
  | 'reported' // level as the source wrote it (device plugin, NodeD, switch)
  | 'faultCode.json' // central re-levelling from mindx-dl-fault-config / the built-in table
  | 'SwitchFaultCode.json'
  | 'severity' // unknown code classified by the reported severity
  | 'unknown-network-code' // unknown parameter-plane code -> PreSeparateNPU
  | 'base-level' // the level a code had before escalation (as remembered by the escalation state)
  | 'FaultDuration'
  | 'FaultFrequency'
  | 'operator-release'
  | 'config-change'
  | 'manual-separation'
  | 'custom-filter'
  | 'mindie-restart-request-hold'
  | 'uce-accompany'
  | 'step-retry'
  | 'recover-in-place'
  | 'stress-test'
  | 'pre-separate'
  | 'relation-fault';

/** The rule (docs/rules.md) behind each step; steps that only carry facts (the remembered base level, an operator's release, a configuration change) have none. */
export const RULE_OF: Readonly<Record<RuleName, RuleId | undefined>> = {
  reported: RULE.levels.chipLevels,
  'faultCode.json': RULE.levels.chipLevels,
  'SwitchFaultCode.json': RULE.levels.nodeSwitchLevels,
  severity: RULE.levels.unknownCodes,
  'unknown-network-code': RULE.levels.unknownCodes,
  'base-level': undefined,
  FaultDuration: RULE.detect.durationEscalation,
  FaultFrequency: RULE.detect.frequencyEscalation,
  'operator-release': undefined,
  'config-change': undefined,
  'manual-separation': RULE.manual.threshold,
  'custom-filter': RULE.filter.custom,
  'mindie-restart-request-hold': RULE.filter.mindieHold,
  'uce-accompany': RULE.filter.uceAccompany,
  'step-retry': RULE.filter.stepRetry,
  'recover-in-place': RULE.filter.recoverInPlace,
  'stress-test': RULE.filter.stressTest,
  'pre-separate': RULE.ingest.preSeparate,
  'relation-fault': RULE.job.relationFaults,
};

export interface Reason {
  readonly rule: RuleName;
  /** The fault code the step is about, when there is one. */
  readonly code?: string;
  /** The level (or verdict) this step produced. */
  readonly level?: string;
  /** Human-readable facts behind the step (times, counts, thresholds). */
  readonly detail: string;
}

export type ReasonChain = readonly Reason[];

export const reason = (rule: RuleName, detail: string, extra: { code?: string; level?: string } = {}): Reason => ({
  rule,
  ...(extra.code === undefined ? {} : { code: extra.code }),
  ...(extra.level === undefined ? {} : { level: extra.level }),
  detail,
});

/**
 * One line for logs, each step with its rule id where it has one:
 * `81078603 -> NotHandleFault (faultCode.json [levels.chip-levels]: …) -> PreSeparateNPU (FaultDuration [detect.duration-escalation]: held 20001 ms > 20 s)`.
 */
export function formatChain(chain: ReasonChain): string {
  return chain
    .map((r, i) => {
      const head = i === 0 && r.code !== undefined ? `${r.code} -> ` : '';
      const id = RULE_OF[r.rule];
      return `${head}${r.level ?? '-'} (${r.rule}${id === undefined ? '' : ` [${id}]`}: ${r.detail})`;
    })
    .join(' -> ');
}
