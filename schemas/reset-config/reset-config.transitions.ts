/**
 * Pure transitions of `reset.json` (docs/rules.md#recover.reset-config-writes, docs/formats.md#reset-config). Each returns a new
 * TaskResetInfo and never reads the clock: `nowS` (Unix seconds) is a parameter.
 *
 * ClusterD operations (`fault`, `notifyFaultFlushing`, `restartAllProcess`, `clear`) rebuild the
 * struct: `RankList` is replaced, `UpdateTime = nowS`, only `RetryTime` is carried over (so
 * `GracefulExit` goes back to 0 and device-plugin rank details are dropped). They are refused while
 * the old RankList holds a rank whose Policy is `reset` or `restart` (device-plugin hot reset active:
 * "hotReset=1 is not compatible with process-recover").
 *
 * Volcano operations (`gracefulExit`, `podRescheduled`) modify the struct in place and are never
 * refused.
 */
import { RANK_STATUS, type TaskDevInfo, type TaskResetInfo } from './reset-config.ts';

/** Result of a ClusterD write: the new struct, or why the write is refused. */
export type ResetWrite = { readonly ok: true; readonly value: TaskResetInfo } | { readonly ok: false; readonly reason: string };

/** ClusterD's operation names (the `operator` argument of RetryWriteResetCM). */
export const CD_RESET_OPERATIONS = {
  fault: 'fault',
  notifyFaultFlushing: 'notifyFaultFlushing',
  restartAllProcess: 'restartAllProcess',
  clear: 'clear',
} as const;

/** Policies that mean the device plugin is running a hot reset on the job's chips. */
const HOT_RESET_POLICIES: ReadonlySet<string> = new Set(['reset', 'restart']);

/** True when a rank of the old RankList has Policy `reset` or `restart`. */
export function hotResetActive(old: TaskResetInfo): boolean {
  return (old.RankList ?? []).some((r) => HOT_RESET_POLICIES.has(r.Policy));
}

const copy = (i: TaskResetInfo): TaskResetInfo => ({
  RankList: i.RankList,
  UpdateTime: i.UpdateTime,
  RetryTime: i.RetryTime,
  FaultFlushing: i.FaultFlushing,
  GracefulExit: i.GracefulExit,
  RestartFaultProcess: i.RestartFaultProcess,
});

const seconds = (nowS: number): number => (Number.isFinite(nowS) ? Math.max(0, Math.floor(nowS)) : 0);

function rebuild(old: TaskResetInfo, nowS: number, patch: Partial<TaskResetInfo>): ResetWrite {
  if (hotResetActive(old)) {
    return { ok: false, reason: 'hotReset=1 is not compatible with process-recover (a rank has Policy reset/restart)' };
  }
  return {
    ok: true,
    value: {
      RankList: patch.RankList ?? [],
      UpdateTime: seconds(nowS),
      RetryTime: patch.RetryTime ?? old.RetryTime,
      FaultFlushing: patch.FaultFlushing ?? false,
      GracefulExit: 0,
      RestartFaultProcess: patch.RestartFaultProcess ?? false,
    },
  };
}

/** A rank id as ClusterD accepts it (Go `strconv.Atoi` of the gRPC string), here non-negative only. */
function rankId(rank: number | string): number | undefined {
  if (typeof rank === 'number') return Number.isSafeInteger(rank) && rank >= 0 ? rank : undefined;
  if (typeof rank !== 'string' || rank.length > 20 || !/^\+?[0-9]+$/.test(rank)) return undefined;
  const n = Number(rank);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * `fault`: RankList = the fault ranks with Status `fault` (other rank fields zero, ErrorCode nil),
 * `RestartFaultProcess` as decided (recover-in-place). Refused on a rank id that is not an integer.
 */
export function fault(
  old: TaskResetInfo,
  ranks: readonly (number | string)[],
  restartFaultProcess: boolean,
  nowS: number,
): ResetWrite {
  const list: TaskDevInfo[] = [];
  for (const rank of ranks) {
    const id = rankId(rank);
    if (id === undefined) return { ok: false, reason: `invalid rank id ${JSON.stringify(String(rank).slice(0, 32))}` };
    list.push({ RankId: id, LogicId: 0, Status: RANK_STATUS.fault, Policy: '', InitialPolicy: '', ErrorCode: null, ErrorCodeHex: '' });
  }
  return rebuild(old, nowS, { RankList: list, RestartFaultProcess: restartFaultProcess });
}

/** `notifyFaultFlushing`: empty RankList, `FaultFlushing = true`. */
export function notifyFaultFlushing(old: TaskResetInfo, nowS: number): ResetWrite {
  return rebuild(old, nowS, { FaultFlushing: true });
}

/** `restartAllProcess`: empty RankList, `RetryTime + 1`. */
export function restartAllProcess(old: TaskResetInfo, nowS: number): ResetWrite {
  return rebuild(old, nowS, { RetryTime: old.RetryTime + 1 });
}

/** `clear`: empty RankList, everything reset but `RetryTime`. */
export function clear(old: TaskResetInfo, nowS: number): ResetWrite {
  return rebuild(old, nowS, {});
}

/**
 * Volcano sub-health graceExit: sets `GracefulExit` (1 = kill all training processes, 0 = reset it)
 * and leaves every other field, `UpdateTime` included, as it was.
 */
export function gracefulExit(old: TaskResetInfo, value: 0 | 1): TaskResetInfo {
  return { ...copy(old), GracefulExit: value };
}

/**
 * Volcano after a pod-level reschedule has placed all tasks: empty RankList, `UpdateTime = nowS`,
 * `RetryTime + 1` for a single-pod reschedule or 0 when the job was scheduled as a whole. The writer
 * also sets `restartType: podReschedule`.
 */
export function podRescheduled(old: TaskResetInfo, nowS: number, singlePod: boolean): TaskResetInfo {
  return { ...copy(old), RankList: [], UpdateTime: seconds(nowS), RetryTime: singlePod ? old.RetryTime + 1 : 0 };
}
