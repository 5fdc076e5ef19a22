/**
 * Logs and metrics of the fault policy's decisions (style.md 2.7): every escalation is one structured
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
 * `clusterd_faults{source,level,code}` from the published records, kept per node. Past the metric's
 * series cap (telemetry/series-cap.ts) a new code is added to `{source,level,code="other"}` and stays
 * there until its count is back to zero.
 */
export class FaultGauge {
  private readonly perNode = new Map<string, ReadonlyMap<string, number>>();
  private readonly totals = new Map<string, number>();
  /** `source\0level` -> the sum of the codes aggregated into `other`. */
  private readonly overflow = new Map<string, number>();
  private readonly metrics: Metrics | undefined;

  constructor(metrics: Metrics | undefined) {
    this.metrics = metrics;
  }

  update(node: string, records: readonly FaultRecord[]): void {
    if (this.metrics === undefined) return;
    const next = new Map<string, number>();
    for (const r of records) {
      const k = `${r.source}\u0000${r.level}\u0000${r.code}`;
      next.set(k, (next.get(k) ?? 0) + 1);
    }
    const prev = this.perNode.get(node) ?? new Map<string, number>();
    for (const k of new Set([...prev.keys(), ...next.keys()])) {
      const delta = (next.get(k) ?? 0) - (prev.get(k) ?? 0);
      if (delta === 0) continue;
      const before = this.totals.get(k) ?? 0;
      const total = before + delta;
      if (total === 0) this.totals.delete(k);
      else this.totals.set(k, total);
      this.publish(k, before, total, delta);
    }
    if (next.size === 0) this.perNode.delete(node);
    else this.perNode.set(node, next);
  }

  private publish(k: string, before: number, total: number, delta: number): void {
    const gauge = this.metrics!.faults;
    const cap = this.metrics!.faultSeries;
    const [source, level, code] = k.split('\u0000') as [string, string, string];
    if (cap.has(k) || (before === 0 && cap.admit(k))) {
      if (total === 0) { gauge.remove({ source, level, code }); cap.release(k); }
      else gauge.set({ source, level, code }, total);
      return;
    }
    const ok = `${source}\u0000${level}`;
    const sum = (this.overflow.get(ok) ?? 0) + delta;
    if (sum === 0) { this.overflow.delete(ok); gauge.remove({ source, level, code: OVERFLOW_LABEL }); }
    else { this.overflow.set(ok, sum); gauge.set({ source, level, code: OVERFLOW_LABEL }, sum); }
  }
}
