/**
 * The only rewriting the comparison does, all in this file: time values that must differ because
 * the two controllers run a moment apart. A value is rewritten only when it lies within the run (so
 * a unit mistake, seconds for milliseconds, still shows). Millisecond values the scenario wrote into
 * an input are kept: a controller that copies an input time must copy it exactly, and one that puts
 * its own clock there shows as a difference. Second-resolution values cannot tell a copy from the
 * clock (the controller reacts within the second the input was written), so they are all rewritten.
 *
 *   1. Unix seconds (10 digits) within the run                      -> <unix-s>
 *   2. Unix milliseconds (13 digits) within the run, not an input   -> <unix-ms>
 *   3. RFC 3339 times (`2026-11-25T10:22:05Z`, fractions,
 *      offsets) within the run                                      -> <rfc3339>
 *   4. reset-config's `checkCode` (a hash over reset.json, whose
 *      UpdateTime is the writer's clock), when it is the right hash
 *      of the reset.json beside it                                  -> <checkCode of reset.json>
 *      (a wrong or differently computed hash stays as it is)
 *   5. The UID the apiserver gave an object the scenario
 *      created (a Volcano Job's, in ClusterD's job statistic
 *      and scheduling-exception keys), in values and data keys     -> <uid of Kind ns/name>
 *      (UIDs the scenario wrote itself, e.g. ownerReferences, are not objects' UIDs and stay)
 *   6. statistic-fault-info's `PublicFaults`: each node's list     -> sorted by resource + faultId
 *      (ClusterD ranges over a Go map to build it, so its order is random from write to write and
 *      no consumer can rely on it; ours is sorted. The entries themselves are compared byte for byte.)
 *   7. klog-style local times (`I1128 16:27:35`, no year: the
 *      ascend plugin's LogFileFormatTime in job-reschedule-reason,
 *      internal/rescheduling/reschedule.go) within the run            -> <klog-time>
 *   8. vcjob-fault-npu-cm's `fault-node` list                        -> sorted by NodeName
 *      (the ascend plugin builds it ranging over a Go map, internal/rescheduling/cache.go
 *      getFaultNodeToCm, so two faulty nodes swap places from write to write on either side.
 *      The entries themselves are compared as written.)
 *   9. current-job-statistic's `data` list                           -> sorted by the job it names
 *      (ClusterD builds it ranging over a Go map, so with several jobs its order is random;
 *      README compatibility table. The entries are compared as written.)
 *  10. fault-job-info's `SdIds` of each SuperPod                    -> sorted by number
 *      (ClusterD appends the fault nodes' chips ranging over Go maps, getFaultSuperID in
 *      domain/job/job_storage.go, so their order is random; ours is by node and chip. Everything
 *      else of the entry is compared as written.)
 */
import { parseTaskResetInfo, resetInfoCheckCode } from '../../schemas/reset-config/reset-config.ts';
import type { Snapshot } from './collect.ts';

export interface TimeWindow {
  readonly fromMs: number;
  readonly toMs: number;
  /** Time values (as written) that the scenario put into inputs. */
  readonly inputs: ReadonlySet<string>;
}

/** Slack around the run: Go truncates to seconds, clocks round. */
const SLACK_MS = 120_000;

export const NORMALISATIONS = [
  { name: 'unix-seconds', re: /(?<![\d.])\d{10}(?![\d.])/g, ms: (s: string) => Number(s) * 1000, token: '<unix-s>', keepInputs: false },
  { name: 'unix-milliseconds', re: /(?<![\d.])\d{13}(?![\d.])/g, ms: (s: string) => Number(s), token: '<unix-ms>', keepInputs: true },
  { name: 'rfc3339', re: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)/g, ms: (s: string) => Date.parse(s), token: '<rfc3339>', keepInputs: false },
] as const;

/** Rule 7: Go's `I0102 15:04:05` (local time, no year), read in the run's year(s). */
function klogMs(m: string, w: TimeWindow): number[] {
  const [, mo, d, h, mi, s] = /^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)$/.exec(m)!.map(Number) as number[];
  return [...new Set([new Date(w.fromMs).getFullYear(), new Date(w.toMs).getFullYear()])]
    .map((y) => new Date(y, mo! - 1, d, h, mi, s).getTime());
}
const KLOG_TIME = /(?<![\w])I\d{4} \d\d:\d\d:\d\d(?![\d.])/g;

export function normaliseValue(v: string, w: TimeWindow): string {
  let out = v;
  for (const n of NORMALISATIONS) {
    out = out.replace(n.re, (m) => {
      if (n.keepInputs && w.inputs.has(m)) return m;
      const t = n.ms(m);
      return t >= w.fromMs - SLACK_MS && t <= w.toMs + SLACK_MS ? n.token : m;
    });
  }
  out = out.replace(KLOG_TIME, (m) => (klogMs(m, w).some((t) => t >= w.fromMs - SLACK_MS && t <= w.toMs + SLACK_MS) ? '<klog-time>' : m));
  return out;
}

/** Rule 4: the checkCode field when it is the hash of the reset.json field of the same object. */
function checkCodeToken(f: Readonly<Record<string, string>>): string | undefined {
  const json = f['data reset.json'];
  const code = f['data checkCode'];
  if (json === undefined || code === undefined) return undefined;
  const parsed = parseTaskResetInfo(json);
  return parsed.ok && resetInfoCheckCode(parsed.value) === code ? '<checkCode of reset.json>' : undefined;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Rule 5: apiserver-assigned UIDs of this side's objects, by object. */
export const normaliseUids = (v: string, uids: ReadonlyMap<string, string>): string =>
  v.replace(UUID, (m) => { const o = uids.get(m); return o === undefined ? m : `<uid of ${o}>`; });

const STATISTIC_FAULT_INFO = 'ConfigMap cluster-system/statistic-fault-info';

/** Rule 6: each node's public faults in a fixed order; the JSON text of every entry kept as written. */
export function sortPublicFaults(v: string): string {
  let parsed: unknown;
  try { parsed = JSON.parse(v); } catch { return v; }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return v;
  // Only text that re-encodes to itself is reordered, so no escaping or spacing difference is hidden.
  if (JSON.stringify(parsed) !== v) return v;
  const key = (e: unknown): string => {
    const o = (e ?? {}) as { resource?: unknown; faultId?: unknown };
    return `${String(o.resource)}\u0000${String(o.faultId)}`;
  };
  // Re-marshal only the order: entries are compared by their own JSON text, so field order and escaping still show.
  const nodes = Object.entries(parsed as Record<string, unknown>).map(([node, list]) => {
    if (!Array.isArray(list)) return `${JSON.stringify(node)}:${JSON.stringify(list)}`;
    const sorted = [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    return `${JSON.stringify(node)}:[${sorted.map((e) => JSON.stringify(e)).join(',')}]`;
  });
  return `{${nodes.join(',')}}`;
}

const VCJOB_FAULT_NPU_CM = 'ConfigMap volcano-system/vcjob-fault-npu-cm';

/** Rule 8: the plugin's fault-node entries by NodeName; each entry's JSON text kept. */
export function sortFaultNodes(v: string): string {
  let parsed: unknown;
  try { parsed = JSON.parse(v); } catch { return v; }
  if (!Array.isArray(parsed)) return v;
  const key = (e: unknown): string => String((e as { NodeName?: unknown } | null)?.NodeName ?? '');
  return `[${[...parsed].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)).map((e) => JSON.stringify(e)).join(',')}]`;
}

const JOB_STATISTIC = 'ConfigMap mindx-dl/current-job-statistic';

/** Rule 9: job statistic entries by the object their `id` names (UIDs differ between the clusters). */
export function sortJobStatistic(v: string, uids: ReadonlyMap<string, string>): string {
  let parsed: unknown;
  try { parsed = JSON.parse(v); } catch { return v; }
  if (!Array.isArray(parsed) || JSON.stringify(parsed) !== v) return v;
  const key = (e: unknown): string => normaliseUids(String((e as { id?: unknown } | null)?.id ?? ''), uids);
  return `[${[...parsed].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)).map((e) => JSON.stringify(e)).join(',')}]`;
}

const FAULT_JOB_INFO = 'ConfigMap cluster-system/fault-job-info';

/** Rule 10: a job's fault-job-info entry with each SuperPod's SdIds sorted by number; text that does not re-encode to itself is kept. */
export function sortFaultJobSdIds(v: string): string {
  let parsed: unknown;
  try { parsed = JSON.parse(v); } catch { return v; }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || JSON.stringify(parsed) !== v) return v;
  for (const info of Object.values(parsed as Record<string, { SdIds?: unknown }>)) {
    if (Array.isArray(info?.SdIds)) info.SdIds = [...(info.SdIds as unknown[])].sort((a, b) => Number(a) - Number(b));
  }
  return JSON.stringify(parsed);
}

export function normalise(s: Snapshot, w: TimeWindow, uids: ReadonlyMap<string, string> = new Map()): Snapshot {
  const out: Snapshot = new Map();
  for (const [k, f0] of s) {
    let f = k === STATISTIC_FAULT_INFO && f0['data PublicFaults'] !== undefined ? { ...f0, 'data PublicFaults': sortPublicFaults(f0['data PublicFaults']) } : f0;
    if (k === VCJOB_FAULT_NPU_CM && f['data fault-node'] !== undefined) f = { ...f, 'data fault-node': sortFaultNodes(f['data fault-node']) };
    if (k === JOB_STATISTIC && f['data data'] !== undefined) f = { ...f, 'data data': sortJobStatistic(f['data data'], uids) };
    if (k === FAULT_JOB_INFO) f = Object.fromEntries(Object.entries(f).map(([fk, v]) => [fk, fk.startsWith('data ') ? sortFaultJobSdIds(v) : v]));
    const token = checkCodeToken(f);
    out.set(k, Object.fromEntries(Object.entries(f).map(([fk, v]) => [normaliseUids(fk, uids), fk === 'data checkCode' && token !== undefined ? token : normaliseUids(normaliseValue(v, w), uids)])));
  }
  return out;
}
