/**
 * The UB switch entry of `cluster-info-switch-N` without the faults the scheduler-view filters hide
 * or drop (behavior.md A.3 #20, A.1 #4): ClusterD deletes the fault from the switch info and
 * recomputes `FaultLevel` / `NodeStatus` from the most serious remaining level.
 */
import { severityRank } from '../../policy/fault-types.ts';
import { SWITCH_LEVEL_TO_NODE_STATUS, SWITCH_LEVEL_TO_NPU, type SwitchFaultEvent, type SwitchFaultInfo, type SwitchFaultLevel } from '../device-info/switch-info.ts';
import type { FaultTimeAndLevel } from '../device-info/device-fault.ts';

const isSwitchLevel = (s: string): s is SwitchFaultLevel => Object.hasOwn(SWITCH_LEVEL_TO_NPU, s);
/** `<AssembledFaultCode>_<chip>_<port>` -> the code. */
const codeOfPortKey = (key: string): string => key.replace(/_\d+_\d+$/, '');

/**
 * Removes every port of the withheld assembled codes (switch FaultRecord codes). Returns `info`
 * itself when none of them is present, so an unfiltered node's entry stays byte-identical. With no
 * fault left the entry reads as the device plugin writes a fault-free switch (`FaultLevel ""`,
 * `NodeStatus "Healthy"`).
 */
export function withholdSwitchFaults(info: SwitchFaultInfo, withheld: ReadonlySet<string>, events: readonly SwitchFaultEvent[]): SwitchFaultInfo {
  const map = info.FaultTimeAndLevelMap ?? {};
  const hit = events.some((e) => withheld.has(e.AssembledFaultCode)) || Object.keys(map).some((k) => withheld.has(codeOfPortKey(k)));
  if (!hit) return info;
  const codes: string[] = [];
  const levels: string[] = [];
  const mapped = new Set(Object.keys(map));
  (info.FaultCode ?? []).forEach((raw, i) => {
    const e = events[i];
    if (e !== undefined && withheld.has(e.AssembledFaultCode)) return;
    codes.push(raw);
    // An event without its own map entry carries the overall level (as switchFaultRecords reads it).
    if (e !== undefined && !mapped.has(`${e.AssembledFaultCode}_${e.SwitchChipId}_${e.SwitchPortId}`)) levels.push(info.FaultLevel);
  });
  const keep: Record<string, FaultTimeAndLevel> = {};
  for (const [k, v] of Object.entries(map)) {
    if (withheld.has(codeOfPortKey(k))) continue;
    keep[k] = v;
    levels.push(v.fault_level);
  }
  const valid = levels.filter(isSwitchLevel);
  const worst = valid.sort((a, b) => severityRank(SWITCH_LEVEL_TO_NPU[b]) - severityRank(SWITCH_LEVEL_TO_NPU[a]))[0];
  return {
    ...info,
    FaultCode: info.FaultCode === null ? null : codes,
    FaultLevel: worst ?? '',
    NodeStatus: worst === undefined ? 'Healthy' : SWITCH_LEVEL_TO_NODE_STATUS[worst],
    FaultTimeAndLevelMap: info.FaultTimeAndLevelMap === null ? null : keep,
  };
}
