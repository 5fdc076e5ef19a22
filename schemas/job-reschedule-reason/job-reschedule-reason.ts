/**
 * `mindx-dl/job-reschedule-reason`, data key `recent-reschedule-records` (docs/formats.md#job-reschedule-reason,
 * docs/rules.md#resched.reason-history). Volcano writes it; we write it because we replace Volcano's rescheduling half.
 *
 * Value: Go `map[JobID]*RescheduleReason` with JobID = `<ns>/<jobName>-<jobUID>` (the PodGroup name,
 * not `ns/jobName` as the docs say), or `""` when empty. Per job: newest record first, at most 10
 * records, at most 10 task reasons per record. When the JSON exceeds 950 × 1024 bytes, up to 10
 * rounds each drop the oldest record of every job that still has more than one (`trimToSize`).
 * Parsing follows Go `json.Unmarshal` (absent or null scalars are zero, unknown keys dropped).
 */
import { goJson } from '../go-json.ts';
import { ok, parseValidated, type Parsed } from '../parsed.ts';
import { validate as generated } from './job-reschedule-reason.validators.gen.ts';

export const JOB_RESCHEDULE_REASON_CM_NAME = 'job-reschedule-reason';
export const JOB_RESCHEDULE_REASON_NAMESPACE = 'mindx-dl';
export const RECENT_RESCHEDULE_RECORDS_KEY = 'recent-reschedule-records';
/** Records kept per job (Volcano MaxRescheduleRecordsNum); also the cap on task reasons per record. */
export const MAX_RESCHEDULE_RECORDS = 10;
export const MAX_REASONS_PER_RECORD = 10;
/** Trim threshold on the encoded value, bytes (Volcano MaxKbOfRescheduleRecords). */
export const MAX_RESCHEDULE_RECORDS_BYTES = 950 * 1024;
/** Trimming rounds at most (Volcano's loop limit). */
export const MAX_TRIM_ROUNDS = 10;
export const MAX_RESCHEDULE_RECORDS_CHARS = 1024 * 1024;

/** `RescheduleReason` values (the fault type of the task). */
export const RESCHEDULE_REASONS = [
  'pod-failed',
  'process-exception',
  'NodeUnhealthy',
  'CardUnhealthy',
  'CardNetworkUnhealthy',
  'SubHealthFault',
  'RelationFaultSeparate',
] as const;

/** The map key and JobID of a job: `<ns>/<jobName>-<jobUID>`. */
export const rescheduleJobKey = (namespace: string, jobName: string, jobUid: string): string =>
  `${namespace}/${jobName}-${jobUid}`;

/** Go `RescheduleTaskReason`, fields in declaration order. */
export interface RescheduleTaskReason {
  readonly RescheduleReason: string;
  readonly PodName: string;
  readonly NodeName: string;
  /** The task's `hccl/rankIndex`, as a string. */
  readonly NodeRankIndex: string;
}

/** Go `RescheduleRecord`. */
export interface RescheduleRecord {
  /** klog-style `I0102 15:04:05` (month, day, time of day) in the writer's time zone. */
  readonly LogFileFormatTime: string;
  /** Unix seconds. */
  readonly RescheduleTimeStamp: number;
  readonly ReasonOfTask: readonly RescheduleTaskReason[] | null;
}

/** Go `RescheduleReason`. `AdditionalInfo` is omitempty: omitted when undefined or empty. */
export interface RescheduleReason {
  readonly JobID: string;
  readonly TotalRescheduleTimes: number;
  /** Newest first. */
  readonly RescheduleRecords: readonly RescheduleRecord[] | null;
  readonly AdditionalInfo?: string;
}

/** JobID -> reasons. A Map, so hostile keys such as `__proto__` are inert. */
export type RescheduleHistory = ReadonlyMap<string, RescheduleReason>;

type Raw = Record<string, unknown>;
// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

const taskReason = (r: RescheduleTaskReason | Raw): RescheduleTaskReason => {
  const x = r as Raw;
  return { RescheduleReason: str(x.RescheduleReason), PodName: str(x.PodName), NodeName: str(x.NodeName), NodeRankIndex: str(x.NodeRankIndex) };
};
const record = (r: RescheduleRecord | Raw): RescheduleRecord => {
  const x = r as Raw;
  return {
    LogFileFormatTime: str(x.LogFileFormatTime),
    RescheduleTimeStamp: num(x.RescheduleTimeStamp),
    ReasonOfTask: Array.isArray(x.ReasonOfTask) ? (x.ReasonOfTask as Raw[]).map(taskReason) : null,
  };
};
/** Canonical object in Go field order; AdditionalInfo omitted when empty (omitempty). */
const reason = (r: RescheduleReason | Raw): RescheduleReason => {
  const x = r as Raw;
  const info = str(x.AdditionalInfo);
  return {
    JobID: str(x.JobID),
    TotalRescheduleTimes: num(x.TotalRescheduleTimes),
    RescheduleRecords: Array.isArray(x.RescheduleRecords) ? (x.RescheduleRecords as Raw[]).map(record) : null,
    ...(info === '' ? {} : { AdditionalInfo: info }),
  };
};

/** Parses the `recent-reschedule-records` value; `""` and `null` give an empty history. Never throws. */
export function parseRescheduleHistory(text: string): Parsed<RescheduleHistory> {
  if (text === '') return ok(new Map());
  const p = parseValidated(RECENT_RESCHEDULE_RECORDS_KEY, text, validate, { maxChars: MAX_RESCHEDULE_RECORDS_CHARS });
  if (!p.ok) return p;
  return ok(new Map(Object.entries((p.value ?? {}) as Record<string, Raw>).map(([k, v]) => [k, reason(v)] as const)));
}

/** The `recent-reschedule-records` value: `""` when empty, else the Go map JSON (keys sorted). */
export function encodeRescheduleHistory(history: RescheduleHistory): string {
  if (history.size === 0) return '';
  return goJson(new Map([...history].map(([k, v]) => [k, reason(v)] as const)));
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * Go `time.Format("I0102 15:04:05")` of a Unix time in seconds: `I`, month, day, space, 24-hour
 * time. `timeZone` is an IANA name (Volcano uses its process's local zone; we default to UTC).
 * Throws RangeError for an unknown time zone (a configuration error, check it once at start-up).
 */
export function logFileFormatTime(unixS: number, timeZone = 'UTC'): string {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(Math.floor(unixS) * 1000)).map((x) => [x.type, x.value]));
  return `I${p.month}${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

/** A new record at `nowS` for the given fault tasks (the first 10 kept). */
export function newRescheduleRecord(
  reasons: readonly RescheduleTaskReason[],
  nowS: number,
  timeZone = 'UTC',
): RescheduleRecord {
  const t = Math.max(0, Math.floor(nowS));
  return { LogFileFormatTime: logFileFormatTime(t, timeZone), RescheduleTimeStamp: t, ReasonOfTask: reasons.slice(0, MAX_REASONS_PER_RECORD).map(taskReason) };
}

/**
 * Adds a record for the job `<jobId>-<uid>` (jobId = `<ns>/<jobName>`): prepended (newest first),
 * list cut to 10 records, the record's task reasons cut to 10, TotalRescheduleTimes + 1. Returns a
 * new history; the input is not modified.
 */
export function addRecord(
  history: RescheduleHistory,
  jobId: string,
  uid: string,
  newRecord: RescheduleRecord,
): RescheduleHistory {
  const key = `${jobId}-${uid}`;
  const prev = history.get(key);
  const capped: RescheduleRecord = { ...record(newRecord), ReasonOfTask: (newRecord.ReasonOfTask ?? []).slice(0, MAX_REASONS_PER_RECORD).map(taskReason) };
  const next: RescheduleReason = {
    JobID: prev?.JobID || key,
    TotalRescheduleTimes: (prev?.TotalRescheduleTimes ?? 0) + 1,
    RescheduleRecords: [capped, ...(prev?.RescheduleRecords ?? [])].slice(0, MAX_RESCHEDULE_RECORDS),
    ...(prev?.AdditionalInfo ? { AdditionalInfo: prev.AdditionalInfo } : {}),
  };
  return new Map(history).set(key, next);
}

/** Keeps only the jobs still known (Volcano drops jobs that left the session). */
export function retainJobs(history: RescheduleHistory, liveJobKeys: ReadonlySet<string>): RescheduleHistory {
  return new Map([...history].filter(([k]) => liveJobKeys.has(k)));
}

export interface TrimResult {
  readonly history: RescheduleHistory;
  /** `encodeRescheduleHistory(history)`, ready to write. */
  readonly encoded: string;
  /** UTF-8 length of `encoded`. */
  readonly bytes: number;
  /** Trimming rounds that ran (0 when it already fitted). */
  readonly rounds: number;
  /** Records dropped, for the log: job key and the record's timestamp. */
  readonly dropped: ReadonlyArray<{ readonly jobKey: string; readonly rescheduleTimeStamp: number }>;
  /** False when 10 rounds (or one record per job) could not bring it under `maxBytes`. */
  readonly fits: boolean;
}

/**
 * Volcano's size guard: while the encoded value is larger than `maxBytes` and fewer than 10 rounds
 * ran, drop the oldest (last) record of every job that has more than one, then re-encode. The newest
 * record of a job is never dropped, so the result may still be too large (`fits: false`).
 */
export function trimToSize(history: RescheduleHistory, maxBytes = MAX_RESCHEDULE_RECORDS_BYTES): TrimResult {
  const current = new Map(history);
  let encoded = encodeRescheduleHistory(current);
  let bytes = Buffer.byteLength(encoded, 'utf8');
  let rounds = 0;
  const dropped: Array<{ jobKey: string; rescheduleTimeStamp: number }> = [];
  while (bytes > maxBytes && rounds < MAX_TRIM_ROUNDS) {
    let any = false;
    for (const [k, v] of current) {
      const recs = v.RescheduleRecords ?? [];
      if (recs.length <= 1) continue;
      dropped.push({ jobKey: k, rescheduleTimeStamp: recs[recs.length - 1]!.RescheduleTimeStamp });
      current.set(k, { ...v, RescheduleRecords: recs.slice(0, -1) });
      any = true;
    }
    rounds++;
    if (!any) break; // every job is down to its newest record: further rounds change nothing
    encoded = encodeRescheduleHistory(current);
    bytes = Buffer.byteLength(encoded, 'utf8');
  }
  return { history: current, encoded, bytes, rounds, dropped, fits: bytes <= maxBytes };
}
