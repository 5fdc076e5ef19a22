/**
 * The scheduler-view filter chain of one node (docs/rules.md#filter.chain-order to #filter.stress-test, #filter.two-views), in ClusterD's
 * order: custom filter (docs/rules.md#filter.custom, with the MindIE 60 s RestartRequest hold docs/rules.md#filter.mindie-hold) -> UCE-accompany (docs/rules.md#filter.uce-accompany) ->
 * step retry (docs/rules.md#filter.step-retry, the recovery FSM's view, passed in as a stage) -> recover-in-place (docs/rules.md#filter.recover-in-place) ->
 * stress test (docs/rules.md#filter.stress-test). Pre-separate (docs/rules.md#ingest.pre-separate) is not a hide filter; policy/faults/fault-policy-view.ts applies it to the
 * rendered cluster view.
 *
 * A function of its inputs (no I/O, no clock): fault-filters.controller.ts gathers the job facts,
 * keeps the UCE-accompany memory, logs transitions and arms the re-check timers. What it returns:
 * - `visible`: the scheduler view (cluster-info, the jobs pipeline's decisions, node isolation);
 * - `hidden`: faults kept from the scheduler until `untilMs` (or while their inputs stay the same);
 *   they stay in the job view (recovery FSM, fault gRPC subscribers) and reach the job pipeline as
 *   `hidden` (docs/rules.md#decision.hidden-by-filter);
 * - `dropped`: faults suppressed for good (an AIC/AIV error accompanying a UCE);
 * - `relevelled` / `reported`: what passed but was touched (a re-level, a hold that ran out).
 */
import { faultKey, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import type { LeveledFault } from '../faults/fault-level.ts';
import { PASS, type FaultFilter, type FILTER_CHAIN_ORDER, type FilterVerdict } from './filters.ts';
import { customFilterVerdict, type CustomFilterRules } from './custom-filter.ts';
import { uceAccompany, type UceAccompanyState } from './uce-accompany.ts';
import { recoverInPlaceVerdicts, type PodRankFaults, type RecoverInPlaceJob } from './recover-in-place-filter.ts';
import { stressTestVerdict } from './stress-test-filter.ts';
import { HCCL_RETRY_CODE, linkDownRecord, STEP_RETRY_FAULT_WINDOW_MS } from './step-retry-filter.ts';
import type { LinkDownEntry } from '../../schemas/escalation-state/escalation-state.ts';
import { earliest } from '../policy-operator.ts';
import { reason, type ReasonChain, type RuleName } from '../reasons.ts';
import { npuId, type JobPodView } from '../jobs/job-view.ts';

export type FilterName = (typeof FILTER_CHAIN_ORDER)[number];

/** What the per-job filters need to know about one job. */
export interface FilterJob {
  readonly key: string;
  readonly uid: string;
  readonly pods: readonly JobPodView[];
  /** From the PodGroup annotations (and the MindIE hold). */
  readonly rules: CustomFilterRules;
  readonly recoverInPlace: RecoverInPlaceJob;
  /** When the job reported a pod rank as having to exit (recover-in-place), if known. */
  readonly mustExitReportedMs?: (podRank: number) => number | undefined;
}

export interface FilterOutcome {
  readonly record: FaultRecord;
  readonly by: FilterName;
  readonly reasons: ReasonChain;
  /** hidden: when to look again (undefined: while the inputs stay the same). */
  readonly untilMs?: number;
  /** relevelled: the level before. */
  readonly from?: NpuFaultLevel;
}

export interface NodeFilterInput {
  readonly node: string;
  /** The node's records after the fault policy (levels, escalation, manual separation). */
  readonly records: readonly FaultRecord[];
  readonly nowMs: number;
  /** Jobs with pods on this node. */
  readonly jobs: readonly FilterJob[];
  /** UCE-accompany memory of this node. */
  readonly uce: UceAccompanyState;
  /** UCEs reported over the business plane for this node. */
  readonly businessUce?: ReadonlyArray<{ readonly device: string; readonly atMs: number }>;
  /** The step-retry stage (recovery-step-retry.ts): records in, scheduler view out. */
  readonly stepRetry?: (records: readonly FaultRecord[]) => readonly FaultRecord[];
  /** UB switch link-downs remembered (any node, inside --link-down-memory-seconds): policy/filters/step-retry-filter.ts. */
  readonly linkDowns?: readonly LinkDownEntry[];
  /** A job's records on another node after the stages before recover-in-place. */
  readonly otherNode?: (node: string) => readonly FaultRecord[];
  readonly stressTestNodes?: ReadonlySet<string>;
  /**
   * ClusterD (--trust-pod-npu-annotations): the first job whose pod names a chip applies its filter
   * to it, contested or not. Default: a job's filters withhold only what it alone holds.
   */
  readonly openClaims?: boolean;
}

export interface NodeFilterResult {
  readonly visible: readonly FaultRecord[];
  readonly hidden: readonly FilterOutcome[];
  readonly dropped: readonly FilterOutcome[];
  readonly relevelled: readonly FilterOutcome[];
  /** Passed with a filter's reason (a hold that ran out, an AIC/AIV error with no UCE). */
  readonly reported: readonly FilterOutcome[];
  readonly uce: UceAccompanyState;
  readonly recheckAtMs: number | undefined;
}

const DEVICE_SOURCES: ReadonlySet<string> = new Set(['npu', 'network', 'public']);
const L2_L3: ReadonlySet<string> = new Set(['RestartRequest', 'RestartBusiness']);
const FILTER_RULES: Readonly<Partial<Record<RuleName, FilterName>>> = {
  'custom-filter': 'custom-filter',
  'mindie-restart-request-hold': 'custom-filter',
  'uce-accompany': 'uce-accompany',
  'step-retry': 'step-retry',
  'recover-in-place': 'recover-in-place',
  'stress-test': 'stress-test',
};

const leveled = (r: FaultRecord): LeveledFault => ({ fault: r, level: r.level, reasons: [] });
const live = (p: JobPodView): boolean => p.terminating !== true && p.phase !== 'Succeeded' && p.phase !== 'Failed';
export const holdsDevice = (p: JobPodView, device: string): boolean => p.npus.some((n) => n === device || npuId(n) === npuId(device));

/** The filter that produced a verdict: the last filter rule of its chain. */
function byOf(reasons: ReasonChain, fallback: FilterName): FilterName {
  for (let i = reasons.length - 1; i >= 0; i--) {
    const f = FILTER_RULES[reasons[i]!.rule];
    if (f !== undefined) return f;
  }
  return fallback;
}

/** Does this record hit this pod (its NPU, or node-wide on its node)? */
export function hitsPod(r: FaultRecord, p: JobPodView): boolean {
  if (p.node === undefined || p.node !== r.node || p.npus.length === 0) return false;
  return r.device === undefined || r.source === 'node' || r.source === 'switch' ? true : holdsDevice(p, r.device);
}

/** The level of the custom-filter reason on a contested chip's fault (it passes). */
export const CONTESTED = 'contested';

/** Jobs with a live pod on `node` whose (counted) claim names `device`. */
export const chipHolders = (node: string, device: string, jobs: readonly FilterJob[]): FilterJob[] =>
  jobs.filter((j) => j.pods.some((p) => p.node === node && live(p) && holdsDevice(p, device)));

/** Jobs with a live pod holding NPUs on `node`. */
const npuJobsOn = (node: string, jobs: readonly FilterJob[]): FilterJob[] =>
  jobs.filter((j) => j.pods.some((p) => p.node === node && live(p) && p.npus.length > 0));

/**
 * May this job's filter withhold this record? Only what the job alone holds: a chip no other job's
 * pod on the node claims, or a node-wide record on a node where it is the only NPU job. A chip two
 * jobs claim is contested (kubelet never gives one chip to two live pods, so one claim is forged):
 * no filter hides its faults, every claimant sees them. `openClaims` (ClusterD): no such check.
 */
function ownedBy(job: FilterJob, r: FaultRecord, jobs: readonly FilterJob[], openClaims: boolean): boolean {
  if (openClaims) return true;
  const others = r.device !== undefined && DEVICE_SOURCES.has(r.source) ? chipHolders(r.node, r.device, jobs) : npuJobsOn(r.node, jobs);
  return others.every((j) => j.key === job.key);
}

/** docs/rules.md#filter.custom, #filter.mindie-hold: the custom-filter verdict of one record on this node. */
function customVerdict(f: LeveledFault, node: string, jobs: readonly FilterJob[], nowMs: number, openClaims: boolean): FilterVerdict {
  const r = f.fault;
  if (r.device !== undefined && DEVICE_SOURCES.has(r.source)) {
    const holders = chipHolders(node, r.device, jobs);
    const first = holders[0];
    if (first === undefined) return PASS;
    if (openClaims || holders.length === 1) return customFilterVerdict(f, first.rules, nowMs);
    const vs = holders.map((j) => customFilterVerdict(f, j.rules, nowMs));
    if (!vs.some((v) => v.action === 'hide')) return vs[0]!;
    const detail = `chip ${r.device} on ${node} is claimed by pods of ${holders.length} jobs (${holders.map((j) => j.key).join(', ')}): no job's filter hides its faults`;
    return { action: 'pass', reasons: [reason('custom-filter', detail, { code: r.code, level: CONTESTED })] };
  }
  if (r.source !== 'switch') return PASS;
  // A UB switch fault acts on the whole node: hidden only when every NPU job on the node hides it.
  const onNode = jobs.filter((j) => j.pods.some((p) => p.node === node && live(p) && p.npus.length > 0));
  if (onNode.length === 0) return PASS;
  const vs = onNode.map((j) => customFilterVerdict(f, j.rules, nowMs));
  const shown = vs.find((v) => v.action !== 'hide');
  if (shown !== undefined) return shown;
  const until = (v: FilterVerdict): number => (v.action === 'hide' ? (v.untilMs ?? Infinity) : Infinity);
  return [...vs].sort((a, b) => until(a) - until(b))[0] ?? PASS;
}

/** docs/rules.md#filter.recover-in-place: hide verdicts (faultKey -> verdict) for the L2/L3 faults on this node of recover-in-place jobs. */
function recoverInPlace(node: string, current: readonly LeveledFault[], i: NodeFilterInput): Map<string, FilterVerdict> {
  const open = i.openClaims === true;
  const out = new Map<string, FilterVerdict>();
  for (const job of i.jobs) {
    if (!job.recoverInPlace.recoverInPlace) continue;
    const here = job.pods.filter((p) => p.node === node && live(p) && p.rank !== undefined);
    if (here.length === 0 || !current.some((f) => L2_L3.has(f.level) && here.some((p) => hitsPod(f.fault, p)))) continue;
    const ranks: PodRankFaults[] = [];
    for (const p of job.pods) {
      if (p.rank === undefined || p.node === undefined || !live(p)) continue;
      const faults = p.node === node ? current : (i.otherNode?.(p.node) ?? []).map(leveled);
      const exit = job.mustExitReportedMs?.(p.rank);
      ranks.push({ podRank: p.rank, faults: faults.filter((f) => hitsPod(f.fault, p)), ...(exit === undefined ? {} : { mustExitReportedMs: exit }) });
    }
    const verdicts = recoverInPlaceVerdicts(job.recoverInPlace, ranks, i.nowMs);
    for (const r of ranks) {
      const pod = here.find((p) => p.rank === r.podRank);
      if (pod === undefined) continue;
      const vs = verdicts.get(r.podRank) ?? [];
      r.faults.filter((f) => L2_L3.has(f.level)).forEach((f, k) => {
        const v = vs[k];
        if (v !== undefined && f.fault.node === node && ownedBy(job, f.fault, i.jobs, open)) out.set(faultKey(f.fault), v);
      });
    }
  }
  return out;
}

interface Stopped {
  readonly fault: LeveledFault;
  readonly verdict: FilterVerdict;
  readonly reasons: ReasonChain;
}

/** ClusterD's chain semantics (policy/filters/filters.ts applyFilters), keeping each deciding verdict: the first hide/drop wins; relevels accumulate. */
function chain(faults: readonly LeveledFault[], filters: readonly FaultFilter[]): { visible: LeveledFault[]; stopped: Stopped[] } {
  const visible: LeveledFault[] = [];
  const stopped: Stopped[] = [];
  for (const original of faults) {
    let f = original;
    let stop: Stopped | undefined;
    for (const filter of filters) {
      const v = filter(f);
      if (v.action === 'pass' || v.action === 'relevel') {
        f = { ...f, ...(v.action === 'relevel' ? { level: v.level } : {}), reasons: [...f.reasons, ...v.reasons] };
        continue;
      }
      stop = { fault: f, verdict: v, reasons: [...f.reasons, ...v.reasons] };
      break;
    }
    if (stop === undefined) visible.push(f);
    else stopped.push(stop);
  }
  return { visible, stopped };
}

const levelled = (f: LeveledFault): FaultRecord => (f.fault.level === f.level ? f.fault : { ...f.fault, level: f.level });

function outcome(s: Stopped, fallback: FilterName): FilterOutcome {
  const untilMs = s.verdict.action === 'hide' ? s.verdict.untilMs : undefined;
  return { record: levelled(s.fault), by: byOf(s.reasons, fallback), reasons: s.reasons, ...(untilMs === undefined ? {} : { untilMs }) };
}

/**
 * docs/rules.md#filter.step-retry: an HCCL retry of a step-retry job that the step retry did not absorb
 * (the stage re-levelled it) with a switch link-down remembered on one of the job's nodes keeps its
 * level, and the link-down remembered on its own node, no longer reported, is forced in again
 * (ClusterD's retry_fault_processor.go addRetryFault). Undefined: no link-down known, the re-level stands.
 */
function linkDownStage(f: LeveledFault, current: readonly LeveledFault[], i: NodeFilterInput): { fault: LeveledFault; forced: LeveledFault[] } | undefined {
  const r = f.fault;
  if (r.code.toUpperCase() !== HCCL_RETRY_CODE || r.device === undefined || (i.linkDowns ?? []).length === 0) return undefined;
  const nodes = new Set(chipHolders(r.node, r.device, i.jobs).flatMap((j) => j.pods.filter(live).flatMap((p) => (p.node === undefined ? [] : [p.node]))));
  const known = (i.linkDowns ?? []).filter((l) => nodes.has(l.node));
  if (known.length === 0) return undefined;
  const why = reason('step-retry', `HCCL retry not absorbed, link-down remembered on ${known.map((l) => l.node).join(', ')}: level kept`, { code: r.code, level: f.level });
  const forced = known.filter((l) => l.node === r.node).map(linkDownRecord)
    .filter((x) => !current.some((c) => faultKey(c.fault) === faultKey(x)))
    .map((x) => ({ fault: x, level: x.level, reasons: [reason('step-retry', `switch link-down last reported within the link-down memory: forced in on the HCCL retry of ${r.device}`, { code: x.code, level: x.level })] }));
  return { fault: { ...f, reasons: [...f.reasons, why] }, forced };
}

/** Runs the chain over one node's records. */
export function filterNode(i: NodeFilterInput): NodeFilterResult {
  const { node, nowMs } = i;
  const all = i.records.map(leveled);
  const uce = uceAccompany(i.uce, { node, faults: all, ...(i.businessUce ? { businessUce: i.businessUce } : {}) }, nowMs);
  if (i.records.length === 0) return { visible: i.records, hidden: [], dropped: [], relevelled: [], reported: [], uce: uce.state, recheckAtMs: undefined };

  // Custom filter, then UCE-accompany.
  const stage1 = chain(all, [
    (f) => customVerdict(f, node, i.jobs, nowMs, i.openClaims === true),
    (f) => uce.verdicts.get(faultKey(f.fault)) ?? PASS,
  ]);
  const hidden: FilterOutcome[] = stage1.stopped.filter((s) => s.verdict.action === 'hide').map((s) => outcome(s, 'custom-filter'));
  const dropped: FilterOutcome[] = stage1.stopped.filter((s) => s.verdict.action === 'drop').map((s) => outcome(s, 'uce-accompany'));
  const relevelled: FilterOutcome[] = [];
  let current: LeveledFault[] = stage1.visible;

  // Step retry: whatever the recovery FSM's view leaves out is hidden; a changed level is a re-level,
  // unless a switch link-down is remembered on the job's nodes (then forced in: linkDownStage).
  const forced: LeveledFault[] = [];
  if (i.stepRetry !== undefined && current.length > 0) {
    const out = new Map(i.stepRetry(current.map(levelled)).map((r) => [faultKey(r), r]));
    const next: LeveledFault[] = [];
    for (const f of current) {
      const r = out.get(faultKey(f.fault));
      const kept = r !== undefined && r.level !== f.level ? linkDownStage(f, current, i) : undefined;
      if (r === undefined) {
        const end = f.fault.firstSeenMs + STEP_RETRY_FAULT_WINDOW_MS + 1;
        const why = end > nowMs ? 'retry fault younger than 10 s; waiting for the step retry' : 'the recovery FSM holds the step retry (RecoverTime reported)';
        hidden.push({ record: levelled(f), by: 'step-retry', reasons: [...f.reasons, reason('step-retry', why, { code: f.fault.code, level: 'hidden' })], ...(end > nowMs ? { untilMs: end } : {}) });
      } else if (kept !== undefined) {
        next.push(kept.fault);
        for (const x of kept.forced) if (!forced.some((y) => faultKey(y.fault) === faultKey(x.fault))) forced.push(x);
      } else if (r.level !== f.level) {
        const reasons = [...f.reasons, reason('step-retry', 'HCCL retry not absorbed by the step retry', { code: f.fault.code, level: r.level })];
        relevelled.push({ record: { ...f.fault, level: r.level }, by: 'step-retry', reasons, from: f.level });
        next.push({ fault: f.fault, level: r.level, reasons });
      } else next.push(f);
    }
    current = [...next, ...forced];
  }

  // Recover-in-place, then stress test.
  const rip = current.some((f) => L2_L3.has(f.level)) ? recoverInPlace(node, current, i) : new Map<string, FilterVerdict>();
  const stress = i.stressTestNodes;
  const stage3 = chain(current, [
    (f) => rip.get(faultKey(f.fault)) ?? PASS,
    (f) => (stress === undefined ? PASS : stressTestVerdict(f, stress)),
  ]);
  for (const s of stage3.stopped) (s.verdict.action === 'hide' ? hidden : dropped).push(outcome(s, 'recover-in-place'));

  const reported: FilterOutcome[] = stage3.visible
    .filter((f) => f.reasons.some((x) => FILTER_RULES[x.rule] !== undefined))
    .map((f) => ({ record: levelled(f), by: byOf(f.reasons, 'custom-filter'), reasons: f.reasons }));
  let recheck = uce.nextDeadlineMs;
  for (const h of hidden) recheck = earliest(recheck, h.untilMs);
  return { visible: stage3.visible.map(levelled), hidden, dropped, relevelled, reported, uce: uce.state, recheckAtMs: recheck };
}
