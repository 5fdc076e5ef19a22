/**
 * ClusterD's job summary as a pure state machine (clusterd application/jobv2 processor.go updateJob,
 * domain/job job_util.go, domain/pod pod_util.go ConstructRankTableByPod): what it remembers of a
 * job (constant.JobInfo) and which ConfigMap writes each observation of the job's PodGroup and pods
 * leads to. No I/O, no clock: `nowSec` is passed in.
 *
 * Like ClusterD, the summary is written on transitions only (pending -> running -> failed/complete,
 * pre-delete): a pod change that leaves the status as it was does not rewrite it.
 */
import { goJson } from '../../schemas/go-json.ts';
import {
  DEFAULT_HCCL_JSON, EMPTY_RANK_TABLE, PYTORCH, addData, deleteData, hcclSlices, pendingData,
  type HcclDevice, type HcclServer, type JobStatus, type JobSummaryFields, type LevelElement, type RankAddrItem, type RankTable,
} from '../../schemas/job-summary/job-summary.ts';
import { RANK_TABLE_V2, SCALE_OUT_TYPE_LABEL, rankListV2, type RankPod, type RawRankLevel } from './rank-list-v2.ts';

/** The PodGroup as the summary reads it. */
export interface SummaryPodGroup {
  readonly name: string;
  readonly namespace: string;
  /** The controller ownerReference: the job's UID (its key), name and kind. */
  readonly ownerUid: string;
  readonly ownerName: string;
  readonly ownerKind: string;
  readonly minMember: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Keys of spec.minResources; undefined when there is none. */
  readonly minResources: readonly string[] | undefined;
}

export interface SummaryPod {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly nodeName: string;
  readonly phase: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Per container: the resource names of its limits and its env. */
  readonly containers: ReadonlyArray<{ readonly limits: readonly string[]; readonly env: ReadonlyArray<{ readonly name: string; readonly value: string }> }>;
  readonly containerStatuses: ReadonlyArray<{ readonly name: string; readonly containerId: string }>;
}

/** What ClusterD keeps per job (constant.JobInfo, the fields that reach a ConfigMap or a decision). */
export interface JobSummaryState extends JobSummaryFields {
  readonly namespace: string;
  readonly pgName: string;
  readonly jobType: string;
  readonly resourceType: string;
  readonly replicas: number;
  readonly isPreDelete: boolean;
  readonly deleteTimeSec: number;
  readonly rankTable: RankTable;
}

export interface SummaryWrite {
  readonly index: number;
  readonly data: Record<string, string>;
}

export interface SummaryStep {
  readonly next: JobSummaryState;
  readonly writes: readonly SummaryWrite[];
}

export interface SummaryContext {
  readonly nowSec: number;
  /** The Node's `product-serial-number` annotation ("" when unknown). */
  readonly nodeSn: (nodeName: string) => string;
  /** The SN of the Node whose InternalIP this is ("" when unknown). */
  readonly snByIp: (ip: string) => string;
}

export const RANK_INDEX_ANNOTATION = 'hccl/rankIndex';
export const DEVICE_910_ANNOTATION = 'ascend.kubectl.kubernetes.io/ascend-910-configuration';
export const DEVICE_NPU_ANNOTATION = 'ascend.kubectl.kubernetes.io/ascend-npu-configuration';
const MIN_AVAILABLE_ANNOTATION = 'huawei.com/schedule_minAvailable';
const RESOURCE_PREFIX = 'huawei.com/';

// --- the job's basic info (getJobBasicInfoByPG) ---

/** pg_util.go GetResourceType: the first NPU resource of minResources. */
export function resourceTypeOf(keys: readonly string[] | undefined): string {
  if (keys === undefined) return '';
  for (const k of keys) {
    if (k === 'huawei.com/npu') return 'npu';
    if (k.includes('Ascend910')) return 'Ascend910';
    if (k.includes('Ascend310')) return 'Ascend310'; // Ascend310P contains Ascend310: ClusterD's order
  }
  return 'unknown';
}

/** pod_util.go GetMinMember: the first pod's `huawei.com/schedule_minAvailable` (0 when none or invalid). */
export function minMemberOf(pods: readonly SummaryPod[]): number {
  for (const p of pods) {
    const v = p.annotations[MIN_AVAILABLE_ANNOTATION];
    if (v === undefined) continue;
    const n = goAtoi(v);
    return n === undefined || n <= 0 ? 0 : n;
  }
  return 0;
}

/** strconv.Atoi: an optional sign and decimal digits, nothing else. */
function goAtoi(s: string): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : undefined;
}

function sidFromLabels(labels: Readonly<Record<string, string>>): string {
  const keyName = labels.customJobKey;
  if (keyName !== undefined && keyName.trim() !== '') {
    const v = labels[keyName];
    if (v !== undefined && v.trim() !== '') return v.trim();
  }
  const id = labels['custom-job-id'];
  return id !== undefined && id.trim() !== '' ? id.trim() : '';
}

/** job_util.go getSidForJobInfo: the PodGroup's custom id, a pod's, or the job key. */
export function sidOf(pg: SummaryPodGroup, pods: readonly SummaryPod[]): string {
  const fromPg = sidFromLabels(pg.labels);
  if (fromPg !== '') return fromPg;
  for (const p of pods) {
    const s = sidFromLabels(p.labels);
    if (s !== '') return s;
  }
  return pg.ownerUid;
}

function basicInfo(pg: SummaryPodGroup, pods: readonly SummaryPod[], nowSec: number): JobSummaryState {
  return {
    key: pg.ownerUid, name: pg.ownerName, pgName: pg.name, namespace: pg.namespace, jobType: pg.ownerKind,
    replicas: Math.max(pg.minMember, minMemberOf(pods)), totalCmNum: 1,
    framework: pg.labels.framework ?? '', resourceType: resourceTypeOf(pg.minResources),
    addTimeSec: nowSec, sid: sidOf(pg, pods), status: 'pending', isPreDelete: false, deleteTimeSec: 0,
    rankTable: EMPTY_RANK_TABLE, sharedTorIp: '', masterAddr: '',
  };
}

// --- status (processor.go getStatusByCache) ---

const shouldAllocate = (p: SummaryPod): boolean => p.containers.some((c) => c.limits.some((r) => r.includes(RESOURCE_PREFIX)));

/** pod_util.go DeviceAllocateIsCompleted. */
function deviceAllocated(p: SummaryPod): boolean {
  if (p.containers.length === 0) return false;
  if (!shouldAllocate(p)) return true;
  return p.annotations[DEVICE_910_ANNOTATION] !== undefined || p.annotations[DEVICE_NPU_ANNOTATION] !== undefined;
}

function statusAfter(prev: JobStatus | undefined): JobStatus {
  if (prev === 'running' || prev === 'failed') return 'failed';
  return prev === 'complete' ? 'complete' : 'pending';
}

/** [pre-delete?, status] from the PodGroup (undefined: gone) and the job's pods. */
export function statusOf(pg: SummaryPodGroup | undefined, pods: readonly SummaryPod[], prev: JobSummaryState | undefined): [boolean, JobStatus] {
  if (pg === undefined && pods.length === 0) return [true, statusAfter(prev?.status)];
  if (pods.length === 0) return [false, statusAfter(prev?.status)];
  if (pods.some((p) => p.phase === 'Failed')) return [false, 'failed'];
  const minMember = Math.max(pg?.minMember ?? 0, minMemberOf(pods));
  if (pods.every((p) => p.phase === 'Succeeded') && pods.length >= minMember) return [false, 'complete'];
  const running = pods.every((p) => (p.phase === 'Running' || p.phase === 'Succeeded') && deviceAllocated(p));
  if (running && pods.length >= minMember && minMember > 0) return [false, 'running'];
  return [false, statusAfter(prev?.status)];
}

// --- the rank table (pod_util.go ConstructRankTableByPod) ---

interface PodDevice {
  readonly devices: ReadonlyArray<{ deviceId: string; deviceIp: string; superDeviceId: string; levelList: readonly RawRankLevel[] }>;
  readonly serverId: string;
  readonly hostIp: string;
  readonly superPodId: number;
}

const EMPTY_POD_DEVICE: PodDevice = { devices: [], serverId: '', hostIp: '', superPodId: 0 };
const asString = (v: unknown): string => (typeof v === 'string' ? v : '');
const asObject = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {});
const asInt = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) ? v : 0);

function parseAddr(v: unknown): RankAddrItem {
  const o = asObject(v);
  return { addrType: asString(o.addr_type), addr: asString(o.addr), ports: Array.isArray(o.ports) ? o.ports.map(asString) : null, planeId: asString(o.plane_id) };
}

/** api.LevelElement as json.Unmarshal leaves it (an absent list is a nil slice). */
function parseLevelElement(v: unknown): LevelElement {
  const o = asObject(v);
  return {
    netLayer: asInt(o.net_layer), netInstanceId: asString(o.net_instance_id), netType: asString(o.net_type), netAttr: asString(o.net_attr),
    rankAddrList: Array.isArray(o.rank_addr_list) ? o.rank_addr_list.map(parseAddr) : null,
  };
}

/** constant.Device.LevelList: the annotation's camelCase `levelList` (A5). */
function parseLevelList(v: unknown): RawRankLevel[] {
  if (!Array.isArray(v)) return [];
  return v.map((l) => {
    const o = asObject(l);
    return { level: asInt(o.level), info: Object.entries(asObject(o.info)).map(([k, e]) => [k, parseLevelElement(e)] as const) };
  });
}

/**
 * The device plugin's allocation annotation (constant.PodDevice). As Go's json.Unmarshal: a syntax
 * error leaves it empty, a field of the wrong type is skipped.
 */
export function parsePodDevice(text: string): PodDevice {
  let v: unknown;
  try { v = JSON.parse(text); } catch { return EMPTY_POD_DEVICE; }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return EMPTY_POD_DEVICE;
  const o = v as Record<string, unknown>;
  const devices = Array.isArray(o.devices)
    ? o.devices.map((d) => {
      const e = (typeof d === 'object' && d !== null ? d : {}) as Record<string, unknown>;
      return { deviceId: asString(e.device_id), deviceIp: asString(e.device_ip), superDeviceId: asString(e.super_device_id), levelList: parseLevelList(e.levelList) };
    })
    : [];
  const spid = o.super_pod_id;
  return { devices, serverId: asString(o.server_id), hostIp: asString(o.host_ip), superPodId: typeof spid === 'number' && Number.isInteger(spid) ? spid : 0 };
}

/** [allocation, whether the pod needs one] (pod_util.go getPodDevice). */
function podDeviceOf(p: SummaryPod): [PodDevice, boolean] {
  const text = p.annotations[DEVICE_910_ANNOTATION] ?? p.annotations[DEVICE_NPU_ANNOTATION];
  if (text === undefined) return [EMPTY_POD_DEVICE, shouldAllocate(p)];
  return [parsePodDevice(text), true];
}

/**
 * The rank table of the job's pods and how many of them are complete (allocated or needing none).
 * `scaleOutType` (the PodGroup's label, upper-cased and trimmed) given: an `npu` job's, with the v2 rank list.
 */
export function rankTableOf(pods: readonly SummaryPod[], replicas: number, ctx: SummaryContext, scaleOutType?: string): [RankTable, number] {
  if (replicas <= 0) return [EMPTY_RANK_TABLE, 0];
  let completed = 0;
  const servers: HcclServer[] = [];
  const rankPods: RankPod[] = [];
  const nodes = new Set<string>();
  let onePodOneNode = true;
  for (const p of pods) {
    const rank = goAtoi(p.annotations[RANK_INDEX_ANNOTATION] ?? '');
    if (rank === undefined || rank === -1 || rank >= replicas) continue;
    const [dev, needs] = podDeviceOf(p);
    if (dev.devices.length > 0 || !needs) completed++;
    if (dev.devices.length === 0) continue;
    rankPods.push({ rank, devices: dev.devices });
    if (nodes.has(p.nodeName)) onePodOneNode = false;
    nodes.add(p.nodeName);
    const devices: HcclDevice[] = dev.devices.map((d, i) => ({
      deviceId: d.deviceId, deviceIp: d.deviceIp, rankId: String(rank * dev.devices.length + i),
      ...(d.superDeviceId === '' ? {} : { superDeviceId: d.superDeviceId }),
    }));
    servers.push({
      devices, serverId: dev.serverId, hostIp: dev.hostIp, superPodId: dev.superPodId, serverName: p.nodeName,
      serverSn: p.nodeName !== '' ? ctx.nodeSn(p.nodeName) : dev.hostIp !== '' ? ctx.snByIp(dev.hostIp) : '',
      podName: p.name, containerIds: Object.fromEntries(p.containerStatuses.map((c) => [c.name, c.containerId])),
    });
  }
  const table = onePodOneNode ? servers.map((s) => ({ ...s, serverId: s.hostIp })) : servers;
  const firstRank = (s: HcclServer): number => Number(s.devices[0]!.rankId);
  table.sort((a, b) => firstRank(a) - firstRank(b));
  const v1: RankTable = { status: '', servers: table, serverCount: String(table.length), total: 0 };
  const ranks = scaleOutType === undefined ? undefined : rankListV2(rankPods, scaleOutType);
  return [ranks === undefined ? v1 : { ...v1, version: RANK_TABLE_V2, ranks, rankCount: ranks.length }, completed];
}

/** pod_util.go GetSharedTorIpByPod: json.Marshal of the distinct shared-ToR IPs, "" when none. */
function sharedTorIpOf(pods: readonly SummaryPod[]): string {
  const ips: string[] = [];
  for (const p of pods) {
    if (p.annotations.isSharedTor !== '1') continue;
    const ip = p.annotations.sharedTorIp;
    if (ip !== undefined && !ips.includes(ip)) ips.push(ip);
  }
  return ips.length === 0 ? '' : goJson(ips);
}

const envOf = (pods: readonly SummaryPod[], name: string): string => {
  for (const p of pods) for (const c of p.containers) for (const e of c.env) if (e.name === name) return e.value;
  return '';
};

// --- transitions ---

/** InitCmAndCache: the pending form, fresh basic info (a new add time). */
function init(pg: SummaryPodGroup, pods: readonly SummaryPod[], nowSec: number): SummaryStep {
  const next = basicInfo(pg, pods, nowSec);
  return { next, writes: [{ index: 0, data: pendingData(next) }] };
}

/** UpdateCmAndCache: the add form of every slice. */
function update(status: JobStatus, base: JobSummaryState, pg: SummaryPodGroup | undefined, pods: readonly SummaryPod[], ctx: SummaryContext): SummaryStep {
  // job_util.go UpdateCmAndCache: v2 for resource type npu, the label read from the PodGroup at hand.
  const scaleOutType = base.resourceType === 'npu' ? (pg?.labels[SCALE_OUT_TYPE_LABEL] ?? '').trim().toUpperCase() : undefined;
  const [table, completed] = rankTableOf(pods, base.replicas, ctx, scaleOutType);
  const framework = base.framework !== '' ? base.framework : pods.find((p) => p.labels.app !== undefined)?.labels.app ?? '';
  let { sharedTorIp, masterAddr } = base;
  const complete = completed === base.replicas;
  if (complete && framework === PYTORCH && masterAddr === '' && sharedTorIp === '') {
    sharedTorIp = sharedTorIpOf(pods);
    masterAddr = base.jobType === 'Job' ? table.servers?.[0]?.hostIp ?? '' : envOf(pods, 'MASTER_ADDR');
  }
  const rankTable: RankTable = { ...table, status: complete ? 'complete' : 'initializing' };
  const slices = hcclSlices(rankTable);
  const totalCmNum = Math.max(1, slices.length);
  const next: JobSummaryState = {
    ...base, status, isPreDelete: false, framework, sharedTorIp, masterAddr, totalCmNum,
    addTimeSec: base.addTimeSec === 0 ? ctx.nowSec : base.addTimeSec, rankTable: { ...rankTable, total: totalCmNum },
  };
  const writes = Array.from({ length: totalCmNum }, (_, i) => ({ index: i, data: addData(next, i, slices[i] ?? '', ctx.nowSec) }));
  return { next, writes };
}

/** PreDeleteCmAndCache: failed unless complete, the delete form of every slice. */
export function preDelete(prev: JobSummaryState, nowSec: number): SummaryStep {
  const next: JobSummaryState = {
    ...prev, isPreDelete: true, status: prev.status === 'complete' ? 'complete' : 'failed', deleteTimeSec: nowSec,
    addTimeSec: prev.addTimeSec === 0 ? nowSec : prev.addTimeSec,
  };
  const slices = hcclSlices(prev.rankTable);
  // ClusterD fills one data map for all slices: past the last slice it keeps the last one's hccl.json.
  const writes = Array.from({ length: next.totalCmNum }, (_, i) => ({ index: i, data: deleteData(next, i, slices[Math.min(i, slices.length - 1)] ?? DEFAULT_HCCL_JSON, nowSec) }));
  return { next, writes };
}

/**
 * updateJob: the step the job's current PodGroup and pods lead to from what is remembered, or
 * undefined when nothing is to be written (unknown job, or status unchanged).
 */
export function summaryStep(
  prev: JobSummaryState | undefined, pg: SummaryPodGroup | undefined, pods: readonly SummaryPod[], ctx: SummaryContext,
  content?: { readonly pods: readonly SummaryPod[]; readonly rebuild: boolean },
): SummaryStep | undefined {
  if (prev === undefined && pg === undefined) return undefined;
  // The status counts every pod, hot-switch backups included; the summary's content only `content.pods` (summaryPods).
  const [isPreDelete, status] = statusOf(pg, pods, prev);
  if (prev !== undefined && prev.status === status && prev.isPreDelete === isPreDelete && content?.rebuild !== true) return undefined;
  const used = content?.pods ?? pods;
  if (isPreDelete) return prev !== undefined && !prev.isPreDelete ? preDelete(prev, ctx.nowSec) : undefined;
  if (status === 'pending' && prev?.status !== 'pending') return pg === undefined ? undefined : init(pg, used, ctx.nowSec);
  const base = prev !== undefined && prev.name !== '' ? prev : pg !== undefined ? basicInfo(pg, used, ctx.nowSec) : undefined;
  return base === undefined ? undefined : update(status, base, pg, used, ctx);
}

/**
 * ClusterD's preHandlePods (component/clusterd/pkg/application/jobv2/processor.go): a hot-switch
 * backup pod (annotation `podType=backup`) takes no part in the summary's content (it does in the
 * job's status, computed before from every pod: getStatusByCache), except at the first look
 * after its source pod was deleted (`released`), when the summary is rebuilt with it even if the
 * status did not change. The caller forgets the released pods once this look is done, as ClusterD does.
 */
export function summaryPods(pods: readonly SummaryPod[], released: (p: SummaryPod) => boolean): { pods: SummaryPod[]; rebuild: boolean; released: SummaryPod[] } {
  const out: SummaryPod[] = [];
  const rel: SummaryPod[] = [];
  for (const p of pods) {
    if (released(p)) rel.push(p);
    else if (p.annotations.podType === 'backup') continue;
    out.push(p);
  }
  return { pods: out, rebuild: rel.length > 0, released: rel };
}

/** ClusterD deletes a pre-deleted job's ConfigMaps this long after the pre-delete, on its next minute tick. */
export const PRE_DELETE_TO_DELETE_SEC = 60;
export const DELETE_CHECK_INTERVAL_SEC = 60;

/** The first of ClusterD's minute ticks (from `startSec`) at which the pre-deleted job is due. */
export function deleteDueSec(state: JobSummaryState, startSec: number): number {
  const due = state.deleteTimeSec + PRE_DELETE_TO_DELETE_SEC;
  const ticks = Math.max(1, Math.ceil((due - startSec) / DELETE_CHECK_INTERVAL_SEC));
  return startSec + ticks * DELETE_CHECK_INTERVAL_SEC;
}
