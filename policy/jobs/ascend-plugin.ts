/**
 * Is Huawei's ascend plugin configured in the cluster's Volcano scheduler? Its rescheduling half
 * deletes the pods of every faulty job labelled `fault-scheduling` and writes `vcjob-fault-npu-cm`
 * and `job-reschedule-reason` by itself (component/ascend-for-volcano: `internal/rescheduling`,
 * `plugin/factory.go`); its configuration has no switch for that half.
 * So beside it clusterd-ts must not act as that half too: two deleters would delete every fault pod
 * twice and two writers fight over those ConfigMaps (README "Running beside or instead of ClusterD").
 *
 * Huawei's build names the plugin `volcano-npu_<version>` (build/build.sh, `PluginName` in
 * type.go); a scheduler configuration naming a plugin with that prefix enables it.
 */

/** The registered-name prefix of every build of the ascend plugin. */
export const ASCEND_PLUGIN_PREFIX = 'volcano-npu';

export interface SchedulerConfig {
  /** `<namespace>/<name>` of the ConfigMap and its data key. */
  readonly source: string;
  /** Plugin names of the configuration, or why it could not be read. */
  readonly plugins: readonly string[] | { readonly unreadable: string };
}

export interface AscendPluginVerdict {
  /** The ascend plugin's name and where it is configured; undefined: not configured anywhere read. */
  readonly found?: { readonly plugin: string; readonly source: string };
  /** Configurations that could not be read (they may enable it: said in the log, not guessed). */
  readonly unreadable: readonly string[];
}

/** The first configuration (by source, for a stable answer) that enables the ascend plugin. */
export function ascendPluginIn(configs: readonly SchedulerConfig[]): AscendPluginVerdict {
  const sorted = [...configs].sort((a, b) => a.source.localeCompare(b.source));
  const unreadable = sorted.filter((c) => !Array.isArray(c.plugins)).map((c) => c.source);
  for (const c of sorted) {
    if (!Array.isArray(c.plugins)) continue;
    const plugin = (c.plugins as readonly string[]).find((n) => n.startsWith(ASCEND_PLUGIN_PREFIX));
    if (plugin !== undefined) return { found: { plugin, source: c.source }, unreadable };
  }
  return { unreadable };
}

/**
 * Whether clusterd-ts holds the rescheduling role now: asked for (`--rescheduling`) and, unless told
 * to act beside it (`--reschedule-beside-ascend-plugin`), no ascend plugin configured.
 */
export function holdsReschedulingRole(o: { readonly rescheduling: boolean; readonly besidePlugin: boolean }, v: AscendPluginVerdict): boolean {
  return o.rescheduling && (o.besidePlugin || v.found === undefined);
}
