/**
 * ClusterD -> Volcano: `mindx-dl/cluster-info-device-N`, `cluster-info-switch-N`, `cluster-info-node-cm`
 * (docs/formats.md#cluster-info). Data key = the CM's own name; value = JSON object keyed by the *source* CM name
 * (a Go map, so keys sorted), or `""` when there is nothing to report.
 */
import { goJson, goMap } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed, type SchemaValidator } from '../parsed.ts';
import { encodeDeviceFaultList, parseDeviceFaultList } from '../device-info/device-fault.ts';
import { encodeSwitchFaultEvent, validateSwitchFaultEvent } from '../device-info/switch-info.ts';
import { deviceInfoWire } from '../device-info/device-info.ts';
import { switchInfoFields, type SwitchFaultInfo } from '../device-info/switch-info.ts';
import { nodeInfoWire, type FaultDev } from '../node-info/node-info.ts';
import { validateDeviceMap, validateNodeMap, validateSwitchMap } from './cluster-info.validators.gen.ts';

export const CLUSTER_INFO_NAMESPACE = 'mindx-dl';
export const CLUSTER_INFO_LABEL_KEY = 'mx-consumer-volcano';
export const CLUSTER_INFO_LABELS = { [CLUSTER_INFO_LABEL_KEY]: 'true' } as const;
export const CLUSTER_INFO_DEVICE_PREFIX = 'cluster-info-device-';
export const CLUSTER_INFO_SWITCH_PREFIX = 'cluster-info-switch-';
/** Never sharded. */
export const CLUSTER_INFO_NODE_CM = 'cluster-info-node-cm';
/** Shard size limit: 800 KiB of serialised JSON. */
export const CLUSTER_INFO_MAX_SHARD_BYTES = 800 * 1024;
/**
 * Where new shard cuts are made (docs/rules.md#ingest.cluster-info-shards): a fault rewrites one
 * shard, and what a write costs the apiserver, etcd and every watcher grows with its bytes
 * (docs/benchmarks.md). The headroom up to the limit absorbs entries growing with faults.
 */
export const CLUSTER_INFO_SHARD_TARGET_BYTES = 64 * 1024;

export const clusterInfoDeviceCmName = (i: number): string => `${CLUSTER_INFO_DEVICE_PREFIX}${i}`;
export const clusterInfoSwitchCmName = (i: number): string => `${CLUSTER_INFO_SWITCH_PREFIX}${i}`;

/** Entry of cluster-info-device-N, key `mindx-dl-deviceinfo-<node>`; fields in Go order. No CheckCode. */
export interface DeviceInfoEntry {
  /** CD-recomputed: always the five `<P>` keys (see recomputeDeviceList). Go map. */
  readonly DeviceList: Readonly<Record<string, string>>;
  /** Unix seconds. */
  readonly UpdateTime: number;
  readonly CmName: string;
  readonly SuperPodID: number;
  readonly RackID: number;
  readonly ServerIndex: number;
}

/** Entry of cluster-info-node-cm, key `mindx-dl-nodeinfo-<node>`. */
export interface NodeInfoEntry {
  readonly FaultDevList: readonly FaultDev[] | null;
  readonly NodeStatus: string;
  readonly CmName: string;
  /** Unix ms. */
  readonly UpdateTime: number;
}

/** Entry of cluster-info-switch-N, key `mindx-dl-switchinfo-<node>`: SwitchFaultInfo + CmName. */
export interface SwitchInfoEntry extends SwitchFaultInfo {
  readonly CmName: string;
}

export type ClusterInfoEntry = DeviceInfoEntry | NodeInfoEntry | SwitchInfoEntry;

/** What the cluster-info writer renders: the entries of each kind by CM name. */
export interface ClusterInfoView {
  readonly device: Record<string, DeviceInfoEntry>;
  readonly node: Record<string, NodeInfoEntry>;
  readonly switch: Record<string, SwitchInfoEntry>;
}

export const deviceEntryWire = (e: DeviceInfoEntry): unknown => {
  const { DeviceList, UpdateTime } = deviceInfoWire(e) as { DeviceList: unknown; UpdateTime: number };
  return { DeviceList, UpdateTime, CmName: e.CmName, SuperPodID: e.SuperPodID, RackID: e.RackID, ServerIndex: e.ServerIndex };
};
export const nodeEntryWire = (e: NodeInfoEntry): unknown => ({ ...(nodeInfoWire(e) as object), CmName: e.CmName, UpdateTime: e.UpdateTime });
export const switchEntryWire = (e: SwitchInfoEntry): unknown => ({ ...switchInfoFields(e), CmName: e.CmName });

/** Go-ordered model of any entry (dispatch on its distinctive field). */
export function clusterInfoEntryWire(e: ClusterInfoEntry): unknown {
  if ('DeviceList' in e) return deviceEntryWire(e);
  if ('FaultDevList' in e) return nodeEntryWire(e);
  return switchEntryWire(e);
}

/** One cluster-info value: sorted Go map of entries, or `""` when there are none. */
export function encodeClusterInfo(entries: Readonly<Record<string, ClusterInfoEntry>>): string {
  const keys = Object.keys(entries);
  if (keys.length === 0) return '';
  return goJson(goMap(Object.fromEntries(keys.map((k) => [k, clusterInfoEntryWire(entries[k]!)]))));
}

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validators = {
  device: validateDeviceMap as SchemaValidator<Record<string, DeviceInfoEntry>>,
  node: validateNodeMap as SchemaValidator<Record<string, NodeInfoEntry>>,
  switch: validateSwitchMap as SchemaValidator<Record<string, SwitchInfoEntry>>,
};
export type ClusterInfoKind = keyof typeof validators;

/** Only known fields, so a re-encode matches what Volcano would read. */
function pickEntry(kind: ClusterInfoKind, x: ClusterInfoEntry): ClusterInfoEntry {
  switch (kind) {
    case 'device': {
      const e = x as DeviceInfoEntry;
      return { DeviceList: { ...e.DeviceList }, UpdateTime: e.UpdateTime, CmName: e.CmName, SuperPodID: e.SuperPodID, RackID: e.RackID, ServerIndex: e.ServerIndex };
    }
    case 'node': {
      const e = x as NodeInfoEntry;
      const devs = e.FaultDevList === null ? null : e.FaultDevList.map((d) => ({ DeviceType: d.DeviceType, DeviceId: d.DeviceId, FaultCode: d.FaultCode, FaultLevel: d.FaultLevel }));
      return { FaultDevList: devs, NodeStatus: e.NodeStatus, CmName: e.CmName, UpdateTime: e.UpdateTime };
    }
    case 'switch': {
      const e = x as SwitchInfoEntry;
      return { FaultCode: e.FaultCode, FaultLevel: e.FaultLevel, UpdateTime: e.UpdateTime, NodeStatus: e.NodeStatus, FaultTimeAndLevelMap: e.FaultTimeAndLevelMap, CmName: e.CmName };
    }
  }
}

/**
 * The JSON payloads nested in an entry, checked as Volcano decodes them (`<P>-Fault` lists, switch
 * FaultCode events) and re-encoded; the reason when one does not decode.
 */
function checkNested(kind: ClusterInfoKind, key: string, e: ClusterInfoEntry): { entry: ClusterInfoEntry } | { reason: string } {
  if (kind === 'device') {
    const d = e as DeviceInfoEntry;
    const list: Record<string, string> = {};
    for (const [k, v] of Object.entries(d.DeviceList)) {
      if (!k.endsWith('-Fault') || v === '') { list[k] = v; continue; }
      const f = parseDeviceFaultList(v, Number.MAX_SAFE_INTEGER, `${key} ${k}`);
      if (!f.ok) return { reason: f.reason };
      list[k] = encodeDeviceFaultList(f.value.value);
    }
    return { entry: { ...d, DeviceList: list } };
  }
  if (kind === 'switch') {
    const sw = e as SwitchInfoEntry;
    const codes: string[] = [];
    for (const [i, c] of (sw.FaultCode ?? []).entries()) {
      const ev = parseValidated(`${key} FaultCode[${i}]`, c, validateSwitchFaultEvent);
      if (!ev.ok) return { reason: ev.reason };
      codes.push(encodeSwitchFaultEvent(ev.value));
    }
    return { entry: { ...sw, FaultCode: sw.FaultCode === null ? null : codes } };
  }
  return { entry: e };
}

/**
 * Parses one cluster-info value (`""` = no entries), strictly: numbers in range, nested payloads
 * decodable; for tests and for reading back our own writes.
 */
export function parseClusterInfo(kind: ClusterInfoKind, text: string): Parsed<Record<string, ClusterInfoEntry>> {
  if (text === '') return ok({});
  const p = parseValidated(`cluster-info ${kind}`, text, validators[kind] as SchemaValidator<Record<string, ClusterInfoEntry>>);
  if (!p.ok) return p;
  const out: Record<string, ClusterInfoEntry> = {};
  for (const [k, e] of Object.entries(p.value)) {
    const n = checkNested(kind, k, pickEntry(kind, e));
    if ('reason' in n) return rejected(`cluster-info ${kind}: ${n.reason}`, 'schema');
    out[k] = n.entry;
  }
  return ok(out);
}
