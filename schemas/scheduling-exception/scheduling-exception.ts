/**
 * `cluster-system/scheduling-exception-report`, written by ClusterD's scheduling exception collector
 * (clusterd application/schedulingexception: consts.go, types.go, collector.go updateConfigMap):
 * created by the first check (every 10 s from start), no labels, no annotations; data key
 * `<jobName>.<jobUID>` per job whose scheduling condition was the same at two checks in a row,
 * value `{"jobName","jobType","nameSpace","conditions":{"status","reason","message"}}` with `<`
 * turned into a space and `>` removed from the message. With no such job the data is empty (the
 * apiserver stores no `data` field).
 *
 * Messages come from objects tenants write (a PodGroup's status has no subresource: its owner sets
 * its conditions), and the report is one ConfigMap for the cluster. ClusterD copies them whole, so
 * one 1 MB message makes every later write fail. With --output-limits a message is cut to
 * MAX_EXCEPTION_MESSAGE_CHARS (`limitMessage`) and the data kept within a ConfigMap's 1 MiB by
 * leaving out the largest entries (`fitExceptionReport`).
 */
import { goJson } from '../go-json.ts';

export const SCHEDULING_EXCEPTION_CM_NAME = 'scheduling-exception-report';
/** ClusterD's collector checks (and writes) this often. */
export const SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS = 10_000;

/** ClusterD's conditionDetail.Status values. */
export type ExceptionStatus = 'JobEmptyStatus' | 'JobInitialized' | 'JobFailed' | 'PodGroupCreated' | 'PodGroupPending' | 'PodGroupInqueue' | 'PodGroupUnknown' | 'PodGroupRunning';

export interface ExceptionCondition {
  readonly status: ExceptionStatus;
  readonly reason: string;
  readonly message: string;
}

/** One entry (ClusterD jobExceptionInfo). */
export interface JobException {
  readonly jobName: string;
  readonly jobType: string;
  readonly nameSpace: string;
  readonly condition: ExceptionCondition;
}

/** The data key of a job's entry: `<jobName>.<job key>`. */
export const exceptionKey = (jobName: string, jobKey: string): string => `${jobName}.${jobKey}`;

/** json.Marshal(jobExceptionInfo) with updateConfigMap's message edit (`<` -> space, `>` dropped). */
export function encodeJobException(e: JobException): string {
  const message = e.condition.message.replaceAll('<', ' ').replaceAll('>', '');
  return goJson({ jobName: e.jobName, jobType: e.jobType, nameSpace: e.nameSpace, conditions: { status: e.condition.status, reason: e.condition.reason, message } });
}

/** Characters of a condition message kept in the report (Volcano's own are a few hundred). */
export const MAX_EXCEPTION_MESSAGE_CHARS = 4096;
const CUT_MARK = ' [cut]';

/** The message within MAX_EXCEPTION_MESSAGE_CHARS (marked when cut); `cut`: it was. */
export function limitMessage(message: string): { message: string; cut: boolean } {
  return message.length <= MAX_EXCEPTION_MESSAGE_CHARS ? { message, cut: false } : { message: message.slice(0, MAX_EXCEPTION_MESSAGE_CHARS) + CUT_MARK, cut: true };
}

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** The report's data within `maxBytes` (keys and values): the largest entries left out first; `omitted` their keys. */
export function fitExceptionReport(data: Readonly<Record<string, string>>, maxBytes: number): { data: Record<string, string>; omitted: string[] } {
  const sizes = Object.entries(data).map(([k, v]) => [k, bytes(k) + bytes(v)] as const);
  let total = sizes.reduce((n, [, b]) => n + b, 0);
  if (total <= maxBytes) return { data: { ...data }, omitted: [] };
  const omitted: string[] = [];
  for (const [k, b] of [...sizes].sort((a, z) => z[1] - a[1] || (a[0] < z[0] ? -1 : 1))) {
    if (total <= maxBytes) break;
    omitted.push(k);
    total -= b;
  }
  const out = Object.fromEntries(Object.entries(data).filter(([k]) => !omitted.includes(k)));
  return { data: out, omitted };
}
