/**
 * The final level of each device: the most serious of its (filtered) faults, the escalations in force
 * (FaultDuration/FaultFrequency) and ClusterD manual separation (docs/rules.md#levels.most-severe, #manual.threshold), each with
 * the reason chain of the winner. This is what the cluster-info writer and the job aggregation read.
 * Escalations and manual separations count even when the code that caused them is no longer reported
 * (e.g. PreSeparateNPU for RecoverTimeout after a link-up; ManuallySeparateNPU until released).
 */
import { mostSerious, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { Escalation } from './escalation.ts';
import type { LeveledFault } from './fault-level.ts';
import { reason, type ReasonChain } from '../reasons.ts';

export interface DeviceVerdict {
  readonly node: string;
  readonly device: string;
  readonly level: NpuFaultLevel;
  /** Codes behind the level (the faults' codes and the escalated codes), sorted, de-duplicated. */
  readonly codes: readonly string[];
  readonly reasons: ReasonChain;
}

export interface ManualSeparation {
  readonly node: string;
  readonly device: string;
  readonly codes: readonly string[];
  readonly reasons: ReasonChain;
}

export function deviceVerdicts(
  faults: readonly LeveledFault[],
  escalations: readonly Escalation[] = [],
  manual: readonly ManualSeparation[] = [],
): DeviceVerdict[] {
  const byDevice = new Map<string, { node: string; device: string; items: Array<{ level: NpuFaultLevel; code: string; reasons: ReasonChain }> }>();
  const add = (node: string, device: string, level: NpuFaultLevel, code: string, reasons: ReasonChain): void => {
    const k = `${node}/${device}`;
    const e = byDevice.get(k) ?? { node, device, items: [] };
    e.items.push({ level, code, reasons });
    byDevice.set(k, e);
  };
  for (const f of faults) if (f.fault.device !== undefined) add(f.fault.node, f.fault.device, f.level, f.fault.code, f.reasons);
  for (const e of escalations) add(e.node, e.device, e.level, e.code, e.reasons);
  for (const m of manual) {
    for (const code of m.codes.length > 0 ? m.codes : ['']) add(m.node, m.device, 'ManuallySeparateNPU', code, m.reasons);
  }
  const out: DeviceVerdict[] = [];
  for (const { node, device, items } of byDevice.values()) {
    const level = mostSerious(items.map((i) => i.level)) ?? 'NormalNPU';
    const winner = items.find((i) => i.level === level);
    const codes = [...new Set(items.map((i) => i.code).filter((c) => c !== ''))].sort();
    out.push({ node, device, level, codes, reasons: winner?.reasons ?? [reason('reported', 'no faults', { level })] });
  }
  return out.sort((a, b) => (`${a.node}/${a.device}` < `${b.node}/${b.device}` ? -1 : 1));
}
