/**
 * Volcano's scheduler configuration (`volcano-scheduler.conf` in ConfigMap
 * `volcano-system/volcano-scheduler-configmap`, which vc-scheduler mounts and reads with
 * `--scheduler-conf`): `actions` and `tiers[].plugins[].name`. Only the plugin names are read, to
 * tell whether Huawei's ascend plugin is configured (policy/jobs/ascend-plugin.ts).
 * Volcano's own format: pkg/scheduler/conf/scheduler_conf.go (`SchedulerConfiguration`, `Tier`,
 * `PluginOption`); Huawei's: component/ascend-for-volcano/build/volcano-<version>.yaml.
 */
import { parse as parseYaml } from 'yaml';
import { ok, rejected, type Parsed } from '../parsed.ts';

/** The data key vc-scheduler's ConfigMap carries (Volcano's Helm chart and Huawei's manifest). */
export const VOLCANO_SCHEDULER_CONF_KEY = 'volcano-scheduler.conf';
/** A configuration longer than this is not read (a ConfigMap holds at most 1 MiB). */
const MAX_CHARS = 1024 * 1024;

/** The names of every plugin in every tier, in order; a text that is no scheduler configuration is refused. */
export function schedulerPluginNames(text: string): Parsed<string[]> {
  if (text.length > MAX_CHARS) return rejected(`longer than ${MAX_CHARS} characters`, 'oversized');
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100 });
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
