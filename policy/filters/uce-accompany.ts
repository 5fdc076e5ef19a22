/**
 * UCE-accompanying AIC/AIV filter (docs/rules.md#filter.uce-accompany, #timing.clusterd): an AIC or AIV bus error (80C98009 /
 * 80CB8009) within 5 s of an HBM uncorrectable error (UCE, 80E01801) on the same NPU is a side effect
 * of the UCE and is dropped. While the AIC/AIV error is younger than 5 s and no UCE is known it is
 * hidden and looked at again; after 5 s without a UCE it is reported. The UCE may come from the
 * device ConfigMap or from a business-plane report (TaskD/MindIO). A decision sticks to that fault
 * instance (state, schemas/escalation-state `FilterState.uceAccompany`).
 */
import { faultKey } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import type { FilterVerdict } from './filters.ts';
import { earliest } from '../policy-operator.ts';
import { reason } from '../reasons.ts';

export const UCE_CODE = '80E01801';
export const AIC_AIV_BUS_CODES: readonly string[] = ['80C98009', '80CB8009'];
export const UCE_ACCOMPANY_WINDOW_MS = 5_000;

export type UceAccompanyState = Readonly<Record<string, 'drop' | 'report'>>;

export interface UceAccompanyInput {
  readonly node: string;
  /** All faults of the node. */
  readonly faults: readonly LeveledFault[];
  /** UCEs reported over the business plane for this node (device, time). */
  readonly businessUce?: ReadonlyArray<{ readonly device: string; readonly atMs: number }>;
}

export interface UceAccompanyResult {
  readonly state: UceAccompanyState;
  /** faultKey -> verdict, for the AIC/AIV faults of the node only. */
  readonly verdicts: ReadonlyMap<string, FilterVerdict>;
  readonly nextDeadlineMs: number | undefined;
}

const instanceKey = (f: LeveledFault): string => `${faultKey(f.fault)}@${f.fault.firstSeenMs}`;

/** `(state, input, nowMs)`: decides the node's AIC/AIV faults; forgets instances no longer reported. */
export function uceAccompany(state: UceAccompanyState, input: UceAccompanyInput, nowMs: number): UceAccompanyResult {
  const next: Record<string, 'drop' | 'report'> = {};
  for (const [k, v] of Object.entries(state)) if (!k.startsWith(`${input.node}/`)) next[k] = v;
  const uceTimes = new Map<string, number[]>();
  const addUce = (device: string, t: number): void => {
    uceTimes.set(device, [...(uceTimes.get(device) ?? []), t]);
  };
  for (const f of input.faults) if (f.fault.code.toUpperCase() === UCE_CODE && f.fault.device !== undefined) addUce(f.fault.device, f.fault.firstSeenMs);
  for (const b of input.businessUce ?? []) addUce(b.device, b.atMs);

  const verdicts = new Map<string, FilterVerdict>();
  let deadline: number | undefined;
  for (const f of input.faults) {
    if (f.fault.node !== input.node || f.fault.device === undefined || !AIC_AIV_BUS_CODES.includes(f.fault.code.toUpperCase())) continue;
    const key = instanceKey(f);
    const t = f.fault.firstSeenMs;
    let decision = state[key];
    const near = (uceTimes.get(f.fault.device) ?? []).find((u) => Math.abs(u - t) <= UCE_ACCOMPANY_WINDOW_MS);
    if (decision === undefined && near !== undefined) decision = 'drop';
    if (decision === undefined && nowMs - t >= UCE_ACCOMPANY_WINDOW_MS) decision = 'report';
    if (decision === undefined) {
      const until = t + UCE_ACCOMPANY_WINDOW_MS;
      deadline = earliest(deadline, until);
      verdicts.set(faultKey(f.fault), { action: 'hide', untilMs: until, reasons: [reason('uce-accompany', `no UCE within 5 s yet; decided at ${until}`, { code: f.fault.code, level: 'hidden' })] });
      continue;
    }
    next[key] = decision;
    verdicts.set(
      faultKey(f.fault),
      decision === 'drop'
        ? { action: 'drop', reasons: [reason('uce-accompany', `UCE ${UCE_CODE} on ${f.fault.device} within 5 s${near === undefined ? '' : ` (at ${near})`}`, { code: f.fault.code, level: 'dropped' })] }
        : { action: 'pass', reasons: [reason('uce-accompany', 'no UCE within 5 s; reported', { code: f.fault.code, level: f.level })] },
    );
  }
  return { state: next, verdicts, nextDeadlineMs: deadline };
}
