/**
 * The real Volcano as an optional part of the test control plane: vc-scheduler with Huawei's ascend
 * plugin compiled in, and vc-controller-manager, both built by tools/volcano/build.sh. Off unless a
 * caller asks for it (ControlPlaneOptions.volcano), so the other tests keep kube-scheduler and the
 * stand-ins. No admission webhooks run (vc-webhook-manager is not built): see tools/volcano/README.md
 * for what that leaves out and what a test's Volcano Job must therefore spell out itself.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface VolcanoOptions {
  /** Folder printed by tools/volcano/build.sh (binaries, crds/, volcano-scheduler.conf). */
  readonly dir: string;
  /** klog verbosity of both processes (Huawei's manifest: scheduler 3, controllers 4). */
  readonly verbosity?: number;
  /** Scheduling period (Huawei's manifest: 1s). */
  readonly schedulePeriod?: string;
  /**
   * `ascend` (default): vc-scheduler with Huawei's plugin and Huawei's configuration (topology A, the
   * MindCluster stack); `stock`: Volcano's own vc-scheduler and default configuration (topology B).
   */
  readonly scheduler?: 'ascend' | 'stock';
  /**
   * Overrides of the ascend plugin's `init-params` arguments in Huawei's configuration (e.g.
   * `grace-over-time: '6'`), written both to the file vc-scheduler reads and to the ConfigMap.
   */
  readonly pluginArguments?: Readonly<Record<string, string>>;
  /**
   * Folder printed by tools/ascend-operator/build.sh (ensureAscendOperator): also run the real Ascend
   * Operator, which turns AscendJobs into their PodGroup, Service and pods. Off by default.
   */
  readonly ascendOperator?: string;
}

/**
 * The scheduler configuration Huawei ships (build/volcano-<version>.yaml), as extracted by build.sh,
 * with `pluginArguments` set in its `init-params` arguments.
 */
export function volcanoSchedulerConf(dir: string, scheduler: 'ascend' | 'stock' = 'ascend', pluginArguments: Readonly<Record<string, string>> = {}): string {
  const text = readFileSync(join(dir, scheduler === 'stock' ? 'volcano-scheduler-stock.conf' : 'volcano-scheduler.conf'), 'utf8');
  return Object.keys(pluginArguments).length === 0 ? text : withPluginArguments(text, pluginArguments);
}

/**
 * Sets keys of the `init-params` configuration's `arguments` flow map (the plugin reads them there,
 * component/ascend-for-volcano/plugin/factory.go). A text edit, not a YAML round trip: Huawei's map
 * spans lines less indented than the YAML spec allows, which Go's yaml.v2 (vc-scheduler) takes but
 * a re-serialisation would not keep as written.
 */
export function withPluginArguments(conf: string, args: Readonly<Record<string, string>>): string {
  const head = /-\s*name:\s*init-params\s*\n\s*arguments:\s*\{/.exec(conf);
  if (head === null) throw new Error('no init-params arguments map in the scheduler configuration');
  const open = head.index + head[0].length;
  const close = conf.indexOf('}', open);
  if (close < 0) throw new Error('unterminated init-params arguments map');
  let body = conf.slice(open, close);
  for (const [k, v] of Object.entries(args)) {
    const pair = `${JSON.stringify(k)}:${JSON.stringify(v)}`;
    const re = new RegExp(`${JSON.stringify(k).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*:\\s*"[^"]*"`);
    body = re.test(body) ? body.replace(re, () => pair) : `${pair},${body}`;
  }
  return conf.slice(0, open) + body + conf.slice(close);
}

/** The vc-scheduler binary of that topology. */
export function vcSchedulerBinary(dir: string, scheduler: 'ascend' | 'stock' = 'ascend'): string {
  return join(dir, scheduler === 'stock' ? 'vc-scheduler-stock' : 'vc-scheduler');
}

/** The name the ascend plugin registered under (volcano-npu_<version>). */
export function ascendPluginName(dir: string): string {
  return readFileSync(join(dir, 'ascend-plugin-name'), 'utf8').trim();
}

/**
 * vc-scheduler's flags: those of Huawei's manifest that mean something outside a pod (leader election
 * off, 1 s period, all nodes scored), logs to stderr, ports on loopback.
 */
export function vcSchedulerArgs(o: { kubeconfig: string; conf: string; metricsPort: number; healthzPort: number; verbosity: number; schedulePeriod: string }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`, `--scheduler-conf=${o.conf}`, '--leader-elect=false',
    '--enable-healthz=true', `--healthz-address=127.0.0.1:${o.healthzPort}`,
    '--enable-metrics=true', `--listen-address=127.0.0.1:${o.metricsPort}`,
    `--schedule-period=${o.schedulePeriod}`, '--percentage-nodes-to-find=100', '--cache-dumper=false',
    '--logtostderr=true', `-v=${o.verbosity}`,
  ];
}

/** vc-controller-manager's flags (Huawei's manifest, minus the in-pod log files). */
export function vcControllerArgs(o: { kubeconfig: string; metricsPort: number; healthzPort: number; verbosity: number }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`, '--leader-elect=false',
    '--enable-healthz=true', `--healthz-address=127.0.0.1:${o.healthzPort}`,
    '--enable-metrics=true', `--listen-address=127.0.0.1:${o.metricsPort}`,
    '--worker-threads=3', '--logtostderr=true', `-v=${o.verbosity}`,
  ];
}

/**
 * The Ascend Operator's flags: those of Huawei's build/ascend-operator.yaml (API QPS and burst 800, gang
 * scheduling on, log level 0, healthz on), its run log under the control plane's folder instead of
 * /var/log (hwlog also copies it to stdout, the supervised log). It has no leader election and no
 * webhook (component/ascend-operator/main.go).
 */
export function ascendOperatorArgs(o: { kubeconfig: string; logFile: string; healthzPort: number; logLevel?: number }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`, '--kubeApiQps=800', '--kubeApiBurst=800', '--enableGangScheduling=true',
    `--logFile=${o.logFile}`, `--logLevel=${o.logLevel ?? 0}`, '--enable-healthz=true', `--healthz-address=${o.healthzPort}`,
  ];
}

/**
 * Runs tools/ascend-operator/build.sh (a no-op when the cache holds the build) and returns its folder
 * (`ascend-operator`, `crds/`), or undefined when the MindCluster source cannot be had here (exit 3).
 * CLUSTERD_TS_ASCEND_OPERATOR_DIR names a ready folder instead.
 */
export function ensureAscendOperator(): string | undefined {
  const ready = process.env.CLUSTERD_TS_ASCEND_OPERATOR_DIR;
  if (ready !== undefined && existsSync(join(ready, 'ascend-operator'))) return ready;
  try {
    const out = execFileSync('bash', [join(REPO, 'tools', 'ascend-operator', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    return out.trim().split('\n').pop();
  } catch (e) {
    if ((e as { status?: number }).status === 3) return undefined;
    throw e;
  }
}

/**
 * Runs tools/volcano/build.sh (a no-op when the cache holds the pinned build) and returns its folder,
 * or undefined when Volcano's source cannot be had on this machine (the script's exit code 3).
 * CLUSTERD_TS_VOLCANO_DIR names a ready folder instead.
 */
export function ensureVolcano(): string | undefined {
  const ready = process.env.CLUSTERD_TS_VOLCANO_DIR;
  if (ready !== undefined && existsSync(join(ready, 'vc-scheduler'))) return ready;
  try {
    const out = execFileSync('bash', [join(REPO, 'tools', 'volcano', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    return out.trim().split('\n').pop();
  } catch (e) {
    if ((e as { status?: number }).status === 3) return undefined;
    throw e;
  }
}
