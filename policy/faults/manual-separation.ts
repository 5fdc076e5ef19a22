/**
 * ClusterD's own manual separation (docs/rules.md#manual.increment-faults to #manual.policy-config, #timing.clusterd), configured by
 * clusterd-config-cm `manually_separate_policy.conf`:
 * - a new (NPU, code, receive time) with a level other than NotHandleFault/SubHealthFault on an NPU
 *   used by a job is queued per job (docs/rules.md#manual.increment-faults);
 * - 30 s after the job's first queued fault: a code seen on two different NPUs of the job within 30 s is
 *   a software fault and is not counted; otherwise every occurrence is counted as hardware (docs/rules.md#manual.software-vs-hardware);
 * - per (node, NPU, code): the last `fault_threshold` counted occurrences spanning less than
 *   `fault_window_hours` -> the NPU is manually separated (recorded for clusterd-manual-info-cm,
 *   LastSeparateTime = that occurrence's receive time) and the count starts again; reaching the
 *   threshold again while separated renews LastSeparateTime (docs/rules.md#manual.threshold);
 * - released when now - LastSeparateTime >= `fault_free_hours` (-1 never), or as soon as an operator
 *   deletes the NPU from the ConfigMap's `Total` (ClusterD notices within its 15 s loop; we act on the
 *   informer event) (docs/rules.md#manual.release); disabling the policy clears everything (docs/rules.md#manual.policy-config).
 * Unlike ClusterD, the counters survive restarts: the state is schemas/escalation-state data.
 */
import type { ManualPendingFault, ManualSeparatedNpu, ManualSeparationState } from '../../schemas/escalation-state/escalation-state.ts';
import type { ManualSeparatePolicy } from '../../schemas/manual-separate-policy/manual-separate-policy.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { MANUALLY_SEPARATE_PSEUDO_CODE } from './fault-level.ts';
import { earliest, type ConfigChange, type PolicyStep, type Tick } from '../policy-operator.ts';
import { reason, type Reason, type ReasonChain } from '../reasons.ts';

export const SOFTWARE_FAULT_WINDOW_MS = 30_000;
export const MANUAL_HISTORY_MS = 720 * 3_600_000;
/** ClusterD keeps at most fault_threshold (<= 50) occurrences that matter. */
const MAX_COUNTED = 50;
const HOUR_MS = 3_600_000;
const NOT_COUNTED: readonly string[] = ['NotHandleFault', 'SubHealthFault', 'NormalNPU', 'NormalNetwork'];

export interface ManualFaultObservation {
  readonly device: string;
  readonly code: string;
  readonly level: NpuFaultLevel;
  /**
   * Identifies this instance of (NPU, code): the reported fault time (a new occurrence has a new
   * one). The time that counts is ClusterD's FaultReceivedTime, the controller's clock when it first
   * sees the instance, which `observe` takes (`nowMs`).
   */
  readonly receivedMs: number;
  /** The job using the NPU (huawei.com/AscendReal); undefined = no job, the fault is ignored. */
  readonly jobKey?: string;
}

/** One node's value in clusterd-manual-info-cm (docs/formats.md#manual-info). */
export interface ManualInfoNode {
  readonly Total: readonly string[];
  readonly Detail: Readonly<Record<string, ReadonlyArray<{ readonly FaultCode: string; readonly FaultLevel: string; readonly LastSeparateTime: number }>>>;
}

export type ManualSeparationInput =
  /** Every fault of `node` in the processed device view (level-triggered). */
  | { readonly type: 'observe'; readonly node: string; readonly faults: readonly ManualFaultObservation[] }
  /** The `Total` lists currently in clusterd-manual-info-cm (absent ConfigMap = {}). */
  | { readonly type: 'manual-info'; readonly total: Readonly<Record<string, readonly string[]>> }
  /** At start-up without persisted state: take over the entries already in clusterd-manual-info-cm. */
  | { readonly type: 'adopt'; readonly info: Readonly<Record<string, ManualInfoNode>> }
  /** `kubectl clusterd release`: release the NPU's separations made at or before `beforeMs` and reset its counters. */
  | { readonly type: 'operator-release'; readonly node: string; readonly device: string; readonly beforeMs: number; readonly by: string };

export type ManualSeparationOutput =
  | { readonly type: 'software-fault'; readonly jobKey: string; readonly code: string; readonly devices: readonly string[]; readonly reasons: ReasonChain }
  | { readonly type: 'counted'; readonly node: string; readonly device: string; readonly code: string; readonly count: number; readonly reasons: ReasonChain }
  | { readonly type: 'separated' | 'renewed'; readonly node: string; readonly device: string; readonly code: string; readonly reasons: ReasonChain }
  | { readonly type: 'released'; readonly node: string; readonly device: string; readonly codes: readonly string[]; readonly cause: 'fault_free_hours' | 'operator' | 'disabled'; readonly reasons: ReasonChain };

const npuKey = (node: string, device: string): string => `${node}/${device}`;
const codeKey = (node: string, device: string, code: string): string => `${node}/${device}/${code}`;

class Work {
  lastSeen: Record<string, number>;
  pending: Record<string, { windowStartMs: number; faults: readonly ManualPendingFault[] }>;
  counters: Record<string, readonly number[]>;
  separated: Record<string, ManualSeparatedNpu>;
  readonly outputs: ManualSeparationOutput[] = [];
  readonly reasons: Reason[] = [];
  readonly policy: ManualSeparatePolicy;
  constructor(s: ManualSeparationState, policy: ManualSeparatePolicy) {
    this.lastSeen = { ...s.lastSeen };
    this.pending = { ...s.pending };
    this.counters = { ...s.counters };
    this.separated = { ...s.separated };
    this.policy = policy;
  }

  observe(node: string, faults: readonly ManualFaultObservation[], nowMs: number): void {
    const present = new Set<string>();
    for (const f of faults) {
      const key = codeKey(node, f.device, f.code);
      present.add(key);
      if (NOT_COUNTED.includes(f.level) || f.code === MANUALLY_SEPARATE_PSEUDO_CODE) continue;
      const seen = this.lastSeen[key];
      if (seen !== undefined && f.receivedMs <= seen) continue;
      this.lastSeen[key] = f.receivedMs;
      if (f.jobKey === undefined) {
        this.reasons.push(reason('manual-separation', `${key}: no job uses the NPU; not counted`, { code: f.code, level: f.level }));
        continue;
      }
      const q = this.pending[f.jobKey];
      // ClusterD's FaultReceivedTime (UpdateFaultReceiveTime): its own clock at first sight, not the
      // device plugin's fault_time; it becomes LastSeparateTime and starts the release window.
      const fault: ManualPendingFault = { node, device: f.device, code: f.code, atMs: nowMs };
      this.pending[f.jobKey] = { windowStartMs: q?.windowStartMs ?? nowMs, faults: [...(q?.faults ?? []), fault] };
    }
    for (const k of Object.keys(this.lastSeen)) if (k.startsWith(`${node}/`) && !present.has(k)) delete this.lastSeen[k];
  }

  judge(jobKey: string, nowMs: number): void {
    const q = this.pending[jobKey];
    if (q === undefined) return;
    delete this.pending[jobKey];
    const byCode = new Map<string, ManualPendingFault[]>();
    for (const f of q.faults) byCode.set(f.code, [...(byCode.get(f.code) ?? []), f]);
    for (const [code, fs] of byCode) {
      const software = fs.some((a) => fs.some((b) => npuKey(a.node, a.device) !== npuKey(b.node, b.device) && Math.abs(a.atMs - b.atMs) <= SOFTWARE_FAULT_WINDOW_MS));
      if (software) {
        const devices = [...new Set(fs.map((f) => npuKey(f.node, f.device)))].sort();
        const reasons = [reason('manual-separation', `code on ${devices.length} NPUs of job ${jobKey} within 30 s: software fault, not counted`, { code })];
        this.outputs.push({ type: 'software-fault', jobKey, code, devices, reasons });
        continue;
      }
      for (const f of fs) this.count(f, nowMs);
    }
  }

  count(f: ManualPendingFault, nowMs: number): void {
    const key = codeKey(f.node, f.device, f.code);
    const times = [...(this.counters[key] ?? []), f.atMs].filter((t) => t >= nowMs - MANUAL_HISTORY_MS).sort((a, b) => a - b).slice(-MAX_COUNTED);
    this.counters[key] = times;
    const { fault_threshold: threshold, fault_window_hours: hours } = this.policy.separate;
    const counted = reason('manual-separation', `hardware fault counted (${times.length} in history)`, { code: f.code });
    this.outputs.push({ type: 'counted', node: f.node, device: f.device, code: f.code, count: times.length, reasons: [counted] });
    const n = times.length;
    if (n < threshold) return;
    const span = (times[n - 1] ?? 0) - (times[n - threshold] ?? 0);
    if (span >= hours * HOUR_MS) return;
    const nk = npuKey(f.node, f.device);
    const npu = this.separated[nk] ?? { node: f.node, device: f.device, observedInCm: false, entries: [] };
    const had = npu.entries.some((e) => e.code === f.code);
    // As ClusterD (counter.go dealFrequencyFault): the count starts again from zero, so a renewal
    // takes `fault_threshold` new occurrences, and LastSeparateTime is the receive time of the
    // occurrence that reached the threshold, not the moment of the judgement.
    delete this.counters[key];
    const entries = [...npu.entries.filter((e) => e.code !== f.code), { code: f.code, lastSeparateTimeMs: f.atMs }].sort((a, b) => (a.code < b.code ? -1 : 1));
    this.separated[nk] = { ...npu, entries };
    const reasons = [
      counted,
      reason('manual-separation', `last ${threshold} hardware faults within ${span} ms < ${hours} h`, { code: f.code, level: 'ManuallySeparateNPU' }),
    ];
    this.outputs.push({ type: had ? 'renewed' : 'separated', node: f.node, device: f.device, code: f.code, reasons });
  }

  release(nk: string, cause: 'fault_free_hours' | 'operator' | 'disabled', codes: readonly string[], detail: string): void {
    const npu = this.separated[nk];
    if (npu === undefined) return;
    const remaining = npu.entries.filter((e) => !codes.includes(e.code));
    for (const c of codes) delete this.counters[codeKey(npu.node, npu.device, c)];
    if (remaining.length === 0) delete this.separated[nk];
    else this.separated[nk] = { ...npu, entries: remaining };
    const reasons = [reason('manual-separation', detail, { level: 'NormalNPU' })];
    this.outputs.push({ type: 'released', node: npu.node, device: npu.device, codes, cause, reasons });
  }

  advance(nowMs: number): void {
    for (const [job, q] of Object.entries(this.pending)) if (nowMs >= q.windowStartMs + SOFTWARE_FAULT_WINDOW_MS) this.judge(job, nowMs);
    const free = this.policy.release.fault_free_hours;
    if (free !== -1) {
      for (const [nk, npu] of Object.entries(this.separated)) {
        const due = npu.entries.filter((e) => nowMs - e.lastSeparateTimeMs >= free * HOUR_MS).map((e) => e.code);
        if (due.length > 0) this.release(nk, 'fault_free_hours', due, `no new separation for ${free} h`);
      }
    }
  }

  manualInfo(total: Readonly<Record<string, readonly string[]>>): void {
    for (const [nk, npu] of Object.entries(this.separated)) {
      const listed = total[npu.node]?.includes(npu.device) === true;
      if (listed && !npu.observedInCm) this.separated[nk] = { ...npu, observedInCm: true };
      if (!listed && npu.observedInCm) {
        for (const k of Object.keys(this.counters)) if (k.startsWith(`${nk}/`)) delete this.counters[k];
        this.release(nk, 'operator', npu.entries.map((e) => e.code), 'operator deleted the NPU from Total in clusterd-manual-info-cm');
      }
    }
  }

  operatorRelease(node: string, device: string, beforeMs: number, by: string): void {
    const nk = npuKey(node, device);
    const npu = this.separated[nk];
    if (npu === undefined) return;
    const codes = npu.entries.filter((e) => e.lastSeparateTimeMs <= beforeMs).map((e) => e.code);
    if (codes.length === 0) return;
    for (const c of codes) delete this.counters[codeKey(node, device, c)];
    this.release(nk, 'operator', codes, `released by ${by} with kubectl clusterd release at ${new Date(beforeMs).toISOString()}`);
  }

  adopt(info: Readonly<Record<string, ManualInfoNode>>, nowMs: number): void {
    for (const [node, v] of Object.entries(info)) {
      for (const device of v.Total) {
        const nk = npuKey(node, device);
        const detail = (v.Detail[device] ?? []).map((d) => ({ code: d.FaultCode, lastSeparateTimeMs: d.LastSeparateTime > 0 ? d.LastSeparateTime : nowMs }));
        const prev = this.separated[nk]?.entries ?? [];
        const byCode = new Map<string, number>();
        for (const e of [...prev, ...(detail.length > 0 ? detail : [{ code: '', lastSeparateTimeMs: nowMs }])]) {
          byCode.set(e.code, Math.max(byCode.get(e.code) ?? 0, e.lastSeparateTimeMs));
        }
        const entries = [...byCode].map(([code, lastSeparateTimeMs]) => ({ code, lastSeparateTimeMs })).sort((a, b) => (a.code < b.code ? -1 : 1));
        this.separated[nk] = { node, device, observedInCm: true, entries };
      }
    }
  }

  deadline(): number | undefined {
    let d: number | undefined;
    for (const q of Object.values(this.pending)) d = earliest(d, q.windowStartMs + SOFTWARE_FAULT_WINDOW_MS);
    const free = this.policy.release.fault_free_hours;
    if (free !== -1) for (const npu of Object.values(this.separated)) for (const e of npu.entries) d = earliest(d, e.lastSeparateTimeMs + free * HOUR_MS);
    return d;
  }

  state(): ManualSeparationState {
    return { lastSeen: this.lastSeen, pending: this.pending, counters: this.counters, separated: this.separated };
  }
}

/** The manual-separation policy: `(state, input, nowMs, manually_separate_policy) -> step`. */
export function manualSeparationPolicy(
  state: ManualSeparationState,
  input: ManualSeparationInput | Tick | ConfigChange<ManualSeparatePolicy>,
  nowMs: number,
  policy: ManualSeparatePolicy,
): PolicyStep<ManualSeparationState, ManualSeparationOutput> {
  const w = new Work(state, policy);
  if (!policy.enabled) {
    for (const nk of Object.keys(w.separated)) w.release(nk, 'disabled', w.separated[nk]?.entries.map((e) => e.code) ?? [], 'manual separation policy disabled');
    if (input.type !== 'config' && input.type !== 'tick') w.reasons.push(reason('manual-separation', `policy disabled; ${input.type} ignored`));
    return { state: { lastSeen: {}, pending: {}, counters: {}, separated: {} }, outputs: w.outputs, reasons: w.reasons, nextDeadlineMs: undefined };
  }
  w.advance(nowMs);
  switch (input.type) {
    case 'observe':
      w.observe(input.node, input.faults, nowMs);
      break;
    case 'manual-info':
      w.manualInfo(input.total);
      break;
    case 'adopt':
      w.adopt(input.info, nowMs);
      break;
    case 'operator-release':
      w.operatorRelease(input.node, input.device, input.beforeMs, input.by);
      break;
    case 'config':
    case 'tick':
      break;
  }
  w.advance(nowMs);
  return { state: w.state(), outputs: w.outputs, reasons: w.reasons, nextDeadlineMs: w.deadline() };
}

/** The desired clusterd-manual-info-cm content: node -> {Total, Detail}; nodes with nothing are absent (the CM is deleted when empty). */
export function manualInfoView(state: ManualSeparationState): Record<string, ManualInfoNode> {
  const out: Record<string, { Total: string[]; Detail: Record<string, Array<{ FaultCode: string; FaultLevel: string; LastSeparateTime: number }>> }> = {};
  const npus = Object.values(state.separated).sort((a, b) => (npuKey(a.node, a.device) < npuKey(b.node, b.device) ? -1 : 1));
  for (const npu of npus) {
    const n = (out[npu.node] ??= { Total: [], Detail: {} });
    n.Total.push(npu.device);
    n.Detail[npu.device] = npu.entries.map((e) => ({ FaultCode: e.code, FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: e.lastSeparateTimeMs }));
  }
  return out;
}

/** NPUs to inject into cluster-info as ManuallySeparateNPU CardUnhealthy faults. */
export function manuallySeparatedDevices(state: ManualSeparationState): Array<{ node: string; device: string; level: 'ManuallySeparateNPU'; codes: string[]; reasons: ReasonChain }> {
  return Object.values(state.separated).map((npu) => ({
    node: npu.node,
    device: npu.device,
    level: 'ManuallySeparateNPU' as const,
    codes: npu.entries.map((e) => e.code),
    reasons: [reason('manual-separation', `separated for ${npu.entries.map((e) => e.code).join(',')} since ${Math.max(...npu.entries.map((e) => e.lastSeparateTimeMs))}`, { level: 'ManuallySeparateNPU' })],
  }));
}
