/**
 * The fault-view stage: the one reconciler of every derived per-node fault fact, behind a work
 * queue keyed by node (runtime/work-queue.ts, on the injected clock). It publishes the snapshot
 * every consumer reads (controllers/fault-view.ts).
 *
 * Inputs only enqueue node keys: the intake's changed nodes (`intake`), re-announcements with no new
 * intake (`notify`: the policy's deadlines and config changes, the filters' job facts and pod events,
 * the recovery's step-retry holds), operator releases (`release`). Time-based changes are the stage's
 * own keys: the end of each hide window (the filters' next-change time) and the end of each flap
 * hold requeue the node at that instant, so the verdict after a window is published with no reader.
 *
 * One pass evaluates a node key together with every other node whose key is waiting (an intake of
 * many nodes is one pass and one publication, as before the queue): first every job view (the fault
 * policy), then the filters of those nodes and of their recover-in-place peers, which read each
 * other's job views from this pass (`jobViewOf`), then flap damping (the last stage: the placement
 * view; see policy/faults/flap-damping.ts rule 1: recoveries are judged on the job view, a filter
 * hiding a fault is not the hardware recovering). Keys the pass covered find nothing to do when they
 * run. Nothing calls back into the stage: the policy's own reports (`settle`) only enqueue keys.
 *
 * A pass that throws is the ControllerLoop's: logged, counted (clusterd_reconcile_total{controller="fault_view",
 * result="error"}), retried with the key's backoff; its nodes stay pending, and a failing node is
 * retried alone (under its own key) so it never holds back the others.
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { NodeFilterResult } from '../policy/filters/fault-filters.ts';
import type { FaultChange, FaultPolicy } from './device-faults.controller.ts';
import { dampView, type EntityState, type FlapDampingConfig } from '../policy/faults/flap-damping.ts';
import type { ParsedReleaseRequest } from '../schemas/release-request/release-request.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { WorkQueue, type QueueClock } from '../runtime/work-queue.ts';
import { MAX_DELAY_MS } from '../runtime/timer-loop.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { sigOf, type FaultView, type NodeView } from './fault-view.ts';
import { OPEN_ENDED_RECHECK_MS } from './fault-filters.controller.ts';

/** The scheduler-view filters: one evaluation of a node's job view (fault-filters.controller.ts). */
export interface SchedulerFilters {
  /** `jobViewOf`: another node's job view as this pass computed it (recover-in-place reads its peers'). */
  evaluate(node: string, jobView: readonly FaultRecord[], nowMs: number, jobViewOf: (node: string) => readonly FaultRecord[]): NodeFilterResult;
}

export interface FaultViewStageDeps {
  /** The snapshot the stage publishes (and reads its previous views from). */
  readonly view: FaultView;
  /** The job view of a node (policy/ through FaultPolicyEngine); identity when absent. */
  readonly policy: FaultPolicy;
  /** Without filters the scheduler view is the job view. */
  readonly filters?: SchedulerFilters;
  /** Nodes whose scheduler view reads these nodes' faults (recover-in-place peers). */
  readonly peers?: (nodes: readonly string[]) => Iterable<string>;
  /** Flap damping (rule 1); absent or holdMs 0 = off. */
  readonly damping?: FlapDampingConfig;
  /** Time and the queue's timers; tests pass a ManualClock. */
  readonly clock: QueueClock;
  readonly log: Logger;
  readonly metrics?: Metrics;
}

export class FaultViewStage {
  readonly queue: WorkQueue;
  private readonly loop: ControllerLoop;
  private readonly d: FaultViewStageDeps;
  /** Nodes with an input not yet evaluated (their keys are queued). */
  private readonly pending = new Set<string>();
  /** Of those, nodes the intake changed: emitted even when their view is unchanged (their raw data changed). */
  private readonly intaken = new Set<string>();
  /** Operator releases not yet applied to the nodes' damping memory. */
  private readonly releases = new Map<string, ParsedReleaseRequest[]>();
  /** The time each node's key is armed for (a window's or a hold's end). */
  private readonly due = new Map<string, number>();
  /** Node evaluations so far (policy + filters once each): the cost of the view. */
  evaluations = 0;

  constructor(d: FaultViewStageDeps) {
    this.d = d;
    this.queue = new WorkQueue({ clock: d.clock });
    this.loop = new ControllerLoop({ name: 'fault_view', reconcile: async (key) => { this.reconcile(key); return {}; } },
      { log: d.log, queue: this.queue, clock: d.clock, ...(d.metrics ? { metrics: d.metrics } : {}) });
  }

  start(): void { this.loop.start(); }
  stop(): Promise<void> { return this.loop.stop(); }

  /** The intake changed these nodes: evaluate them and emit them all. */
  intake(change: FaultChange): void {
    for (const n of change.nodes) this.intaken.add(n);
    this.notify(change.nodes);
  }

  /** These nodes' view may have changed with no new intake: evaluate them, emit those that changed. */
  notify(nodes: readonly string[]): void {
    this.d.view.markAwaiting(nodes, this.d.clock.now());
    for (const n of nodes) {
      this.pending.add(n);
      this.queue.add(n);
    }
  }

  /**
   * `kubectl clusterd release` requests: the damping memory of each released chip is forgotten when
   * all of it is from before the request (a replayed old request leaves later flaps alone), so the
   * recovery the release causes is not counted as a flap and its last separated records are not held.
   */
  release(requests: readonly ParsedReleaseRequest[]): void {
    for (const r of requests) {
      if (this.d.view.dampingOf(r.node) === undefined) continue;
      this.releases.set(r.node, [...(this.releases.get(r.node) ?? []), r]);
      this.notify([r.node]);
    }
  }

  private reconcile(key: string): void {
    const nowMs = this.d.clock.now();
    const due = this.due.get(key);
    const timeUp = due !== undefined && due <= nowMs;
    if (!this.pending.has(key) && !timeUp) {
      // Covered by an earlier pass; or a time beyond one delay (MAX_DELAY_MS), reached by re-arming.
      if (due !== undefined) this.queue.addAfter(key, Math.min(MAX_DELAY_MS, due - nowMs));
      return;
    }
    if (timeUp) this.due.delete(key);
    // A failing node runs alone under its own backoff; the others' keys do not wait for it.
    const batch = this.queue.retries(key) > 0 ? [key] : [key, ...[...this.pending].filter((n) => n !== key && this.queue.retries(n) === 0)];
    this.pass(batch, nowMs);
  }

  private pass(named: readonly string[], nowMs: number): void {
    const { view, policy, filters } = this.d;
    const store = view.store;
    for (const n of named) this.pending.delete(n);
    const intaken = new Set(named.filter((n) => this.intaken.delete(n)));
    try {
      const namedSet = new Set(named);
      const peers = this.d.peers === undefined ? [] : [...this.d.peers(named)].filter((n) => !namedSet.has(n));
      // Every job view first: a node's filters read its peers' job views.
      const jobs = new Map<string, readonly FaultRecord[]>();
      for (const n of named) jobs.set(n, policy.effective(n, store.records(n), nowMs));
      const jobViewOf = (n: string): readonly FaultRecord[] => jobs.get(n) ?? view.jobView(n);
      const views = new Map<string, NodeView | undefined>();
      const damp = new Map<string, ReadonlyMap<string, EntityState>>();
      const requeue = new Map<string, number>();
      for (const n of [...named, ...peers]) {
        this.evaluations++;
        const job = jobViewOf(n);
        const held = this.held(n, job, nowMs, damp, requeue);
        // The policy's other inputs of the rendered view (pre-separate's chips in use) count as a change too.
        const inputs = policy.viewInputs?.(n, job) ?? '';
        const sig = (s: string): string => (s === '' || inputs === '' ? s : `${s}|${inputs}`);
        let v: NodeView;
        if (filters === undefined) v = { job, scheduler: job, withheld: [], hidden: [], held, sig: sig(sigOf(job, job, [], [], held)), atMs: nowMs };
        else {
          const r = filters.evaluate(n, job, nowMs, jobViewOf);
          const withheld = [...r.hidden, ...r.dropped].map((o) => o.record);
          v = { job, scheduler: r.visible, withheld, hidden: r.hidden, held, sig: sig(sigOf(job, r.visible, r.hidden, withheld, held)), atMs: nowMs };
          // The filters' next-change time (the earliest window end); one already over is looked at again later, never spun on.
          if (r.recheckAtMs !== undefined) soonest(requeue, n, r.recheckAtMs > nowMs ? r.recheckAtMs : nowMs + OPEN_ENDED_RECHECK_MS);
        }
        views.set(n, v);
      }
      const changed = [...views].filter(([n, v]) => intaken.has(n) || view.view(n).sig !== v!.sig).map(([n]) => n);
      for (const n of named) if (views.get(n)?.sig === '' && store.nodeState(n) === undefined) views.set(n, undefined);
      for (const n of named) this.releases.delete(n);
      view.publish(views, damp, changed, nowMs);
      for (const [n, atMs] of requeue) this.requeueAt(n, atMs, nowMs);
    } catch (err) {
      for (const n of named) this.pending.add(n);
      for (const n of intaken) this.intaken.add(n);
      throw err;
    } finally {
      // What the policy's evaluations changed beyond these nodes (other nodes' views, state to
      // persist) is reported now, from the pass, never from a read; it only enqueues keys.
      policy.settle?.();
    }
  }

  /** Arms the node's key for atMs; an earlier armed time stays (its pass arms the later one). */
  private requeueAt(node: string, atMs: number, nowMs: number): void {
    const cur = this.due.get(node);
    if (cur !== undefined && cur > nowMs && cur <= atMs) return;
    this.due.set(node, atMs);
    this.queue.addAfter(node, Math.min(MAX_DELAY_MS, Math.max(1, atMs - nowMs)));
  }

  /**
   * Flap damping's stage: steps the node's entity states with its job view (idempotent for an
   * unchanged input) and answers the records held faulty; the next change requeues the node.
   */
  private held(node: string, job: readonly FaultRecord[], nowMs: number, damp: Map<string, ReadonlyMap<string, EntityState>>, requeue: Map<string, number>): readonly FaultRecord[] {
    const cfg = this.d.damping;
    if (cfg === undefined || cfg.holdMs <= 0) return [];
    let prev = this.d.view.dampingOf(node);
    const released = this.releases.get(node);
    if (prev !== undefined && released !== undefined) prev = forgetReleased(node, prev, released);
    if (prev === undefined && job.length === 0) return [];
    const v = dampView(job, prev ?? new Map(), nowMs, cfg);
    for (const e of v.held) if (prev?.get(e)?.healthySinceMs === undefined) this.d.metrics?.flapDamped.inc({ rule: 'hold' });
    damp.set(node, v.state);
    if (v.nextChangeMs !== undefined) soonest(requeue, node, v.nextChangeMs);
    return v.held.flatMap((e) => v.state.get(e)?.last ?? []);
  }
}

function soonest(m: Map<string, number>, node: string, atMs: number): void {
  const cur = m.get(node);
  if (cur === undefined || atMs < cur) m.set(node, atMs);
}

/** The damping memory without the released chips whose memory is all from before their request. */
function forgetReleased(node: string, st: ReadonlyMap<string, EntityState>, requests: readonly ParsedReleaseRequest[]): ReadonlyMap<string, EntityState> {
  const next = new Map(st);
  for (const r of requests) {
    for (const npu of r.npus) {
      const e = next.get(`${node}/${npu}`);
      if (e !== undefined && e.recoveries.every((t) => t <= r.atMs) && (e.healthySinceMs ?? 0) <= r.atMs) next.delete(`${node}/${npu}`);
    }
  }
  return next;
}
