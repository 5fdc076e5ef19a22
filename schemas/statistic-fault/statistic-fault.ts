/**
 * `cluster-system/statistic-fault-info`, written by ClusterD once a public fault message arrives
 * (clusterd application/statistics/fault.go updateCacheToCM, domain/statistics/fault.go
 * UpdateFaultToCM; constant/configmap.go, constant/type.go NodeFault and FaultNum):
 * - label `mc-statistic-fault=true`;
 * - `FaultNum` = `{"publicFaultNum":N}` (FaultNum's other fields are `json:"-"`);
 * - `PublicFaults` = Go map node -> []NodeFault, every NodeFault field `omitempty`:
 *   `{"resource","devIds","faultId","type","faultCode","level","faultTime"}` (faultTime in seconds);
 * - above MAX_FAULT_NUM faults only `FaultNum` and `Description` are patched in (PublicFaults keeps
 *   its last value).
 * ClusterD builds each node's list from a Go map, so the order of several faults on one node is
 * random there; ours is sorted by (resource + faultId), and a comparison must ignore that order.
 */
import { compareUtf8, goJson, goMap } from '../go-json.ts';
import { ok, parseJson, rejected, type Parsed } from '../parsed.ts';

export const STATISTIC_FAULT_CM_NAME = 'statistic-fault-info';
export const STATISTIC_FAULT_LABELS = { 'mc-statistic-fault': 'true' } as const;
export const STATISTIC_FAULT_KEYS = { faultNum: 'FaultNum', publicFaults: 'PublicFaults', description: 'Description' } as const;
/** constant.MaxFaultNum: above it the detailed list is not updated. */
export const MAX_FAULT_NUM = 4500;
export const TOO_MANY_FAULTS_DESCRIPTION = 'The current total number of faults is too large, and only a portion of the detailed fault data is displayed';

/** One public fault on one node (constant.NodeFault), fields in Go order. */
export interface StatisticNodeFault {
  readonly resource: string;
  /** Physical NPU ids of the influence; empty = node-wide. */
  readonly devIds: readonly number[];
  readonly faultId: string;
  readonly type: string;
  readonly faultCode: string;
  readonly level: string;
  /** Unix seconds (the fault's faultTime in ms / 1000). */
  readonly faultTime: number;
}

/** Go `omitempty`: "" / 0 / an empty slice are left out. */
const omit = <T>(v: T, empty: boolean): T | undefined => (empty ? undefined : v);

const encodeNodeFault = (f: StatisticNodeFault): object => ({
  resource: omit(f.resource, f.resource === ''),
  devIds: omit([...f.devIds], f.devIds.length === 0),
  faultId: omit(f.faultId, f.faultId === ''),
  type: omit(f.type, f.type === ''),
  faultCode: omit(f.faultCode, f.faultCode === ''),
  level: omit(f.level, f.level === ''),
  faultTime: omit(f.faultTime, f.faultTime === 0),
});

/** Our order of one node's faults (ClusterD's is a Go map's): by resource + faultId. */
export const byFaultKey = (a: StatisticNodeFault, b: StatisticNodeFault): number => compareUtf8(a.resource + a.faultId, b.resource + b.faultId);

/** `PublicFaults`: nodes without faults are left out (GetPubFaultsForCM); `{}` when none. */
export function encodePublicFaults(byNode: ReadonlyMap<string, readonly StatisticNodeFault[]>): string {
  const entries: Array<[string, object[]]> = [];
  for (const [node, faults] of byNode) if (faults.length > 0) entries.push([node, [...faults].sort(byFaultKey).map(encodeNodeFault)]);
  return goJson(goMap(Object.fromEntries(entries)));
}

export const encodeFaultNum = (publicFaultNum: number): string => goJson({ publicFaultNum });

export const countFaults = (byNode: ReadonlyMap<string, readonly StatisticNodeFault[]>): number =>
  [...byNode.values()].reduce((n, fs) => n + fs.length, 0);

/**
 * The ConfigMap's desired data, given what is there now (`current`, undefined = no ConfigMap):
 * the full content, or above MAX_FAULT_NUM the current data with `FaultNum` and `Description`
 * patched in; undefined = nothing to write (ClusterD's patch of a missing ConfigMap fails).
 */
export function statisticFaultData(byNode: ReadonlyMap<string, readonly StatisticNodeFault[]>, current: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  const n = countFaults(byNode);
  const faultNum = encodeFaultNum(n);
  if (n > MAX_FAULT_NUM) {
    if (current === undefined) return undefined;
    return { ...current, [STATISTIC_FAULT_KEYS.faultNum]: faultNum, [STATISTIC_FAULT_KEYS.description]: TOO_MANY_FAULTS_DESCRIPTION };
  }
  return { [STATISTIC_FAULT_KEYS.faultNum]: faultNum, [STATISTIC_FAULT_KEYS.publicFaults]: encodePublicFaults(byNode) };
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/**
 * Reads `PublicFaults` back (ClusterD LoadFaultFromCM: json.Unmarshal into map[string][]NodeFault;
 * an absent field is Go's zero value, a field of the wrong type fails the whole load).
 */
export function parsePublicFaults(text: string | undefined): Parsed<Map<string, StatisticNodeFault[]>> {
  if (text === undefined) return rejected(`${STATISTIC_FAULT_KEYS.publicFaults}: key is missing`, 'missing_key');
  const json = parseJson(STATISTIC_FAULT_KEYS.publicFaults, text);
  if (!json.ok) return json;
  const v = json.value;
  if (v === null) return ok(new Map());
  if (typeof v !== 'object' || Array.isArray(v)) return rejected(`${STATISTIC_FAULT_KEYS.publicFaults}: not a JSON object`, 'schema');
  const out = new Map<string, StatisticNodeFault[]>();
  for (const [node, list] of Object.entries(v as Record<string, unknown>)) {
    if (list === null) continue;
    if (!Array.isArray(list)) return rejected(`${STATISTIC_FAULT_KEYS.publicFaults}.${node}: not a list`, 'schema');
    const faults: StatisticNodeFault[] = [];
    for (const [i, raw] of list.entries()) {
      const f = (raw ?? {}) as Record<string, unknown>;
      const at = `${STATISTIC_FAULT_KEYS.publicFaults}.${node}[${i}]`;
      const strs = ['resource', 'faultId', 'type', 'faultCode', 'level'] as const;
      const bad = strs.find((k) => f[k] !== undefined && !isStr(f[k]));
      if (typeof raw !== 'object' || bad !== undefined) return rejected(`${at}${bad === undefined ? '' : `.${bad}`}: wrong type`, 'schema');
      const ids = f['devIds'] ?? [];
      if (!Array.isArray(ids) || !ids.every(isInt) || (f['faultTime'] !== undefined && !isInt(f['faultTime']))) return rejected(`${at}: devIds / faultTime must be integers`, 'schema');
      const s = (k: typeof strs[number]): string => (f[k] as string | undefined) ?? '';
      faults.push({ resource: s('resource'), devIds: ids as number[], faultId: s('faultId'), type: s('type'), faultCode: s('faultCode'), level: s('level'), faultTime: (f['faultTime'] as number | undefined) ?? 0 });
    }
    out.set(node, faults);
  }
  return ok(out);
}
