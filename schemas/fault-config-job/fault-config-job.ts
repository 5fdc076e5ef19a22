/**
 * `fault-config-<jobName>` (job namespace; docs/formats.md#fault-config). The device plugin writes it only when the
 * ConfigMap already exists: data key `fault-npus` = Go `TaskFaultInfo` `{"FaultRank":[int…],"UpdateTime":s}`
 * (no json tags) and `checkCode` = hex SHA-256 of its Go JSON (docs/formats.md#check-code).
 * Parsing follows Go `json.Unmarshal`: absent fields are zero, unknown keys are dropped.
 */
import { checkCode } from '../check-code.ts';
import { goJson } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed, type SchemaValidator } from '../parsed.ts';
import { validate as generated } from './fault-config-job.validators.gen.ts';

export const FAULT_CONFIG_NAME_PREFIX = 'fault-config-';
export const FAULT_NPUS_KEY = 'fault-npus';
export const FAULT_CONFIG_CHECK_CODE_KEY = 'checkCode';
export const MAX_FAULT_NPUS_CHARS = 1024 * 1024;

export const faultConfigName = (jobName: string): string => `${FAULT_CONFIG_NAME_PREFIX}${jobName}`;

/** Go `TaskFaultInfo`, fields in declaration order. */
export interface TaskFaultInfo {
  /** []int; `null` is a Go nil slice. */
  readonly FaultRank: readonly number[] | null;
  /** Unix seconds. */
  readonly UpdateTime: number;
}

export interface FaultConfigData {
  readonly info: TaskFaultInfo;
  readonly checkCode: string;
}

type RawInfo = Partial<Record<keyof TaskFaultInfo, unknown>>;
// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated as SchemaValidator<RawInfo>;

const inGoOrder = (i: TaskFaultInfo): TaskFaultInfo => ({
  FaultRank: i.FaultRank === null ? null : [...i.FaultRank],
  UpdateTime: i.UpdateTime,
});

/** Parses the `fault-npus` text. Never throws. */
export function parseTaskFaultInfo(text: string): Parsed<TaskFaultInfo> {
  const p = parseValidated(FAULT_NPUS_KEY, text, validate, { maxChars: MAX_FAULT_NPUS_CHARS });
  if (!p.ok) return p;
  const r = p.value;
  return ok({
    FaultRank: r.FaultRank === undefined || r.FaultRank === null ? null : [...(r.FaultRank as number[])],
    UpdateTime: (r.UpdateTime as number | undefined) ?? 0,
  });
}

/** The `fault-npus` bytes as Go writes them. */
export function encodeTaskFaultInfo(info: TaskFaultInfo): string {
  return goJson(inGoOrder(info));
}

export function faultInfoCheckCode(info: TaskFaultInfo): string {
  return checkCode(inGoOrder(info));
}

/** Parses the ConfigMap `data`; verifies `checkCode` unless `verifyCheckCode: false`. Never throws. */
export function parseFaultConfigData(
  data: Readonly<Record<string, string>> | undefined,
  options: { readonly verifyCheckCode?: boolean } = {},
): Parsed<FaultConfigData> {
  if (data === undefined || data === null || typeof data !== 'object') return rejected('fault-config: no data');
  const text = Object.hasOwn(data, FAULT_NPUS_KEY) ? data[FAULT_NPUS_KEY] : undefined;
  if (typeof text !== 'string') return rejected(`fault-config: data key ${FAULT_NPUS_KEY} missing`);
  const parsed = parseTaskFaultInfo(text);
  if (!parsed.ok) return parsed;
  const raw = Object.hasOwn(data, FAULT_CONFIG_CHECK_CODE_KEY) ? data[FAULT_CONFIG_CHECK_CODE_KEY] : undefined;
  const code = typeof raw === 'string' ? raw : '';
  if (options.verifyCheckCode ?? true) {
    if (code === '') return rejected('fault-config: checkCode is empty');
    const expected = faultInfoCheckCode(parsed.value);
    if (code !== expected) return rejected(`fault-config: checkCode mismatch (expected ${expected})`);
  }
  return ok({ info: parsed.value, checkCode: code });
}

/** ConfigMap `data` to write: existing keys kept, `fault-npus` and `checkCode` replaced. */
export function encodeFaultConfigData(
  info: TaskFaultInfo,
  existingData?: Readonly<Record<string, string>>,
): Record<string, string> {
  const kept = Object.entries(existingData ?? {}).filter(([, v]) => typeof v === 'string');
  return Object.fromEntries([...kept, [FAULT_NPUS_KEY, encodeTaskFaultInfo(info)], [FAULT_CONFIG_CHECK_CODE_KEY, faultInfoCheckCode(info)]]);
}
