/**
 * The controller's own per-job decision state: `mindx-dl/clusterd-ts-job-state-<jobUid>`, data key
 * `job-state.json`, label `clusterd-ts.io/job-state=true`. One ConfigMap per job (not one for all
 * jobs): a 1,000-pod restart holds 1,000 pod UIDs, and per-job objects never contend with each other.
 *
 * It holds the policy's JobRescheduleState (restart generation, running restart, retry budget, acted
 * decision ids) and, between "decided" and "done", the *pending* decision: the resolved actions to
 * carry out. The controller writes it BEFORE acting and clears `pending` after; a restart or a replay
 * finds the pending actions and finishes them (deletes carry UID preconditions, so finishing twice
 * deletes nothing twice), and never decides the same restart again (docs/rules.md#resched.lifecycle).
 *
 * Encoding: Go-compatible JSON (schemas/go-json.ts) of objects rebuilt in one fixed field order, so
 * an unchanged state encodes to unchanged bytes and the writer writes nothing.
 */
import { goJson } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed } from '../parsed.ts';
import { validate as generated } from './job-state.validators.gen.ts';
import type {
  ActiveRestart, B6Row, DecisionKind, DecisionPhase, EvictionReason, JobAction, JobRescheduleState, PodRef, RescheduleTaskReason,
} from '../../vocabulary/job-decision-state.ts';

export const JOB_STATE_NAMESPACE = 'mindx-dl';
export const JOB_STATE_CM_PREFIX = 'clusterd-ts-job-state-';
export const JOB_STATE_KEY = 'job-state.json';
export const JOB_STATE_LABELS = { 'clusterd-ts.io/job-state': 'true', 'app.kubernetes.io/managed-by': 'clusterd-ts' } as const;
export const JOB_STATE_VERSION = 1;
export const MAX_JOB_STATE_CHARS = 1024 * 1024;

/**
 * The journal (shared, so a storm costs few writes): every job's record lives under the data key `<jobUid>` of one of a few
 * shared ConfigMaps `mindx-dl/clusterd-ts-job-journal-<n>` (same record bytes as `job-state.json`),
 * so the decisions of one storm are written ahead together in one write. A job stays in its shard
 * until its record no longer fits; it then moves to a higher shard, and a reader takes the highest
 * shard holding the uid. The per-job ConfigMaps above are read as a fallback (written by versions
 * before the journal) and deleted when their job goes.
 */
export const JOB_JOURNAL_CM_PREFIX = 'clusterd-ts-job-journal-';
export const JOB_JOURNAL_LABELS = { 'clusterd-ts.io/job-journal': 'true', 'app.kubernetes.io/managed-by': 'clusterd-ts' } as const;
/** A shard takes a new or grown record while it stays below this (the apiserver's limit is 1 MiB). */
export const JOB_JOURNAL_SHARD_CHARS = 640 * 1024;
export const journalCmName = (shard: number): string => `${JOB_JOURNAL_CM_PREFIX}${shard}`;
export const journalShardOf = (name: string): number | undefined => {
  if (!name.startsWith(JOB_JOURNAL_CM_PREFIX)) return undefined;
  const n = name.slice(JOB_JOURNAL_CM_PREFIX.length);
  return /^(0|[1-9]\d{0,4})$/.test(n) ? Number(n) : undefined;
};

export const jobStateCmName = (jobUid: string): string => `${JOB_STATE_CM_PREFIX}${jobUid}`;

/** RFC 6901: `~` and `/` in a JSON Pointer segment. */
const pointerSegment = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The command that drops one job's record and nothing else: in a journal shard (shared by many
 * jobs) a JSON patch removing that one data key; an old per-job ConfigMap is that job's alone.
 * Keys here are ConfigMap keys (`[-._a-zA-Z0-9]`), safe inside the single quotes.
 */
export function dropRecordCommand(where: { readonly name: string; readonly key: string; readonly shared: boolean }): string {
  if (!where.shared) return `kubectl -n ${JOB_STATE_NAMESPACE} delete configmap ${where.name}`;
  return `kubectl -n ${JOB_STATE_NAMESPACE} patch configmap ${where.name} --type=json -p '[{"op":"remove","path":"/data/${pointerSegment(where.key)}"}]'`;
}
export const jobUidOfStateCm = (name: string): string | undefined =>
  name.startsWith(JOB_STATE_CM_PREFIX) && name.length > JOB_STATE_CM_PREFIX.length ? name.slice(JOB_STATE_CM_PREFIX.length) : undefined;

/**
 * An action as it is persisted and executed: the policy's JobAction with `bumpResetConfigRetryTime`
 * resolved to an absolute value before it is recorded (`RetryTime+1` replayed twice would be +2).
 */
export type ExecAction =
  | Exclude<JobAction, { readonly type: 'bumpResetConfigRetryTime' }>
  | { readonly type: 'podRescheduledResetConfig'; readonly retryTime: number; readonly updateTimeS: number };

/** A decision recorded but not yet (fully) carried out. */
export interface PendingDecision {
  readonly decisionId: string;
  readonly atMs: number;
  readonly kind: DecisionKind;
  readonly phase: DecisionPhase;
  readonly row?: B6Row;
  /** The reason chain, for the Event and the log of a replay. */
  readonly chain: string;
  /** Earliest first-seen time of the faults behind it (fault-to-action metric); 0 = unknown. */
  readonly faultSinceMs: number;
  readonly actions: readonly ExecAction[];
}

export interface JobStateRecord {
  readonly version: number;
  /** `<ns>/<jobName>-<uid>`. */
  readonly jobKey: string;
  readonly jobUid: string;
  readonly state: JobRescheduleState;
  readonly pending?: PendingDecision;
}

const podRef = (p: PodRef): PodRef => ({ name: p.name, uid: p.uid, ...(p.node === undefined ? {} : { node: p.node }) });
const taskReason = (t: RescheduleTaskReason): RescheduleTaskReason =>
  ({ RescheduleReason: t.RescheduleReason, PodName: t.PodName, NodeName: t.NodeName, NodeRankIndex: t.NodeRankIndex });
const eviction = (e: EvictionReason): EvictionReason =>
  ({ podName: e.podName, nodeName: e.nodeName, rank: e.rank, faultType: e.faultType, faultCode: e.faultCode, faultLevel: e.faultLevel });
const opt = <K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } => (v === undefined ? {} : ({ [k]: v } as { [P in K]?: V }));

function active(a: ActiveRestart): ActiveRestart {
  return {
    decisionId: a.decisionId, kind: a.kind, row: a.row, scope: a.scope, mode: a.mode, startedMs: a.startedMs,
    targets: a.targets.map(podRef), minAvailable: a.minAvailable, jobReason: a.jobReason,
    countsAgainstBudget: a.countsAgainstBudget, resetGracefulExit: a.resetGracefulExit, bumpRetryTimeOnSuccess: a.bumpRetryTimeOnSuccess,
    ...opt('escalationBlock', a.escalationBlock), ...opt('pendingSinceMs', a.pendingSinceMs), ...opt('forcedAtMs', a.forcedAtMs),
    ...opt('pendingCarryMs', a.pendingCarryMs), ...(a.widened === undefined ? {} : { widened: [...a.widened] }),
    reasonTasks: a.reasonTasks.map(taskReason), evictionReasons: a.evictionReasons.map(eviction),
  };
}

/** The state rebuilt in the fixed field order. */
export function canonicalState(s: JobRescheduleState): JobRescheduleState {
  return {
    jobUid: s.jobUid, generation: s.generation,
    ...(s.retry === undefined ? {} : { retry: { uid: s.retry.uid, times: s.retry.times } }),
    ...(s.active === undefined ? {} : { active: active(s.active) }),
    acted: [...s.acted],
    ...(s.hotSwitchDowngraded === true ? { hotSwitchDowngraded: true } : {}),
  };
}

export function canonicalAction(a: ExecAction): ExecAction {
  switch (a.type) {
    case 'evictPods':
    case 'forceDeletePods':
      return { type: a.type, pods: a.pods.map(podRef), reasons: a.reasons.map(eviction) };
    case 'annotatePodStatus':
      return { type: a.type, pod: podRef(a.pod), value: a.value };
    case 'setGracefulExit':
      return { type: a.type, value: a.value };
    case 'podRescheduledResetConfig':
      return { type: a.type, retryTime: a.retryTime, updateTimeS: a.updateTimeS };
    case 'recordRescheduleReason':
      return { type: a.type, atMs: a.atMs, tasks: a.tasks.map(taskReason) };
    case 'handOffProcessRecovery':
      return { type: a.type, faultRanks: a.faultRanks.map((r) => ({
        ...opt('podRank', r.podRank), pod: podRef(r.pod), ...opt('node', r.node), devices: [...r.devices], codes: [...r.codes], ...opt('level', r.level),
      })) };
    case 'handOffHotSwitch':
      return { type: a.type, pod: podRef(a.pod), ...opt('podRank', a.podRank) };
  }
}

function canonicalPending(p: PendingDecision): PendingDecision {
  return {
    decisionId: p.decisionId, atMs: p.atMs, kind: p.kind, phase: p.phase, ...opt('row', p.row), chain: p.chain,
    faultSinceMs: p.faultSinceMs, actions: p.actions.map(canonicalAction),
  };
}

/** The `job-state.json` bytes. */
export function encodeJobState(r: JobStateRecord): string {
  return goJson({
    version: r.version, jobKey: r.jobKey, jobUid: r.jobUid, state: canonicalState(r.state),
    ...(r.pending === undefined ? {} : { pending: canonicalPending(r.pending) }),
  });
}

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated;

/** Parses `job-state.json`. Never throws. */
export function parseJobState(text: string | undefined): Parsed<JobStateRecord> {
  if (typeof text !== 'string') return rejected(`${JOB_STATE_KEY}: missing`);
  const p = parseValidated(JOB_STATE_KEY, text, validate, { maxChars: MAX_JOB_STATE_CHARS });
  if (!p.ok) return p;
  const r = p.value as unknown as JobStateRecord;
  if (r.version !== JOB_STATE_VERSION) return rejected(`${JOB_STATE_KEY}: unsupported version ${String(r.version)}`);
  if (r.state.jobUid !== r.jobUid) return rejected(`${JOB_STATE_KEY}: state belongs to ${r.state.jobUid}, not ${r.jobUid}`);
  return ok({ ...r, state: canonicalState(r.state), ...(r.pending === undefined ? {} : { pending: canonicalPending(r.pending) }) });
}
