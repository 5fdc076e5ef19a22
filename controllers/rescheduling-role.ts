/**
 * Who holds the rescheduling role (README "Running beside or instead of ClusterD"): clusterd-ts,
 * when asked to (`--rescheduling`), unless Huawei's ascend plugin is configured in Volcano's
 * scheduler (policy/jobs/ascend-plugin.ts) and `--reschedule-beside-ascend-plugin` is off. Read from
 * the ConfigMaps of `volcano-system` carrying `volcano-scheduler.conf` (the one vc-scheduler mounts),
 * at start before anything acts and again on every change of them; each change of the answer is
 * logged, posted as an Event on that ConfigMap and shown in `clusterd_rescheduling_yielded` and
 * `/readyz?verbose`, and `onChange` moves the jobs flow in or out of acting.
 */
import { filter, type Subscription } from 'rxjs';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Sources } from './sources/sources.ts';
import type { Options } from './options.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { recordObjectEvent } from '../actions/object-event.action.ts';
import { ascendPluginIn, holdsReschedulingRole, type AscendPluginVerdict, type SchedulerConfig } from '../policy/jobs/ascend-plugin.ts';
import type { ReschedulingRoleStatus } from './ports.ts';
import { schedulerPluginNames, VOLCANO_SCHEDULER_CONF_KEY } from '../schemas/volcano-scheduler-conf/volcano-scheduler-conf.ts';

export interface ReschedulingRoleDeps {
  readonly sources: Pick<Sources, 'volcanoConfigMaps'>;
  readonly options: Pick<Options, 'rescheduling' | 'rescheduleBesideAscendPlugin' | 'dryRun'>;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly client: KubeClient;
  readonly now: () => number;
  /** Called when the answer changes after start (true: clusterd-ts now holds the role). */
  readonly onChange: (holds: boolean) => void;
}

export class ReschedulingRole implements ReschedulingRoleStatus {
  private verdict: AscendPluginVerdict = { unreadable: [] };
  private sub?: Subscription;
  private started = false;
  private readonly d: ReschedulingRoleDeps;

  constructor(d: ReschedulingRoleDeps) {
    this.d = d;
  }

  /** clusterd-ts holds the rescheduling role now. */
  get holds(): boolean {
    return holdsReschedulingRole({ rescheduling: this.d.options.rescheduling, besidePlugin: this.d.options.rescheduleBesideAscendPlugin }, this.verdict);
  }

  /** One line for `/readyz?verbose`: who reschedules, and why. */
  describe(): string {
    const o = this.d.options;
    if (!o.rescheduling) return 'rescheduling: off (--rescheduling=false): ClusterD\'s role, Volcano\'s ascend plugin reschedules';
    const f = this.verdict.found;
    if (f === undefined) return 'rescheduling: held by clusterd-ts (no ascend plugin in Volcano\'s scheduler configuration)';
    return this.holds
      ? `rescheduling: held by clusterd-ts beside Huawei's ascend plugin ${f.plugin} (${f.source}), as --reschedule-beside-ascend-plugin asks`
      : `rescheduling: yielded to Huawei's ascend plugin ${f.plugin} configured in ${f.source}; clusterd-ts keeps ClusterD's role (--reschedule-beside-ascend-plugin takes it anyway)`;
  }

  /** Reads the caches (synced) and follows their changes. */
  start(): void {
    this.refresh(false);
    this.started = true;
    // The other ConfigMaps of that namespace (vcjob-fault-npu-cm, tor-share-cm: ours) change often
    // and say nothing about the scheduler: only a configuration's arrival, change or removal counts.
    const conf = (c: ConfigMap): boolean => c.data?.[VOLCANO_SCHEDULER_CONF_KEY] !== undefined;
    this.sub = this.d.sources.volcanoConfigMaps.events$
      .pipe(filter((ev) => conf(ev.obj) || (ev.type === 'update' && conf(ev.old))))
      .subscribe(() => this.refresh(true));
  }

  stop(): void {
    this.sub?.unsubscribe();
  }

  private refresh(announce: boolean): void {
    const before = this.holds;
    const prev = this.verdict;
    this.verdict = ascendPluginIn(this.configs());
    const { log, metrics, options } = this.d;
    for (const u of this.verdict.unreadable.filter((s) => !prev.unreadable.includes(s))) {
      log.warn('Volcano scheduler configuration unreadable: whether it enables the ascend plugin is not known from it', { configMap: u });
    }
    metrics.reschedulingYielded.set(options.rescheduling && !this.holds ? 1 : 0);
    if (this.started && prev.found?.plugin === this.verdict.found?.plugin && prev.found?.source === this.verdict.found?.source) return;
    if (!options.rescheduling) return;
    const f = this.verdict.found;
    if (f !== undefined && !this.holds) log.warn('rescheduling yielded to Huawei\'s ascend plugin: it deletes the fault pods and writes the job ConfigMaps itself, so clusterd-ts keeps ClusterD\'s role while it is configured', { plugin: f.plugin, configMap: f.source, flag: '--reschedule-beside-ascend-plugin' });
    else if (f !== undefined) log.warn('rescheduling held beside Huawei\'s ascend plugin (--reschedule-beside-ascend-plugin): both delete fault pods', { plugin: f.plugin, configMap: f.source });
    else if (this.started) log.info('rescheduling held by clusterd-ts: no ascend plugin in Volcano\'s scheduler configuration any more');
    this.event(f ?? prev.found);
    if (announce && before !== this.holds) this.d.onChange(this.holds);
  }

  private configs(): SchedulerConfig[] {
    const out: SchedulerConfig[] = [];
    for (const cm of this.d.sources.volcanoConfigMaps.store.values()) {
      const text = cm.data?.[VOLCANO_SCHEDULER_CONF_KEY];
      if (text === undefined) continue;
      const parsed = schedulerPluginNames(text);
      out.push({ source: `${cm.metadata?.namespace}/${cm.metadata?.name}`, plugins: parsed.ok ? parsed.value : { unreadable: parsed.reason } });
    }
    return out;
  }

  /** An Event on the scheduler's ConfigMap: who reschedules now (best effort; none in dry run). */
  private event(on: { plugin: string; source: string } | undefined): void {
    if (on === undefined || this.d.options.dryRun) return;
    const [namespace, name] = on.source.split('/') as [string, string];
    const holds = this.holds;
    const atMs = this.d.now();
    void recordObjectEvent(this.d.client, {
      namespace, object: { apiVersion: 'v1', kind: 'ConfigMap', name, namespace },
      type: holds ? 'Normal' : 'Warning',
      reason: holds ? 'ReschedulingHeld' : 'ReschedulingYielded',
      message: this.describe(), key: `${on.source}|${holds}|${Math.floor(atMs / 1000)}`, atMs,
    }).catch((err: unknown) => this.d.log.warn('could not post the rescheduling-role Event', { err: String(err), configMap: on.source }));
  }
}
