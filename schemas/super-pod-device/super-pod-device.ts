/**
 * A node's SuperPod devices as ClusterD builds them from the Node's annotations (docs/formats.md#fault-job-info):
 * `superPodID` (a decimal SuperPod ID; trimmed, >= 0) and `baseDeviceInfos` (the device plugin's
 * `{"Ascend910-<phyId>": {"IP": "...", "SuperDeviceID": <uint32>}}`, 1 to 128 chips; `npu-<phyId>` on a
 * node annotated `serverType=npu`, A5). The node's DeviceMap is phyId -> SuperDeviceID in decimal. A chip
 * name that is not `<prefix><int>`, a value Go
 * could not unmarshal, or a count out of range makes the node have no devices, as in ClusterD.
 * MindCluster: `component/clusterd/pkg/domain/node/node_storage.go` (getSuerPodID, getBaseDevInfos, getNodeDevice),
 * `node_storage_v2.go` (getNodeDeviceA5).
 */
import { parseJson, rejected, ok, type Parsed } from '../parsed.ts';

export const SUPER_POD_ID_ANNOTATION = 'superPodID';
export const BASE_DEVICE_INFOS_ANNOTATION = 'baseDeviceInfos';
/** ClusterD's maxNodeDeviceNum. */
export const MAX_NODE_DEVICES = 128;
const CHIP_PREFIX = 'Ascend910-';
/** api.AscendMinuxPrefix: chip names on A5 (`serverType` `npu`) nodes. */
export const A5_CHIP_PREFIX = 'npu-';
export const SERVER_TYPE_ANNOTATION = 'serverType';
/** The chip-name prefix of the node's baseDeviceInfos, by its `serverType` annotation (ClusterD's CheckIsVersionA5). */
export const chipPrefixOf = (serverType: string | undefined): string => (serverType?.trim() === 'npu' ? A5_CHIP_PREFIX : CHIP_PREFIX);
const MAX_UINT32 = 0xffff_ffff;
/** Longest annotation read (128 chips of a few dozen bytes each, with room). */
const MAX_BASE_DEVICE_INFOS_CHARS = 64 * 1024;

/** A node of a SuperPod: its chips' SuperPod device IDs by physical ID. */
export interface SuperPodNode {
  readonly superPodId: number;
  readonly node: string;
  /** [phyId, SuperDeviceID] in the annotation's order. */
  readonly devices: ReadonlyArray<readonly [string, string]>;
}

/** The SuperPod ID of the `superPodID` annotation, or undefined (absent, not an integer, < 0). */
export function superPodIdOf(annotation: string | undefined): number | undefined {
  const t = annotation?.trim() ?? '';
  if (!/^[+-]?\d{1,18}$/.test(t)) return undefined;
  const n = Number(t);
  return n >= 0 ? n : undefined;
}

/** `baseDeviceInfos` as [phyId, SuperDeviceID] pairs. Never throws. */
export function parseBaseDeviceInfos(text: string, prefix = CHIP_PREFIX): Parsed<ReadonlyArray<readonly [string, string]>> {
  const j = parseJson(BASE_DEVICE_INFOS_ANNOTATION, text, { maxChars: MAX_BASE_DEVICE_INFOS_CHARS });
  if (!j.ok) return j;
  const v = j.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return rejected(`${BASE_DEVICE_INFOS_ANNOTATION}: not an object`, 'schema');
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_NODE_DEVICES) return rejected(`${BASE_DEVICE_INFOS_ANNOTATION}: ${entries.length} chips (1-${MAX_NODE_DEVICES})`, 'out_of_range');
  const out: Array<readonly [string, string]> = [];
  for (const [name, info] of entries) {
    const phy = name.startsWith(prefix) ? name.slice(prefix.length) : name;
    if (!/^[+-]?\d{1,18}$/.test(phy)) return rejected(`${BASE_DEVICE_INFOS_ANNOTATION}: chip name ${JSON.stringify(name.slice(0, 64))}`, 'bad_npu_name');
    if (typeof info !== 'object' || info === null || Array.isArray(info)) return rejected(`${BASE_DEVICE_INFOS_ANNOTATION}: ${phy} is not an object`, 'schema');
    const o = info as Record<string, unknown>;
    if (o.IP !== undefined && o.IP !== null && typeof o.IP !== 'string') return rejected(`${BASE_DEVICE_INFOS_ANNOTATION}: ${phy} IP is not a string`, 'schema');
    const sd = o.SuperDeviceID ?? 0;
    if (typeof sd !== 'number' || !Number.isInteger(sd) || sd < 0 || sd > MAX_UINT32) return rejected(`${BASE_DEVICE_INFOS_ANNOTATION}: ${phy} SuperDeviceID is not a uint32`, 'out_of_range');
    out.push([phy, String(sd)]);
  }
  return ok(out);
}
