/**
 * `<job ns>/job-summary-<job>[-<i>]`, ClusterD's per-job summary (clusterd domain/job:
 * job_cm_util.go, job_util.go; constant.RankTable / ServerHccl / Device in common/constant/type.go).
 *
 * - Labels: `outside-job-info=true`, plus `ring-controller.atlas=ascend-910` unless the job's
 *   resource type is `npu` (PodGroup minResources `huawei.com/npu`).
 * - Data (all strings): job_name, framework, job_id (the job's controller UID), job_status
 *   (pending|running|failed|complete), cm_index, total (number of ConfigMaps), hccl.json, operator
 *   (add|delete), time (add time, Unix s), sid; deleteTime (Unix s) once failed/complete or
 *   pre-deleted; sharedTorIp and masterAddr for framework `pytorch` (not in the pending form).
 * - hccl.json: Go json.Marshal of RankTable (fields in declaration order, `server_count` a string,
 *   `container_ids` a Go map, HTML escaping), cut by servers into slices of at most 800 KiB, one
 *   ConfigMap per slice (`-<i>` from the second on), every slice carrying `total` = slice count.
 *   A job with no server yet has no slice: hccl.json is "" in the add form and
 *   `{"status":"initializing"}` in the pending and delete forms.
 */
import { goJson, goMap } from '../go-json.ts';

export const JOB_SUMMARY_PREFIX = 'job-summary';
export const JOB_SUMMARY_LABEL = 'outside-job-info';
export const ATLAS_TASK_LABEL = 'ring-controller.atlas';
export const ATLAS_TASK_VALUE = 'ascend-910';
/** constant.DefaultHcclJson */
export const DEFAULT_HCCL_JSON = '{"status":"initializing"}';
/** job_util.go maxHcclSliceSize: bytes of one hccl.json slice. */
export const MAX_HCCL_SLICE_BYTES = 800 * 1024;
/** Framework whose summary also carries sharedTorIp / masterAddr. */
export const PYTORCH = 'pytorch';

export type JobStatus = 'pending' | 'running' | 'failed' | 'complete';

export interface HcclDevice {
  readonly deviceId: string;
  readonly deviceIp: string;
  readonly rankId: string;
  /** omitempty */
  readonly superDeviceId?: string;
}

export interface HcclServer {
  readonly devices: readonly HcclDevice[];
  readonly serverId: string;
  readonly hostIp: string;
  readonly superPodId: number;
  readonly serverName: string;
  readonly serverSn: string;
  readonly podName: string;
  /** container name -> container id; null is a nil map. */
  readonly containerIds: Readonly<Record<string, string>> | null;
}

export interface RankTable {
  /** initializing | complete; "" for the zero RankTable of a pending job. */
  readonly status: string;
  /** null: the nil slice of a zero RankTable. */
  readonly servers: readonly HcclServer[] | null;
  readonly serverCount: string;
  readonly total: number;
}

export const EMPTY_RANK_TABLE: RankTable = { status: '', servers: null, serverCount: '', total: 0 };

/** Go struct order of constant.Device with v1's fields (levelList is never set in server_list). */
const deviceJson = (d: HcclDevice): object => ({ device_id: d.deviceId, device_ip: d.deviceIp, rank_id: d.rankId, super_device_id: d.superDeviceId || undefined });

const serverJson = (s: HcclServer): object => ({
  device: s.devices.map(deviceJson),
  server_id: s.serverId,
  host_ip: s.hostIp,
  super_pod_id: s.superPodId,
  server_name: s.serverName,
  server_sn: s.serverSn,
  pod_name: s.podName,
  container_ids: s.containerIds === null ? null : goMap(s.containerIds),
});

/** json.Marshal(constant.RankTable) (v1: no version / rank_list / rank_count, all omitempty). */
export function encodeRankTable(t: RankTable): string {
  return goJson({ status: t.status, server_list: t.servers === null ? null : t.servers.map(serverJson), server_count: t.serverCount, total: t.total });
}

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

/** util.BinarySearchMaxFit: the largest k in 1..length whose prefix fits (0 when none does). */
function maxFit(length: number, maxBytes: number, sizeOf: (k: number) => number): number {
  let low = 1;
  let high = length;
  while (low <= high) {
    const mid = Math.floor((low + high) / 2);
    if (sizeOf(mid) <= maxBytes) low = mid + 1;
    else high = mid - 1;
  }
  return high;
}

/**
 * getHcclSliceBySize: the table cut by servers into slices of at most `maxBytes` (a single larger
 * server is a slice of its own). Sizes are measured with the table's own `total`; the slices carry
 * total = their count. No server: no slice.
 */
export function hcclSlices(t: RankTable, maxBytes = MAX_HCCL_SLICE_BYTES): string[] {
  const servers = t.servers ?? [];
  if (servers.length === 0) return [];
  const part = (from: number, to: number, total: number): string => encodeRankTable({ ...t, servers: servers.slice(from, to), total });
  const ends: number[] = [];
  for (let begin = 0; begin < servers.length;) {
    const n = Math.max(1, maxFit(servers.length - begin, maxBytes, (k) => byteLength(part(begin, begin + k, t.total))));
    begin += n;
    ends.push(begin);
  }
  return ends.map((end, i) => part(i === 0 ? 0 : ends[i - 1]!, end, ends.length));
}

/** The ConfigMap holding slice `index` of the job's summary. */
export const jobSummaryCmName = (jobName: string, index: number): string =>
  (index === 0 ? `${JOB_SUMMARY_PREFIX}-${jobName}` : `${JOB_SUMMARY_PREFIX}-${jobName}-${index}`);

export function jobSummaryLabels(resourceType: string): Record<string, string> {
  return resourceType === 'npu' ? { [JOB_SUMMARY_LABEL]: 'true' } : { [ATLAS_TASK_LABEL]: ATLAS_TASK_VALUE, [JOB_SUMMARY_LABEL]: 'true' };
}

/** What every form of the summary is written from (ClusterD's constant.JobInfo subset). */
export interface JobSummaryFields {
  readonly name: string;
  readonly framework: string;
  readonly key: string;
  readonly status: JobStatus;
  readonly addTimeSec: number;
  readonly sid: string;
  readonly totalCmNum: number;
  readonly sharedTorIp: string;
  readonly masterAddr: string;
}

const str = (n: number): string => String(Math.trunc(n));

/** initCM: the pending form (ConfigMap 0 only). */
export function pendingData(j: JobSummaryFields): Record<string, string> {
  return {
    job_name: j.name, framework: j.framework, job_id: j.key, job_status: j.status, cm_index: '0', total: str(j.totalCmNum),
    'hccl.json': DEFAULT_HCCL_JSON, operator: 'add', time: str(j.addTimeSec), sid: j.sid,
  };
}

/** updateCM: the add form of ConfigMap `index`; deleteTime (now) once the job failed or completed. */
export function addData(j: JobSummaryFields, index: number, hccl: string, nowSec: number): Record<string, string> {
  return {
    ...(j.framework === PYTORCH ? { sharedTorIp: j.sharedTorIp, masterAddr: j.masterAddr } : {}),
    job_name: j.name, framework: j.framework, job_id: j.key, job_status: j.status, time: str(j.addTimeSec), operator: 'add',
    cm_index: str(index), total: str(j.totalCmNum), 'hccl.json': hccl, sid: j.sid,
    ...(j.status === 'failed' || j.status === 'complete' ? { deleteTime: str(nowSec) } : {}),
  };
}

/** preDeleteCM: the delete form of ConfigMap `index`. */
export function deleteData(j: JobSummaryFields, index: number, hccl: string, deleteTimeSec: number): Record<string, string> {
  return {
    ...(j.framework === PYTORCH ? { sharedTorIp: j.sharedTorIp, masterAddr: j.masterAddr } : {}),
    job_name: j.name, framework: j.framework, job_status: j.status, job_id: j.key, sid: j.sid, 'hccl.json': hccl, operator: 'delete',
    deleteTime: str(deleteTimeSec), total: str(j.totalCmNum), time: str(j.addTimeSec), cm_index: str(index),
  };
}
