/**
 * The fault-policy flow: configuration ConfigMaps (mindx-dl-fault-config, clusterd-config-cm),
 * clusterd-manual-info-cm (an operator deleting an NPU from `Total` releases it) and pods (which job
 * uses which NPU) -> FaultPolicyEngine. This file holds the flow's only subscribe (docs/CONVENTIONS.md#data-path).
 * It is the FaultPolicy the intake flow (device-faults.controller.ts) applies to every node, and it
 * post-processes the rendered cluster view with ClusterD's pre-separate rule.
 *
 * Wiring (controllers/manager.ts): the `policy` of the fault-view stage (controllers/fault-view-stage.ts),
 * whose pass calls `effective` per node and `settle` after it; `onViewChange` -> the stage's node keys;
 * `onStateChange` -> the escalation-state and manual-info reconcilers; `start()` after the caches
 * synced and before the reconcilers start, so the persisted state is restored before any decision.
 */
import { merge, map, type Subscription } from 'rxjs';
import type { WatchEvent } from '../runtime/reflector.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { ManualInfoNode } from '../policy/faults/manual-separation.ts';
import type { DeviceVerdict } from '../policy/faults/device-verdict.ts';
import { ESCALATION_STATE_CM_NAME, ESCALATION_STATE_KEY, parseEscalationState, type EscalationStateDoc } from '../schemas/escalation-state/escalation-state.ts';
import { FAULT_CONFIG_CM_NAME, FAULT_CONFIG_CM_NAMESPACE } from '../schemas/fault-config-cm/fault-config-cm.ts';
import { RELEASE_REQUESTS_CM_NAME, parseReleaseRequests, type ParsedReleaseRequest } from '../schemas/release-request/release-request.ts';
import { MANUAL_INFO_CM_NAME, parseManualInfoData } from '../schemas/manual-info/manual-info.ts';
import { CLUSTERD_CONFIG_CM_NAME } from '../schemas/manual-separate-policy/manual-separate-policy.ts';
import type { ClusterInfoView } from '../reconcilers/cluster-info.reconciler.ts';
import type { FaultPolicy } from './device-faults.controller.ts';
import { PolicyConfigTracker, type ConfigUpdate, type PolicyConfig } from '../state/fault-policy-config.ts';
import { FaultPolicyEngine } from './fault-policy-engine.ts';
import { NpuUsageIndex } from '../state/npu-usage.ts';
import type { NpuClaimMode } from '../policy/jobs/npu-claims.ts';
import { applyPreSeparate, inUsePreSeparated } from '../policy/faults/fault-policy-view.ts';
import type { ConfigMap, Pod } from '../runtime/kube-objects.ts';
import type { Sources } from './sources/sources.ts';

export interface FaultPolicyControllerDeps {
  readonly sources: Pick<Sources, 'faultConfig' | 'clusterSystemConfigMaps' | 'pods'>;
  /** Namespace of clusterd-config-cm, clusterd-manual-info-cm and the escalation state (cluster-system). */
  readonly namespace: string;
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** The controller's clock (runtime/clock.ts): time and the deadlines' timers. */
  readonly clock: QueueClock;
  readonly records: (node: string) => readonly FaultRecord[];
  readonly nodes: () => Iterable<string>;
  readonly onViewChange: (nodes: readonly string[]) => void;
  readonly onStateChange: () => void;
  /**
   * Operator release requests, handed on before the policy applies them (the fault view ends flap
   * holds of the released chips: an operator's release is not a flap).
   */
  readonly onRelease: (requests: readonly ParsedReleaseRequest[]) => void;
  /** --device-plugin-rules (FaultPolicyEngineDeps.deviceRules); default off, as ClusterD. */
  readonly deviceRules?: boolean;
  /** Which AscendReal claims make an NPU in use (policy/jobs/npu-claims.ts); --trust-pod-npu-annotations = `annotation`. */
  readonly npuClaims?: NpuClaimMode;
  /**
   * --persist-policy-state (default on): restore from clusterd-ts-escalation-state at start. Off: the
   * object is ignored and separated NPUs are adopted from clusterd-manual-info-cm, as ClusterD does.
   */
  readonly persistState?: boolean;
}

type Input =
  | { kind: 'faultConfig' }
  | { kind: 'clusterSystem'; ev: WatchEvent<ConfigMap> }
  | { kind: 'pod'; ev: WatchEvent<Pod> };

/**
 * What the fault-policy flow offers the reconcilers and flows beside the fault view: the documents
 * to persist, pre-separate over the rendered view, and the side memories restored at start.
 */
export type PolicyState = Pick<FaultPolicyController, 'persistedState' | 'manualInfo' | 'adjustView' | 'sideState'>;

export class FaultPolicyController implements FaultPolicy {
  readonly engine: FaultPolicyEngine;
  readonly usage: NpuUsageIndex;
  private readonly config = new PolicyConfigTracker();
  private readonly deps: FaultPolicyControllerDeps;
  private readonly clock: QueueClock;
  private readonly log: Logger;
  private sub: Subscription | undefined;

  constructor(deps: FaultPolicyControllerDeps) {
    this.deps = deps;
    this.log = deps.log;
    this.usage = new NpuUsageIndex(deps.npuClaims);
    this.clock = deps.clock;
    this.engine = new FaultPolicyEngine({
      log: deps.log, metrics: deps.metrics, clock: this.clock, usage: this.usage,
      records: deps.records, nodes: deps.nodes, onViewChange: deps.onViewChange, onStateChange: deps.onStateChange,
      deviceRules: deps.deviceRules === true,
    }, this.config.current);
  }

  effective(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[] {
    return this.engine.effective(node, records, nowMs);
  }

  observe(nodes: readonly string[]): void { this.engine.observe(nodes, this.clock.now()); }
  settle(): void { this.engine.settle(); }
  viewInputs(node: string, jobView: readonly FaultRecord[]): string { return [...inUsePreSeparated(node, jobView, this.usage)].sort().join(','); }
  verdicts(node: string): DeviceVerdict[] { return this.engine.verdicts(node); }
  persistedState(nowMs: number): EscalationStateDoc | undefined { return this.engine.persistedState(nowMs); }
  manualInfo(): Record<string, ManualInfoNode> | undefined { return this.engine.manualInfo(); }
  get currentConfig(): PolicyConfig { return this.engine.config; }
  /** The filter and relation-fault memories persisted with the policy's state (restored at start). */
  get sideState(): FaultPolicyEngine['sideState'] { return this.engine.sideState; }
  /** Fires due deadlines now (the engine's timer does this by itself). */
  reevaluate(): void { this.engine.tick(this.clock.now()); }

  /**
   * ClusterD's pre-separate rule over the rendered cluster view (docs/rules.md#ingest.pre-separate). `jobView`: the
   * published job views (controllers/fault-view.ts), so rendering evaluates nothing; by default the engine's.
   */
  adjustView(view: ClusterInfoView, jobView?: (node: string) => readonly FaultRecord[]): ClusterInfoView {
    if (!this.engine.isReady) return view;
    const now = this.clock.now();
    return applyPreSeparate(view, {
      usage: this.usage,
      effective: jobView ?? ((n) => this.engine.effective(n, this.deps.records(n), now)),
    });
  }

  /** After the caches synced: read the configuration and the pods, restore the state, then follow changes. */
  start(): void {
    const s = this.deps.sources;
    const now = this.clock.now();
    this.usage.reset(s.pods.store.values());
    this.applyConfig(this.config.updateFaultConfig(this.faultConfigCm()), now);
    this.applyConfig(this.config.updateClusterdConfig(this.cm(CLUSTERD_CONFIG_CM_NAME)), now);
    this.engine.restore(this.readState(), this.readManualInfo()?.info, now);
    const total = this.readManualInfo()?.total;
    if (total !== undefined) this.engine.manualInfoChanged(total, now);
    this.applyReleaseRequests(now);
    this.log.info('fault policy started', {
      central: this.engine.config.fault.central, devicePluginRules: this.deps.deviceRules === true, manualSeparation: this.engine.config.manual.enabled,
      restoredTracks: Object.keys(this.engine.persistedState(now)?.escalation.tracks ?? {}).length,
    });
    const inputs$ = merge(
      s.faultConfig.events$.pipe(map((): Input => ({ kind: 'faultConfig' }))),
      s.clusterSystemConfigMaps.events$.pipe(map((ev): Input => ({ kind: 'clusterSystem', ev }))),
      s.pods.events$.pipe(map((ev): Input => ({ kind: 'pod', ev }))),
    );
    this.sub = inputs$.subscribe({
      next: (i) => this.apply(i),
      error: (err: unknown) => this.log.error('fault policy input stream failed', { err: String(err) }),
    });
  }

  stop(): void {
    this.sub?.unsubscribe();
    this.engine.stop();
  }

  private apply(input: Input): void {
    const now = this.clock.now();
    switch (input.kind) {
      case 'faultConfig':
        this.applyConfig(this.config.updateFaultConfig(this.faultConfigCm()), now);
        return;
      case 'pod': {
        const nodes = this.usage.apply(input.ev);
        if (nodes.length > 0) this.deps.onViewChange(nodes); // pre-separate and job mapping of these nodes
        return;
      }
      case 'clusterSystem': {
        const name = input.ev.obj.metadata?.name;
        if (name === CLUSTERD_CONFIG_CM_NAME) this.applyConfig(this.config.updateClusterdConfig(this.cm(CLUSTERD_CONFIG_CM_NAME)), now);
        else if (name === MANUAL_INFO_CM_NAME) {
          const info = this.readManualInfo();
          if (info !== undefined) this.engine.manualInfoChanged(info.total, now);
        } else if (name === RELEASE_REQUESTS_CM_NAME && input.ev.type !== 'delete') {
          this.applyReleaseRequests(now);
        } else if (name === ESCALATION_STATE_CM_NAME && input.ev.type === 'delete' && this.deps.persistState !== false) this.deps.onStateChange(); // rewrite a deleted state
        return;
      }
    }
  }

  /** `kubectl clusterd release` requests (idempotent: each releases only what was separated before it). */
  private applyReleaseRequests(now: number): void {
    const cm = this.cm(RELEASE_REQUESTS_CM_NAME);
    if (cm === undefined) return;
    const p = parseReleaseRequests(cm.data);
    if (!p.ok) {
      this.log.warn('release requests unreadable; ignored', { configMap: RELEASE_REQUESTS_CM_NAME, reason: p.reason });
      this.deps.metrics?.invalidInput.inc({ format: 'release-requests', reason: p.kind ?? 'invalid' });
      return;
    }
    for (const s of p.value.skipped) {
      this.log.warn('release request skipped', { configMap: RELEASE_REQUESTS_CM_NAME, reason: s });
      this.deps.metrics?.invalidInput.inc({ format: 'release-requests', reason: 'schema' });
    }
    this.deps.onRelease(p.value.requests);
    this.engine.operatorReleases(p.value.requests, now);
  }

  private applyConfig(update: ConfigUpdate, now: number): void {
    for (const w of update.warnings) {
      this.log.warn('fault configuration value ignored; default or last good value used', { reason: w });
      this.deps.metrics?.invalidInput.inc({ format: 'fault-config', reason: 'ignored_value' });
    }
    if (update.levelsChanged || update.customizationChanged || update.manualChanged) {
      const c = this.config.current;
      this.log.info('fault configuration applied', { central: c.fault.central, levels: update.levelsChanged, customization: update.customizationChanged, manualSeparation: update.manualChanged, manualEnabled: c.manual.enabled });
      this.engine.setConfig(c, update, now);
    }
  }

  private cm(name: string): ConfigMap | undefined {
    return this.deps.sources.clusterSystemConfigMaps.get(`${this.deps.namespace}/${name}`);
  }

  private faultConfigCm(): ConfigMap | undefined {
    return this.deps.sources.faultConfig.get(`${FAULT_CONFIG_CM_NAMESPACE}/${FAULT_CONFIG_CM_NAME}`);
  }

  private readState(): EscalationStateDoc | undefined {
    if (this.deps.persistState === false) return undefined;
    const text = this.cm(ESCALATION_STATE_CM_NAME)?.data?.[ESCALATION_STATE_KEY];
    if (text === undefined) return undefined;
    const p = parseEscalationState(text);
    if (p.ok) return p.value;
    this.log.warn('persisted escalation state unreadable; starting without it', { reason: p.reason });
    this.deps.metrics?.invalidInput.inc({ format: 'escalation-state', reason: 'invalid' });
    return undefined;
  }

  /** clusterd-manual-info-cm as cached: Total per node, and the whole content for adoption. */
  private readManualInfo(): { total: Record<string, readonly string[]>; info: Record<string, ManualInfoNode> } | undefined {
    const cm = this.cm(MANUAL_INFO_CM_NAME);
    if (cm === undefined) return { total: {}, info: {} };
    const p = parseManualInfoData(cm.data);
    if (!p.ok) {
      this.log.warn('clusterd-manual-info-cm rejected; last good state kept', { reason: p.reason });
      this.deps.metrics?.invalidInput.inc({ format: 'manual-info', reason: 'invalid' });
      return undefined;
    }
    const total: Record<string, readonly string[]> = {};
    const info: Record<string, ManualInfoNode> = {};
    for (const [node, v] of Object.entries(p.value)) {
      total[node] = v.Total ?? [];
      const detail = Object.fromEntries(Object.entries(v.Detail ?? {}).map(([chip, ds]) => [chip, ds ?? []]));
      info[node] = { Total: v.Total ?? [], Detail: detail };
    }
    return { total, info };
  }
}
