/**
 * The blast-radius breaker (a storm of faults must not restart or isolate half the cluster): holds the breaker state in memory for the gates the
 * job decisions and the node isolation ask before acting, counts chips taken out of service, and
 * hands the state to its reconciler (reconcilers/breaker.reconciler.ts), the only writer of
 * `mindx-dl/clusterd-ts-breaker`. Decisions are policy/jobs/breaker.ts; time comes from the injected clock
 * and the work queue (auto-reset is a requeue of the reconciler's key). Stamps ageing out of the
 * window are no change to write: every reader prunes on load (an idle cluster sees no breaker writes).
 *
 * Switch domain of a node, first that applies:
 * 1. the value of the node label `--breaker-domain-label` (operators who label racks or switch
 *    domains get exactly their grouping);
 * 2. `superpod-<SuperPodID>` from the node's device-info (A3: a SuperPod is one UB switch fabric, the
 *    unit a switch storm takes down);
 * 3. none: the node counts for the cluster scope only.
 * tor-share's basic-tor-node-cm (ToR -> servers) exists only under NSLB and is read by GET once a
 * minute, not watched; it is not used as a domain source (see README).
 */
import { filter, type Subscription } from 'rxjs';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import { BurstGate } from '../runtime/burst-gate.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { Sources } from './sources/sources.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { admit, autoReset, prune, reset, trippedScopes, CLUSTER_SCOPE, type BreakerConfig, type BreakerKind, type Trip } from '../policy/jobs/breaker.ts';
import { unusableNpus } from '../policy/faults/job-isolation.ts';
import type { BreakerGate, Verdict } from '../policy/jobs/breaker-gate.ts';
import { sourceKind, sourcesOf } from '../policy/jobs/breaker-accounting.ts';
import {
  BREAKER_CM_NAME, BREAKER_KINDS, BREAKER_NAMESPACE, EMPTY_BREAKER_STATE, countBySource, encodeBreakerState, parseBreakerState, type BreakerState, type ResetRequest,
} from '../schemas/breaker-state/breaker-state.ts';
import { BREAKER_RECONCILE_KEY, breakerReconciler, type BreakerNote } from '../reconcilers/breaker.reconciler.ts';
import type { Options } from './options.ts';


export function breakerConfigOf(o: Options): BreakerConfig {
  return {
    windowMs: o.breakerWindowSeconds * 1000,
    domain: { chips: o.breakerDomainChips, nodes: o.breakerDomainNodes, jobs: o.breakerDomainJobs },
    cluster: { chips: o.breakerClusterChips, nodes: o.breakerClusterNodes, jobs: o.breakerClusterJobs },
    autoResetMs: o.breakerAutoResetSeconds * 1000,
  };
}

export interface BreakerControllerDeps {
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly client: KubeClient;
  readonly config: BreakerConfig;
  /** Node label naming a node's switch domain; '' = none. */
  readonly domainLabel: string;
  /** A node's SuperPodID from its device-info (-1 or undefined: none). */
  readonly superPodOf: (node: string) => number | undefined;
  /** The controller's fault view of a node (chips taken out of service are counted from it). */
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  /** After a reset: re-decide held work from the current state (queue every job and node). */
  readonly onReset: () => void;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The controller's clock (runtime/clock.ts): the breaker's window and its work queue's timers. */
  readonly clock: QueueClock;
}

const RESERVED = new Set([CLUSTER_SCOPE, 'all']);
/** The fault sources that take a chip out of service (policy/faults/job-isolation.ts unusableNpus). */
const CHIP_SOURCES: ReadonlySet<string> = new Set(['npu', 'network', 'public']);
const MAX_GHOSTS_REMEMBERED = 1_000;
/**
 * Counting changes reach the ConfigMap at once when quiet, then at most once per this window (issue
 * 16: a storm's reschedules, which arrive over 1-1.5 s, share two or three writes instead of one
 * each). The counts in memory decide; the ConfigMap is what a restarted or new leader starts from, so
 * a crash forgets at most this window's counts (the breaker may then admit that many restarts more;
 * no restart is carried out twice: that is the job journal's).
 */
export const BREAKER_PERSIST_WINDOW_MS = 1000;

export class BreakerController implements BreakerGate {
  readonly loop: ControllerLoop;
  private state: BreakerState = EMPTY_BREAKER_STATE;
  private loaded = false;
  private readonly d: BreakerControllerDeps;
  private readonly log: Logger;
  /** Keys held since the last trip/reset (one log line, Event and count per held key). */
  private readonly heldKeys = new Set<string>();
  private notes: BreakerNote[] = [];
  /** Chips seen out of service per node (to count each newly isolated chip once). */
  private readonly chips = new Map<string, ReadonlySet<string>>();
  private subs: Subscription[] = [];
  /** Nodes with unusable chips but no Node object, logged once (bounded: forgotten past MAX_GHOSTS_REMEMBERED). */
  private readonly ghosts = new Set<string>();
  /** The state text last written or loaded (anything else on the ConfigMap was written by someone else). */
  private lastText: string | undefined;
  private readonly persistGate: BurstGate;

  constructor(d: BreakerControllerDeps) {
    this.d = d;
    this.log = d.log;
    this.loop = new ControllerLoop(breakerReconciler({
      desired: (nowMs) => this.snapshot(nowMs),
      applyReset: (req) => this.applyReset(req),
      autoReset: (nowMs) => this.applyAutoReset(nowMs),
      drainNotes: () => { const n = this.notes; this.notes = []; return n; },
      observed: (text) => this.observed(text),
      written: (text) => { this.lastText = text; },
      aged: (text, nowMs) => this.aged(text, nowMs),
      actual: () => d.sources.mindxDlConfigMaps.get(`${BREAKER_NAMESPACE}/${BREAKER_CM_NAME}`),
      writer: d.writer, events: d.client, metrics: d.metrics,
    }), { log: d.log, metrics: d.metrics, clock: d.clock });
    d.metrics.breakerTripped.set({ scope: CLUSTER_SCOPE }, 0);
    this.persistGate = new BurstGate(this.loop.queue, BREAKER_PERSIST_WINDOW_MS, () => d.clock.now());
  }

  /** Watches the breaker ConfigMap (a reset annotation) and the fault view (chips out of service). */
  start(faultNodes$: import('rxjs').Observable<readonly string[]>): void {
    this.subs.push(this.d.sources.mindxDlConfigMaps.events$.pipe(filter((ev) => ev.obj.metadata?.name === BREAKER_CM_NAME)).subscribe(() => {
      if (this.loaded) this.loop.queue.add(BREAKER_RECONCILE_KEY);
    }));
    this.subs.push(faultNodes$.subscribe((nodes) => { if (this.loaded) for (const n of nodes) this.countChips(n); }));
  }

  /** Leader only, on synced caches, before any decision: restore, then run the reconciler. */
  startActing(): void {
    const cm = this.d.sources.mindxDlConfigMaps.get(`${BREAKER_NAMESPACE}/${BREAKER_CM_NAME}`);
    const p = parseBreakerState(cm?.data?.state);
    this.lastText = cm?.data?.state;
    if (p.ok) this.state = p.value;
    else {
      // Not silently: the unreadable text is logged whole (it is replaced by the next write).
      this.log.error('breaker state unreadable, starting from an empty state', { reason: p.reason, text: cm?.data?.state });
      this.d.metrics.invalidInput.inc({ format: 'breaker_state', reason: p.kind ?? 'invalid' });
    }
    for (const s of trippedScopes(this.state)) this.d.metrics.breakerTripped.set({ scope: s.scope }, 1);
    if (trippedScopes(this.state).length > 0) this.log.warn('breaker restored tripped', { scopes: trippedScopes(this.state).map((s) => s.scope) });
    // Chips already out of service at start are the baseline, not new isolations.
    for (const n of this.d.sources.nodes.store.keys()) this.chips.set(n, this.unusable(n));
    this.loaded = true;
    this.loop.start();
    this.loop.queue.add(BREAKER_RECONCILE_KEY);
  }

  async stop(): Promise<void> {
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
    await this.loop.stop();
  }

  domainOf(node: string): string | undefined {
    const label = this.d.domainLabel === '' ? undefined : this.d.sources.nodes.get(node)?.metadata?.labels?.[this.d.domainLabel];
    const name = label !== undefined && label !== '' ? label : (() => { const sp = this.d.superPodOf(node) ?? -1; return sp >= 0 ? `superpod-${sp}` : undefined; })();
    return name === undefined ? undefined : RESERVED.has(name) ? `domain-${name}` : name;
  }

  admit(kind: Exclude<BreakerKind, 'chips'>, key: string, nodes: readonly string[], source?: string): Verdict {
    const domains = nodes.flatMap((n) => { const d = this.domainOf(n); return d === undefined ? [] : [d]; });
    const heldKey = `${kind}\u0000${key}`;
    if (this.heldKeys.has(heldKey) && domains.concat(CLUSTER_SCOPE).some((s) => this.state.scopes[s]?.tripped)) {
      return { allowed: false, reason: this.heldReason(domains) };
    }
    const r = admit(this.state, { kind, key, domains, ...(source === undefined || source === '' ? {} : { source }) }, this.d.clock.now(), this.d.config);
    this.counted(kind, key, source ?? '', r.state);
    this.state = r.state;
    this.tripped(r.tripped);
    if (r.allowed) { this.changed(); return { allowed: true }; }
    this.heldKeys.add(heldKey);
    const reason = `held by the blast-radius breaker (${r.heldBy.map((t) => `${t.scope}: ${t.reason}`).join('; ')}); reset with kubectl clusterd breaker reset`;
    this.d.metrics.breakerHeld.inc({ kind });
    this.log.warn('action held by breaker', { kind, key, source, scopes: r.heldBy.map((t) => t.scope) });
    if (kind === 'nodes') this.notes.push({ type: 'Warning', reason: 'BreakerHeld', message: `isolation of node ${key} ${reason}`, key: `held/${key}/${r.heldBy[0]?.scope}` });
    this.changed();
    return { allowed: false, reason };
  }

  /** A state on the ConfigMap that is not ours: adopted if readable (else logged, and replaced by ours). */
  private observed(text: string | undefined): void {
    if (text === undefined || text === this.lastText) return;
    this.lastText = text;
    const p = parseBreakerState(text);
    if (!p.ok) {
      this.log.error('breaker state edited outside the controller is unreadable, keeping ours', { reason: p.reason, text });
      this.d.metrics.invalidInput.inc({ format: 'breaker_state', reason: p.kind ?? 'invalid' });
      return;
    }
    this.log.warn('breaker state written outside the controller, adopted', { tripped: trippedScopes(p.value).map((s) => s.scope) });
    for (const s of trippedScopes(this.state)) if (!p.value.scopes[s.scope]?.tripped) this.d.metrics.breakerTripped.set({ scope: s.scope }, 0);
    for (const s of trippedScopes(p.value)) this.d.metrics.breakerTripped.set({ scope: s.scope }, 1);
    this.state = p.value;
    this.heldKeys.clear();
  }

  /**
   * Current state (pruned, with the window readers prune by) for the reconciler, and the next
   * auto-reset. No requeue when a stamp leaves the window: nothing is written or told for that
   * (aging is not a change; the next admission prunes the scopes it touches).
   */
  private snapshot(nowMs: number): { state: BreakerState; nextMs?: number } {
    this.state = { ...prune(this.state, nowMs, this.d.config), windowMs: this.d.config.windowMs };
    const auto = autoReset(this.state, nowMs, this.d.config);
    return { state: this.state, ...(auto.nextAtMs === undefined ? {} : { nextMs: auto.nextAtMs }) };
  }

  /** A persisted state as every reader sees it at `nowMs` (aged stamps dropped), encoded; undefined when unreadable. */
  private aged(text: string, nowMs: number): string | undefined {
    const p = parseBreakerState(text);
    return p.ok ? encodeBreakerState(prune(p.value, nowMs, this.d.config)) : undefined;
  }

  private applyReset(req: ResetRequest): { reset: readonly string[]; stale: readonly string[] } {
    const r = reset(this.state, req);
    this.state = r.state;
    this.afterReset(r.reset, `by ${req.by}`);
    return r;
  }

  private applyAutoReset(nowMs: number): readonly string[] {
    const r = autoReset(this.state, nowMs, this.d.config);
    this.state = r.state;
    this.afterReset(r.reset, `automatically after ${this.d.config.autoResetMs / 1000} s`);
    return r.reset;
  }

  private afterReset(scopes: readonly string[], how: string): void {
    if (scopes.length === 0) return;
    for (const s of scopes) {
      if (s === CLUSTER_SCOPE) this.d.metrics.breakerTripped.set({ scope: s }, 0);
      else this.d.metrics.breakerTripped.remove({ scope: s });
    }
    this.heldKeys.clear();
    this.log.warn('breaker reset', { scopes, how });
    this.notes.push({ type: 'Normal', reason: 'BreakerReset', message: `breaker scopes ${scopes.join(', ')} reset ${how}; held decisions are decided again from the current state`, key: `reset/${scopes.join(',')}/${this.d.clock.now()}` });
    // Level-triggered: held work is re-decided from what is true now, not replayed.
    this.d.onReset();
  }

  private tripped(trips: readonly Trip[]): void {
    for (const t of trips) {
      this.d.metrics.breakerTripped.set({ scope: t.scope }, 1);
      const window = this.state.scopes[t.scope]?.window;
      this.log.warn('breaker tripped', { scope: t.scope, reason: t.reason, ...(window === undefined ? {} : { counted: Object.fromEntries(BREAKER_KINDS.map((k) => [k, countBySource(window[k])])) }) });
      this.notes.push({ type: 'Warning', reason: 'BreakerTripped', message: `breaker scope ${t.scope} tripped: ${t.reason}; new isolations and reschedules in it are held until reset (kubectl clusterd breaker reset ${t.scope})`, key: `trip/${t.scope}/${this.d.clock.now()}` });
    }
  }

  private heldReason(domains: readonly string[]): string {
    const by = [CLUSTER_SCOPE, ...domains].flatMap((s) => { const x = this.state.scopes[s]; return x?.tripped ? [`${s}: ${x.reason}`] : []; });
    return `held by the blast-radius breaker (${by.join('; ')}); reset with kubectl clusterd breaker reset`;
  }

  private changed(): void {
    this.persistGate.touch(BREAKER_RECONCILE_KEY);
  }

  private unusable(node: string): ReadonlySet<string> {
    return new Set((unusableNpus(this.d.faultsOf(node)).get(node) ?? []).map((u) => u.npu));
  }

  /**
   * Chips newly out of service are counted (never held: the device plugin isolates them itself),
   * each with the writer of the faults that took it out. Only chips of nodes that exist: a fault
   * naming a node with no Node object takes nothing out of service (logged once per node).
   */
  private countChips(node: string): void {
    if (this.d.sources.nodes.get(node) === undefined) {
      this.chips.delete(node);
      if (this.unusable(node).size > 0 && !this.ghosts.has(node)) {
        if (this.ghosts.size >= MAX_GHOSTS_REMEMBERED) this.ghosts.clear();
        this.ghosts.add(node);
        this.log.warn('breaker: chips of a node with no Node object are not counted', { node, sources: sourcesOf(this.d.faultsOf(node).filter((r) => r.device !== undefined)) });
      }
      return;
    }
    this.ghosts.delete(node);
    const now = this.unusable(node);
    const before = this.chips.get(node) ?? new Set<string>();
    if (now.size === 0) this.chips.delete(node); else this.chips.set(node, now);
    const fresh = [...now].filter((c) => !before.has(c));
    if (fresh.length === 0) return;
    const domain = this.domainOf(node);
    const records = this.d.faultsOf(node);
    for (const c of fresh) {
      const source = sourcesOf(records.filter((r) => r.device === c && CHIP_SOURCES.has(r.source)));
      const r = admit(this.state, { kind: 'chips', key: `${node}/${c}`, domains: domain === undefined ? [] : [domain], ...(source === '' ? {} : { source }) }, this.d.clock.now(), this.d.config, false);
      this.counted('chips', `${node}/${c}`, source, r.state);
      this.state = r.state;
      this.tripped(r.tripped);
    }
    this.changed();
  }

  /** A key newly in the cluster scope's window (not a repeat) is counted in the metric by its source's kind. */
  private counted(kind: BreakerKind, key: string, source: string, next: BreakerState): void {
    const had = (this.state.scopes[CLUSTER_SCOPE]?.window[kind] ?? []).some((w) => w.key === key);
    const has = (next.scopes[CLUSTER_SCOPE]?.window[kind] ?? []).some((w) => w.key === key);
    if (!had && has) this.d.metrics.breakerCounted.inc({ kind, source: sourceKind(source) });
  }
}
