/**
 * Pre-separate handling (docs/rules.md#ingest.pre-separate, docs/formats.md#node-info, docs/rules.md#ingest.pre-separate):
 * - a chip with a PreSeparateNPU fault (parameter-plane codes 81078603, 81078607, 110001024, 110000002
 *   excepted) leaves the available list at once, but is listed as unhealthy only when no pod uses it:
 *   a running job keeps its chip;
 * - a node (NodeD) or UB switch whose most serious level is PreSeparate reports NodeStatus `Healthy`
 *   when any pod on the node uses NPUs, else `UnHealthy`; an UnHealthy status is left alone.
 */
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { reason, type ReasonChain } from '../reasons.ts';

export const PARAMETER_PLANE_CODES: readonly string[] = ['81078603', '81078607', '110001024', '110000002'];
export const isParameterPlaneCode = (code: string): boolean => PARAMETER_PLANE_CODES.includes(code.toUpperCase());

export interface ChipMarking {
  /** Stays in the available list. */
  readonly available: boolean;
  /** Listed in `-Unhealthy`. */
  readonly unhealthy: boolean;
  readonly reasons: ReasonChain;
}

/**
 * Marking of a chip for one fault code at `level`; undefined when this rule does not apply (not
 * PreSeparateNPU, or a parameter-plane code, which the normal network-health rules handle).
 */
export function preSeparateChip(code: string, level: NpuFaultLevel, chipInUse: boolean): ChipMarking | undefined {
  if (level !== 'PreSeparateNPU' || isParameterPlaneCode(code)) return undefined;
  return {
    available: false,
    unhealthy: !chipInUse,
    reasons: [reason('pre-separate', chipInUse ? 'chip in use: job keeps it, nothing new scheduled onto it' : 'chip idle: isolated', { code, level: chipInUse ? 'PreSeparateNPU(in use)' : 'PreSeparateNPU(isolated)' })],
  };
}

/** NodeStatus after pre-separate processing of a node-info or switch status. */
export function preSeparateNodeStatus(status: string, nodeHasNpuPods: boolean): { status: string; reasons: ReasonChain } {
  if (status !== 'PreSeparate') return { status, reasons: [] };
  const next = nodeHasNpuPods ? 'Healthy' : 'UnHealthy';
  return { status: next, reasons: [reason('pre-separate', nodeHasNpuPods ? 'node has pods using NPUs: keep running, schedule nothing new' : 'no pod uses NPUs on the node: separate now', { level: next })] };
}
