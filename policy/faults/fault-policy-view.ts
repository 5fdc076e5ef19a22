/**
 * What the fault policy publishes, built from the engines' results (pure functions, no state):
 * - `effectiveRecords`: a node's records after re-levelling, with the escalations in force and
 *   ClusterD's manual separations folded in, in the FaultRecord vocabulary the cluster-info writer
 *   and the job pipeline read. An escalation raises the level of the record it is about; one whose
 *   code is no longer reported (RecoverTimeout still running, a frequency upgrade after recovery) is
 *   added as a record of its own. ManuallySeparateNPU upgrades also add the `ManuallySeparateNPU`
 *   pseudo-code on the chip (CardUnhealthy), as the device plugin's `ManuallySeparateNPU` key does;
 *   a ClusterD manual separation adds only that pseudo-code (rendered `fault_code: ""`, as ClusterD).
 * - `manualObservations`: the processed device view as ClusterD's increment-fault step sees it.
 * - `applyPreSeparate`: ClusterD's pre-separate processor (docs/rules.md#ingest.pre-separate) over a rendered
 *   cluster view: an in-use PreSeparateNPU chip stays out of the available list but is not listed
 *   Unhealthy (its job keeps running); a node or switch status `PreSeparate` becomes `Healthy` when a
 *   pod on the node uses NPUs, else `UnHealthy`.
 */
import { mostSerious, severityRank, type FaultRecord, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { MANUALLY_SEPARATE_PSEUDO_CODE, type LeveledFault } from './fault-level.ts';
import type { Escalation } from './escalation.ts';
import type { ManualFaultObservation } from './manual-separation.ts';
import { isParameterPlaneCode, preSeparateChip, preSeparateNodeStatus } from './pre-separate.ts';
import { DEVICE_INFO_CM_PREFIX, DEVICE_LIST_SUFFIXES } from '../../schemas/device-info/device-info.ts';
import { SWITCH_INFO_CM_PREFIX } from '../../schemas/device-info/switch-info.ts';
import { NODE_INFO_CM_PREFIX } from '../../schemas/node-info/node-info.ts';
import { compareUtf8 } from '../../schemas/go-json.ts';
import type { ClusterInfoView } from '../../schemas/cluster-info/cluster-info.ts';

/** What the policy asks about NPU usage (an interface so tests can pass a plain object). */
export interface NpuUsage {
  jobOf(node: string, device: string): string | undefined;
  inUse(node: string, device: string): boolean;
  nodeHasNpuPods(node: string): boolean;
}

/** A ClusterD manual separation of one chip (policy/faults/manual-separation.ts manuallySeparatedDevices). */
export interface SeparatedChip {
  readonly device: string;
  readonly codes: readonly string[];
  readonly sinceMs: number;
}

const CHIP_SOURCES: ReadonlySet<string> = new Set(['npu', 'network']);
const up = (s: string): string => s.toUpperCase();
const raise = (r: FaultRecord, level: NpuFaultLevel): FaultRecord => (severityRank(level) > severityRank(r.level) ? { ...r, level } : r);

export function effectiveRecords(
  node: string,
  leveled: readonly LeveledFault[],
  escalations: readonly Escalation[],
  separated: readonly SeparatedChip[],
): FaultRecord[] {
  const out: FaultRecord[] = leveled.map((l) => (l.level === l.fault.level ? l.fault : { ...l.fault, level: l.level }));
  const find = (device: string, code: string, sources: ReadonlySet<string>): number[] =>
    out.flatMap((r, i) => (r.device === device && up(r.code) === up(code) && sources.has(r.source) ? [i] : []));
  const pseudo = (device: string, sinceMs: number, detail: string): void => {
    if (find(device, MANUALLY_SEPARATE_PSEUDO_CODE, new Set(['npu'])).length > 0) return;
    out.push({ node, device, source: 'npu', code: MANUALLY_SEPARATE_PSEUDO_CODE, level: 'ManuallySeparateNPU', reportedLevel: MANUALLY_SEPARATE_PSEUDO_CODE, firstSeenMs: sinceMs, detail });
  };
  for (const e of escalations) {
    const hits = find(e.device, e.code, CHIP_SOURCES);
    for (const i of hits) out[i] = raise(out[i]!, e.level);
    if (e.level === 'ManuallySeparateNPU') pseudo(e.device, e.sinceMs, `${e.rule} escalation of ${e.code}`);
    else if (hits.length === 0) {
      out.push({ node, device: e.device, source: isParameterPlaneCode(e.code) ? 'network' : 'npu', code: e.code, level: e.level, reportedLevel: 'escalated', firstSeenMs: e.sinceMs, detail: `${e.rule} escalation` });
    }
  }
  // ClusterD's manual-fault processor adds one code-less ManuallySeparateNPU CardUnhealthy fault to
  // the chip (fault_code "", empty time map) beside whatever the chip still reports, whose codes keep
  // their own levels; the chip's level is the most serious of them.
  for (const s of separated) pseudo(s.device, s.sinceMs, `clusterd-manual-info-cm (${s.codes.join(',')})`);
  return out;
}

/** One string per record: equal signatures = equal published view. */
export const recordsSignature = (records: readonly FaultRecord[]): string =>
  records.map((r) => `${r.source}|${r.device ?? ''}|${r.code}|${r.level}|${r.firstSeenMs}`).join(';');

/**
 * The chip faults of one node as ClusterD's manual separation sees them: levels after escalation
 * (never ClusterD's own separation), receive time = first sight of the instance, job from the pods.
 */
export function manualObservations(node: string, leveled: readonly LeveledFault[], escalations: readonly Escalation[], usage: NpuUsage): ManualFaultObservation[] {
  const out: ManualFaultObservation[] = [];
  for (const l of leveled) {
    const device = l.fault.device;
    if (device === undefined || !CHIP_SOURCES.has(l.fault.source)) continue;
    const esc = escalations.filter((e) => e.device === device && up(e.code) === up(l.fault.code)).map((e) => e.level);
    const level = mostSerious([l.level, ...esc]) ?? l.level;
    const jobKey = usage.jobOf(node, device);
    out.push({ device, code: l.fault.code, level, receivedMs: l.fault.firstSeenMs, ...(jobKey === undefined ? {} : { jobKey }) });
  }
  return out;
}

const csvSet = (s: string | undefined): Set<string> => new Set((s ?? '').split(',').filter((x) => x !== ''));
const csv = (s: Iterable<string>): string => [...s].sort(compareUtf8).join(',');

export interface PreSeparateDeps {
  readonly usage: NpuUsage;
  readonly effective: (node: string) => readonly FaultRecord[];
}

/** Chips of a node that pre-separate keeps out of the Unhealthy list (in use, PreSeparateNPU). */
export function inUsePreSeparated(node: string, records: readonly FaultRecord[], usage: NpuUsage): Set<string> {
  const byChip = new Map<string, FaultRecord[]>();
  for (const r of records) {
    if (r.device === undefined || (r.source !== 'npu' && r.source !== 'public')) continue;
    byChip.set(r.device, [...(byChip.get(r.device) ?? []), r]);
  }
  const keep = new Set<string>();
  for (const [chip, rs] of byChip) {
    if (mostSerious(rs.map((r) => r.level)) !== 'PreSeparateNPU') continue;
    const inUse = usage.inUse(node, chip);
    const marking = rs.filter((r) => r.level === 'PreSeparateNPU').map((r) => preSeparateChip(r.code, r.level, inUse)).find((m) => m !== undefined);
    if (marking !== undefined && !marking.unhealthy) keep.add(chip);
  }
  return keep;
}

export function applyPreSeparate(view: ClusterInfoView, d: PreSeparateDeps): ClusterInfoView {
  const device: ClusterInfoView['device'] = {};
  for (const [name, entry] of Object.entries(view.device)) {
    const node = name.startsWith(DEVICE_INFO_CM_PREFIX) ? name.slice(DEVICE_INFO_CM_PREFIX.length) : undefined;
    const keep = node === undefined ? new Set<string>() : inUsePreSeparated(node, d.effective(node), d.usage);
    const unhealthyKey = Object.keys(entry.DeviceList).find((k) => k.endsWith(DEVICE_LIST_SUFFIXES.unhealthy) && !k.endsWith(DEVICE_LIST_SUFFIXES.networkUnhealthy));
    if (node === undefined || keep.size === 0 || unhealthyKey === undefined) { device[name] = entry; continue; }
    // The device plugin lists the chip Unhealthy itself; ClusterD's updateCardUnHealthy takes it out
    // while a pod uses it all the same.
    const unhealthy = csvSet(entry.DeviceList[unhealthyKey]);
    for (const chip of keep) unhealthy.delete(chip);
    device[name] = { ...entry, DeviceList: { ...entry.DeviceList, [unhealthyKey]: csv(unhealthy) } };
  }
  const status = <E extends { readonly NodeStatus: string }>(entries: Readonly<Record<string, E>>, prefix: string): Record<string, E> =>
    Object.fromEntries(Object.entries(entries).map(([name, e]) => {
      if (e.NodeStatus !== 'PreSeparate' || !name.startsWith(prefix)) return [name, e];
      return [name, { ...e, NodeStatus: preSeparateNodeStatus(e.NodeStatus, d.usage.nodeHasNpuPods(name.slice(prefix.length))).status }];
    }));
  return { device, node: status(view.node, NODE_INFO_CM_PREFIX), switch: status(view.switch, SWITCH_INFO_CM_PREFIX) };
}
