/**
 * The stateful core of the fault policy: it runs the pure engines of policy/ per node and keeps
 * their state (the FaultPolicy hook of the intake flow).
 *
 * Per node: records -> resolveFaultLevel (central tables only while mindx-dl-fault-config exists)
 * -> escalationPolicy (FaultFrequency / FaultDuration, the 20 s parameter-plane rule) -> ClusterD
 * manualSeparationPolicy (observations with the job using each NPU) -> effectiveRecords. The
 * escalation state is partitioned by node (a node's step costs O(its tracks), not O(cluster)); the
 * manual-separation state is shared except its per-node `lastSeen`. The earliest of the engines'
 * nextDeadlineMs is one work-queue key (runtime/timer-loop.ts), so a 20 s duration rule or a 30 s
 * software/hardware judgement fires with no new input, on the queue's clock; nodes whose published view changed are reported through `onViewChange` (the fault-view
 * stage's node keys; `settle` reports what its pass's `effective` calls changed), state changes through `onStateChange`
 * (the escalation-state and manual-info reconcilers). Nothing is decided before `restore`, which the
 * manager calls once the caches (the state ConfigMap among them) are synced.
 */
import { EMPTY_ESCALATION_STATE, EMPTY_FILTER_STATE, EMPTY_RELATION_STATE, type EscalationState, type EscalationStateDoc, type FilterState, type ManualSeparationState, type RelationState } from '../schemas/escalation-state/escalation-state.ts';
import { activeEscalations, escalationPolicy, type Escalation, type EscalationInput } from '../policy/faults/escalation.ts';
import { composeEscalationState, pruneEscalationState } from '../policy/faults/escalation-persistence.ts';
import { MANUALLY_SEPARATE_PSEUDO_CODE, resolveFaultLevel, type LeveledFault } from '../policy/faults/fault-level.ts';
import { manualInfoView, manualSeparationPolicy, manuallySeparatedDevices, type ManualInfoNode, type ManualSeparationInput } from '../policy/faults/manual-separation.ts';
import { TICK, type ConfigChange, type Tick } from '../policy/policy-operator.ts';
import { DEFAULT_RELATION_FAULT_CONFIG } from '../policy/faults/relation-fault-config.ts';
import { deviceVerdicts, type DeviceVerdict } from '../policy/faults/device-verdict.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultCustomization } from '../schemas/fault-customization/fault-customization.ts';
import type { ManualSeparatePolicy } from '../schemas/manual-separate-policy/manual-separate-policy.ts';
import type { QueueClock } from '../runtime/work-queue.ts';
import { TimerLoop } from '../runtime/timer-loop.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { FaultPolicy } from './device-faults.controller.ts';
import type { ConfigUpdate, PolicyConfig } from '../state/fault-policy-config.ts';
import type { NpuUsage } from '../state/npu-usage.ts';
import { FaultGauge, reportEscalation, reportManualSeparation } from './fault-policy-report.ts';
import { effectiveRecords, manualObservations, recordsSignature, type SeparatedChip } from '../policy/faults/fault-policy-view.ts';

/** The work-queue key of the engines' earliest deadline. */
const DEADLINE_KEY = 'deadline';

export interface FaultPolicyEngineDeps {
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** Time, and the timers of the deadline queue (runtime/work-queue QueueClock); tests pass a manual clock. */
  readonly clock: QueueClock;
  readonly usage: NpuUsage;
  /** The agents' records of a node (FaultStore.records) and every node with records. */
  readonly records: (node: string) => readonly FaultRecord[];
  readonly nodes: () => Iterable<string>;
  /** Published view of these nodes changed without new intake (timers, config, manual separation). */
  readonly onViewChange: (nodes: readonly string[]) => void;
  /** The persisted state or the desired clusterd-manual-info-cm may have changed. */
  readonly onStateChange: () => void;
  /**
   * Apply the device plugin's detection-side rules here as well (--device-plugin-rules): re-level
   * codes from mindx-dl-fault-config's faultCode.json / SwitchFaultCode.json, and FaultFrequency /
   * FaultDuration escalation (the 20 s parameter-plane rule among them). Off by default: ClusterD
   * does neither (it never reads mindx-dl-fault-config; the device plugin applies these rules before
   * it writes device-info), so the level the device plugin wrote is kept.
   */
  readonly deviceRules?: boolean;
}

/** The customization with no FaultFrequency / FaultDuration rule (memoized per config object). */
const noEscalationRules = new WeakMap<FaultCustomization, FaultCustomization>();
function withoutEscalationRules(c: FaultCustomization): FaultCustomization {
  let out = noEscalationRules.get(c);
  if (out === undefined) {
    out = { ...c, FaultFrequency: [], FaultDuration: [] };
    noEscalationRules.set(c, out);
  }
  return out;
}

interface NodeEval {
  readonly inputSig: string;
  readonly configGen: number;
  readonly leveled: readonly LeveledFault[];
  /** Chips in the device plugin's own ManuallySeparateNPU key. */
  readonly dpManual: ReadonlySet<string>;
  readonly escalations: readonly Escalation[];
  readonly effective: readonly FaultRecord[];
  readonly outputSig: string;
}

type SharedManual = Omit<ManualSeparationState, 'lastSeen'>;

export class FaultPolicyEngine implements FaultPolicy {
  private cfg: PolicyConfig;
  private configGen = 0;
  private ready = false;
  private readonly esc = new Map<string, EscalationState>();
  private readonly deadlines = new Map<string, number>();
  private readonly lastSeen = new Map<string, Readonly<Record<string, number>>>();
  private manual: SharedManual = { pending: {}, counters: {}, separated: {} };
  private manualDeadline: number | undefined;
  /** Relation-fault and filter memories, persisted in the same document; owned by relation-faults.controller.ts and fault-filters.controller.ts (`sideState` / `setSideState`). */
  private passthrough: { relation: RelationState; filters: FilterState } = { relation: EMPTY_RELATION_STATE, filters: EMPTY_FILTER_STATE };
  private readonly evals = new Map<string, NodeEval>();
  private readonly viewChanged = new Set<string>();
  private stateChanged = false;
  private flushQueued = false;
  /** The deadline key's queue and loop; a due key runs `tick`. */
  private readonly timers: TimerLoop;
  private readonly gauge: FaultGauge;
  private readonly deps: FaultPolicyEngineDeps;

  constructor(deps: FaultPolicyEngineDeps, config: PolicyConfig) {
    this.deps = deps;
    this.cfg = config;
    this.gauge = new FaultGauge(deps.metrics);
    this.timers = new TimerLoop({ name: 'fault_policy_deadlines', log: deps.log, clock: deps.clock, ...(deps.metrics ? { metrics: deps.metrics } : {}) }, (_key, nowMs) => this.tick(nowMs));
  }

  get isReady(): boolean { return this.ready; }
  get config(): PolicyConfig { return this.cfg; }

  /** The FaultFrequency / FaultDuration rules in force (none unless deviceRules). */
  private get customization(): FaultCustomization {
    return this.deps.deviceRules === true ? this.cfg.fault.customization : withoutEscalationRules(this.cfg.fault.customization);
  }

  /** Central code tables in force (none unless deviceRules: the reported level is kept). */
  private get tables(): PolicyConfig['tables'] {
    return this.deps.deviceRules === true ? this.cfg.tables : undefined;
  }

  /**
   * FaultPolicy: the node's records after policy (evaluated when its records or a due deadline
   * changed it). Before `restore`, the records as reported. It reports nothing itself: the caller
   * computes this node now, and `settle` (after the fault-view stage's pass) reports the rest.
   */
  effective(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[] {
    if (!this.ready) return records;
    this.ensure(node, records, nowMs, false);
    return this.evals.get(node)?.effective ?? records;
  }

  /** FaultPolicy: after a pass of `effective` calls, reports other nodes' changed views and the state, and arms the next deadline. */
  settle(): void {
    if (!this.ready) return;
    this.rearm();
    this.flush();
  }

  /** Intake changed these nodes (the intake flow reports them itself). */
  observe(nodes: readonly string[], nowMs: number = this.deps.clock.now()): void {
    if (!this.ready) return;
    for (const n of nodes) this.ensure(n, this.deps.records(n), nowMs, false);
    this.queueFlush();
    this.rearm();
  }

  /** Why each chip of a node has its level (for logs and Events). */
  verdicts(node: string): DeviceVerdict[] {
    const e = this.evals.get(node);
    const manual = manuallySeparatedDevices({ lastSeen: {}, ...this.manual }).filter((m) => m.node === node);
    return deviceVerdicts(e?.leveled ?? [], e?.escalations ?? [], manual);
  }

  /**
   * Loads the persisted state (pruned), or adopts an existing clusterd-manual-info-cm when there is
   * none, then evaluates every node. Called once, before any decision is published.
   */
  restore(doc: EscalationStateDoc | undefined, manualInfo: Readonly<Record<string, ManualInfoNode>> | undefined, nowMs: number): void {
    if (doc !== undefined) {
      const p = pruneEscalationState(doc, nowMs, { customization: this.customization, relation: DEFAULT_RELATION_FAULT_CONFIG });
      for (const [k, t] of Object.entries(p.escalation.tracks)) {
        this.esc.set(t.node, { tracks: { ...this.esc.get(t.node)?.tracks, [k]: t } });
      }
      for (const [k, t] of Object.entries(p.manualSeparation.lastSeen)) {
        const node = k.slice(0, k.indexOf('/'));
        this.lastSeen.set(node, { ...this.lastSeen.get(node), [k]: t });
      }
      const { lastSeen: _, ...shared } = p.manualSeparation;
      this.manual = shared;
      this.passthrough = { relation: p.relation, filters: p.filters };
    }
    this.ready = true;
    this.timers.start();
    if (doc === undefined && manualInfo !== undefined && Object.keys(manualInfo).length > 0) this.stepManual({ type: 'adopt', info: manualInfo }, nowMs);
    const nodes = new Set([...this.deps.nodes(), ...this.esc.keys(), ...this.lastSeen.keys(), ...Object.values(this.manual.separated).map((s) => s.node)]);
    for (const n of nodes) this.ensure(n, this.deps.records(n), nowMs, false);
    this.stepManual(TICK, nowMs);
    for (const n of nodes) this.viewChanged.add(n);
    this.stateChanged = true;
    this.queueFlush();
    this.rearm();
  }

  /** A configuration change (fault-policy-config); re-runs what depends on it. */
  setConfig(config: PolicyConfig, update: ConfigUpdate, nowMs: number): void {
    this.cfg = config;
    if (!this.ready) return;
    if (update.customizationChanged) {
      const input: ConfigChange<FaultCustomization> = { type: 'config', config: this.customization };
      for (const [node, state] of [...this.esc]) this.stepEscalation(node, state, input, nowMs);
    }
    if (update.manualChanged) this.stepManual({ type: 'config', config: config.manual } satisfies ConfigChange<ManualSeparatePolicy>, nowMs);
    if (update.levelsChanged || update.customizationChanged) {
      this.configGen++;
      for (const n of new Set([...this.deps.nodes(), ...this.evals.keys()])) this.ensure(n, this.deps.records(n), nowMs, true);
    }
    this.queueFlush();
    this.rearm();
  }

  /** clusterd-manual-info-cm `Total` lists as cached now: an NPU an operator deleted is released. */
  manualInfoChanged(total: Readonly<Record<string, readonly string[]>>, nowMs: number): void {
    if (!this.ready) return;
    this.stepManual({ type: 'manual-info', total }, nowMs);
    this.queueFlush();
    this.rearm();
  }

  /**
   * `kubectl clusterd release` requests (schemas/release-request): per NPU, our escalation upgrades and
   * manual separations in force since at most the request's time are released and their counters
   * reset, then the node is re-evaluated. Replaying old requests changes nothing.
   */
  operatorReleases(requests: readonly { readonly node: string; readonly npus: readonly string[]; readonly by: string; readonly atMs: number }[], nowMs: number): void {
    if (!this.ready) return;
    const nodes = new Set<string>();
    for (const r of requests) {
      for (const device of r.npus) {
        const state = this.esc.get(r.node);
        if (state !== undefined) this.stepEscalation(r.node, state, { type: 'release', node: r.node, device, beforeMs: r.atMs, by: r.by }, nowMs);
        this.stepManual({ type: 'operator-release', node: r.node, device, beforeMs: r.atMs, by: r.by }, nowMs);
      }
      nodes.add(r.node);
    }
    for (const n of nodes) this.evaluate(n, undefined, nowMs, true);
    this.queueFlush();
    this.rearm();
  }

  /** Fires every deadline due now (the deadline key calls this; tests with an injected clock may too). */
  tick(nowMs: number = this.deps.clock.now()): void {
    if (!this.ready) return;
    for (const [node, due] of [...this.deadlines]) if (due <= nowMs) this.evaluate(node, undefined, nowMs, true);
    if (this.manualDeadline !== undefined && this.manualDeadline <= nowMs) this.stepManual(TICK, nowMs);
    this.queueFlush();
    this.rearm();
  }

  /** The relation-fault and filter memories as restored (and as last handed back by their owners). */
  get sideState(): { readonly relation: RelationState; readonly filters: FilterState } { return this.passthrough; }

  /** Their owners hand back the current memories; they are persisted with the rest. */
  setSideState(s: { readonly relation?: RelationState; readonly filters?: FilterState }): void {
    this.passthrough = { relation: s.relation ?? this.passthrough.relation, filters: s.filters ?? this.passthrough.filters };
    if (!this.ready) return;
    this.stateChanged = true;
    this.queueFlush();
  }

  /** The document to persist (composed and pruned); undefined before `restore`. */
  persistedState(nowMs: number): EscalationStateDoc | undefined {
    if (!this.ready) return undefined;
    const tracks: Record<string, EscalationState['tracks'][string]> = {};
    for (const s of this.esc.values()) Object.assign(tracks, s.tracks);
    const lastSeen: Record<string, number> = {};
    for (const s of this.lastSeen.values()) Object.assign(lastSeen, s);
    const doc = composeEscalationState({ escalation: { tracks }, manualSeparation: { lastSeen, ...this.manual }, ...this.passthrough }, nowMs);
    return pruneEscalationState(doc, nowMs, { customization: this.customization, relation: DEFAULT_RELATION_FAULT_CONFIG });
  }

  /** Desired clusterd-manual-info-cm content (node -> Total/Detail); undefined before `restore`. */
  manualInfo(): Record<string, ManualInfoNode> | undefined {
    return this.ready ? manualInfoView({ lastSeen: {}, ...this.manual }) : undefined;
  }

  /** Drops the armed deadline; the loop ends on its own (nothing of it is awaited). */
  stop(): void {
    void this.timers.stop();
  }

  private ensure(node: string, records: readonly FaultRecord[], nowMs: number, notify: boolean): void {
    const sig = recordsSignature(records);
    const prev = this.evals.get(node);
    if (prev !== undefined && prev.inputSig === sig && prev.configGen === this.configGen) {
      const due = this.deadlines.get(node);
      if (due !== undefined && due <= nowMs) this.evaluate(node, undefined, nowMs, notify);
      return;
    }
    this.evaluate(node, records, nowMs, notify, sig);
  }

  /** One step of every engine for one node: `records` = new intake, undefined = timers only. */
  private evaluate(node: string, records: readonly FaultRecord[] | undefined, nowMs: number, notify: boolean, sig?: string): void {
    const prev = this.evals.get(node);
    if (records === undefined && prev === undefined) records = this.deps.records(node);
    let state = this.esc.get(node) ?? EMPTY_ESCALATION_STATE;
    let leveled = prev?.leveled ?? [];
    let dpManual = prev?.dpManual ?? new Set<string>();
    if (records !== undefined) {
      leveled = records.map((r) => resolveFaultLevel(r, this.tables));
      dpManual = new Set(records.flatMap((r) => (r.code === MANUALLY_SEPARATE_PSEUDO_CODE && r.device !== undefined ? [r.device] : [])));
      // An operator removed the chip from the device plugin's ManuallySeparateNPU key: release our upgrade too.
      for (const d of prev?.dpManual ?? []) if (!dpManual.has(d)) state = this.stepEscalation(node, state, { type: 'release', node, device: d }, nowMs);
      state = this.stepEscalation(node, state, { type: 'observe', node, faults: leveled }, nowMs);
    } else {
      state = this.stepEscalation(node, state, TICK, nowMs);
    }
    const escalations = activeEscalations(state, this.customization);
    this.stepManual({ type: 'observe', node, faults: manualObservations(node, leveled, escalations, this.deps.usage) }, nowMs, node);
    const inputSig = sig ?? prev?.inputSig ?? (records === undefined ? '' : recordsSignature(records));
    this.publish(node, { inputSig, configGen: this.configGen, leveled, dpManual, escalations }, notify);
  }

  private publish(node: string, e: Omit<NodeEval, 'effective' | 'outputSig'>, notify: boolean): void {
    const effective = effectiveRecords(node, e.leveled, e.escalations, this.separatedOn(node));
    const outputSig = recordsSignature(effective);
    const prev = this.evals.get(node);
    this.evals.set(node, { ...e, effective, outputSig });
    if (prev?.outputSig === outputSig) return;
    this.gauge.update(node, effective);
    if (notify) { this.viewChanged.add(node); this.queueFlush(); }
  }

  private republish(node: string): void {
    const e = this.evals.get(node);
    if (e === undefined) this.evaluate(node, this.deps.records(node), this.deps.clock.now(), true);
    else this.publish(node, e, true);
  }

  private separatedOn(node: string): SeparatedChip[] {
    const out: SeparatedChip[] = [];
    for (const s of Object.values(this.manual.separated)) {
      if (s.node !== node) continue;
      out.push({ device: s.device, codes: s.entries.map((e) => e.code), sinceMs: Math.max(0, ...s.entries.map((e) => e.lastSeparateTimeMs)) });
    }
    return out;
  }

  private stepEscalation(node: string, state: EscalationState, input: EscalationInput | Tick | ConfigChange<FaultCustomization>, nowMs: number): EscalationState {
    const step = escalationPolicy(state, input, nowMs, this.customization);
    for (const o of step.outputs) reportEscalation(this.deps.log, this.deps.metrics, o);
    if (step.outputs.length > 0 || JSON.stringify(step.state.tracks) !== JSON.stringify(state.tracks)) this.stateChanged = true;
    if (Object.keys(step.state.tracks).length === 0) this.esc.delete(node);
    else this.esc.set(node, step.state);
    const next = step.nextDeadlineMs;
    if (next === undefined) this.deadlines.delete(node);
    else this.deadlines.set(node, input === TICK && next <= nowMs ? nowMs + 1 : next);
    return step.state;
  }

  private stepManual(input: ManualSeparationInput | Tick | ConfigChange<ManualSeparatePolicy>, nowMs: number, node?: string): void {
    const lastSeen = node === undefined ? {} : (this.lastSeen.get(node) ?? {});
    const before = JSON.stringify(this.manual);
    const step = manualSeparationPolicy({ lastSeen, ...this.manual }, input, nowMs, this.cfg.manual);
    const { lastSeen: seen, ...shared } = step.state;
    this.manual = shared;
    if (!this.cfg.manual.enabled) this.lastSeen.clear();
    else if (node !== undefined) {
      if (Object.keys(seen).length > 0) this.lastSeen.set(node, seen);
      else this.lastSeen.delete(node);
    }
    if (step.outputs.length > 0 || JSON.stringify(seen) !== JSON.stringify(lastSeen) || JSON.stringify(shared) !== before) this.stateChanged = true;
    this.manualDeadline = step.nextDeadlineMs === undefined ? undefined : input === TICK && step.nextDeadlineMs <= nowMs ? nowMs + 1 : step.nextDeadlineMs;
    const touched = new Set<string>();
    for (const o of step.outputs) {
      reportManualSeparation(this.deps.log, this.deps.metrics, o);
      if (o.type === 'separated' || o.type === 'renewed' || o.type === 'released') touched.add(o.node);
    }
    for (const n of touched) if (n !== node) this.republish(n);
    if (touched.size > 0) this.queueFlush();
  }

  /**
   * Arms the deadline key for the earliest deadline. A key already armed for earlier stays: its tick
   * finds nothing due and arms this one then.
   */
  private rearm(): void {
    let next = this.manualDeadline;
    for (const d of this.deadlines.values()) if (next === undefined || d < next) next = d;
    if (next !== undefined) this.timers.at(DEADLINE_KEY, next);
  }

  private queueFlush(): void {
    if (this.flushQueued || (this.viewChanged.size === 0 && !this.stateChanged)) return;
    this.flushQueued = true;
    queueMicrotask(() => this.flush());
  }

  /** Reports changes after the current step, so a consumer reading `effective` never re-enters a step. */
  private flush(): void {
    this.flushQueued = false;
    const nodes = [...this.viewChanged];
    this.viewChanged.clear();
    const state = this.stateChanged;
    this.stateChanged = false;
    if (nodes.length > 0) this.deps.onViewChange(nodes);
    if (state) this.deps.onStateChange();
  }
}
