/**
 * `cluster-system/scheduling-exception-report`, written by ClusterD's scheduling exception collector
 * (clusterd application/schedulingexception: consts.go, types.go, collector.go updateConfigMap):
 * created by the first check (every 10 s from start), no labels, no annotations; data key
 * `<jobName>.<jobUID>` per job whose scheduling condition was the same at two checks in a row,
 * value `{"jobName","jobType","nameSpace","conditions":{"status","reason","message"}}` with `<`
 * turned into a space and `>` removed from the message. With no such job the data is empty (the
 * apiserver stores no `data` field).
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
