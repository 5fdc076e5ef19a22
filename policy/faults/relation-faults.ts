/**
 * Relation (associated) faults (docs/rules.md#job.relation-faults, docs/formats.md#clusterd-config-files): a network fault on a job's
 * device (81078603) or UB switch (`[0x08520003,na,L2,na]`) waits up to its TimeOutInterval (300 s) for
 * a trigger fault on the same job (HCCL/CQE errors). When a rule's trigger and all its relation codes
 * are present, the relation fault's node gets the rule's strategy; on the job's pod there the controller
 * sets the label `fault-type=Separate|SubHealth` (Volcano maps Separate to RelationFaultSeparate).
 * On timeout without a match: a switch fault gives SubHealth for its node; a device fault gives
 * Separate only on an A3 job that saw a CQE trigger (8C1F8608/4C1F8608) inside the window; a fault
 * older than the job's first sight matches triggers but gets no such default (as ClusterD's
 * relation_fault_processor.go addFaultStrategyForTimeOutCode). Separate is sticky for the (job, node)
 * until `forget`.
 *
 * As ClusterD's relation_fault_processor.go (addFaultInfoByCodeType, preStartProcess, processNetworkFault):
 * - on an A3 job a CQE is only the late trigger above, never an immediate one;
 * - a relation fault no longer reported is `gone`: it meets only CQE triggers (non-A3 job) until its
 *   deadline and gets no default then; reported again (the step-retry filter forces a remembered
 *   switch link-down in on an HCCL retry, policy/filters/link-down-memory.ts) it is open again.
 */
import type { RelationCandidate, RelationJobState, RelationState, RelationStrategy, RelationTrigger } from '../../schemas/escalation-state/escalation-state.ts';
import type { LeveledFault } from './fault-level.ts';
import { earliest, type ConfigChange, type PolicyStep, type Tick } from '../policy-operator.ts';
import { reason, type Reason, type ReasonChain } from '../reasons.ts';
import { CQE_TRIGGER_CODES, type RelationFaultConfig } from './relation-fault-config.ts';

export type RelationInput =
  /** Every fault (any level) on the job's NPUs and on the UB switches of the job's nodes. */
  | { readonly type: 'observe'; readonly jobKey: string; readonly a3: boolean; readonly faults: readonly LeveledFault[] }
  /** The job is gone: drop its windows and strategies. */
  | { readonly type: 'forget'; readonly jobKey: string };

export interface RelationOutput {
  readonly type: 'strategy';
  readonly jobKey: string;
  readonly node: string;
  readonly strategy: RelationStrategy;
  readonly reasons: ReasonChain;
}

const up = (c: string): string => c.toUpperCase();
const sameFault = (a: { node: string; device: string | null; code: string; atMs: number }, b: typeof a): boolean =>
  a.node === b.node && a.device === b.device && up(a.code) === up(b.code) && a.atMs === b.atMs;

class Work {
  readonly jobs: Record<string, RelationJobState>;
  readonly outputs: RelationOutput[] = [];
  readonly reasons: Reason[] = [];
  readonly config: RelationFaultConfig;
  constructor(state: RelationState, config: RelationFaultConfig) {
    this.jobs = { ...state.jobs };
    this.config = config;
  }

  setStrategy(jobKey: string, job: RelationJobState, node: string, strategy: RelationStrategy, why: Reason[]): RelationJobState {
    const prev = job.strategies[node];
    if (prev === 'Separate' || prev === strategy) return job;
    this.outputs.push({ type: 'strategy', jobKey, node, strategy, reasons: why });
    return { ...job, strategies: { ...job.strategies, [node]: strategy } };
  }

  maxWindowMs(): number {
    return Math.max(0, ...this.config.durations.map((d) => d.TimeOutInterval * 1000));
  }

  observe(jobKey: string, a3: boolean, faults: readonly LeveledFault[], nowMs: number): void {
    let job: RelationJobState = this.jobs[jobKey] ?? { firstSeenMs: nowMs, a3, candidates: [], triggers: [], strategies: {} };
    job = { ...job, a3 };
    const triggerCodes = new Set([...this.config.rules.map((r) => up(r.TriggerFault)), ...CQE_TRIGGER_CODES]);
    const triggers: RelationTrigger[] = job.triggers.filter((t) => nowMs - t.atMs <= this.maxWindowMs());
    const reported = new Set(faults.map((f) => `${f.fault.node}/${f.fault.source === 'switch' ? '' : (f.fault.device ?? '')}/${up(f.fault.code)}@${f.fault.firstSeenMs}`));
    const candidates: RelationCandidate[] = job.candidates.map((c) => {
      const gone = !reported.has(`${c.node}/${c.device ?? ''}/${up(c.code)}@${c.atMs}`);
      if (gone === (c.gone === true)) return c;
      const { gone: _g, ...rest } = c;
      return gone ? { ...rest, gone: true } : rest;
    });
    for (const f of faults) {
      const device = f.fault.source === 'switch' ? null : (f.fault.device ?? null);
      const code = up(f.fault.code);
      const atMs = f.fault.firstSeenMs;
      if (triggerCodes.has(code)) {
        const t = { node: f.fault.node, device, code: f.fault.code, atMs };
        if (!triggers.some((x) => sameFault(x, t))) triggers.push(t);
      }
      const kind = f.fault.source === 'switch' ? 'faultSwitch' : 'faultDevice';
      const d = this.config.durations.find((x) => up(x.FaultCode) === code && x.FaultType === kind);
      if (d === undefined) continue;
      const c: RelationCandidate = { node: f.fault.node, device, code: f.fault.code, kind, atMs, deadlineMs: atMs + d.TimeOutInterval * 1000 };
      // A candidate stays until its deadline (matched or not); once the window is over it is not re-opened.
      if (c.deadlineMs > nowMs && !candidates.some((x) => sameFault(x, c))) candidates.push(c);
    }
    job = { ...job, triggers, candidates };
    job = this.match(jobKey, job, faults);
    this.jobs[jobKey] = job;
  }

  /**
   * Rules whose trigger is currently reported (inside the candidate's window) and whose relation codes
   * are all open candidates: reported ones, or gone ones for a CQE trigger. No CQE triggers on an A3 job.
   */
  match(jobKey: string, job: RelationJobState, faults: readonly LeveledFault[]): RelationJobState {
    let j = job;
    for (const rule of this.config.rules) {
      const cqe = CQE_TRIGGER_CODES.includes(up(rule.TriggerFault));
      if (cqe && j.a3) continue;
      const relation = rule.RelationFaults.map(up);
      const cands = j.candidates.filter((c) => relation.includes(up(c.code)) && (c.gone !== true || cqe));
      if (!relation.every((code) => cands.some((c) => up(c.code) === code))) continue;
      const trigger = faults.find((f) => {
        if (up(f.fault.code) !== up(rule.TriggerFault)) return false;
        return cands.some((c) => f.fault.firstSeenMs >= c.atMs - (c.deadlineMs - c.atMs) && f.fault.firstSeenMs <= c.deadlineMs);
      });
      if (trigger === undefined) continue;
      for (const c of cands) {
        const why = [
          reason('relation-fault', `relation fault ${c.code} on ${c.node}/${c.device ?? 'switch'} at ${c.atMs}`, { code: c.code }),
          reason('relation-fault', `trigger ${trigger.fault.code} on ${trigger.fault.node} at ${trigger.fault.firstSeenMs}`, { code: trigger.fault.code, level: rule.FaultStrategy }),
        ];
        j = this.setStrategy(jobKey, j, c.node, rule.FaultStrategy, why);
      }
    }
    return j;
  }

  advance(nowMs: number): void {
    for (const [jobKey, job0] of Object.entries(this.jobs)) {
      let job = job0;
      const due = job.candidates.filter((c) => nowMs >= c.deadlineMs);
      if (due.length === 0) continue;
      for (const c of due) {
        const timeout = reason('relation-fault', `${c.code} on ${c.node}/${c.device ?? 'switch'} waited ${(c.deadlineMs - c.atMs) / 1000} s without a matching trigger`, { code: c.code });
        // ClusterD's addFaultStrategyForTimeOutCode: no default strategy for a fault older than the
        // job's first sight (it still matched triggers while its window was open).
        if (c.gone === true) {
          this.reasons.push(timeout, reason('relation-fault', `${c.code} on ${c.node}/${c.device ?? 'switch'} is no longer reported: no default strategy`, { code: c.code }));
          continue;
        }
        if (c.atMs < job.firstSeenMs) {
          this.reasons.push(timeout, reason('relation-fault', `${c.code} on ${c.node}/${c.device ?? 'switch'} is older than the job's first sight: no default strategy`, { code: c.code }));
          continue;
        }
        if (c.kind === 'faultSwitch') {
          job = this.setStrategy(jobKey, job, c.node, 'SubHealth', [timeout, reason('relation-fault', 'switch link-down timed out: node sub-healthy', { code: c.code, level: 'SubHealth' })]);
          continue;
        }
        const cqe = job.triggers.find((t) => CQE_TRIGGER_CODES.includes(up(t.code)) && t.atMs >= c.atMs && t.atMs <= c.deadlineMs);
        if (job.a3 && cqe !== undefined) {
          job = this.setStrategy(jobKey, job, c.node, 'Separate', [timeout, reason('relation-fault', `A3 job saw CQE ${cqe.code} at ${cqe.atMs} inside the window`, { code: cqe.code, level: 'Separate' })]);
        } else {
          this.reasons.push(timeout);
        }
      }
      this.jobs[jobKey] = { ...job, candidates: job.candidates.filter((c) => !due.includes(c)) };
    }
  }

  step(): PolicyStep<RelationState, RelationOutput> {
    let deadline: number | undefined;
    for (const j of Object.values(this.jobs)) for (const c of j.candidates) deadline = earliest(deadline, c.deadlineMs);
    return { state: { jobs: this.jobs }, outputs: this.outputs, reasons: this.reasons, nextDeadlineMs: deadline };
  }
}

/** The relation-fault policy: `(state, input, nowMs, config) -> step`. */
export function relationFaultPolicy(
  state: RelationState,
  input: RelationInput | Tick | ConfigChange<RelationFaultConfig>,
  nowMs: number,
  config: RelationFaultConfig,
): PolicyStep<RelationState, RelationOutput> {
  const w = new Work(state, config);
  w.advance(nowMs);
  if (input.type === 'observe') w.observe(input.jobKey, input.a3, input.faults, nowMs);
  if (input.type === 'forget') delete w.jobs[input.jobKey];
  w.advance(nowMs);
  return w.step();
}

/** Node -> strategy for one job: the pod label `fault-type` to set on the job's pod on that node. */
export const relationStrategies = (state: RelationState, jobKey: string): Readonly<Record<string, RelationStrategy>> => state.jobs[jobKey]?.strategies ?? {};
