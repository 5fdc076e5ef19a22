/**
 * Isolation: which nodes to taint for node-wide faults (and when to lift the taint), and which NPUs
 * are unusable for new work.
 *
 * Choice: we never cordon (`spec.unschedulable` belongs to humans and drain tooling, and a cordon we
 * set could not be told apart from theirs). We put one taint with our own key on the Node:
 *   `huawei.com/clusterd-fault=<level>:NoSchedule`        node must take no new pods
 *   `huawei.com/clusterd-fault=SubHealthFault:PreferNoSchedule`  de-prioritise only
 * NoSchedule never evicts running pods, which matches every node-level rule of the spec: running jobs
 * are moved by the rescheduling decision, not by the taint.
 *
 * Which node faults (docs/rules.md#levels.node-switch-levels, #ingest.pre-separate, #resched.fault-nodes, #resched.placement):
 * - NodeD (`node`) SeparateNPU (SeparateFault -> UnHealthy) and PreSeparateNPU (PreSeparate: "schedule
 *   nothing new") -> NoSchedule.
 * - UB switch (`switch`): SubHealthFault -> PreferNoSchedule (sub-healthy nodes score -1); PreSeparate
 *   and every level that makes the switch UnHealthy (RestartRequest and above) -> NoSchedule.
 * - public faults without a device, level SeparateNPU/ManuallySeparateNPU/PreSeparateNPU -> NoSchedule.
 * - NotReady nodes get nothing from us: the node lifecycle controller already taints them
 *   (`node.kubernetes.io/not-ready|unreachable`) and lifts its taint when the node returns.
 * - chip faults never taint the node (its other NPUs stay usable); they are reported by
 *   `unusableNpus` for the device views.
 * Undo: once no qualifying fault remains, the taint is removed after `UNTAINT_HOLD_MS` (60 s) of
 * continuous health, so a flapping NodeD/switch report does not make the taint blink.
 */
import { mostSerious, severityRank, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';

export const CLUSTERD_FAULT_TAINT_KEY = 'huawei.com/clusterd-fault';
export const UNTAINT_HOLD_MS = 60_000;

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule';

export interface NodeTaint {
  readonly key: string;
  readonly value: string;
  readonly effect: TaintEffect;
}

export interface NodeTaintWish {
  readonly taint: NodeTaint;
  readonly reasons: readonly string[];
}

const HEALTHY: ReadonlySet<string> = new Set(['NotHandleFault', 'NormalNPU']);
const HARD_PUBLIC: ReadonlySet<string> = new Set(['ManuallySeparateNPU', 'SeparateNPU', 'PreSeparateNPU']);

function effectOf(r: FaultRecord): TaintEffect | undefined {
  if (HEALTHY.has(r.level)) return undefined;
  switch (r.source) {
    case 'node':
      return severityRank(r.level) >= severityRank('PreSeparateNPU') ? 'NoSchedule' : r.level === 'SubHealthFault' ? 'PreferNoSchedule' : undefined;
    case 'switch':
      return r.level === 'SubHealthFault' ? 'PreferNoSchedule' : 'NoSchedule';
    case 'public':
      return r.device === undefined && HARD_PUBLIC.has(r.level) ? 'NoSchedule' : undefined;
    default:
      return undefined;
  }
}

/** node name -> the taint the node should carry, from the current fault records. */
export function desiredNodeTaints(faults: readonly FaultRecord[]): ReadonlyMap<string, NodeTaintWish> {
  const hits = new Map<string, { hard: NpuFaultLevel[]; soft: NpuFaultLevel[]; reasons: string[] }>();
  for (const r of faults) {
    const effect = effectOf(r);
    if (effect === undefined) continue;
    const h = hits.get(r.node) ?? { hard: [], soft: [], reasons: [] };
    (effect === 'NoSchedule' ? h.hard : h.soft).push(r.level);
    h.reasons.push(`${r.source} ${r.code} ${r.reportedLevel} -> ${effect}`);
    hits.set(r.node, h);
  }
  const out = new Map<string, NodeTaintWish>();
  for (const [node, h] of hits) {
    const hard = h.hard.length > 0;
    const value = mostSerious(hard ? h.hard : h.soft) ?? 'SubHealthFault';
    out.set(node, { taint: { key: CLUSTERD_FAULT_TAINT_KEY, value, effect: hard ? 'NoSchedule' : 'PreferNoSchedule' }, reasons: h.reasons.sort() });
  }
  return out;
}

/** Per node, remembered between evaluations: since when no taint has been wanted. */
export interface NodeTaintState {
  readonly healthySinceMs?: number;
}

export interface NodeTaintPlan {
  /** Taints with our key to remove (wrong value/effect, or lifted). */
  readonly remove: readonly NodeTaint[];
  readonly add?: NodeTaint;
  readonly state: NodeTaintState;
  readonly requeueAfterMs?: number;
  readonly reason: string;
}

/**
 * Compare the node's current taints (any keys) with the wish; touches only our key.
 * No wish: keep our taint until the node has been healthy for `holdMs`, then remove it.
 */
export function planNodeTaint(
  current: readonly NodeTaint[],
  wish: NodeTaintWish | undefined,
  state: NodeTaintState,
  nowMs: number,
  holdMs = UNTAINT_HOLD_MS,
): NodeTaintPlan {
  const ours = current.filter((t) => t.key === CLUSTERD_FAULT_TAINT_KEY);
  if (wish !== undefined) {
    const same = (t: NodeTaint): boolean => t.value === wish.taint.value && t.effect === wish.taint.effect;
    const remove = ours.filter((t) => !same(t));
    const add = ours.some(same) ? undefined : wish.taint;
    return { remove, ...(add ? { add } : {}), state: {}, reason: wish.reasons.join('; ') };
  }
  if (ours.length === 0) return { remove: [], state: {}, reason: 'healthy, no taint' };
  const since = state.healthySinceMs ?? nowMs;
  if (nowMs - since >= holdMs) return { remove: ours, state: {}, reason: `healthy for ${nowMs - since} ms: lift taint` };
  return { remove: [], state: { healthySinceMs: since }, requeueAfterMs: holdMs - (nowMs - since), reason: `healthy for ${nowMs - since} ms of ${holdMs} ms before lifting taint` };
}

export interface UnusableNpu {
  readonly npu: string;
  readonly level: NpuFaultLevel;
  readonly faultType: 'CardUnhealthy' | 'CardNetworkUnhealthy';
  readonly codes: readonly string[];
}

/** Card-level faults whose NPU must get no new work (docs/rules.md#levels.card-health, #ingest.pre-separate: PreSeparateNPU included). */
const CARD_USABLE: ReadonlySet<string> = new Set(['NotHandleFault', 'SubHealthFault', 'NormalNPU']);

/** node -> NPUs not usable for new pods (chip faults only; node-wide faults are taints). */
export function unusableNpus(faults: readonly FaultRecord[]): ReadonlyMap<string, readonly UnusableNpu[]> {
  const acc = new Map<string, Map<string, { levels: NpuFaultLevel[]; codes: Set<string>; network: boolean }>>();
  for (const r of faults) {
    if (r.device === undefined || CARD_USABLE.has(r.level)) continue;
    if (r.source !== 'npu' && r.source !== 'network' && r.source !== 'public') continue;
    const byNpu = acc.get(r.node) ?? new Map();
    const e = byNpu.get(r.device) ?? { levels: [], codes: new Set<string>(), network: true };
    e.levels.push(r.level);
    e.codes.add(r.code);
    if (r.source !== 'network') e.network = false;
    byNpu.set(r.device, e);
    acc.set(r.node, byNpu);
  }
  const out = new Map<string, readonly UnusableNpu[]>();
  for (const [node, byNpu] of acc) {
    const list = [...byNpu].map(([npu, e]): UnusableNpu => ({
      npu, level: mostSerious(e.levels) ?? 'SeparateNPU', faultType: e.network ? 'CardNetworkUnhealthy' : 'CardUnhealthy', codes: [...e.codes].sort(),
    }));
    out.set(node, list.sort((a, b) => a.npu.localeCompare(b.npu, undefined, { numeric: true })));
  }
  return out;
}
