/**
 * The UB switch entry of `cluster-info-switch-N` as ClusterD builds it (getReportSwitchInfo,
 * docs/rules.md#filter.custom, #levels.node-switch-levels): `FaultCode` is always a list (`[]` when empty, never null), each
 * element re-marshalled from the parsed event in Go field order; a fault the scheduler-view filters
 * hide or drop leaves the entry and `FaultLevel` / `NodeStatus` are recomputed (DelFaultAndFix).
 */
import { severityRank } from '../../vocabulary/fault-types.ts';
import { encodeSwitchFaultEvent, SWITCH_LEVEL_TO_NODE_STATUS, SWITCH_LEVEL_TO_NPU, switchPortKey, type SwitchFaultInfo, type SwitchFaultLevel, type SwitchInfoView } from '../device-info/switch-info.ts';
import type { FaultTimeAndLevel } from '../device-info/device-fault.ts';

/** What ClusterD's updateFaultLevelAndNodeStatus writes when no fault with a level is left. */
export const SWITCH_NO_FAULT_LEVEL = 'NotHandleFault';
export const SWITCH_NO_FAULT_STATUS = 'Healthy';

const isSwitchLevel = (s: string): s is SwitchFaultLevel => Object.hasOwn(SWITCH_LEVEL_TO_NPU, s);

/** The entry's SwitchFaultInfo: the device plugin's fields with `FaultCode` re-encoded from the parsed events. */
export const switchEntryInfo = (view: SwitchInfoView): SwitchFaultInfo => ({ ...view.info, FaultCode: view.events.map(encodeSwitchFaultEvent) });

/**
 * Removes the events of the withheld assembled codes (switch FaultRecord codes) that have a
 * FaultTimeAndLevelMap entry, and those entries, as ClusterD's custom filter does (an event without
 * an entry is reported as is). Returns `info` itself when nothing is removed, so an unfiltered node's
 * entry stays byte-identical. Otherwise `FaultLevel` / `NodeStatus` come from the most serious
 * remaining event that has an entry, `NotHandleFault` / `Healthy` when none has.
 * `info.FaultCode[i]` is the encoding of `view.events[i]` (switchEntryInfo).
 */
export function withholdSwitchFaults(info: SwitchFaultInfo, withheld: ReadonlySet<string>, view: SwitchInfoView): SwitchFaultInfo {
  const map = info.FaultTimeAndLevelMap ?? {};
  const removed = (i: number): boolean => {
    const e = view.events[i];
    return e !== undefined && withheld.has(e.AssembledFaultCode) && Object.hasOwn(map, switchPortKey(e));
  };
  const codes = info.FaultCode ?? [];
  if (!codes.some((_c, i) => removed(i))) return info;
  const keepCodes: string[] = [];
  const keepMap: Record<string, FaultTimeAndLevel> = { ...map };
  let worst: SwitchFaultLevel | undefined;
  codes.forEach((raw, i) => {
    const e = view.events[i];
    if (removed(i)) {
      delete keepMap[switchPortKey(e!)];
      return;
    }
    keepCodes.push(raw);
    const level = e === undefined ? undefined : map[switchPortKey(e)]?.fault_level;
    if (level !== undefined && isSwitchLevel(level) && (worst === undefined || severityRank(SWITCH_LEVEL_TO_NPU[level]) > severityRank(SWITCH_LEVEL_TO_NPU[worst]))) worst = level;
  });
  return {
    ...info,
    FaultCode: keepCodes,
    FaultLevel: worst ?? SWITCH_NO_FAULT_LEVEL,
    NodeStatus: worst === undefined ? SWITCH_NO_FAULT_STATUS : SWITCH_LEVEL_TO_NODE_STATUS[worst],
    FaultTimeAndLevelMap: info.FaultTimeAndLevelMap === null ? null : keepMap,
  };
}
