/**
 * Volcano's scheduler configuration (`volcano-scheduler.conf` in ConfigMap
 * `volcano-system/volcano-scheduler-configmap`, which vc-scheduler mounts and reads with
 * `--scheduler-conf`): `actions` and `tiers[].plugins[].name`. Only the plugin names are read, to
 * tell whether Huawei's ascend plugin is configured (policy/jobs/ascend-plugin.ts).
 * Volcano's own format: pkg/scheduler/conf/scheduler_conf.go (`SchedulerConfiguration`, `Tier`,
 * `PluginOption`); Huawei's: component/ascend-for-volcano/build/volcano-<version>.yaml.
 */
import { isNode, parseDocument } from 'yaml';
import { ok, rejected, type Parsed } from '../parsed.ts';

/** The data key vc-scheduler's ConfigMap carries (Volcano's Helm chart and Huawei's manifest). */
export const VOLCANO_SCHEDULER_CONF_KEY = 'volcano-scheduler.conf';
/** A configuration longer than this is not read (a ConfigMap holds at most 1 MiB). */
const MAX_CHARS = 1024 * 1024;

/** The names of every plugin in every tier, in order; a text that is no scheduler configuration is refused. */
export function schedulerPluginNames(text: string): Parsed<string[]> {
  if (text.length > MAX_CHARS) return rejected(`longer than ${MAX_CHARS} characters`, 'oversized');
  // Go's yaml.v2, which vc-scheduler reads it with, takes flow maps whose continuation lines are less
  // indented than the spec allows (Huawei's `init-params` arguments span lines that way); the `yaml`
  // library reports those as errors but still builds the document. Only errors inside `tiers`
  // matter here: there the plugin names could be misread.
  let doc: unknown;
  try {
    const d = parseDocument(text);
    const tiersNode = d.contents !== null && isNode(d.contents) ? (d.get('tiers', true) as { range?: [number, number, number] } | undefined) : undefined;
    const [from, to] = tiersNode?.range ?? [0, text.length];
    const inTiers = d.errors.find((e) => e.pos[0] >= from && e.pos[0] <= to);
    if (inTiers !== undefined || (d.errors.length > 0 && tiersNode === undefined)) {
      return rejected(`not YAML: ${String((inTiers ?? d.errors[0])!.message).slice(0, 200)}`, 'malformed_json');
    }
    doc = d.toJS({ maxAliasCount: 100 });
  } catch (e) {
    return rejected(`not YAML: ${String((e as Error).message).slice(0, 200)}`, 'malformed_json');
  }
  const tiers = (doc as { tiers?: unknown } | null)?.tiers;
  if (!Array.isArray(tiers)) return rejected('no tiers list', 'schema');
  const names: string[] = [];
  for (const tier of tiers) {
    const plugins = (tier as { plugins?: unknown } | null)?.plugins;
    if (plugins === undefined || plugins === null) continue;
    if (!Array.isArray(plugins)) return rejected('a tier\'s plugins is not a list', 'schema');
    for (const p of plugins) {
      const name = (p as { name?: unknown } | null)?.name;
      if (typeof name !== 'string') return rejected('a plugin without a name', 'schema');
      names.push(name);
    }
  }
  return ok(names);
}
