/**
 * Logs and metrics of the fault policy's decisions (docs/CONVENTIONS.md#logs-and-metrics): every escalation is one structured
 * line `fault escalated` with node, npu, code, faultLevel, rule and the reason chain (formatChain;
 * `faultLevel`, since winston's own `level` field would overwrite a `level` key), and
 * one `clusterd_escalations_total{rule,level}`; releases and judgements are logged too. The faults
 * gauge follows the published records, adjusted per node so a pass over 16,000 nodes stays cheap.
 */
import type { EscalationOutput } from '../policy/faults/escalation.ts';
import type { ManualSeparationOutput } from '../policy/faults/manual-separation.ts';
import { isParameterPlaneCode } from '../policy/faults/pre-separate.ts';
import { formatChain } from '../policy/reasons.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { OVERFLOW_LABEL } from '../telemetry/series-cap.ts';
import { CappedGauge } from '../telemetry/capped-gauge.ts';

/** Metric `rule` label of an escalation. */
export type EscalationRuleLabel = 'frequency' | 'duration' | 'parameter_plane' | 'manual_separation';

export function reportEscalation(log: Logger, metrics: Metrics | undefined, o: EscalationOutput): void {
  const base = { node: o.node, npu: o.device, code: o.code, reasons: formatChain(o.reasons), atMs: o.atMs };
  switch (o.type) {
    case 'duration-timeout':
    case 'frequency-upgrade': {
      const rule: EscalationRuleLabel = o.type === 'frequency-upgrade' ? 'frequency' : isParameterPlaneCode(o.code) ? 'parameter_plane' : 'duration';
      metrics?.escalations.inc({ rule, level: o.level });
      log.info('fault escalated', { ...base, faultLevel: o.level, rule: o.type === 'frequency-upgrade' ? 'FaultFrequency' : 'FaultDuration' });
      return;
    }
    case 'duration-recovered':
      log.info('fault escalation ended', { ...base, rule: 'FaultDuration', cause: 'RecoverTimeout' });
      return;
    case 'frequency-release':
      log.info('fault escalation ended', { ...base, rule: 'FaultFrequency', cause: o.cause });
      return;
  }
}

export function reportManualSeparation(log: Logger, metrics: Metrics | undefined, o: ManualSeparationOutput): void {
  switch (o.type) {
    case 'separated':
    case 'renewed':
      if (o.type === 'separated') metrics?.escalations.inc({ rule: 'manual_separation', level: 'ManuallySeparateNPU' });
      log.info(o.type === 'separated' ? 'fault escalated' : 'manual separation renewed', {
        node: o.node, npu: o.device, code: o.code, faultLevel: 'ManuallySeparateNPU', rule: 'manual-separation', reasons: formatChain(o.reasons),
      });
      return;
    case 'released':
      log.info('manual separation released', { node: o.node, npu: o.device, codes: o.codes, cause: o.cause, reasons: formatChain(o.reasons) });
      return;
    case 'software-fault':
      log.info('fault on several NPUs of one job judged software; not counted', { job: o.jobKey, code: o.code, npus: o.devices, reasons: formatChain(o.reasons) });
      return;
    case 'counted':
      log.debug('hardware fault counted for manual separation', { node: o.node, npu: o.device, code: o.code, count: o.count });
      return;
  }
}

/**
 * `clusterd_faults{source,level,code}`, `clusterd_node_faults{node,level}` and
 * `clusterd_npu_faults{node,npu,level}` from the published records, kept per node. Past a metric's
 * series cap (telemetry/series-cap.ts) a new label set is added to its `other` series (code, or node
 * and npu) and stays there until its count is back to zero.
 */
export class FaultGauge {
  private readonly perNode = new Map<string, ReadonlyMap<string, number>>();
  private readonly gauges: { readonly faults: CappedGauge<'source' | 'level' | 'code'>; readonly node: CappedGauge<'node' | 'level'>; readonly npu: CappedGauge<'node' | 'npu' | 'level'> } | undefined;

  constructor(metrics: Metrics | undefined) {
    this.gauges = metrics === undefined ? undefined : {
      faults: new CappedGauge(metrics.faults, metrics.faultSeries, ['source', 'level', 'code'], (l) => ({ ...l, code: OVERFLOW_LABEL })),
      node: new CappedGauge(metrics.nodeFaults, metrics.nodeFaultSeries, ['node', 'level'], (l) => ({ ...l, node: OVERFLOW_LABEL })),
      npu: new CappedGauge(metrics.npuFaults, metrics.npuFaultSeries, ['node', 'npu', 'level'], (l) => ({ ...l, node: OVERFLOW_LABEL, npu: OVERFLOW_LABEL })),
    };
  }

  update(node: string, records: readonly FaultRecord[]): void {
    if (this.gauges === undefined) return;
    // One map per node of `gauge\0labels...` -> count, diffed against the node's last update.
    const next = new Map<string, number>();
    const add = (k: string): void => { next.set(k, (next.get(k) ?? 0) + 1); };
    for (const r of records) {
      add(`f\u0000${r.source}\u0000${r.level}\u0000${r.code}`);
      add(`n\u0000${r.node}\u0000${r.level}`);
      if (r.device !== undefined) add(`d\u0000${r.node}\u0000${r.device}\u0000${r.level}`);
    }
    const prev = this.perNode.get(node) ?? new Map<string, number>();
    for (const k of new Set([...prev.keys(), ...next.keys()])) {
      const delta = (next.get(k) ?? 0) - (prev.get(k) ?? 0);
      if (delta === 0) continue;
      const [g, a, b, c] = k.split('\u0000') as [string, string, string, string];
      if (g === 'f') this.gauges.faults.add({ source: a, level: b, code: c }, delta);
      else if (g === 'n') this.gauges.node.add({ node: a, level: b }, delta);
      else this.gauges.npu.add({ node: a, npu: b, level: c }, delta);
    }
    if (next.size === 0) this.perNode.delete(node);
    else this.perNode.set(node, next);
  }
}
