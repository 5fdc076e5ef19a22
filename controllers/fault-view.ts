/**
 * The fault view: level-triggered state, computed once per change in one place (issue 11 step 3).
 *
 * For the nodes of each change (the intake's, and the re-announcements of the fault policy's
 * deadlines, the filters' windows and the recovery's step-retry holds) it computes each node's job
 * view (the fault policy: levels, escalation, manual separation) and from it the scheduler view
 * (the filters of behavior.md A.3 #20-#25), keeps both, and emits the nodes whose view changed.
 * Every consumer (cluster-info, the jobs pipeline, relation faults, the fault gRPC publisher, the
 * recovery FSMs) reads the kept views; none recomputes them.
 *
 * A verdict that depends on time stays current because every time-based change is announced:
 * the policy's deadline key, the filters' window keys and the step-retry window keys each call
 * `notify` with their nodes when they fire. A node the view has not seen yet is computed on first read.
 */
import { Subject, type Observable } from 'rxjs';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { faultKey } from '../vocabulary/fault-types.ts';
import type { FilterOutcome, NodeFilterResult } from '../policy/filters/fault-filters.ts';
import type { FaultChange, FaultPolicy } from './device-faults.controller.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { jobSnapshotOf, type JobSnapshot } from './fault-filters.controller.ts';

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
}

/**
 * A kept scheduler view older than this is evaluated again when read (and a change announced): a
 * safety net for a time-based verdict whose re-announcement was missed; every known one announces
 * itself, so this normally recomputes nothing that changed.
 */
const MAX_VIEW_AGE_MS = 1_000;

interface NodeView {
  /** When the filters last evaluated this node. */
  readonly atMs?: number;
  readonly job: readonly FaultRecord[];
  readonly scheduler: readonly FaultRecord[];
  /** Hidden or dropped by a filter: what cluster-info leaves out of Volcano's lists. */
  readonly withheld: readonly FaultRecord[];
  readonly hidden: readonly FilterOutcome[];
  readonly sig: string;
}

const EMPTY: NodeView = { job: [], scheduler: [], withheld: [], hidden: [], sig: '' };

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
    if (v !== undefined && v.sig !== '' && v.atMs !== undefined && this.d.now() - v.atMs > MAX_VIEW_AGE_MS) {
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
    let v: NodeView;
    if (f === undefined) v = { atMs: nowMs, job, scheduler: job, withheld: [], hidden: [], sig: sigOf(job, job, []) };
    else {
      const r = f.evaluate(node, job, nowMs);
      const withheld = [...r.hidden, ...r.dropped].map((o) => o.record);
      v = { atMs: nowMs, job, scheduler: r.visible, withheld, hidden: r.hidden, sig: sigOf(job, r.visible, r.hidden, withheld) };
    }
    this.views.set(node, v);
    return v;
  }
}

/** What a consumer can see of a node's view (records, levels, hide windows); '' = nothing at all. */
function sigOf(job: readonly FaultRecord[], scheduler: readonly FaultRecord[], hidden: readonly FilterOutcome[], withheld: readonly FaultRecord[] = []): string {
  if (job.length === 0 && scheduler.length === 0 && withheld.length === 0) return '';
  return JSON.stringify([job, scheduler, hidden.map((h) => [faultKey(h.record), h.by, h.untilMs ?? null]), withheld.map(faultKey)]);
}
