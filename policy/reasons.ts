/**
 * Reason chains: every decision in policy/ says why, as data (docs/CONVENTIONS.md#logs-and-metrics). A chain reads
 * code -> level -> rule(s) -> verdict, e.g.
 * `[{rule:'faultCode.json', code:'81078603', level:'NotHandleFault'}, {rule:'FaultDuration', level:'PreSeparateNPU', ...}]`.
 * The controller logs the chain, puts it on Events and, where a format has room, into ConfigMap records.
 */

/** Names of the rules that can appear in a chain; each is named after the spec rule it implements. */
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

/** One line for logs: `81078603 -> NotHandleFault (faultCode.json) -> PreSeparateNPU (FaultDuration: held 20001 ms > 20 s)`. */
export function formatChain(chain: ReasonChain): string {
  return chain
    .map((r, i) => {
      const head = i === 0 && r.code !== undefined ? `${r.code} -> ` : '';
      return `${head}${r.level ?? '-'} (${r.rule}: ${r.detail})`;
    })
    .join(' -> ');
}
