/**
 * `cluster-system/pingmesh-config`, written by the user to switch pingmesh network detection on
 * (docs/formats.md#pingmesh-config). ClusterD sees it only with label `mx-consumer-cim=true` (its
 * ConfigMap informer's selector, component/clusterd/pkg/interface/kube/informer.go). Every data key
 * (`global`, a super pod id, `roce`) holds `{"activate":"on"|"off","task_interval":<1..60>}`, read
 * as Go's json.Unmarshal into constant.HccspingMeshItem (component/clusterd/pkg/domain/pingmeshconfig/util.go)
 * and checked as component/clusterd/pkg/application/pingmesh/config_collector_v2.go does: one
 * item that does not decode or is out of range refuses the whole ConfigMap.
 *
 * No JSON Schema: Go matches the two field names case-insensitively and takes integer literals only
 * (go-decode.ts), which a schema cannot say.
 */
import { ok, rejected, type Parsed } from '../parsed.ts';
import { goFieldMatches, goInt, isPlainObject, NumberLiteral, parseJsonLiterals } from './go-decode.ts';

export const PINGMESH_CONFIG_CM_NAME = 'pingmesh-config';
/** ClusterD's ConfigMap informer lists only ConfigMaps with this label. */
export const PINGMESH_CONFIG_LABEL = { key: 'mx-consumer-cim', value: 'true' } as const;
export const PINGMESH_ACTIVATE = { on: 'on', off: 'off' } as const;
/** devmanager/common MinTaskInterval / MaxTaskInterval (seconds). */
export const PINGMESH_TASK_INTERVAL = { min: 1, max: 60 } as const;

/** One data key's item (constant.HccspingMeshItem). */
export interface PingMeshItem {
  readonly activate: string;
  readonly taskInterval: number;
}

export interface PingMeshConfig {
  readonly items: ReadonlyMap<string, PingMeshItem>;
  /** Some item is `on`: ClusterD switches detection on; all `off`: it stops (config_collector.go isNeedToStop). */
  readonly detect: boolean;
}

/** One item as Go decodes it; a string reason when Unmarshal fails. */
function decodeItem(key: string, text: string): Parsed<PingMeshItem> {
  const what = `pingmesh-config ${key}`;
  const parsed = parseJsonLiterals(what, text);
  if (!parsed.ok) return parsed;
  const v = parsed.value;
  let activate = '';
  let taskInterval = 0;
  // null decodes into the zero item (then refused by the range checks below).
  if (v === null) return ok({ activate, taskInterval });
  if (!isPlainObject(v)) return rejected(`${what}: not a JSON object`, 'schema');
  for (const [k, field] of Object.entries(v)) {
    if (field === null) continue;
    if (goFieldMatches(k, 'activate')) {
      if (typeof field !== 'string') return rejected(`${what}: activate is not a string`, 'schema');
      activate = field;
    } else if (goFieldMatches(k, 'task_interval')) {
      if (!(field instanceof NumberLiteral)) return rejected(`${what}: task_interval is not a number`, 'schema');
      const n = goInt(field, 64);
      if (n === undefined) return rejected(`${what}: task_interval ${field.source} is not a Go int`, 'out_of_range');
      taskInterval = n;
    }
  }
  return ok({ activate, taskInterval });
}

/** Every key decoded as Go's Unmarshal does, ranges unchecked (pingmeshconfig/util.go ParseFaultNetworkInfoCM). */
export function decodePingMeshConfig(data: Readonly<Record<string, string>> | undefined): Parsed<ReadonlyMap<string, PingMeshItem>> {
  const items = new Map<string, PingMeshItem>();
  for (const [key, text] of Object.entries(data ?? {})) {
    const item = decodeItem(key, text);
    if (!item.ok) return item;
    items.set(key, item.value);
  }
  return ok(items);
}

/**
 * The ConfigMap's data as ClusterD takes it: every key decoded and in range, or refused whole
 * (ClusterD then keeps the detection state it had).
 */
export function parsePingMeshConfig(data: Readonly<Record<string, string>> | undefined): Parsed<PingMeshConfig> {
  const decoded = decodePingMeshConfig(data);
  if (!decoded.ok) return decoded;
  const items = decoded.value;
  if (items.size === 0) return rejected('pingmesh-config: no item', 'missing_key');
  for (const [key, item] of items) {
    if (item.activate !== PINGMESH_ACTIVATE.on && item.activate !== PINGMESH_ACTIVATE.off) {
      return rejected(`pingmesh-config ${key}: activate is neither on nor off`, 'unknown_value');
    }
    if (item.taskInterval < PINGMESH_TASK_INTERVAL.min || item.taskInterval > PINGMESH_TASK_INTERVAL.max) {
      return rejected(`pingmesh-config ${key}: task_interval ${item.taskInterval} is outside [${PINGMESH_TASK_INTERVAL.min}, ${PINGMESH_TASK_INTERVAL.max}]`, 'out_of_range');
    }
  }
  return ok({ items, detect: [...items.values()].some((i) => i.activate === PINGMESH_ACTIVATE.on) });
}
