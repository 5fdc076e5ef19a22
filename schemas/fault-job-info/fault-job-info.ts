/**
 * `cluster-system/fault-job-info` (docs/formats.md#fault-job-info, docs/rules.md#recover.force-release):
 * written by ClusterD before the global-fault notification of an A3 SuperPod job, read by NodeD,
 * which force-releases the IPC resources the job's other nodes share with the fault nodes' chips.
 * One data key per job (the job UID), value `json.Marshal(map[int]api.SuperPodFaultInfos)`: per
 * SuperPod ID (Go sorts the map's keys as strings) the fault nodes' SuperPod device IDs (`SdIds`),
 * the fault nodes (`FaultNodes`, a sets.String: `{"node":{}}`), the job's other nodes in that
 * SuperPod (`NodeNames`, `null` when none), the write time (`FaultTimes`, Unix seconds) and the
 * job UID (`JobId`, omitempty). Created without labels or annotations.
 * MindCluster: `component/ascend-common/api/superpoddevice.go` (SuperPodFaultInfos),
 * `component/clusterd/pkg/interface/kube/kube_client.go` (CreateOrUpdateSuperPodFaultInfo).
 */
import { goJson, goMapOf } from '../go-json.ts';
import { ok, parseValidated, type Parsed, type SchemaValidator } from '../parsed.ts';
import { validate as generated } from './fault-job-info.validators.gen.ts';

export const FAULT_JOB_INFO_CM_NAME = 'fault-job-info';

/** One SuperPod of a job's entry (Go api.SuperPodFaultInfos), fields in Go order. */
export interface SuperPodFaultInfo {
  /** The fault nodes' SuperPod device IDs (every chip of the node, not only the job's). */
  readonly SdIds: readonly string[] | null;
  /** sets.String: encoded as an object of empty objects, keys sorted. */
  readonly FaultNodes: readonly string[];
  /** The job's nodes in this SuperPod that are not fault nodes; null (Go nil) when none. */
  readonly NodeNames: readonly string[] | null;
  /** Unix seconds. */
  readonly FaultTimes: number;
  readonly JobId: string;
}

/** A job's entry: SuperPod ID -> its fault info. */
export type FaultJobEntry = ReadonlyMap<number, SuperPodFaultInfo>;

/** The data value of one job, byte for byte as ClusterD's json.Marshal writes it. */
export function encodeFaultJobEntry(entry: FaultJobEntry): string {
  return goJson(goMapOf([...entry].map(([sp, i]) => [String(sp), {
    SdIds: i.SdIds === null ? null : [...i.SdIds],
    FaultNodes: goMapOf(i.FaultNodes.map((n) => [n, {}])),
    NodeNames: i.NodeNames === null ? null : [...i.NodeNames],
    FaultTimes: i.FaultTimes,
    JobId: i.JobId === '' ? undefined : i.JobId,
  }])));
}

/** A data value longer than this is refused unread (a ConfigMap holds at most 1 MiB). */
export const MAX_FAULT_JOB_ENTRY_CHARS = 1 << 20;

const validate = generated as SchemaValidator<Record<string, { FaultNodes?: Record<string, unknown> | null }>>;

/**
 * The fault nodes named anywhere in a job's entry (what ClusterD's checkNodeExist reads before a
 * reschedule-in-place clears the entry). Never throws; a value Go could not unmarshal is refused.
 */
export function parseFaultNodes(text: string): Parsed<ReadonlySet<string>> {
  const p = parseValidated(FAULT_JOB_INFO_CM_NAME, text, validate, { maxChars: MAX_FAULT_JOB_ENTRY_CHARS });
  if (!p.ok) return p;
  return ok(new Set(Object.values(p.value).flatMap((i) => Object.keys(i.FaultNodes ?? {}))));
}
