/**
 * Per-job fault hiding (docs/rules.md#filter.custom) and the 60 s inference RestartRequest hold (docs/rules.md#filter.mindie-hold).
 * PodGroup annotations `huawei.com/schedule.filter.faultCode` and `huawei.com/schedule.filter.faultLevel`
 * hold `key[:seconds]` lists (comma-separated; full-width comma/colon accepted; switch codes such as
 * `[0x08520003,na,L2,na]` carry their own brackets and commas). A missing, malformed or > 86400 s
 * timeout means 60 s. A fault on an NPU used by the job is hidden from the scheduler view while
 * now - receivedTime <= timeout; code rules take precedence over level rules. MindIE server jobs whose
 * controller subscribed to the fault service hide RestartRequest for 60 s unless the job's own
 * level annotation says otherwise.
 */
import type { LeveledFault } from '../faults/fault-level.ts';
import type { FilterVerdict } from './filters.ts';
import { reason, type RuleName } from '../reasons.ts';

export const FILTER_FAULT_CODE_ANNOTATION = 'huawei.com/schedule.filter.faultCode';
export const FILTER_FAULT_LEVEL_ANNOTATION = 'huawei.com/schedule.filter.faultLevel';
export const CUSTOM_FILTER_DEFAULT_S = 60;
export const CUSTOM_FILTER_MAX_S = 86_400;
export const MINDIE_RESTART_REQUEST_HOLD_MS = 60_000;
/** At most this many rules per annotation (hostile-annotation guard). */
export const MAX_FILTER_RULES = 256;

/** UB switch level aliases accepted in the level annotation (docs/rules.md#levels.node-switch-levels). */
const LEVEL_ALIASES: Readonly<Record<string, string>> = {
  resetfault: 'separate',
  separatefault: 'separate',
  restartrequestfault: 'restartrequest',
  preseparatefault: 'preseparate',
};
const canonicalLevel = (l: string): string => {
  const k = l.trim().toLowerCase();
  return LEVEL_ALIASES[k] ?? k;
};

export interface FilterRule {
  readonly timeoutMs: number;
  readonly rule: RuleName;
}

export interface CustomFilterRules {
  /** Upper-cased code -> rule. */
  readonly codes: ReadonlyMap<string, FilterRule>;
  /** Canonical (lower-case, aliased) level -> rule. */
  readonly levels: ReadonlyMap<string, FilterRule>;
  readonly warnings: readonly string[];
}

export const NO_FILTER_RULES: CustomFilterRules = { codes: new Map(), levels: new Map(), warnings: [] };

/** Splits on commas outside brackets. */
function tokens(value: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of value) {
    if (ch === '[') depth++;
    if (ch === ']') depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

/** A bracketed token is a switch code only with exactly 4 parts; otherwise the brackets wrap a list. */
function expand(value: string): string[] {
  const out: string[] = [];
  for (const t of tokens(value)) {
    const m = /^\[(.*)\](:.*)?$/.exec(t);
    if (m !== null && m[1] !== undefined && m[2] === undefined && m[1].split(',').length !== 4) out.push(...expand(m[1]));
    else out.push(t);
  }
  return out;
}

/** Parses one annotation value into key -> timeout (ms). Never throws. */
export function parseFilterAnnotation(value: string | undefined): { rules: Map<string, number>; warnings: string[] } {
  const rules = new Map<string, number>();
  const warnings: string[] = [];
  if (value === undefined) return { rules, warnings };
  const text = value.replaceAll('，', ',').replaceAll('：', ':');
  for (const t of expand(text)) {
    if (rules.size >= MAX_FILTER_RULES) {
      warnings.push(`more than ${MAX_FILTER_RULES} filter rules; the rest ignored`);
      break;
    }
    const closing = t.lastIndexOf(']');
    const colon = t.indexOf(':', closing + 1);
    const key = (colon < 0 ? t : t.slice(0, colon)).trim();
    const raw = colon < 0 ? undefined : t.slice(colon + 1).trim();
    if (key === '') continue;
    let seconds = CUSTOM_FILTER_DEFAULT_S;
    if (raw !== undefined) {
      const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
      if (Number.isInteger(n) && n <= CUSTOM_FILTER_MAX_S) seconds = n;
      else warnings.push(`filter timeout ${JSON.stringify(raw)} for ${key} is not 0-${CUSTOM_FILTER_MAX_S} s; ${CUSTOM_FILTER_DEFAULT_S} s used`);
    }
    rules.set(key, seconds * 1000);
  }
  return { rules, warnings };
}

export interface CustomFilterOptions {
  /** MindIE server job (pod labels jobID set, app=mindie-ms-server) whose controller subscribed to the fault service. */
  readonly mindIeServerSubscribed?: boolean;
}

/** The job's filter rules from its PodGroup annotations. */
export function customFilterRules(annotations: Readonly<Record<string, string>> | undefined, opts: CustomFilterOptions = {}): CustomFilterRules {
  const codes = parseFilterAnnotation(annotations?.[FILTER_FAULT_CODE_ANNOTATION]);
  const levels = parseFilterAnnotation(annotations?.[FILTER_FAULT_LEVEL_ANNOTATION]);
  const codeRules = new Map<string, FilterRule>([...codes.rules].map(([k, ms]) => [k.toUpperCase(), { timeoutMs: ms, rule: 'custom-filter' as const }]));
  const levelRules = new Map<string, FilterRule>([...levels.rules].map(([k, ms]) => [canonicalLevel(k), { timeoutMs: ms, rule: 'custom-filter' as const }]));
  if (opts.mindIeServerSubscribed === true && !levelRules.has('restartrequest')) {
    levelRules.set('restartrequest', { timeoutMs: MINDIE_RESTART_REQUEST_HOLD_MS, rule: 'mindie-restart-request-hold' });
  }
  return { codes: codeRules, levels: levelRules, warnings: [...codes.warnings, ...levels.warnings] };
}

function levelRuleFor(f: LeveledFault, rules: CustomFilterRules): FilterRule | undefined {
  const names = [f.level, ...(f.fault.source === 'switch' ? [f.fault.reportedLevel] : [])].map(canonicalLevel);
  for (const n of names) {
    const r = rules.levels.get(n);
    if (r !== undefined) return r;
  }
  return undefined;
}

/**
 * Verdict for one fault on an NPU (or node, for switch faults) of the job. `receivedMs` is ClusterD's
 * FaultReceivedTime (first sight by the controller); it defaults to the fault's firstSeenMs.
 */
export function customFilterVerdict(f: LeveledFault, rules: CustomFilterRules, nowMs: number, receivedMs: number = f.fault.firstSeenMs): FilterVerdict {
  const byCode = rules.codes.get(f.fault.code.toUpperCase());
  const r = byCode ?? levelRuleFor(f, rules);
  if (r === undefined) return { action: 'pass', reasons: [] };
  const age = nowMs - receivedMs;
  const what = byCode !== undefined ? `code ${f.fault.code}` : `level ${f.level}`;
  if (age <= r.timeoutMs) {
    return {
      action: 'hide',
      untilMs: receivedMs + r.timeoutMs + 1,
      reasons: [reason(r.rule, `${what} hidden for ${r.timeoutMs / 1000} s from ${receivedMs} (age ${age} ms)`, { code: f.fault.code, level: 'hidden' })],
    };
  }
  return { action: 'pass', reasons: [reason(r.rule, `${what} hold of ${r.timeoutMs / 1000} s expired; reported`, { code: f.fault.code, level: f.level })] };
}
