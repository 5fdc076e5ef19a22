/**
 * The fault view: level-triggered state, computed once per change in one place, not re-derived by each flow.
 *
 * For the nodes of each change (the intake's, and the re-announcements of the fault policy's
 * deadlines, the filters' windows and the recovery's step-retry holds) it computes each node's job
 * view (the fault policy: levels, escalation, manual separation) and from it the scheduler view
 * (the filters of docs/rules.md#filter.custom to #filter.stress-test), keeps both, and emits the nodes whose view changed.
 * Every consumer (cluster-info, the jobs pipeline, relation faults, the fault gRPC publisher, the
 * recovery FSMs) reads the kept views; none recomputes them.
 *
 * Flap damping (policy/faults/flap-damping.ts rule 1) is the last stage, after the filters: a chip or
 * node that recovered `recoveries` times within the window is held faulty in the *placement view*
 * (what cluster-info tells the scheduler) until healthy for the hold, so new pods are not placed on
 * flapping hardware. Recoveries are judged on the job view (a filter hiding a fault is not the
 * hardware recovering). The held records are in no other view: the filters, the relation-fault wait
 * and the job decisions act on what the hardware reports today (a held record never restarts a job:
 * its pods either were restarted for that fault or were placed on the chip after it recovered).
 * The end of a hold is announced through `damping.wakeAt` (a timer key of the fault-view flow).
 *
 * A verdict that depends on time stays current because every time-based change is announced:
 * the policy's deadline key, the filters' window keys and the step-retry window keys each call
 * `notify` with their nodes when they fire. A node the view has not seen yet is computed on first read.
 *
 * A kept scheduler view is valid until the filters' next-change time (the earliest end of a hide
 * window): a read at or past it evaluates the node again, and the change is announced. Consumers act
 * on those times themselves (the jobs pipeline requeues a job for the end of its faults' hide window
 * and counts a fault whose window is over as visible) while the filters' keys fire a little after
 * them (their slack); a reader in between must not get the expired verdict (a step-retry fault past
 * its 10 s window is still hidden while the job's step retry holds it).
 */
import { Subject, type Observable } from 'rxjs';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { faultKey } from '../vocabulary/fault-types.ts';
import type { FilterOutcome, NodeFilterResult } from '../policy/filters/fault-filters.ts';
import type { FaultChange, FaultPolicy } from './device-faults.controller.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { jobSnapshotOf, type JobSnapshot } from './fault-filters.controller.ts';
import { dampView, type EntityState, type FlapDampingConfig } from '../policy/faults/flap-damping.ts';
import type { FlapDampedCounter } from '../state/flap-damper.ts';
import type { ParsedReleaseRequest } from '../schemas/release-request/release-request.ts';

/** The scheduler-view filters: one evaluation of a node's job view (fault-filters.controller.ts). */
export interface SchedulerFilters {
  evaluate(node: string, jobView: readonly FaultRecord[], nowMs: number): NodeFilterResult;
}

export interface FaultViewDeps {
  /** The intake's state: each node's records as the agents reported them. */
  readonly store: FaultStore;
  /** The job view of a node (policy/ through FaultPolicyEngine); identity when absent. */
  readonly policy: FaultPolicy;
  readonly now: () => number;
  /**
   * Flap damping (rule 1): its config and the wake-up that re-announces a node at `atMs` (a hold
   * ends, a recovery leaves the window), together so damping is never on without its timer;
   * absent or holdMs 0 = off.
   */
  readonly damping?: { readonly config: FlapDampingConfig; readonly wakeAt: (node: string, atMs: number) => void };
  readonly metrics?: FlapDampedCounter;
}

interface NodeView {
  /** When the filters' verdict may change with time alone (earliest hide window end); read past it, the node is evaluated again. */
  readonly validUntilMs?: number;
  readonly job: readonly FaultRecord[];
  readonly scheduler: readonly FaultRecord[];
  /** Hidden or dropped by a filter: what cluster-info leaves out of Volcano's lists. */
  readonly withheld: readonly FaultRecord[];
  readonly hidden: readonly FilterOutcome[];
  /** Records of flapping hardware held faulty (not reported now): placement view only. */
  readonly held: readonly FaultRecord[];
  readonly sig: string;
}

const EMPTY: NodeView = { job: [], scheduler: [], withheld: [], hidden: [], held: [], sig: '' };

export class FaultView {
  /** The intake's state, for consumers that need the raw records or node data. */
  readonly store: FaultStore;
  private readonly changes = new Subject<FaultChange>();
  /** Nodes whose view changed (every node of an intake change: its raw data changed too). */
  readonly changes$: Observable<FaultChange> = this.changes.asObservable();
  private readonly views = new Map<string, NodeView>();
  private readonly d: FaultViewDeps;
  /** The scheduler-view filters, bound once built (they read other nodes' job views back from here). */
  private filters: SchedulerFilters | undefined;
  /** Nodes whose scheduler view reads these nodes' faults (recover-in-place peers). */
  private peers: ((nodes: readonly string[]) => Iterable<string>) | undefined;
  /** Flap damping: each node's entity states (recoveries, last records). */
  private readonly damp = new Map<string, ReadonlyMap<string, EntityState>>();
  /** Node evaluations so far (policy + filters once each): the cost of the view. */
  computed = 0;

  constructor(d: FaultViewDeps) {
    this.d = d;
    this.store = d.store;
  }

  /** Binds the filters (without them the scheduler view is the job view) and who reads whose faults. */
  filterWith(filters: SchedulerFilters, peers?: (nodes: readonly string[]) => Iterable<string>): void {
    this.filters = filters;
    this.peers = peers;
  }

  /** The intake changed these nodes: recompute them and emit them all. */
  intake(change: FaultChange): void {
    this.update(change.nodes, change.atMs, true);
  }

  /** These nodes' view may have changed with no new intake (a deadline, a window, a hold): emit those that did. */
  notify(nodes: readonly string[]): void {
    if (nodes.length === 0) return;
    this.update(nodes, this.d.now(), false);
  }

  /** The scheduler view of a node (after policy and filters): cluster-info, decisions, isolation, relation faults. */
  effective(node: string): readonly FaultRecord[] {
    return this.view(node).scheduler;
  }

  /**
   * The placement view of a node: the scheduler view plus the records of flapping hardware held
   * faulty (flap damping). Cluster-info renders it, so the scheduler keeps new pods off a flapping chip.
   */
  placement(node: string): readonly FaultRecord[] {
    const v = this.view(node);
    return v.held.length === 0 ? v.scheduler : [...v.scheduler, ...v.held];
  }

  /**
   * `kubectl clusterd release` requests: the damping memory of each released chip is forgotten when
   * all of it is from before the request (a replayed old request leaves later flaps alone), so the
   * recovery the release causes is not counted as a flap and its last separated records are not held.
   */
  release(requests: readonly ParsedReleaseRequest[]): void {
    const nodes: string[] = [];
    for (const r of requests) {
      const st = this.damp.get(r.node);
      if (st === undefined) continue;
      const next = new Map(st);
      for (const npu of r.npus) {
        const e = next.get(`${r.node}/${npu}`);
        if (e !== undefined && e.recoveries.every((t) => t <= r.atMs) && (e.healthySinceMs ?? 0) <= r.atMs) next.delete(`${r.node}/${npu}`);
      }
      if (next.size === st.size) continue;
      if (next.size === 0) this.damp.delete(r.node); else this.damp.set(r.node, next);
      nodes.push(r.node);
    }
    this.notify(nodes);
  }

  /** The entity (`node` or `node/device`) recovered (per the job view) after t, within the damping window. */
  recoveredSince(entity: string, t: number): boolean {
    const node = entity.split('/')[0]!;
    return (this.damp.get(node)?.get(entity)?.recoveries ?? []).some((r) => r > t);
  }

  /** The job view of a node (after policy, hidden faults included): the recovery FSMs and the fault gRPC service. */
  jobView(node: string): readonly FaultRecord[] {
    return this.view(node).job;
  }

  /** What the filters hid or dropped on the node. */
  withheld(node: string): readonly FaultRecord[] {
    return this.view(node).withheld;
  }

  /** For the jobs pipeline: visible and hidden faults of these nodes, and the hide windows (faultKey -> window). */
  jobSnapshot(nodes: readonly string[], nowMs: number = this.d.now()): JobSnapshot {
    return jobSnapshotOf(nodes.map((n) => { const v = this.view(n); return { visible: v.scheduler, hidden: v.hidden }; }), nowMs);
  }

  private view(node: string): NodeView {
    const v = this.views.get(node);
    if (v?.validUntilMs !== undefined && this.d.now() >= v.validUntilMs) {
      // Past its next-change time: evaluate again. The filters' key for that time, firing just after,
      // would find the view unchanged and announce nothing, so the change is announced here (after
      // the reader's step, which may be a consumer of changes$). Kept unexpired meanwhile: the filters
      // read their peers' views back through here, and a peer's evaluation may read this node's.
      const { validUntilMs: _, ...kept } = v;
      this.views.set(node, kept);
      const fresh = this.filter(node, v.job, this.d.now());
      if (fresh.sig !== v.sig) queueMicrotask(() => this.changes.next({ nodes: [node], atMs: this.d.now() }));
      return fresh;
    }
    if (v !== undefined) return v;
    const nowMs = this.d.now();
    const job = this.d.policy.effective(node, this.d.store.records(node), nowMs);
    // Kept before the filters run: they read other nodes' job views back through here.
    this.views.set(node, { ...EMPTY, job, scheduler: job });
    return this.filter(node, job, nowMs);
  }

  private update(nodes: readonly string[], atMs: number, emitAll: boolean): void {
    const named = [...new Set(nodes)];
    const peers = this.peers === undefined ? [] : [...this.peers(named)].filter((n) => !named.includes(n));
    const before = new Map([...named, ...peers].map((n) => [n, this.views.get(n)?.sig]));
    // Every job view first: a node's filters may read its peers' job views.
    for (const n of named) {
      const job = this.d.policy.effective(n, this.d.store.records(n), atMs);
      this.views.set(n, { ...(this.views.get(n) ?? EMPTY), job });
    }
    for (const n of [...named, ...peers]) this.filter(n, this.views.get(n)?.job ?? this.jobView(n), atMs);
    const changed = [...before].filter(([n, sig]) => (emitAll && named.includes(n)) || this.views.get(n)?.sig !== sig).map(([n]) => n);
    for (const n of named) if (this.views.get(n)?.sig === '' && this.d.store.nodeState(n) === undefined) this.views.delete(n);
    if (changed.length > 0) this.changes.next({ nodes: changed, atMs });
  }

  private filter(node: string, job: readonly FaultRecord[], nowMs: number): NodeView {
    this.computed++;
    const f = this.filters;
    const held = this.held(node, job, nowMs);
    let v: NodeView;
    if (f === undefined) v = { job, scheduler: job, withheld: [], hidden: [], held, sig: sigOf(job, job, [], [], held) };
    else {
      const r = f.evaluate(node, job, nowMs);
      const withheld = [...r.hidden, ...r.dropped].map((o) => o.record);
      // A next-change time not after the evaluation would re-evaluate on every read: the filters' key handles it.
      const next = r.recheckAtMs !== undefined && r.recheckAtMs > nowMs ? { validUntilMs: r.recheckAtMs } : {};
      v = { ...next, job, scheduler: r.visible, withheld, hidden: r.hidden, held, sig: sigOf(job, r.visible, r.hidden, withheld, held) };
    }
    this.views.set(node, v);
    return v;
  }

  /**
   * Flap damping's stage: steps the node's entity states with its job view (idempotent for an
   * unchanged input) and answers the records held faulty; schedules the node's next change.
   */
  private held(node: string, job: readonly FaultRecord[], nowMs: number): readonly FaultRecord[] {
    const cfg = this.d.damping?.config;
    if (cfg === undefined || cfg.holdMs <= 0) return [];
    const prev = this.damp.get(node);
    if (prev === undefined && job.length === 0) return [];
    const v = dampView(job, prev ?? new Map(), nowMs, cfg);
    for (const e of v.held) if (prev?.get(e)?.healthySinceMs === undefined) this.d.metrics?.flapDamped.inc({ rule: 'hold' });
    if (v.state.size === 0) this.damp.delete(node); else this.damp.set(node, v.state);
    if (v.nextChangeMs !== undefined) this.d.damping?.wakeAt(node, v.nextChangeMs);
    return v.held.flatMap((e) => v.state.get(e)?.last ?? []);
  }
}

/** What a consumer can see of a node's view (records, levels, hide windows); '' = nothing at all. */
function sigOf(job: readonly FaultRecord[], scheduler: readonly FaultRecord[], hidden: readonly FilterOutcome[], withheld: readonly FaultRecord[] = [], held: readonly FaultRecord[] = []): string {
  if (job.length === 0 && scheduler.length === 0 && withheld.length === 0 && held.length === 0) return '';
  return JSON.stringify([job, scheduler, hidden.map((h) => [faultKey(h.record), h.by, h.untilMs ?? null]), withheld.map(faultKey), held.map(faultKey)]);
}
