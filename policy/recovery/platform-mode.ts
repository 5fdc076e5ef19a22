/**
 * The AI platform mode of process-level recovery (docs/rules.md#recover.platform-mode): how ClusterD reads
 * and writes the PodGroup annotations it exchanges with an outside AI platform. Pure functions over the
 * annotations as observed (PlatformAnnotations); the FSM (recovery-progress.ts) arms the waits.
 * MindCluster: `component/clusterd/pkg/application/recover/fault_recover_platform_plugin.go`,
 * `component/clusterd/pkg/domain/common/utils.go` (String2Faults, Faults2String, RemoveSliceDuplicateFaults).
 */
import type { PlatformAnnotations } from './recovery-types.ts';
import { FAULT_TYPE, isRetryType, type FaultType, type RankFault } from './recovery-signals.ts';

/** The PodGroup annotation keys (component/clusterd/pkg/common/constant/const.go). */
export const PLATFORM_KEY = {
  strategy: 'ProcessRecoverStrategy',
  confirm: 'ProcessConfirmFault',
  result: 'ProcessResultFault',
  rankTableReady: 'RankTableReady',
} as const;

/** Strategies the platform may set; `exit` only counts when confirming after the fault exchange. */
const WAIT_STRATEGIES: readonly string[] = ['retry', 'recover', 'dump'];

export type PlatformRead<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: string };

/**
 * ClusterD's platFormStrategy: the annotation trimmed of spaces then commas; retry, recover or dump,
 * and exit too when `confirm` (after the fault exchange, before the strategy choice).
 */
export function platformStrategy(view: PlatformAnnotations | undefined, confirm: boolean): PlatformRead<string> {
  const raw = view?.strategy;
  if (raw === undefined) return { ok: false, why: `${PLATFORM_KEY.strategy} absent` };
  const value = raw.trim().replace(/^,+|,+$/g, '');
  if (WAIT_STRATEGIES.includes(value) || (confirm && value === 'exit')) return { ok: true, value };
  return { ok: false, why: `${PLATFORM_KEY.strategy}=${JSON.stringify(raw.slice(0, 64))} is not ${confirm ? 'retry/recover/dump/exit' : 'retry/recover/dump'}` };
}

export interface ParsedFaults {
  readonly faults: RankFault[];
  /** Items dropped (ClusterD drops items without exactly one ':'; we also drop non-numeric ranks and unknown types). */
  readonly bad: string[];
}

const KNOWN_TYPES: readonly string[] = Object.values(FAULT_TYPE);

/** ClusterD's String2Faults: trim spaces, then commas; `rank:type` items split on ','. */
export function parsePlatformFaults(raw: string | undefined): ParsedFaults {
  if (raw !== undefined && raw.length > MAX_PLATFORM_FAULTS_CHARS) return { faults: [], bad: [`(${raw.length} chars)`] };
  const s = (raw ?? '').trim().replace(/^,+|,+$/g, '');
  if (s === '') return { faults: [], bad: [] };
  const faults: RankFault[] = [];
  const bad: string[] = [];
  for (const item of s.split(',')) {
    const parts = item.split(':');
    if (parts.length === 2 && /^\d{1,9}$/.test(parts[0]!) && KNOWN_TYPES.includes(parts[1]!)) {
      faults.push({ rankId: Number(parts[0]), faultType: parts[1] as FaultType });
    } else {
      bad.push(item.slice(0, 64));
    }
  }
  return { faults, bad };
}

/**
 * ClusterD's RemoveSliceDuplicateFaults: one entry a rank; the first type wins unless it is a retry
 * type (UCE, HCCL), which a later one replaces. ClusterD's order is a Go map's; ours is by rank.
 */
export function dedupeFaults(list: readonly RankFault[]): RankFault[] {
  const byRank = new Map<number, FaultType>();
  for (const f of list) {
    const had = byRank.get(f.rankId);
    if (had === undefined || isRetryType(had)) byRank.set(f.rankId, f.faultType);
  }
  return [...byRank.entries()].sort((a, b) => a[0] - b[0]).map(([rankId, faultType]) => ({ rankId, faultType }));
}

/** ClusterD's Faults2String (trimmed of commas): the ProcessConfirmFault value. */
export const faultsAnnotation = (list: readonly RankFault[]): string => list.map((f) => `${f.rankId}:${f.faultType}`).join(',');

/** ClusterD's IsRetryFault: no fault of the normal type. */
export const onlyRetryFaults = (list: readonly RankFault[]): boolean => list.every((f) => f.faultType !== FAULT_TYPE.normal);

/**
 * ClusterD's pullProcessResultFault: waiting while ProcessResultFault is absent (an empty value is an
 * answer); the answer is the result and the current ProcessConfirmFault, de-duplicated.
 */
export function platformResult(view: PlatformAnnotations | undefined): (ParsedFaults & { readonly answered: true }) | { readonly answered: false } {
  if (view?.result === undefined) return { answered: false };
  const result = parsePlatformFaults(view.result);
  const confirm = parsePlatformFaults(view.confirm);
  return { answered: true, faults: dedupeFaults([...result.faults, ...confirm.faults]), bad: [...result.bad, ...confirm.bad] };
}

/** ClusterD's WaitRankTableReady on one look: `true` ready, absent or '' wait, anything else failed at once. */
export function rankTableState(view: PlatformAnnotations | undefined): 'ready' | 'wait' | 'failed' {
  const v = view?.rankTableReady ?? '';
  return v === 'true' ? 'ready' : v === '' ? 'wait' : 'failed';
}

/** The platform annotations of a PodGroup's annotation map (absent keys left out). */
export function platformAnnotationsOf(annotations: Readonly<Record<string, string>> | undefined): PlatformAnnotations {
  const a = annotations ?? {};
  const pick = (k: string): string | undefined => (typeof a[k] === 'string' ? a[k] : undefined);
  const out: { -readonly [K in keyof PlatformAnnotations]: PlatformAnnotations[K] } = {};
  const strategy = pick(PLATFORM_KEY.strategy);
  const confirm = pick(PLATFORM_KEY.confirm);
  const result = pick(PLATFORM_KEY.result);
  const rankTableReady = pick(PLATFORM_KEY.rankTableReady);
  if (strategy !== undefined) out.strategy = strategy;
  if (confirm !== undefined) out.confirm = confirm;
  if (result !== undefined) out.result = result;
  if (rankTableReady !== undefined) out.rankTableReady = rankTableReady;
  return out;
}

/** Longest annotation value read as a fault list (larger ones are bad input, as in docs/formats.md#job-knobs). */
export const MAX_PLATFORM_FAULTS_CHARS = 128 * 1024;

/** What is wrong with the platform's annotations (for a log line and a metric; the FSM ignores the bad parts). */
export function platformAnnotationProblems(view: PlatformAnnotations): string[] {
  const out: string[] = [];
  const st = view.strategy?.trim().replace(/^,+|,+$/g, '');
  if (st !== undefined && st !== '' && !['retry', 'recover', 'dump', 'exit'].includes(st)) {
    out.push(`${PLATFORM_KEY.strategy}: unknown strategy ${JSON.stringify(st.slice(0, 64))}`);
  }
  for (const [key, raw] of [[PLATFORM_KEY.confirm, view.confirm], [PLATFORM_KEY.result, view.result]] as const) {
    if (raw === undefined) continue;
    if (raw.length > MAX_PLATFORM_FAULTS_CHARS) {
      out.push(`${key}: value of ${raw.length} chars exceeds ${MAX_PLATFORM_FAULTS_CHARS}`);
      continue;
    }
    const bad = parsePlatformFaults(raw).bad;
    if (bad.length > 0) out.push(`${key}: malformed items ${bad.slice(0, 5).map((b) => JSON.stringify(b)).join(', ')}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''}`);
  }
  const rt = view.rankTableReady;
  if (rt !== undefined && rt !== '' && rt !== 'true' && rt !== 'false') out.push(`${PLATFORM_KEY.rankTableReady}: ${JSON.stringify(rt.slice(0, 64))} is neither true nor false (taken as failed)`);
  return out;
}
