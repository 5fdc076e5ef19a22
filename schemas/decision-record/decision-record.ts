/**
 * `clusterd-ts.io/v1alpha1` DecisionRecord (CRD: charts/clusterd-ts/crds/decisionrecords.clusterd-ts.io.yaml):
 * one decision the controller took about a job, with its reason chain, in the job's namespace.
 *
 * Why a CRD and not a ConfigMap: one small object per decision (no read-modify-write of a shared
 * list, no 1 MiB ceiling, no conflicts between the 4 decision workers), printer columns and labels
 * for `kubectl get`, RBAC of its own (reading the history grants no ConfigMap access) and namespaced
 * with the job, so a user who may read a namespace may read its jobs' history.
 *
 * Idempotence: the object name is derived from the decision id and the outcome class, so recording a
 * replayed decision after a restart creates the same name and the apiserver answers 409: it is
 * recorded once. Bounds: every string and list is capped here (a record stays under ~8 KiB); the
 * number of records per job and in total, and their age, are bounded by the pruning reconciler.
 */
import { createHash } from 'node:crypto';
import type { DecisionKind } from '../../vocabulary/job-decision-state.ts';
import { decisionRule } from '../../vocabulary/rule-ids.ts';
import { ok, rejected, type Parsed } from '../parsed.ts';

export const DECISION_RECORD_GROUP = 'clusterd-ts.io';
export const DECISION_RECORD_VERSION = 'v1alpha1';
export const DECISION_RECORD_API_VERSION = `${DECISION_RECORD_GROUP}/${DECISION_RECORD_VERSION}`;
export const DECISION_RECORD_KIND = 'DecisionRecord';
export const DECISION_RECORD_PLURAL = 'decisionrecords';
export const DECISION_RECORD_CRD = `${DECISION_RECORD_PLURAL}.${DECISION_RECORD_GROUP}`;
/** Label: the job's name (vcjob / AscendJob metadata.name), when it is a valid label value. */
export const DECISION_JOB_LABEL = 'clusterd-ts.io/job';
export const DECISION_JOB_UID_LABEL = 'clusterd-ts.io/job-uid';
export const DECISION_OUTCOME_LABEL = 'clusterd-ts.io/outcome';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'clusterd-ts';

export const decisionRecordsPath = (namespace?: string): string =>
  namespace === undefined ? `/apis/${DECISION_RECORD_API_VERSION}/${DECISION_RECORD_PLURAL}` : `/apis/${DECISION_RECORD_API_VERSION}/namespaces/${namespace}/${DECISION_RECORD_PLURAL}`;
export const decisionRecordPath = (namespace: string, name: string): string => `${decisionRecordsPath(namespace)}/${name}`;

/**
 * What happened to the decision: acted (carried out, or persisted to be carried out: a replay after a
 * crash finishes it), held (decided but not acted on, the breaker's), no_action (a fault the job
 * sees that leads to nothing, a lifecycle step), already_acted, dry_run.
 */
export const DECISION_OUTCOMES = ['acted', 'held', 'no_action', 'already_acted', 'dry_run'] as const;
export type DecisionRecordOutcome = (typeof DECISION_OUTCOMES)[number];

export const RECORD_LIMITS = { faults: 32, reasons: 32, actions: 32, detail: 512, text: 256, summary: 256 } as const;

export interface DecisionRecordFault {
  readonly node?: string;
  readonly device?: string;
  readonly code: string;
  readonly level?: string;
  readonly faultType?: string;
  /** Where the level came from (escalation, override, filter), as the aggregation noted it. */
  readonly note?: string;
}

export interface DecisionRecordReason {
  /** fault | level | rule | action (policy/job-decision-types ReasonStep), or breaker. */
  readonly stage: string;
  readonly detail: string;
}

export interface DecisionRecordJob {
  readonly namespace: string;
  /** The job's own name (vcjob / AscendJob). */
  readonly name: string;
  readonly podGroup?: string;
  readonly uid: string;
}

/** recordDecision's input (actions/decision-history.action.ts). */
export interface DecisionRecordInput {
  readonly job: DecisionRecordJob;
  readonly decisionId: string;
  readonly atMs: number;
  /** The decision's kind (none, job, pod, process, hotSwitch, ...); a held decision keeps the kind it would have had. */
  readonly kind: DecisionKind;
  readonly phase: string;
  readonly row?: number;
  readonly outcome: DecisionRecordOutcome;
  readonly faults: readonly DecisionRecordFault[];
  readonly reasons: readonly DecisionRecordReason[];
  /** What was (or would have been) done, e.g. `evictPods(p-0,p-1)`. */
  readonly actions: readonly string[];
}

export interface DecisionRecordSpec {
  readonly job: { readonly name: string; readonly podGroup?: string; readonly uid: string };
  readonly decisionId: string;
  readonly decidedAt: string;
  readonly kind: string;
  readonly phase: string;
  /** The decision-table row (1-12) and its rule id of docs/rules.md (`decision.*`). */
  readonly row?: number;
  readonly rule?: string;
  readonly outcome: DecisionRecordOutcome;
  readonly summary: string;
  readonly faults: readonly DecisionRecordFault[];
  readonly reasons: readonly DecisionRecordReason[];
  readonly actions: readonly string[];
  readonly truncated?: boolean;
}

export interface DecisionRecordObject {
  readonly apiVersion: typeof DECISION_RECORD_API_VERSION;
  readonly kind: typeof DECISION_RECORD_KIND;
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels: Readonly<Record<string, string>>; readonly creationTimestamp?: string };
  readonly spec: DecisionRecordSpec;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
export const isLabelValue = (v: string): boolean => v.length <= 63 && LABEL_VALUE.test(v);

/**
 * `<job prefix>-<16 hex>`: the hash of the decision id and the outcome class (held vs the rest), so a
 * decision held by the breaker and later acted on leaves two records, and a replay leaves one.
 */
export function decisionRecordName(jobName: string, decisionId: string, outcome: DecisionRecordOutcome): string {
  const prefix = jobName.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, 40).replace(/^-+/, '') || 'job';
  return `${prefix}-${createHash('sha256').update(`${decisionId}|${outcome === 'held' ? 'held' : 'decided'}`).digest('hex').slice(0, 16)}`;
}

const cut = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

/** The object to create; every field capped (`truncated` says something was cut). */
export function buildDecisionRecord(input: DecisionRecordInput): DecisionRecordObject {
  let truncated = false;
  const capList = <T>(xs: readonly T[], n: number): readonly T[] => { if (xs.length > n) truncated = true; return xs.slice(0, n); };
  const capStr = (s: string, n: number): string => { if (s.length > n) truncated = true; return cut(s, n); };
  const opt = (k: string, v: string | undefined, n: number = RECORD_LIMITS.text): Record<string, string> => (v === undefined || v === '' ? {} : { [k]: capStr(v, n) });
  const faults = capList(input.faults, RECORD_LIMITS.faults).map((f) => ({
    ...opt('node', f.node), ...opt('device', f.device, 64), code: capStr(f.code, 64), ...opt('level', f.level, 64), ...opt('faultType', f.faultType, 64), ...opt('note', f.note),
  }));
  const reasons = capList(input.reasons, RECORD_LIMITS.reasons).map((r) => ({ stage: capStr(r.stage, 32), detail: capStr(r.detail, RECORD_LIMITS.detail) }));
  const actions = capList(input.actions, RECORD_LIMITS.actions).map((a) => capStr(a, RECORD_LIMITS.text));
  const codes = [...new Set(input.faults.map((f) => `${f.code}${f.level === undefined ? '' : `(${f.level})`}`))];
  const summary = cut([codes.length > 0 ? codes.slice(0, 5).join(',') + (codes.length > 5 ? `+${codes.length - 5}` : '') : '', input.reasons.at(-1)?.detail ?? ''].filter((s) => s !== '').join(': '), RECORD_LIMITS.summary);
  const labels: Record<string, string> = { [MANAGED_BY_LABEL]: MANAGED_BY, [DECISION_OUTCOME_LABEL]: input.outcome };
  if (isLabelValue(input.job.name)) labels[DECISION_JOB_LABEL] = input.job.name;
  if (isLabelValue(input.job.uid)) labels[DECISION_JOB_UID_LABEL] = input.job.uid;
  return {
    apiVersion: DECISION_RECORD_API_VERSION,
    kind: DECISION_RECORD_KIND,
    metadata: { name: decisionRecordName(input.job.name, input.decisionId, input.outcome), namespace: input.job.namespace, labels },
    spec: {
      job: { name: capStr(input.job.name, 253), ...(input.job.podGroup === undefined ? {} : { podGroup: capStr(input.job.podGroup, 253) }), uid: capStr(input.job.uid, 64) },
      decisionId: capStr(input.decisionId, 512),
      decidedAt: new Date(input.atMs).toISOString(),
      kind: input.kind,
      phase: capStr(input.phase, 32),
      ...(input.row === undefined ? {} : { row: input.row }),
      ...(input.row === undefined || decisionRule(input.row) === undefined ? {} : { rule: decisionRule(input.row) }),
      outcome: input.outcome,
      summary,
      faults, reasons, actions,
      ...(truncated ? { truncated: true } : {}),
    },
  };
}

/** A stored record as read back (from the apiserver, for the CLI and the pruning index); never throws. */
export interface StoredDecisionRecord {
  readonly namespace: string;
  readonly name: string;
  readonly atMs: number;
  readonly spec: DecisionRecordSpec;
}

export function parseDecisionRecord(obj: unknown): Parsed<StoredDecisionRecord> {
  if (typeof obj !== 'object' || obj === null) return rejected('not an object', 'schema');
  const o = obj as { metadata?: { name?: unknown; namespace?: unknown }; spec?: Record<string, unknown> };
  const name = o.metadata?.name;
  const namespace = o.metadata?.namespace;
  const spec = o.spec;
  if (typeof name !== 'string' || typeof namespace !== 'string') return rejected('metadata.name/namespace missing', 'schema');
  if (spec === undefined || typeof spec !== 'object') return rejected(`${namespace}/${name}: no spec`, 'schema');
  const job = spec.job as { name?: unknown; uid?: unknown } | undefined;
  if (typeof job?.name !== 'string' || typeof job.uid !== 'string' || typeof spec.decisionId !== 'string' || typeof spec.decidedAt !== 'string') {
    return rejected(`${namespace}/${name}: spec.job, decisionId or decidedAt missing`, 'schema');
  }
  const atMs = Date.parse(spec.decidedAt);
  if (Number.isNaN(atMs)) return rejected(`${namespace}/${name}: decidedAt ${spec.decidedAt} is not a time`, 'schema');
  const list = <T>(v: unknown): readonly T[] => (Array.isArray(v) ? (v as T[]) : []);
  return ok({
    namespace, name, atMs,
    spec: {
      ...(spec as unknown as DecisionRecordSpec),
      summary: typeof spec.summary === 'string' ? spec.summary : '',
      faults: list<DecisionRecordFault>(spec.faults), reasons: list<DecisionRecordReason>(spec.reasons), actions: list<string>(spec.actions),
    },
  });
}
