/**
 * The v2 rank list ClusterD adds to the job summary of `huawei.com/npu` (A5) jobs
 * (component/clusterd/pkg/domain/pod/ranktable_v2.go ConstructRankListV2, network policy in
 * common/constant/ranktable_v2.go GetNetInfo). Built from each device's `levelList` in the pod's
 * allocation annotation, which Volcano copies from the device plugin's base device info.
 */
import type { LevelElement, Rank, RankAddrItem } from '../../schemas/job-summary/job-summary.ts';

/** api.RankLevel as parsed from the annotation: `info` keyed by port address type (UB, UBOE, ROCE, UBG...). */
export interface RawRankLevel {
  readonly level: number;
  /** Entries in the annotation's order. */
  readonly info: ReadonlyArray<readonly [string, LevelElement]>;
}

export interface RankDevice {
  readonly deviceId: string;
  readonly levelList: readonly RawRankLevel[];
}

/** One pod that made it into the rank table: its hccl/rankIndex and its allocated devices. */
export interface RankPod {
  readonly rank: number;
  readonly devices: readonly RankDevice[];
}

/** constant.ScaleOutTypeLabel on the PodGroup (ToUpper + TrimSpace'd by ClusterD). */
export const SCALE_OUT_TYPE_LABEL = 'scaleout-type';
export const RANK_TABLE_V2 = '2.0';

const ROCE = 'ROCE';
const UBOE = 'UBOE';
const UBG = 'UBG';
/** GetNetInfoByDefault's priority. */
const DEFAULT_PRIORITY = [ROCE, UBOE, UBG];
/** scaleOutTypeMappings: the port types a custom scale-out type may select, in order. */
const BY_SCALE_OUT: Readonly<Record<string, readonly string[]>> = { ROCE: [ROCE], UBOE: [UBOE, UBG] };

/** GetNetInfo's port address type: "" when none fits (or the label is invalid: ClusterD logs and goes on). */
export function portAddrTypeOf(types: ReadonlySet<string>, customScaleOutType: string): string {
  const candidates = customScaleOutType === '' ? DEFAULT_PRIORITY : BY_SCALE_OUT[customScaleOutType] ?? [];
  return candidates.find((t) => types.has(t)) ?? '';
}

/** shouldInclude: level 2 only for UBoE/UBG, level 3 only for RoCE (the label stands in for no match). */
function shouldInclude(level: number, portAddrType: string, customScaleOutType: string): boolean {
  const t = portAddrType === '' && customScaleOutType !== '' ? customScaleOutType : portAddrType;
  if (level === 2) return t === UBOE || t === UBG;
  if (level === 3) return t === ROCE;
  return true;
}

/**
 * getElement: the first RankLevel of that level decides. Levels 0/1 take any entry of its info (Go
 * ranges over a map, so with several entries the pick is arbitrary; we take the first: the device
 * plugin writes one), levels 2/3 the entry of the selected port address type.
 */
function elementOf(d: RankDevice, level: number, portAddrType: string): LevelElement | undefined {
  const lvl = d.levelList.find((l) => l.level === level);
  if (lvl === undefined) return undefined;
  if (level <= 1) return lvl.info[0]?.[1];
  return lvl.info.find(([k]) => k === portAddrType)?.[1];
}

/** strconv.Atoi */
function atoi(s: string): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : undefined;
}

const EMPTY_ADDRS: readonly RankAddrItem[] = [];

/** ConstructRankListV2: the ranks by rank id, undefined when the job has none (the table stays v1). */
export function rankListV2(pods: readonly RankPod[], customScaleOutType: string): Rank[] | undefined {
  const types = new Set<string>();
  const ranks: Array<{ rank: Rank; device: RankDevice }> = [];
  for (const p of pods) {
    for (const d of p.devices) for (const l of d.levelList) for (const [k] of l.info) types.add(k);
    p.devices.forEach((d, i) => {
      const id = atoi(d.deviceId);
      if (id === undefined) return; // genRankList fails: no rank for this device
      const levelList: LevelElement[] = [];
      for (const level of [0, 1]) {
        const e = elementOf(d, level, '');
        if (e !== undefined) levelList.push(e);
      }
      ranks.push({ rank: { rankId: p.rank * p.devices.length + i, localId: id, deviceId: id, levelList }, device: d });
    });
  }
  if (ranks.length === 0) return undefined;
  const portAddrType = portAddrTypeOf(types, customScaleOutType);
  const out = ranks.map(({ rank, device }) => {
    const levelList = [...rank.levelList];
    for (const level of [2, 3]) {
      if (!shouldInclude(level, portAddrType, customScaleOutType)) continue;
      levelList.push(elementOf(device, level, portAddrType)
        ?? { netLayer: level, netInstanceId: 'CLUSTER1', netType: 'CLOS', netAttr: '', rankAddrList: EMPTY_ADDRS });
    }
    return { ...rank, levelList };
  });
  return out.sort((a, b) => a.rankId - b.rankId);
}
