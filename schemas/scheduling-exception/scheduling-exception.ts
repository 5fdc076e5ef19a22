/**
 * `cluster-system/scheduling-exception-report`, written by ClusterD's scheduling exception collector
 * (clusterd application/schedulingexception: consts.go, types.go, collector.go updateConfigMap):
 * created by the first check (every 10 s from start), no labels, no annotations; data key
 * `<jobName>.<jobUID>` per job whose scheduling condition was the same at two checks in a row,
 * value `{"jobName","jobType","nameSpace","conditions":{"status","reason","message"}}` with `<`
 * turned into a space and `>` removed from the message. With no such job the data is empty (the
 * apiserver stores no `data` field).
 */
export const SCHEDULING_EXCEPTION_CM_NAME = 'scheduling-exception-report';
/** ClusterD's collector checks (and writes) this often. */
export const SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS = 10_000;
