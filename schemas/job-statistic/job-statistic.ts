/**
 * `mindx-dl/current-job-statistic`, ClusterD's statistic of the Volcano Jobs and AscendJobs it
 * knows (clusterd application/statistics job_output.go buildCmData, domain/statistics
 * job_collect_utils.go, constant.JobStatistic in common/constant/type.go).
 *
 * - No labels, no annotations (UpdateOrCreateConfigMap sends a fresh object with nil labels).
 * - Data: `data` = json.Marshal([]constant.JobStatistic): per job `id` (the job object's UID), then
 *   omitempty `customID` (the job's `custom-job-id` annotation), `cardNum`, `podFirstRunTime`,
 *   `stopTime`, `podLastRunTime`, `podLastFaultTime`, `podFaultTimes` (Unix seconds / counts);
 *   `[]` when there is no job. `totalJob` = the number of entries, in decimal.
 * - Order: ClusterD ranges over a Go map, so with several jobs its order is random from one write
 *   to the next; ours is stable (the order entries were loaded or added in). README: compatibility.
 * - Size: a ConfigMap holds at most 1 MiB of data. ClusterD copies `custom-job-id` whole and writes
 *   every entry, so one tenant's long ids (or ~6,000 jobs) make every later write fail and the
 *   statistic stops for every job. With the limits on (--output-limits), an id over
 *   MAX_CUSTOM_JOB_ID_CHARS is left out of its entry and `fitJobStatistics` leaves out entries
 *   (stopped jobs first, oldest stop first, then the earliest added) until the data fits.
 */
import { goJson } from '../go-json.ts';
import { MAX_ID_CHARS } from '../job-knobs/job-knobs.ts';

export const JOB_STATISTIC_CM_NAME = 'current-job-statistic';
export const JOB_STATISTIC_DATA_KEY = 'data';
export const JOB_STATISTIC_TOTAL_KEY = 'totalJob';
/** maxCMJobStatisticNum: entries beyond this many are refused. */
export const MAX_JOB_STATISTICS = 10_000;
/** The bound job-knobs applies to the same annotation on the PodGroup (free string, bounded). */
export const MAX_CUSTOM_JOB_ID_CHARS = MAX_ID_CHARS;
/** The apiserver's limit on a ConfigMap's data (keys and values, bytes). */
export const MAX_CONFIGMAP_DATA_BYTES = 1024 * 1024;
/** updateStatisticFrequency: the ConfigMap is rewritten (when changed) on this tick. */
export const JOB_STATISTIC_WRITE_INTERVAL_MS = 3_000;

/** The fields of constant.JobStatistic that reach the ConfigMap. */
export interface JobStatisticFields {
  readonly id: string;
  readonly customId: string;
  readonly cardNum: number;
  readonly podFirstRunTime: number;
  readonly stopTime: number;
  readonly podLastRunTime: number;
  readonly podLastFaultTime: number;
  readonly podFaultTimes: number;
}

export const ZERO_STATISTIC: Omit<JobStatisticFields, 'id'> = {
  customId: '', cardNum: 0, podFirstRunTime: 0, stopTime: 0, podLastRunTime: 0, podLastFaultTime: 0, podFaultTimes: 0,
};

const omitZero = <T>(v: T): T | undefined => (v === 0 || v === '' ? undefined : v);

/** One entry as Go encodes it (declaration order, omitempty). */
const entryJson = (e: JobStatisticFields): object => ({
  id: e.id,
  customID: omitZero(e.customId),
  cardNum: omitZero(e.cardNum),
  podFirstRunTime: omitZero(e.podFirstRunTime),
  stopTime: omitZero(e.stopTime),
  podLastRunTime: omitZero(e.podLastRunTime),
  podLastFaultTime: omitZero(e.podLastFaultTime),
  podFaultTimes: omitZero(e.podFaultTimes),
});

/** buildCmData: the ConfigMap's whole data. */
export function jobStatisticData(entries: readonly JobStatisticFields[]): Record<string, string> {
  return { [JOB_STATISTIC_DATA_KEY]: goJson(entries.map(entryJson)), [JOB_STATISTIC_TOTAL_KEY]: String(entries.length) };
}

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Bytes of the ConfigMap's data (keys and values) for these entries. */
export const jobStatisticBytes = (data: Readonly<Record<string, string>>): number =>
  Object.entries(data).reduce((n, [k, v]) => n + utf8Bytes(k) + utf8Bytes(v), 0);

/**
 * buildCmData within `maxBytes`: every entry when it fits; else entries are left out (stopped jobs
 * first, the oldest stop first, then the earliest added) until it does. `omitted` lists their ids.
 */
export function fitJobStatistics(entries: readonly JobStatisticFields[], maxBytes: number = MAX_CONFIGMAP_DATA_BYTES): { data: Record<string, string>; omitted: string[] } {
  const data = jobStatisticData(entries);
  if (jobStatisticBytes(data) <= maxBytes) return { data, omitted: [] };
  const sizes = entries.map((e) => utf8Bytes(goJson(entryJson(e))) + 1); // + its comma
  const order = entries.map((e, i) => ({ e, i }))
    .sort((a, b) => (a.e.stopTime !== 0) !== (b.e.stopTime !== 0) ? (a.e.stopTime !== 0 ? -1 : 1) : a.e.stopTime !== b.e.stopTime ? a.e.stopTime - b.e.stopTime : a.i - b.i);
  // The `data` and `totalJob` keys, brackets and the count's digits stay within this slack.
  let bytes = jobStatisticBytes(data);
  const out = new Set<number>();
  for (const { i } of order) {
    if (bytes <= maxBytes) break;
    out.add(i);
    bytes -= sizes[i]!;
  }
  let kept = entries.filter((_, i) => !out.has(i));
  let fitted = jobStatisticData(kept);
  // The estimate is exact but for the count's digits; one more entry out settles any remainder.
  while (jobStatisticBytes(fitted) > maxBytes && kept.length > 0) {
    const next = order.find(({ i }) => !out.has(i));
    if (next === undefined) break;
    out.add(next.i);
    kept = entries.filter((_, i) => !out.has(i));
    fitted = jobStatisticData(kept);
  }
  return { data: fitted, omitted: entries.filter((_, i) => out.has(i)).map((e) => e.id) };
}

export type ParsedStatistics =
  | { readonly ok: true; readonly entries: readonly JobStatisticFields[] }
  | { readonly ok: false; readonly reason: 'missing_data' | 'syntax' | 'type'; readonly detail: string };

const FIELDS: ReadonlyArray<readonly [string, keyof JobStatisticFields, 'string' | 'int']> = [
  ['id', 'id', 'string'], ['customID', 'customId', 'string'], ['cardNum', 'cardNum', 'int'],
  ['podFirstRunTime', 'podFirstRunTime', 'int'], ['stopTime', 'stopTime', 'int'], ['podLastRunTime', 'podLastRunTime', 'int'],
  ['podLastFaultTime', 'podLastFaultTime', 'int'], ['podFaultTimes', 'podFaultTimes', 'int'],
];

/** encoding/json's key match: the exact name, else a case-insensitive one (ASCII here). */
const fieldOf = (key: string): (typeof FIELDS)[number] | undefined =>
  FIELDS.find(([n]) => n === key) ?? FIELDS.find(([n]) => n.toLowerCase() === key.toLowerCase());

/** A JSON number whose literal is not an integer (`1.0`, `1e3`): Go's int64 decode refuses it. */
const NOT_INT: object = Object.freeze({});
const INT_LITERAL = /^-?(0|[1-9]\d*)$/;
/** JSON.parse's reviver sees each number's literal (Node >= 21). */
const markFloats = (_k: string, v: unknown, ctx?: { source?: string }): unknown =>
  (typeof v === 'number' && !INT_LITERAL.test(ctx?.source ?? String(v)) ? NOT_INT : v);

/** An int64 field: an integer literal within JS's exact range (Go accepts up to 2^63-1: refused here, documented). */
const intOf = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined);

/**
 * parseCMData: the `data` key as json.Unmarshal into []constant.JobStatistic reads it. Any type
 * error fails the whole load, as in ClusterD (it then keeps nothing of the old ConfigMap).
 */
export function parseJobStatistics(data: Readonly<Record<string, string>> | undefined): ParsedStatistics {
  const text = data?.[JOB_STATISTIC_DATA_KEY];
  if (text === undefined) return { ok: false, reason: 'missing_data', detail: 'no `data` key' };
  let v: unknown;
  try { v = JSON.parse(text, markFloats); } catch (e) {
    return { ok: false, reason: 'syntax', detail: (e as Error).message };
  }
  if (v === null) return { ok: true, entries: [] };
  if (!Array.isArray(v) || v === NOT_INT) return { ok: false, reason: 'type', detail: 'not an array' };
  const entries: JobStatisticFields[] = [];
  for (const [i, item] of v.entries()) {
    if (item === null) { entries.push({ id: '', ...ZERO_STATISTIC }); continue; }
    if (typeof item !== 'object' || Array.isArray(item) || item === NOT_INT) return { ok: false, reason: 'type', detail: `entry ${i} is not an object` };
    const out: Record<string, string | number> = { id: '', ...ZERO_STATISTIC };
    for (const [k, val] of Object.entries(item as Record<string, unknown>)) {
      const f = fieldOf(k);
      if (f === undefined || val === null) continue;
      const [, name, type] = f;
      if (type === 'string') {
        if (typeof val !== 'string') return { ok: false, reason: 'type', detail: `entry ${i} field ${k}: not a string` };
        out[name] = val;
      } else {
        const n = intOf(val);
        if (n === undefined) return { ok: false, reason: 'type', detail: `entry ${i} field ${k}: not an int64` };
        out[name] = n;
      }
    }
    entries.push(out as unknown as JobStatisticFields);
  }
  return { ok: true, entries };
}
