/**
 * The fault view: the last published snapshot of every node's derived fault facts. Reads are pure
 * lookups; one writer, the fault-view stage (controllers/fault-view-stage.ts), computes and publishes.
 *
 * Per node the snapshot holds the job view (the fault policy: levels, escalation, manual
 * separation), the scheduler view (the filters of docs/rules.md#filter.custom to #filter.stress-test), what the filters
 * withheld and hid (each hide with the end of its window), and the records flap damping holds
 * faulty in the placement view (policy/faults/flap-damping.ts rule 1). Every consumer (cluster-info,
 * the jobs pipeline, relation faults, the fault gRPC publisher, the recovery FSMs, the filters
 * reading a peer's job view) reads here; none recomputes, and no read changes anything or emits.
 *
 * Versioned: each publish that changes some node bumps `version` and emits the version with the
 * changed nodes on `changes$` (every node of an intake change is emitted: its raw data changed too).
 *
 * Hide windows. A hidden record's window end (`untilMs`) is also when the stage's key for the node
 * is due: the stage re-evaluates the node then and publishes the verdict after the window. The jobs
 * pipeline acts on those times itself (it requeues a job for the end of its faults' hide window and
 * counts a fault whose window is over as visible), so a reader at that instant, before the stage's
 * key ran, must not take the kept verdict for "the window is over" (a step-retry fault past its
 * 10 s window is still hidden while the job's step retry holds it). A published hide whose window
 * is over therefore means "re-evaluation pending": `jobSnapshot` reports it hidden for a moment more,
 * and the stage's publication (changes$) re-decides the job with the verdict after the window.
 */
import { Subject, type Observable } from 'rxjs';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { faultKey } from '../vocabulary/fault-types.ts';
import type { FilterOutcome } from '../policy/filters/fault-filters.ts';
import type { FaultChange } from './device-faults.controller.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { jobSnapshotOf, type JobSnapshot } from './fault-filters.controller.ts';
import type { EntityState } from '../policy/faults/flap-damping.ts';

/** A hide whose window is over but not yet re-evaluated is reported hidden this much longer (the stage's key is due now). */
export const PENDING_WINDOW_MS = 10;
/**
 * How long a node's queued evaluation may hold back the decisions that read it: past this (a node
 * whose pass keeps failing, a stalled stage) a decision reads the published view as it is.
 */
export const AWAIT_EVALUATION_LIMIT_MS = 2_000;

export interface NodeView {
  readonly job: readonly FaultRecord[];
  readonly scheduler: readonly FaultRecord[];
  /** Hidden or dropped by a filter: what cluster-info leaves out of Volcano's lists. */
  readonly withheld: readonly FaultRecord[];
  /** Hidden by a filter, each with its window's end (undefined: open-ended). */
  readonly hidden: readonly FilterOutcome[];
  /** Records of flapping hardware held faulty (not reported now): placement view only. */
  readonly held: readonly FaultRecord[];
  /** What a consumer can see of the view; '' = nothing at all. */
  readonly sig: string;
  /** When the stage evaluated it. */
  readonly atMs: number;
}

/** A publication: the snapshot's new version and the nodes whose view changed in it. */
export interface FaultViewChange extends FaultChange {
  readonly version: number;
}

export const EMPTY_VIEW: NodeView = { job: [], scheduler: [], withheld: [], hidden: [], held: [], sig: '', atMs: 0 };

export class FaultView {
  /** The intake's state, for consumers that need the raw records or node data. */
  readonly store: FaultStore;
  private readonly changes = new Subject<FaultViewChange>();
  /** Each publication that changed a node (its version and nodes). */
  readonly changes$: Observable<FaultViewChange> = this.changes.asObservable();
  private readonly views = new Map<string, NodeView>();
  /** Flap damping: each node's entity states (recoveries, last records), as the stage last published them. */
  private readonly damp = new Map<string, ReadonlyMap<string, EntityState>>();
  private readonly now: () => number;
  private v = 0;
  /** Nodes with an input the stage has queued but not evaluated yet, and since when (their view may be stale). */
  private readonly awaiting = new Map<string, number>();

  constructor(store: FaultStore, now: () => number) {
    this.store = store;
    this.now = now;
  }

  /** Bumped by every publication that changed a node. */
  get version(): number { return this.v; }

  /** A node's published view (empty until the stage evaluated it). */
  view(node: string): NodeView {
    return this.views.get(node) ?? EMPTY_VIEW;
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

  /** The job view of a node (after policy, hidden faults included): the recovery FSMs, the fault gRPC service, the filters' peers. */
  jobView(node: string): readonly FaultRecord[] {
    return this.view(node).job;
  }

  /** What the filters hid or dropped on the node. */
  withheld(node: string): readonly FaultRecord[] {
    return this.view(node).withheld;
  }

  /**
   * For the jobs pipeline: visible and hidden faults of these nodes, and the hide windows (faultKey
   * -> window). A window that ended after the node's evaluation is pending its re-evaluation, whose
   * key is due (see the header): reported as not over yet.
   */
  jobSnapshot(nodes: readonly string[], nowMs: number = this.now()): JobSnapshot {
    return jobSnapshotOf(nodes.map((n) => {
      const v = this.view(n);
      const pending = (h: FilterOutcome): boolean => h.untilMs !== undefined && h.untilMs <= nowMs && h.untilMs > v.atMs;
      const hidden = v.hidden.map((h) => (pending(h) ? { ...h, untilMs: nowMs + PENDING_WINDOW_MS } : h));
      return { visible: v.scheduler, hidden };
    }), nowMs);
  }

  /**
   * The stage queued these nodes for evaluation (its call, with `publish`). Until their pass
   * publishes, a decision that reads them waits (`awaitingAny`): the job a pod event queues must not
   * be decided on the view from before that pod, whose filters (a step retry's window, a
   * recover-in-place hide) the pending pass may apply. At a start the caches' first pods re-announce
   * every node that holds them, so no restored job is decided on a view computed without its pods.
   */
  markAwaiting(nodes: readonly string[], nowMs: number): void {
    for (const n of nodes) if (!this.awaiting.has(n)) this.awaiting.set(n, nowMs);
  }

  /** Some of these nodes await the stage's evaluation (for at most AWAIT_EVALUATION_LIMIT_MS). */
  awaitingAny(nodes: readonly string[], nowMs: number = this.now()): boolean {
    return nodes.some((n) => {
      const since = this.awaiting.get(n);
      return since !== undefined && nowMs - since < AWAIT_EVALUATION_LIMIT_MS;
    });
  }

  /** The entity (`node` or `node/device`) recovered (per the job view) after t, within the damping window. */
  recoveredSince(entity: string, t: number): boolean {
    const node = entity.split('/')[0]!;
    return (this.damp.get(node)?.get(entity)?.recoveries ?? []).some((r) => r > t);
  }

  /** The node's flap-damping memory as last published (the stage's input for its next step). */
  dampingOf(node: string): ReadonlyMap<string, EntityState> | undefined {
    return this.damp.get(node);
  }

  /**
   * The stage's publication (its only writer): new views (undefined = the node is gone) and damping
   * memories, then one version with the changed nodes. Synchronous, so no reader sees half of it.
   */
  publish(views: ReadonlyMap<string, NodeView | undefined>, damp: ReadonlyMap<string, ReadonlyMap<string, EntityState>>, changed: readonly string[], atMs: number): void {
    for (const [n, v] of views) {
      this.awaiting.delete(n);
      if (v === undefined) this.views.delete(n); else this.views.set(n, v);
    }
    for (const [n, s] of damp) if (s.size === 0) this.damp.delete(n); else this.damp.set(n, s);
    if (changed.length === 0) return;
    this.v++;
    this.changes.next({ version: this.v, nodes: changed, atMs });
  }
}

/** What a consumer can see of a node's view (records, levels, hide windows); '' = nothing at all. */
export function sigOf(job: readonly FaultRecord[], scheduler: readonly FaultRecord[], hidden: readonly FilterOutcome[], withheld: readonly FaultRecord[] = [], held: readonly FaultRecord[] = []): string {
  if (job.length === 0 && scheduler.length === 0 && withheld.length === 0 && held.length === 0) return '';
  return JSON.stringify([job, scheduler, hidden.map((h) => [faultKey(h.record), h.by, h.untilMs ?? null]), withheld.map(faultKey), held.map(faultKey)]);
}
