/**
 * Pingmesh's per-super-pod ConfigMaps `cluster-system/super-pod-<id>` (docs/formats.md#super-pod-id)
 * and the node annotations they are built from.
 *
 * Read: the device plugin's Node annotations `superPodID`, `serverIndex`, `serverType`,
 * `baseDeviceInfos` (chip name -> {IP, SuperDeviceID}) and, for A5, label `accelerator-type`, as
 * ClusterD reads them (component/clusterd/pkg/domain/node/node_storage.go, node_storage_v2.go;
 * component/clusterd/pkg/application/pingmesh/collector.go, collector_v2.go).
 *
 * Written: label `app=pingmesh`, one key `superPodDevice` = Go json.Marshal of api.SuperPodDevice
 * with RackMap left out (component/clusterd/pkg/application/pingmesh/publisher.go updateSuperPodDeviceCM):
 * `{"Version","SuperPodID","NodeDeviceMap":{<node>:{"NodeName","ServerID","DeviceMap":{<phyId>:<superDeviceId>}}},"AcceleratorType"?}`.
 * v1 (A3): Version `A3`, no AcceleratorType. v2 (A5): Version `npu` (`850-SuperPod-Atlas-8` for that
 * accelerator type) and AcceleratorType. A node's RackID, NpuInfoMap and AcceleratorType never reach
 * the ConfigMap (ClusterD's deep copy drops them, component/clusterd/pkg/domain/superpod/superpod_storage.go).
 */
import { goJson, goMap } from '../go-json.ts';
import { rejected, type Parsed } from '../parsed.ts';
import { goAtoi, goFieldMatches, goInt, isPlainObject, NumberLiteral, parseJsonLiterals, trimSpaces } from './go-decode.ts';

export const SUPER_POD_CM_PREFIX = 'super-pod-';
export const SUPER_POD_LABELS = { app: 'pingmesh' } as const;
export const SUPER_POD_DEVICE_KEY = 'superPodDevice';
export const superPodCmName = (superPodId: string): string => `${SUPER_POD_CM_PREFIX}${superPodId}`;

export const NODE_DEVICE_ANNOTATIONS = { superPodId: 'superPodID', serverIndex: 'serverIndex', serverType: 'serverType', baseDeviceInfos: 'baseDeviceInfos' } as const;
export const ACCELERATOR_TYPE_LABEL = 'accelerator-type';
/** api.VersionA3 and api.VersionNPU (A5). */
export const SERVER_TYPES = { a3: 'A3', a5: 'npu' } as const;
/** The A5 accelerator types pingmesh takes (collector_v2.go isValidDeviceType). */
export const A5_SUPER_POD_TYPES = { pod950: '950-SuperPod-Atlas-8', pod850: '850-SuperPod-Atlas-8' } as const;
/** Chip name prefixes of baseDeviceInfos keys: A3 `Ascend910-<phyId>`, A5 `npu-<phyId>`. */
const CHIP_PREFIX = { a3: 'Ascend910-', a5: 'npu-' } as const;
/** node_storage.go maxNodeDeviceNum. */
export const MAX_NODE_DEVICES = 128;

/** One node of a super pod (api.NodeDevice as it reaches the ConfigMap). */
export interface NodeDevice {
  readonly NodeName: string;
  readonly ServerID: string;
  /** Physical chip id -> super device id. */
  readonly DeviceMap: ReadonlyMap<string, string>;
}

/** api.SuperPodDevice as it reaches the ConfigMap. */
export interface SuperPodDevice {
  readonly Version: string;
  readonly SuperPodID: string;
  readonly NodeDeviceMap: ReadonlyMap<string, NodeDevice>;
  /** "" is left out (omitempty). */
  readonly AcceleratorType: string;
}

/** The `superPodDevice` value: Go field order, maps sorted, Go escaping. */
export function encodeSuperPodDevice(d: SuperPodDevice): string {
  const nodes = [...d.NodeDeviceMap].map(([name, n]) => [name, { NodeName: n.NodeName, ServerID: n.ServerID, DeviceMap: goMap(Object.fromEntries(n.DeviceMap)) }] as const);
  return goJson({
    Version: d.Version,
    SuperPodID: d.SuperPodID,
    NodeDeviceMap: goMap(Object.fromEntries(nodes)),
    AcceleratorType: d.AcceleratorType === '' ? undefined : d.AcceleratorType,
  });
}

/** A node pingmesh takes: its super pod and its devices. */
export interface PingMeshNode {
  readonly superPodId: string;
  /** `A3` or `npu`: a super pod holds one kind. */
  readonly serverType: string;
  /** A5 only (label accelerator-type); "" on A3. */
  readonly acceleratorType: string;
  readonly device: NodeDevice;
}

/**
 * A node is not a pingmesh node (no super pod id, no devices, not A3 or an A5 super pod): ClusterD
 * drops it without a word. `bad`: its annotations say it is one but do not parse.
 */
export type NodeReading = { readonly kind: 'node'; readonly node: PingMeshNode } | { readonly kind: 'none'; readonly why: string } | { readonly kind: 'bad'; readonly rejection: Parsed<never> & { ok: false } };

const none = (why: string): NodeReading => ({ kind: 'none', why });
const bad = (reason: string, kind: Parameters<typeof rejected>[1]): NodeReading => ({ kind: 'bad', rejection: rejected(reason, kind) as Parsed<never> & { ok: false } });

/** baseDeviceInfos as Go decodes map[string]*api.NpuBaseInfo: chip -> SuperDeviceID; a string when it fails. */
function decodeBaseDeviceInfos(text: string): Map<string, number> | string {
  const parsed = parseJsonLiterals('baseDeviceInfos', text);
  if (!parsed.ok) return parsed.reason;
  if (!isPlainObject(parsed.value)) return parsed.value === null ? 'null' : 'not a JSON object';
  const out = new Map<string, number>();
  for (const [chip, info] of Object.entries(parsed.value)) {
    // ClusterD dereferences the entry: a null one would crash it (node_storage.go getNodeDevice).
    if (info === null) return `${chip}: null`;
    if (!isPlainObject(info)) return `${chip}: not a JSON object`;
    let superDeviceId = 0;
    for (const [k, v] of Object.entries(info)) {
      if (v === null) continue;
      if (goFieldMatches(k, 'SuperDeviceID')) {
        const n = v instanceof NumberLiteral ? goInt(v, 32, true) : undefined;
        if (n === undefined) return `${chip}: SuperDeviceID is not a uint32`;
        superDeviceId = n;
      } else if (goFieldMatches(k, 'IP')) {
        if (typeof v !== 'string') return `${chip}: IP is not a string`;
      } else if (goFieldMatches(k, 'levelList')) {
        if (!Array.isArray(v)) return `${chip}: levelList is not an array`;
      }
    }
    out.set(chip, superDeviceId);
  }
  return out;
}

/**
 * What pingmesh makes of a Node's annotations and labels, in ClusterD's order: the super pod id and
 * devices must be there, the server type must be A3 or an A5 super pod, the id a natural number.
 */
export function readPingMeshNode(name: string, annotations: Readonly<Record<string, string>> | undefined, labels: Readonly<Record<string, string>> | undefined): NodeReading {
  const a = annotations ?? {};
  const superPodId = trimSpaces(a[NODE_DEVICE_ANNOTATIONS.superPodId] ?? '');
  if (superPodId === '') return none('no superPodID annotation');
  const serverType = trimSpaces(a[NODE_DEVICE_ANNOTATIONS.serverType] ?? '');
  const a5 = serverType === SERVER_TYPES.a5;
  const acceleratorType = a5 ? (labels?.[ACCELERATOR_TYPE_LABEL] ?? '') : '';
  if (serverType !== SERVER_TYPES.a3 && !(a5 && (acceleratorType === A5_SUPER_POD_TYPES.pod950 || acceleratorType === A5_SUPER_POD_TYPES.pod850))) {
    return none(`server type ${JSON.stringify(serverType)} (accelerator type ${JSON.stringify(acceleratorType)}) is not an A3 or A5 super pod`);
  }
  const raw = a[NODE_DEVICE_ANNOTATIONS.baseDeviceInfos] ?? '';
  if (raw === '') return bad(`node ${name}: superPodID ${superPodId} but no baseDeviceInfos annotation`, 'missing_key');
  const infos = decodeBaseDeviceInfos(raw);
  if (typeof infos === 'string') return bad(`node ${name}: baseDeviceInfos: ${infos}`, infos.includes('malformed JSON') ? 'malformed_json' : 'schema');
  if (infos.size === 0 || infos.size > MAX_NODE_DEVICES) return bad(`node ${name}: baseDeviceInfos has ${infos.size} chips (1-${MAX_NODE_DEVICES})`, 'out_of_range');
  const prefix = a5 ? CHIP_PREFIX.a5 : CHIP_PREFIX.a3;
  const deviceMap = new Map<string, string>();
  for (const [chip, superDeviceId] of infos) {
    const phyId = chip.startsWith(prefix) ? chip.slice(prefix.length) : chip;
    if (goAtoi(phyId) === undefined) return bad(`node ${name}: baseDeviceInfos chip ${JSON.stringify(chip)} is not ${prefix}<int>`, 'bad_npu_name');
    deviceMap.set(phyId, String(superDeviceId));
  }
  const id = goAtoi(superPodId);
  if (id === undefined || id < 0n) return bad(`node ${name}: superPodID ${JSON.stringify(superPodId)} is not a natural number`, 'out_of_range');
  const serverIndex = trimSpaces(a[NODE_DEVICE_ANNOTATIONS.serverIndex] ?? '');
  return { kind: 'node', node: { superPodId, serverType, acceleratorType, device: { NodeName: name, ServerID: serverIndex, DeviceMap: deviceMap } } };
}
