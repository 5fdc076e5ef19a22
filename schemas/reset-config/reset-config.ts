/**
 * `reset-config-<jobName>` (job namespace; docs/formats.md#reset-config, docs/rules.md#recover.reset-config-writes). Written by ClusterD, the
 * device plugin and Volcano; read by TaskD / Elastic Agent from the mounted files `reset.json`,
 * `checkCode` and `restartType`. The user creates the ConfigMap; we only read and update it.
 *
 * `reset.json` is Go `TaskResetInfo` (no json tags, `DevFaultInfo` flattened into each rank) and
 * `checkCode` = hex SHA-256 of its Go JSON (docs/formats.md#check-code). Parsing follows Go `json.Unmarshal`
 * into the struct: absent fields take zero values and unknown keys are dropped, so the canonical
 * re-encoding (and its checkCode) is what ClusterD would compute. Field names are matched exactly
 * (Go would also accept other letter cases).
 */
import { checkCode } from '../check-code.ts';
import { goJson } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed, type SchemaValidator } from '../parsed.ts';
import { validate as generated } from './reset-config.validators.gen.ts';

export const RESET_CONFIG_NAME_PREFIX = 'reset-config-';
/** Label the user puts on the ConfigMap so that the device plugin watches it (docs/formats.md#label-selectors). */
export const RESET_CONFIG_LABEL_KEY = 'reset';
export const RESET_CONFIG_LABEL_VALUE = 'true';
export const RESET_JSON_KEY = 'reset.json';
export const RESET_CHECK_CODE_KEY = 'checkCode';
export const RESTART_TYPE_KEY = 'restartType';
/** Values of the `restartType` data key: DP hot reset, VC pod-level rescheduling. */
export const RESTART_TYPE = { hotReset: 'hotReset', podReschedule: 'podReschedule' } as const;
export type RestartType = (typeof RESTART_TYPE)[keyof typeof RESTART_TYPE];

/** Rank `Status` values: DP hot reset (`unrecovered|recovered|failed`) and ClusterD (`fault`). */
export const RANK_STATUS = { unrecovered: 'unrecovered', recovered: 'recovered', failed: 'failed', fault: 'fault' } as const;
/** Hot-reset `Policy` / `InitialPolicy` values, levels 0..6. */
export const RESET_POLICIES = ['empty', 'ignore', 'restart_request', 'restart', 'free_reset', 'reset', 'isolate'] as const;
export type ResetPolicy = (typeof RESET_POLICIES)[number];

/** ConfigMap name of a job; `jobName` is the job's reference name (docs/formats.md#reset-config). */
export const resetConfigName = (jobName: string): string => `${RESET_CONFIG_NAME_PREFIX}${jobName}`;

/** One rank of `RankList` (Go `TaskDevInfo` with `DevFaultInfo` flattened), fields in Go order. */
export interface TaskDevInfo {
  readonly RankId: number;
  /** int32 */
  readonly LogicId: number;
  readonly Status: string;
  readonly Policy: string;
  readonly InitialPolicy: string;
  /** []int64: `null` (nil) when ClusterD wrote the rank, `[]` from the device plugin. */
  readonly ErrorCode: readonly number[] | null;
  /** Comma-joined upper-case hex codes. */
  readonly ErrorCodeHex: string;
}

/** Go `TaskResetInfo`, fields in declaration order. */
export interface TaskResetInfo {
  /** `null` only when the source JSON had `null` or no RankList (a Go nil slice). */
  readonly RankList: readonly TaskDevInfo[] | null;
  /** Unix seconds. */
  readonly UpdateTime: number;
  readonly RetryTime: number;
  readonly FaultFlushing: boolean;
  /** 1 = terminate all training processes (sub-health graceExit), 0 = nothing. */
  readonly GracefulExit: number;
  readonly RestartFaultProcess: boolean;
}

/** What a reset-config ConfigMap's data holds, after validation. */
export interface ResetConfigData {
  readonly info: TaskResetInfo;
  /** The checkCode as found (empty when absent). */
  readonly checkCode: string;
  /** `restartType` as found; undefined when absent. */
  readonly restartType: string | undefined;
}

/** Maximum accepted size of one data value (a ConfigMap holds at most 1 MiB in total). */
export const MAX_RESET_JSON_CHARS = 1024 * 1024;

type RawRank = Partial<Record<keyof TaskDevInfo, unknown>>;
type RawInfo = Partial<Record<keyof TaskResetInfo, unknown>>;

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated as SchemaValidator<RawInfo>;

const canonicalRank = (r: RawRank): TaskDevInfo => ({
  RankId: (r.RankId as number | undefined) ?? 0,
  LogicId: (r.LogicId as number | undefined) ?? 0,
  Status: (r.Status as string | undefined) ?? '',
  Policy: (r.Policy as string | undefined) ?? '',
  InitialPolicy: (r.InitialPolicy as string | undefined) ?? '',
  ErrorCode: r.ErrorCode === undefined || r.ErrorCode === null ? null : [...(r.ErrorCode as number[])],
  ErrorCodeHex: (r.ErrorCodeHex as string | undefined) ?? '',
});

/** Parses the `reset.json` text. Never throws. */
export function parseTaskResetInfo(text: string): Parsed<TaskResetInfo> {
  const p = parseValidated(RESET_JSON_KEY, text, validate, { maxChars: MAX_RESET_JSON_CHARS });
  if (!p.ok) return p;
  const r = p.value;
  return ok({
    RankList: r.RankList === undefined || r.RankList === null ? null : (r.RankList as RawRank[]).map(canonicalRank),
    UpdateTime: (r.UpdateTime as number | undefined) ?? 0,
    RetryTime: (r.RetryTime as number | undefined) ?? 0,
    FaultFlushing: (r.FaultFlushing as boolean | undefined) ?? false,
    GracefulExit: (r.GracefulExit as number | undefined) ?? 0,
    RestartFaultProcess: (r.RestartFaultProcess as boolean | undefined) ?? false,
  });
}

/** Rebuilds the object in Go field order, whatever the caller's key order was. */
const inGoOrder = (info: TaskResetInfo): TaskResetInfo => ({
  RankList: info.RankList === null ? null : info.RankList.map((r) => ({
    RankId: r.RankId,
    LogicId: r.LogicId,
    Status: r.Status,
    Policy: r.Policy,
    InitialPolicy: r.InitialPolicy,
    ErrorCode: r.ErrorCode === null ? null : [...r.ErrorCode],
    ErrorCodeHex: r.ErrorCodeHex,
  })),
  UpdateTime: info.UpdateTime,
  RetryTime: info.RetryTime,
  FaultFlushing: info.FaultFlushing,
  GracefulExit: info.GracefulExit,
  RestartFaultProcess: info.RestartFaultProcess,
});

/** The `reset.json` bytes exactly as Go `json.Marshal(TaskResetInfo)` writes them. */
export function encodeTaskResetInfo(info: TaskResetInfo): string {
  return goJson(inGoOrder(info));
}

/** The `checkCode` of a TaskResetInfo (hex SHA-256 of its Go JSON). */
export function resetInfoCheckCode(info: TaskResetInfo): string {
  return checkCode(inGoOrder(info));
}

export interface ParseResetConfigOptions {
  /**
   * Verify `checkCode` against the canonical re-encoding (default true; an empty or absent checkCode
   * is then rejected). ClusterD itself does not verify before its read-modify-write; pass false to
   * behave like it.
   */
  readonly verifyCheckCode?: boolean;
}

/** Parses a reset-config ConfigMap's `data`. Never throws. */
export function parseResetConfigData(
  data: Readonly<Record<string, string>> | undefined,
  options: ParseResetConfigOptions = {},
): Parsed<ResetConfigData> {
  if (data === undefined || data === null || typeof data !== 'object') return rejected('reset-config: no data');
  const text = Object.hasOwn(data, RESET_JSON_KEY) ? data[RESET_JSON_KEY] : undefined;
  if (typeof text !== 'string') return rejected(`reset-config: data key ${RESET_JSON_KEY} missing`);
  const parsed = parseTaskResetInfo(text);
  if (!parsed.ok) return parsed;
  const rawCode = Object.hasOwn(data, RESET_CHECK_CODE_KEY) ? data[RESET_CHECK_CODE_KEY] : undefined;
  const code = typeof rawCode === 'string' ? rawCode : '';
  if (options.verifyCheckCode ?? true) {
    if (code === '') return rejected('reset-config: checkCode is empty');
    const expected = resetInfoCheckCode(parsed.value);
    if (code !== expected) return rejected(`reset-config: checkCode mismatch (expected ${expected})`);
  }
  const rt = Object.hasOwn(data, RESTART_TYPE_KEY) ? data[RESTART_TYPE_KEY] : undefined;
  return ok({ info: parsed.value, checkCode: code, restartType: typeof rt === 'string' ? rt : undefined });
}

/**
 * The ConfigMap `data` to write: the existing keys are kept (unlike ClusterD, which drops
 * `restartType`), `reset.json` and `checkCode` are replaced, and `restartType` is set when given.
 */
export function encodeResetConfigData(
  info: TaskResetInfo,
  existingData?: Readonly<Record<string, string>>,
  restartType?: RestartType,
): Record<string, string> {
  const kept = Object.entries(existingData ?? {}).filter(([, v]) => typeof v === 'string');
  const ours: Array<[string, string]> = [
    [RESET_JSON_KEY, encodeTaskResetInfo(info)],
    [RESET_CHECK_CODE_KEY, resetInfoCheckCode(info)],
  ];
  if (restartType !== undefined) ours.push([RESTART_TYPE_KEY, restartType]);
  // fromEntries defines own properties, so a `__proto__` key cannot touch the prototype.
  return Object.fromEntries([...kept, ...ours]);
}
