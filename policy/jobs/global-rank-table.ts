/**
 * The global rank table config.Config pushes to a MindIE job (PD deploy mode), as ClusterD's
 * component/clusterd/pkg/domain/epranktable/ranktable_util.go GeneratePdDeployModeRankTable builds it:
 * server group 0 = the coordinator instance's pods, group 1 = the controller's (server_id = node
 * address, server_ip = pod address), then one group per completed `rings-config-*` rank table of the
 * job (group ids from 2, each device's `device_logical_id` = its index, server ids replaced by host
 * ips). Any missing piece is a retry (the caller's queue gives up after ClusterD's three requeues).
 * Pure; bytes are Go's json.Marshal of ClusterD's structs (omitempty where they have it).
 *
 * Order: ClusterD ranges over a Go map for the pods and over its informer's list for the
 * ConfigMaps, so its orders are random; ours are by pod name and ConfigMap name.
 */
import { goJson } from '../../schemas/go-json.ts';

export const RINGS_CONFIG_PREFIX = 'rings-config-';
export const HCCL_JSON_KEY = 'hccl.json';
const STANDALONE_DEPLOY_SERVER = 'grt-server/deploy-server';
const DISTRIBUTED_DEPLOY_SERVER = 'grt-group/deploy-server';

export interface RankTableConfigMap {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
}
export interface InstancePod { readonly name: string; readonly hostIP: string; readonly podIP: string }

/** An instance's pods; undefined when no job of that app type exists (GetInstanceJobKey). */
export interface GlobalRankTableInputs {
  readonly configMaps: readonly RankTableConfigMap[];
  readonly coordinator: readonly InstancePod[] | undefined;
  readonly controller: readonly InstancePod[] | undefined;
}

export type GlobalRankTable = { readonly ok: string } | { readonly retry: string };

// --- a Go json.Unmarshal into ClusterD's A2RankTable ---

type Shape = 'string' | { readonly array: Shape } | { readonly struct: Readonly<Record<string, Shape>> };
const DEVICE: Shape = { struct: { device_id: 'string', device_ip: 'string', super_device_id: 'string', device_logical_id: 'string', rank_id: 'string' } };
const SERVER: Shape = { struct: { device: { array: DEVICE }, server_id: 'string', host_ip: 'string', container_ip: 'string', hardware_type: 'string' } };
const SUPER_POD: Shape = { struct: { super_pod_id: 'string', server_list: { array: { struct: { server_id: 'string' } } } } };
const A2: Shape = { struct: { status: 'string', server_list: { array: SERVER }, server_count: 'string', version: 'string', super_pod_list: { array: SUPER_POD } } };

const kindOf = (v: unknown): string => (Array.isArray(v) ? 'array' : typeof v === 'boolean' ? 'bool' : typeof v === 'object' ? 'object' : typeof v);

/** Decodes like encoding/json (case-insensitive keys, nulls ignored); throws Go's error text for a type mismatch. */
function decode(v: unknown, shape: Shape, where: string): unknown {
  if (v === null) return undefined;
  if (shape === 'string') {
    if (typeof v !== 'string') throw new Error(`json: cannot unmarshal ${kindOf(v)} into Go struct field ${where} of type string`);
    return v;
  }
  if ('array' in shape) {
    if (!Array.isArray(v)) throw new Error(`json: cannot unmarshal ${kindOf(v)} into Go struct field ${where} of type array`);
    // a null element is a nil pointer ClusterD would dereference: refused here
    return v.map((x) => { if (x === null) throw new Error(`null element in ${where}`); return decode(x, shape.array, where); });
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`json: cannot unmarshal ${kindOf(v)} into Go value of type ${where}`);
  const out: Record<string, unknown> = {};
  const names = Object.keys(shape.struct);
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const f = names.find((n) => n === k) ?? names.find((n) => n.toLowerCase() === k.toLowerCase());
    if (f !== undefined) out[f] = decode(x, shape.struct[f]!, `${where}.${f}`);
  }
  return out;
}

interface Device { device_id?: string; device_ip?: string; super_device_id?: string; device_logical_id?: string; rank_id?: string }
interface Server { device?: Device[]; server_id?: string; host_ip?: string; container_ip?: string; hardware_type?: string }
interface SuperPod { super_pod_id?: string; server_list?: Array<{ server_id?: string }> }
interface A2RankTable { status?: string; server_list?: Server[]; server_count?: string; version?: string; super_pod_list?: SuperPod[]; deployServer: string }

/** parseMindIeRankTableCM: the rank table and its deploy-server label, or why not. */
function parseA2(cm: RankTableConfigMap): A2RankTable | string {
  let raw: unknown;
  const text = cm.data[HCCL_JSON_KEY] ?? '';
  if (text.trim() === '') return 'unexpected end of JSON input';
  try { raw = JSON.parse(text); } catch (e) { return `invalid rank table JSON: ${String(e)}`; }
  let a2: Omit<A2RankTable, 'deployServer'>;
  try { a2 = (decode(raw, A2, 'A2RankTable') ?? {}) as Omit<A2RankTable, 'deployServer'>; } catch (e) { return (e as Error).message; }
  const server = cm.labels[STANDALONE_DEPLOY_SERVER];
  const group = cm.labels[DISTRIBUTED_DEPLOY_SERVER];
  if (server !== undefined && group !== undefined) return `${STANDALONE_DEPLOY_SERVER} and ${DISTRIBUTED_DEPLOY_SERVER} cannot exist at the same time`;
  if (server === undefined && group === undefined) return `configmap(${cm.name}) no ${STANDALONE_DEPLOY_SERVER} or ${DISTRIBUTED_DEPLOY_SERVER} label`;
  return { ...a2, deployServer: server ?? group! };
}

/** convertGrtServerId: server ids become host ips, in the super pod list too. */
function convertServerIds(a2: A2RankTable): void {
  if (a2.server_list === undefined) return;
  const hostOf = new Map<string, string>();
  for (const s of a2.server_list) {
    hostOf.set(s.server_id ?? '', s.host_ip ?? '');
    s.server_id = s.host_ip ?? '';
  }
  for (const p of a2.super_pod_list ?? []) for (const s of p.server_list ?? []) s.server_id = hostOf.get(s.server_id ?? '') ?? '';
}

const instanceGroup = (groupId: string, pods: readonly InstancePod[] | undefined, app: string): object | string => {
  if (pods === undefined) return `no ${app} job`;
  if (pods.length === 0) return `${app} server pod num is 0`;
  if (pods.some((p) => p.hostIP === '' || p.podIP === '')) return `${app} server pod is not scheduled`;
  const servers = [...pods].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((p) => ({ server_id: p.hostIP, server_ip: p.podIP }));
  return { group_id: groupId, server_count: String(servers.length), server_list: servers };
};

const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s === '' ? undefined : s);
const str = (s: string | undefined): string => s ?? '';

export function globalRankTable(inp: GlobalRankTableInputs): GlobalRankTable {
  if (inp.configMaps.length === 0) return { retry: 'no rank table' };
  const completed: A2RankTable[] = [];
  for (const cm of [...inp.configMaps].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const a2 = parseA2(cm);
    if (typeof a2 === 'string') return { retry: a2 };
    convertServerIds(a2);
    if (a2.status === 'completed') completed.push(a2);
  }
  if (completed.length === 0) return { retry: 'no completed a2 rank table' };
  const g0 = instanceGroup('0', inp.coordinator, 'mindie-ms-coordinator');
  if (typeof g0 === 'string') return { retry: g0 };
  const g1 = instanceGroup('1', inp.controller, 'mindie-ms-controller');
  if (typeof g1 === 'string') return { retry: g1 };
  const groups = completed.map((a2, i) => ({
    group_id: String(i + 2),
    deploy_server: nonEmpty(a2.deployServer),
    server_count: str(a2.server_count),
    server_list: (a2.server_list ?? []).map((s) => ({
      device: s.device === undefined || s.device.length === 0 ? undefined : s.device.map((d, logical) => ({
        device_id: str(d.device_id), device_ip: str(d.device_ip), super_device_id: nonEmpty(d.super_device_id), device_logical_id: String(logical), rank_id: str(d.rank_id),
      })),
      server_id: str(s.server_id), server_ip: nonEmpty(s.container_ip), hardware_type: nonEmpty(s.hardware_type),
    })),
    super_pod_list: a2.super_pod_list === undefined || a2.super_pod_list.length === 0 ? undefined
      : a2.super_pod_list.map((p) => ({ super_pod_id: str(p.super_pod_id), server_list: p.server_list === undefined ? null : p.server_list.map((x) => ({ server_id: str(x.server_id) })) })),
  }));
  return { ok: goJson({ version: str(completed[0]!.version), status: 'completed', server_group_list: [g0, g1, ...groups] }) };
}
