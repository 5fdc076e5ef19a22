/**
 * The fault-handling knobs of a job, read from its PodGroup's labels and annotations (docs/formats.md#job-knobs,
 * docs/formats.md#job-knobs; the PodGroup inherits the job's labels and annotations, and ClusterD reads the
 * PodGroup). `parseJobKnobs` never throws: every missing, hostile or out-of-range value becomes the
 * documented fallback below, plus a warning string for the caller to log.
 *
 * | knob (where)                                   | accepted                                  | fallback                |
 * |------------------------------------------------|-------------------------------------------|-------------------------|
 * | `fault-scheduling` (label)                     | grace, force, off, external-grace, external-force | off             |
 * | `pod-rescheduling` (label)                     | on (anything else is off)                 | false                   |
 * | `fault-retry-times` (label)                    | integer 0–100                             | 0 (no unconditional retry) |
 * | `subHealthyStrategy` (label)                   | ignore, graceExit, forceExit, hotSwitch   | ignore                  |
 * | `process-recover-enable` (label)               | on, pause, off (`''` = off)               | off                     |
 * | `recover-strategy` (annotation)                | CSV of retry, recover, recover-in-place, elastic-training, dump, exit | unknown items dropped |
 * | `huawei.com/recover_policy_path` (annotation)  | pod                                       | undefined (no limit)    |
 * | `wait-reschedule-timeout` (annotation)         | integer seconds 30–270                    | 270                     |
 * | `ProcessRecoverStrategy` (annotation)          | presence = platform mode; retry, recover, dump, '' | '' (wait for the platform) |
 * | `ProcessConfirmFault` / `ProcessResultFault` (annotation) | `rank:type,...`                | malformed items dropped |
 * | `ProcessRecoverStatus` (annotation)            | retry-/recover-/dump-success/-failed, exit-completed | undefined     |
 * | `RankTableReady` (annotation)                  | `true`                                    | false                   |
 * | `huawei.com/schedule.filter.faultCode` / `.faultLevel` (annotation) | `key[:seconds],...`  | 60 s per bad entry      |
 * | `custom-job-id` (annotation, else label), `framework` (label) | free string, bounded         | undefined               |
 * | `huawei.com/schedule_policy` (annotation)      | free string, bounded                      | undefined               |
 * | `sp-block`, `ra-block` (annotation)            | integer NPUs 1–100000                     | undefined (a warning)   |
 * | `huawei.com/affinity-config` (annotation)      | `levelN=<pods>,...`; level1 used          | undefined (a warning)   |
 *
 * Label values longer than 63 characters (impossible through the apiserver) and annotation values
 * past the per-knob cap are ignored with a warning. Maps that are not string -> string are
 * filtered entry by entry.
 */
import { validate as generated } from './job-knobs.validators.gen.ts';
import type { SchemaValidator } from '../parsed.ts';
import {
  readCsv,
  readEnum,
  readAffinityLevel1,
  readFaultFilter,
  readIntInRange,
  readOptionalInt,
  readOptionalEnum,
  readProcessFaults,
  readString,
  quote,
  type ProcessFaultRank,
  type Read,
} from './job-knobs.values.ts';

export type { ProcessFaultRank } from './job-knobs.values.ts';

export const KNOB_KEYS = {
  faultScheduling: 'fault-scheduling',
  podRescheduling: 'pod-rescheduling',
  faultRetryTimes: 'fault-retry-times',
  subHealthyStrategy: 'subHealthyStrategy',
  processRecoverEnable: 'process-recover-enable',
  recoverStrategy: 'recover-strategy',
  recoverPolicyPath: 'huawei.com/recover_policy_path',
  waitRescheduleTimeout: 'wait-reschedule-timeout',
  processRecoverStrategy: 'ProcessRecoverStrategy',
  processConfirmFault: 'ProcessConfirmFault',
  processResultFault: 'ProcessResultFault',
  processRecoverStatus: 'ProcessRecoverStatus',
  rankTableReady: 'RankTableReady',
  filterFaultCode: 'huawei.com/schedule.filter.faultCode',
  filterFaultLevel: 'huawei.com/schedule.filter.faultLevel',
  customJobId: 'custom-job-id',
  framework: 'framework',
  schedulePolicy: 'huawei.com/schedule_policy',
  spBlock: 'sp-block',
  raBlock: 'ra-block',
  affinityConfig: 'huawei.com/affinity-config',
} as const;

/** Largest `sp-block` / `ra-block` accepted (NPUs). */
export const MAX_BLOCK_NPUS = 100_000;

export const FAULT_SCHEDULING = ['grace', 'force', 'off', 'external-grace', 'external-force'] as const;
export type FaultScheduling = (typeof FAULT_SCHEDULING)[number];
export const SUB_HEALTHY_STRATEGIES = ['ignore', 'graceExit', 'forceExit', 'hotSwitch'] as const;
export type SubHealthyStrategy = (typeof SUB_HEALTHY_STRATEGIES)[number];
export const PROCESS_RECOVER_ENABLE = ['on', 'pause', 'off'] as const;
export type ProcessRecoverEnable = (typeof PROCESS_RECOVER_ENABLE)[number];
export const RECOVER_STRATEGIES = ['retry', 'recover', 'recover-in-place', 'elastic-training', 'dump', 'exit'] as const;
export type RecoverStrategy = (typeof RECOVER_STRATEGIES)[number];
export const PLATFORM_STRATEGIES = ['retry', 'recover', 'dump', ''] as const;
export type PlatformStrategy = (typeof PLATFORM_STRATEGIES)[number];
export const PROCESS_RECOVER_STATUSES = [
  'retry-success', 'retry-failed', 'recover-success', 'recover-failed', 'dump-success', 'dump-failed', 'exit-completed',
] as const;
export type ProcessRecoverStatus = (typeof PROCESS_RECOVER_STATUSES)[number];

export const MAX_FAULT_RETRY_TIMES = 100;
export const WAIT_RESCHEDULE_TIMEOUT_S = { min: 30, max: 270, default: 270 } as const;
/** Kubernetes' limit on a label value. */
export const MAX_LABEL_VALUE_CHARS = 63;
export const MAX_CSV_ANNOTATION_CHARS = 1024;
export const MAX_FILTER_ANNOTATION_CHARS = 16 * 1024;
export const MAX_RANK_LIST_ANNOTATION_CHARS = 128 * 1024;
export const MAX_ID_CHARS = 253;

export interface JobKnobs {
  readonly faultScheduling: FaultScheduling;
  readonly podRescheduling: boolean;
  /** Unconditional retry budget for business-plane (`pod-failed`) faults; 0 = disabled. */
  readonly faultRetryTimes: number;
  readonly subHealthyStrategy: SubHealthyStrategy;
  readonly processRecoverEnable: ProcessRecoverEnable;
  /** Known items of `recover-strategy`, in the order written, without duplicates. */
  readonly recoverStrategies: readonly RecoverStrategy[];
  /** `pod`: never escalate beyond pod-level rescheduling. */
  readonly recoverPolicyPath: 'pod' | undefined;
  readonly waitRescheduleTimeoutS: number;
  /** True when the `ProcessRecoverStrategy` annotation exists (AI-platform mode). */
  readonly platformMode: boolean;
  /** The platform's decision; `''` = wait for it. Undefined when not in platform mode. */
  readonly processRecoverStrategy: PlatformStrategy | undefined;
  /** Undefined when the annotation is absent. */
  readonly processConfirmFault: readonly ProcessFaultRank[] | undefined;
  readonly processResultFault: readonly ProcessFaultRank[] | undefined;
  readonly processRecoverStatus: ProcessRecoverStatus | undefined;
  readonly rankTableReady: boolean;
  /** Custom fault filter: fault code -> seconds to hide it. */
  readonly filterFaultCodes: ReadonlyMap<string, number>;
  /** Custom fault filter: fault level -> seconds to hide it. */
  readonly filterFaultLevels: ReadonlyMap<string, number>;
  readonly customJobId: string | undefined;
  readonly framework: string | undefined;
  /** Placement policy; selects the escalation steps of docs/rules.md#resched.block-escalation. */
  readonly schedulePolicy: string | undefined;
  /** `sp-block`: NPUs per logical super-pod; undefined when absent or invalid. */
  readonly spBlockNpus: number | undefined;
  /** `ra-block`: NPUs per rack block (A5); undefined when absent or invalid. */
  readonly raBlockNpus: number | undefined;
  /** `level1` of `huawei.com/affinity-config`: pods per level-1 group of a multilevel job. */
  readonly affinityLevel1: number | undefined;
}

export interface JobKnobsResult {
  readonly knobs: JobKnobs;
  /** One line per ignored or corrected value; empty when everything was valid. */
  readonly warnings: readonly string[];
}

type StringMap = Readonly<Record<string, string>>;
// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validateMap = generated as SchemaValidator<StringMap>;

/** Own string-valued entries only; anything else is reported and skipped. */
function stringEntries(what: string, map: unknown, warnings: string[]): Map<string, string> {
  const out = new Map<string, string>();
  if (map === undefined || map === null) return out;
  if (typeof map !== 'object' || Array.isArray(map)) {
    warnings.push(`${what}: not a string map; ignored`);
    return out;
  }
  const ok = validateMap(map);
  for (const [k, v] of Object.entries(map)) {
    if (typeof v === 'string') out.set(k, v);
    else if (!ok) warnings.push(`${what}: value of ${JSON.stringify(k.slice(0, 64))} is not a string; ignored`);
  }
  return out;
}

/** Parses a PodGroup's labels and annotations. Never throws. */
export function parseJobKnobs(labels: StringMap | undefined, annotations: StringMap | undefined): JobKnobsResult {
  const warnings: string[] = [];
  const l = stringEntries('labels', labels, warnings);
  const a = stringEntries('annotations', annotations, warnings);
  const take = <T>(r: Read<T>): T => {
    warnings.push(...r.warnings);
    return r.value;
  };
  const label = (key: string): string | undefined => {
    const v = l.get(key);
    if (v !== undefined && v.length > MAX_LABEL_VALUE_CHARS) {
      warnings.push(`${key}: label value of ${v.length} chars exceeds ${MAX_LABEL_VALUE_CHARS}; ignored`);
      return undefined;
    }
    return v;
  };

  const podResched = label(KNOB_KEYS.podRescheduling);
  if (podResched !== undefined && podResched !== 'on' && podResched !== 'off' && podResched !== '') {
    warnings.push(`${KNOB_KEYS.podRescheduling}: invalid value ${quote(podResched)}; using off`);
  }
  const platformMode = a.has(KNOB_KEYS.processRecoverStrategy);
  const customJobId = a.get(KNOB_KEYS.customJobId) ?? label(KNOB_KEYS.customJobId);

  const knobs: JobKnobs = {
    faultScheduling: take(readEnum(KNOB_KEYS.faultScheduling, label(KNOB_KEYS.faultScheduling), FAULT_SCHEDULING, 'off')),
    podRescheduling: podResched === 'on',
    faultRetryTimes: take(readIntInRange(KNOB_KEYS.faultRetryTimes, label(KNOB_KEYS.faultRetryTimes), 0, MAX_FAULT_RETRY_TIMES, 0)),
    subHealthyStrategy: take(readEnum(KNOB_KEYS.subHealthyStrategy, label(KNOB_KEYS.subHealthyStrategy), SUB_HEALTHY_STRATEGIES, 'ignore')),
    processRecoverEnable: take(readEnum(KNOB_KEYS.processRecoverEnable, label(KNOB_KEYS.processRecoverEnable), PROCESS_RECOVER_ENABLE, 'off')),
    recoverStrategies: take(readCsv(KNOB_KEYS.recoverStrategy, a.get(KNOB_KEYS.recoverStrategy), RECOVER_STRATEGIES, MAX_CSV_ANNOTATION_CHARS)),
    recoverPolicyPath: take(readOptionalEnum(KNOB_KEYS.recoverPolicyPath, a.get(KNOB_KEYS.recoverPolicyPath), ['pod'] as const)),
    waitRescheduleTimeoutS: take(readIntInRange(
      KNOB_KEYS.waitRescheduleTimeout, a.get(KNOB_KEYS.waitRescheduleTimeout),
      WAIT_RESCHEDULE_TIMEOUT_S.min, WAIT_RESCHEDULE_TIMEOUT_S.max, WAIT_RESCHEDULE_TIMEOUT_S.default,
    )),
    platformMode,
    processRecoverStrategy: platformMode
      ? take(readEnum(KNOB_KEYS.processRecoverStrategy, a.get(KNOB_KEYS.processRecoverStrategy), PLATFORM_STRATEGIES, ''))
      : undefined,
    processConfirmFault: take(readProcessFaults(KNOB_KEYS.processConfirmFault, a.get(KNOB_KEYS.processConfirmFault), MAX_RANK_LIST_ANNOTATION_CHARS)),
    processResultFault: take(readProcessFaults(KNOB_KEYS.processResultFault, a.get(KNOB_KEYS.processResultFault), MAX_RANK_LIST_ANNOTATION_CHARS)),
    processRecoverStatus: take(readOptionalEnum(KNOB_KEYS.processRecoverStatus, a.get(KNOB_KEYS.processRecoverStatus), PROCESS_RECOVER_STATUSES)),
    rankTableReady: a.get(KNOB_KEYS.rankTableReady) === 'true',
    filterFaultCodes: take(readFaultFilter(KNOB_KEYS.filterFaultCode, a.get(KNOB_KEYS.filterFaultCode), MAX_FILTER_ANNOTATION_CHARS)),
    filterFaultLevels: take(readFaultFilter(KNOB_KEYS.filterFaultLevel, a.get(KNOB_KEYS.filterFaultLevel), MAX_FILTER_ANNOTATION_CHARS)),
    customJobId: take(readString(KNOB_KEYS.customJobId, customJobId, MAX_ID_CHARS)),
    framework: take(readString(KNOB_KEYS.framework, label(KNOB_KEYS.framework), MAX_LABEL_VALUE_CHARS)),
    schedulePolicy: take(readString(KNOB_KEYS.schedulePolicy, a.get(KNOB_KEYS.schedulePolicy), MAX_LABEL_VALUE_CHARS)),
    spBlockNpus: take(readOptionalInt(KNOB_KEYS.spBlock, a.get(KNOB_KEYS.spBlock), 1, MAX_BLOCK_NPUS)),
    raBlockNpus: take(readOptionalInt(KNOB_KEYS.raBlock, a.get(KNOB_KEYS.raBlock), 1, MAX_BLOCK_NPUS)),
    affinityLevel1: take(readAffinityLevel1(KNOB_KEYS.affinityConfig, a.get(KNOB_KEYS.affinityConfig), MAX_CSV_ANNOTATION_CHARS, MAX_BLOCK_NPUS)),
  };
  return { knobs, warnings };
}

/** Job-level rescheduling is on (`fault-scheduling` grace or force; ClusterD's `job-rescheduling`). */
export const jobReschedulingEnabled = (k: JobKnobs): boolean => k.faultScheduling === 'grace' || k.faultScheduling === 'force';

/**
 * A `recover-strategy` item is in effect only while `process-recover-enable=on` and the item is
 * listed (ClusterD judgeTargetRecoverStrategyByJobKey), e.g. `recover-in-place` for RestartFaultProcess.
 */
export const recoverStrategyEnabled = (k: JobKnobs, s: RecoverStrategy): boolean =>
  k.processRecoverEnable === 'on' && k.recoverStrategies.includes(s);

const STRATEGY_PRIORITY: Readonly<Record<RecoverStrategy, number>> = {
  retry: 1, 'recover-in-place': 2, recover: 3, 'elastic-training': 4, dump: 5, exit: 6,
};

/**
 * ClusterD's strategy menu of a job (GetRecoverBaseInfo): the `recover-strategy` items, then
 * `job-rescheduling` when fault-scheduling is grace/force, `pod-rescheduling` when on, and always
 * `exit`; without duplicates, process strategies by priority first (retry, recover-in-place,
 * recover, elastic-training, dump, exit), then job-rescheduling, then pod-rescheduling. (ClusterD's
 * sort is not stable for the last two; this order is fixed.)
 */
export function strategyMenu(k: JobKnobs): ReadonlyArray<RecoverStrategy | 'job-rescheduling' | 'pod-rescheduling'> {
  const process = [...new Set<RecoverStrategy>([...k.recoverStrategies, 'exit'])].sort((x, y) => STRATEGY_PRIORITY[x] - STRATEGY_PRIORITY[y]);
  return [
    ...process,
    ...(jobReschedulingEnabled(k) ? (['job-rescheduling'] as const) : []),
    ...(k.podRescheduling ? (['pod-rescheduling'] as const) : []),
  ];
}
