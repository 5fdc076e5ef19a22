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
 * - v2 (resource type `npu`, domain/pod/ranktable_v2.go): the table also carries `version` "2.0",
 *   `rank_list` (constant.Rank per device, by rank id) and `rank_count` (all ranks, in every slice);
 *   each slice's rank_list is the run of ranks aligned with its servers' devices (computeRankEnd).
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

/** api.RankAddrItem; ports null is a nil slice. */
export interface RankAddrItem {
  readonly addrType: string;
  readonly addr: string;
  readonly ports: readonly string[] | null;
  readonly planeId: string;
}

/** api.LevelElement; rankAddrList null is a nil slice. */
export interface LevelElement {
  readonly netLayer: number;
  readonly netInstanceId: string;
  readonly netType: string;
  readonly netAttr: string;
  readonly rankAddrList: readonly RankAddrItem[] | null;
}

/** constant.Rank: one device of the v2 rank_list. */
export interface Rank {
  readonly rankId: number;
  readonly localId: number;
  readonly deviceId: number;
  /** omitempty */
  readonly levelList: readonly LevelElement[];
}

export interface RankTable {
  /** initializing | complete; "" for the zero RankTable of a pending job. */
  readonly status: string;
  /** null: the nil slice of a zero RankTable. */
  readonly servers: readonly HcclServer[] | null;
  readonly serverCount: string;
  readonly total: number;
  /** v2 only ("2.0"); omitempty. */
  readonly version?: string;
  /** v2 only; omitempty. */
  readonly ranks?: readonly Rank[];
  /** v2 only: the job's rank count, not the slice's; omitempty. */
  readonly rankCount?: number;
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

const levelJson = (e: LevelElement): object => ({
  net_layer: e.netLayer, net_instance_id: e.netInstanceId, net_type: e.netType, net_attr: e.netAttr,
  rank_addr_list: e.rankAddrList === null ? null : e.rankAddrList.map((a) => ({ addr_type: a.addrType, addr: a.addr, ports: a.ports, plane_id: a.planeId })),
});

const rankJson = (r: Rank): object => ({
  rank_id: r.rankId, local_id: r.localId, device_id: r.deviceId, level_list: r.levelList.length === 0 ? undefined : r.levelList.map(levelJson),
});

/** json.Marshal(constant.RankTable): version / rank_list / rank_count are omitempty (absent in v1). */
export function encodeRankTable(t: RankTable): string {
  return goJson({
    status: t.status, server_list: t.servers === null ? null : t.servers.map(serverJson), server_count: t.serverCount, total: t.total,
    version: t.version || undefined, rank_list: t.ranks === undefined || t.ranks.length === 0 ? undefined : t.ranks.map(rankJson), rank_count: t.rankCount || undefined,
  });
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
  const ranks = t.ranks ?? [];
  // job_util.go computeRankEnd: the servers' device count past rankFrom, capped at the rank list's end
  // (a device whose id is not an integer has a server entry but no rank).
  const rankEnd = (from: number, to: number, rankFrom: number): number =>
    Math.min(ranks.length, servers.slice(from, to).reduce((n, s) => n + s.devices.length, rankFrom));
  const part = (from: number, to: number, rankFrom: number, total: number): string =>
    encodeRankTable({ ...t, servers: servers.slice(from, to), total, ...(ranks.length > 0 ? { ranks: ranks.slice(rankFrom, rankEnd(from, to, rankFrom)) } : {}) });
  const bounds: Array<{ begin: number; end: number; rankFrom: number }> = [];
  for (let begin = 0, rankFrom = 0; begin < servers.length;) {
    const n = Math.max(1, maxFit(servers.length - begin, maxBytes, (k) => byteLength(part(begin, begin + k, rankFrom, t.total))));
    bounds.push({ begin, end: begin + n, rankFrom });
    rankFrom = rankEnd(begin, begin + n, rankFrom);
    begin += n;
  }
  return bounds.map((b) => part(b.begin, b.end, b.rankFrom, bounds.length));
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
