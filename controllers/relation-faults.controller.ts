/**
 * The relation-fault flow (docs/rules.md#job.relation-faults, docs/formats.md#clusterd-config-files): pods, PodGroups and node
 * faults -> per job, every fault on its NPUs and on the UB switches of its nodes (the scheduler view,
 * as ClusterD's job center reads the processed views) -> policy/faults/relation-faults.ts -> on a strategy
 * change, the job's pod on that node is labelled `fault-type=Separate|SubHealth`
 * (reconcilers/relation-faults-labels.reconciler.ts, leader only). The jobs pipeline reads the label: `Separate` is the task
 * fault `RelationFaultSeparate`, which is also the reschedule reason Volcano records. This file holds
 * the flow's only subscribe (docs/CONVENTIONS.md#data-path).
 *
 * A job is observed as soon as it is seen (its first sight: older relation faults are skipped) and
 * again whenever its pods, PodGroup or node faults change, in batches of RELATION_BATCH_MS. The batch
 * window and the policy's earliest deadline (300 s relation windows) are two work-queue keys
 * (runtime/timer-loop.ts) on the queue's clock. The state (windows, triggers, sticky strategies) is persisted with
 * the escalation state (`state()` / `restore()`); nothing is decided before `restore`.
 */
import { filter, map, merge, mergeMap, type Observable, type Subscription } from 'rxjs';
import { objectKey, type WatchEvent } from '../runtime/reflector.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import { TimerLoop } from '../runtime/timer-loop.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { TICK } from '../policy/policy-operator.ts';
import { formatChain } from '../policy/reasons.ts';
import { DEFAULT_RELATION_FAULT_CONFIG, type RelationFaultConfig } from '../policy/faults/relation-fault-config.ts';
import { relationFaultPolicy, type RelationInput, type RelationOutput } from '../policy/faults/relation-faults.ts';
import type { RelationJobState, RelationState } from '../schemas/escalation-state/escalation-state.ts';
import { holdsDevice } from '../policy/filters/fault-filters.ts';
import type { JobIndex, JobQuery } from '../state/job-index.ts';
import { pendingLabelKey, relationLabelReconciler, type PendingLabel } from '../reconcilers/relation-faults-labels.reconciler.ts';
import type { PodGroup } from '../runtime/kube-objects.ts';
import type { Sources } from './sources/sources.ts';

/** Observations of a burst are batched this long. */
export const RELATION_BATCH_MS = 100;
/** Work-queue keys: the end of the current batch window, and the earliest policy deadline. */
const BATCH_KEY = 'batch';
const DEADLINE_KEY = 'deadline';

/**
 * A claim here only labels its own job's pods (no other job's faults are hidden or restart anything
 * by it), so AscendReal counts as written, as ClusterD reads it, whatever the index's default mode.
 */
const RELATION_QUERY: JobQuery = { claims: 'annotation' };

export interface RelationFaultsDeps {
  /** The one job index with its pod and PodGroup events (controllers/sources/job-index-feed.ts). */
  readonly sources: Pick<Sources, 'jobIndex'>;
  /** The scheduler view of a node's faults. */
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  /** Nodes whose faults changed (DeviceFaultsController.changes$). */
  readonly faultNodes$: Observable<readonly string[]>;
  /** A node of an A3 SuperPod (device-info SuperPodID >= 0). */
  readonly a3Node?: (node: string) => boolean;
  readonly config?: RelationFaultConfig;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** The controller's clock (runtime/clock.ts): windows, deadlines, the label loop. */
  readonly clock: QueueClock;
  readonly dryRun: boolean;
  /** The relation state changed (escalation-state reconciler). */
  readonly onStateChange?: () => void;
}

type Input = { kind: 'pod'; keys: readonly string[] } | { kind: 'pg'; ev: WatchEvent<PodGroup> } | { kind: 'nodes'; nodes: readonly string[] };

export class RelationFaultsController {
  /** The sources' one job index, read with RELATION_QUERY. */
  readonly index: JobIndex;
  readonly labels: ControllerLoop;
  readonly pending = new Map<string, PendingLabel>();
  private readonly d: RelationFaultsDeps;
  private readonly clock: QueueClock;
  private readonly config: RelationFaultConfig;
  private jobs: Record<string, RelationJobState> = {};
  private readonly deadlines = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private readonly gone = new Set<string>();
  private restored = false;
  private acting = false;
  private readonly timers: TimerLoop;
  private sub: Subscription | undefined;

  constructor(d: RelationFaultsDeps) {
    this.d = d;
    this.clock = d.clock;
    this.config = d.config ?? DEFAULT_RELATION_FAULT_CONFIG;
    this.index = d.sources.jobIndex.index;
    this.labels = new ControllerLoop(relationLabelReconciler({ pending: this.pending, client: d.client, dryRun: d.dryRun, ...(d.metrics ? { metrics: d.metrics } : {}) }),
      { log: d.log, ...(d.metrics ? { metrics: d.metrics } : {}), clock: d.clock });
    this.timers = new TimerLoop({ name: 'relation_fault_timers', log: d.log, clock: this.clock, ...(d.metrics ? { metrics: d.metrics } : {}) },
      (key, nowMs) => (key === BATCH_KEY ? this.flush() : this.fireDue(nowMs)));
  }

  /** Subscribes the inputs (pods and PodGroups after the index applied them); call before the sources start. */
  start(): void {
    this.timers.start();
    const feed = this.d.sources.jobIndex;
    const inputs$ = merge(
      feed.pods$.pipe(map(({ keys }): Input => ({ kind: 'pod', keys }))),
      feed.podGroups$.pipe(map((ev): Input => ({ kind: 'pg', ev }))),
      this.d.faultNodes$.pipe(filter((n) => n.length > 0), map((nodes): Input => ({ kind: 'nodes', nodes }))),
    );
    this.sub = inputs$.pipe(mergeMap((i) => this.keysOf(i))).subscribe({
      next: (key) => this.markDirty(key),
      error: (err: unknown) => this.d.log.error('relation fault input stream failed', { err: String(err) }),
    });
  }

  /** Adopts the persisted state (after the caches synced), then observes every job. */
  restore(s: RelationState): void {
    const live = new Set(this.index.jobKeys());
    for (const [k, j] of Object.entries(s.jobs)) if (live.has(k) && this.jobs[k] === undefined) this.jobs[k] = j;
    for (const k of Object.keys(this.jobs)) this.deadlines.set(k, this.deadlineOf(this.jobs[k]!));
    this.restored = true;
    for (const k of live) this.dirty.add(k);
    this.flush();
    this.d.onStateChange?.();
  }

  /** The state to persist. */
  state(): RelationState {
    return { jobs: { ...this.jobs } };
  }

  /** Node -> strategy of a job. */
  strategies(jobKey: string): Readonly<Record<string, string>> {
    return this.jobs[jobKey]?.strategies ?? {};
  }

  /** Leader only: label pods. */
  startActing(): void {
    if (this.acting) return;
    this.acting = true;
    this.labels.start();
    for (const k of this.pending.keys()) this.labels.queue.add(k);
  }

  async stopActing(): Promise<void> {
    if (!this.acting) return;
    this.acting = false;
    await this.labels.stop();
  }

  async stop(): Promise<void> {
    this.sub?.unsubscribe();
    await this.timers.stop();
    await this.stopActing();
  }

  /** Runs every due deadline now (the deadline key does this by itself). */
  tick(nowMs: number = this.clock.now()): void {
    if (!this.restored) return;
    const step = relationFaultPolicy({ jobs: this.jobs }, TICK, nowMs, this.config);
    this.take(step.state.jobs, step.outputs);
    for (const r of step.reasons) this.decidedNothing(r.detail, r.code);
    this.jobs = { ...step.state.jobs };
    for (const k of Object.keys(this.jobs)) this.deadlines.set(k, this.deadlineOf(this.jobs[k]!));
    this.d.onStateChange?.();
    this.rearm();
  }

  private keysOf(i: Input): readonly string[] {
    switch (i.kind) {
      case 'pod':
        return i.keys;
      case 'pg': {
        const key = objectKey(i.ev.obj);
        if (i.ev.type === 'delete') this.gone.add(key);
        else this.gone.delete(key);
        return [key];
      }
      case 'nodes':
        return [...this.index.jobKeysOnNodes(i.nodes)];
    }
  }

  /** The batch window opens at the first dirty job and is not extended by later ones. */
  private markDirty(key: string): void {
    this.dirty.add(key);
    if (!this.restored) return;
    this.timers.after(BATCH_KEY, RELATION_BATCH_MS);
  }

  /** The deadline key: ticks when a deadline is due, else (armed for an earlier one since moved) re-arms. */
  private fireDue(nowMs: number): void {
    let next = Infinity;
    for (const d of this.deadlines.values()) next = Math.min(next, d);
    if (next <= nowMs) this.tick(nowMs);
    else this.rearm();
  }

  private flush(): void {
    const now = this.clock.now();
    const keys = [...this.dirty];
    this.dirty.clear();
    let changed = false;
    for (const key of keys) {
      const input = this.inputOf(key);
      if (input === undefined) continue;
      const before = this.jobs[key];
      const step = relationFaultPolicy({ jobs: before === undefined ? {} : { [key]: before } }, input, now, this.config);
      const after = step.state.jobs[key];
      this.take(step.state.jobs, step.outputs, before);
      for (const r of step.reasons) {
        this.d.log.debug('relation fault', { job: key, reason: r.detail, code: r.code });
        this.decidedNothing(r.detail, r.code, key);
      }
      if (after === undefined) {
        delete this.jobs[key];
        this.deadlines.delete(key);
        for (const k of [...this.pending.keys()]) if (k.startsWith(`${key}|`)) this.pending.delete(k);
      } else {
        this.jobs[key] = after;
        this.deadlines.set(key, this.deadlineOf(after));
      }
      if (JSON.stringify(before) !== JSON.stringify(after)) changed = true;
    }
    if (changed) this.d.onStateChange?.();
    this.rearm();
  }

  /** The observation of one job, or its forgetting. */
  private inputOf(key: string): RelationInput | undefined {
    const e = this.gone.has(key) ? undefined : this.index.job(key, RELATION_QUERY);
    if (e === undefined) {
      this.gone.delete(key);
      return this.jobs[key] === undefined ? undefined : { type: 'forget', jobKey: key };
    }
    const pods = e.view.pods.filter((p) => p.node !== undefined && p.terminating !== true && p.npus.length > 0);
    const nodes = [...new Set(pods.map((p) => p.node!))];
    const faults = nodes.flatMap((n) => this.d.faultsOf(n).filter((r) => r.source === 'switch' || (r.device !== undefined && r.source !== 'node' && pods.some((p) => p.node === n && holdsDevice(p, r.device!)))));
    const a3 = nodes.some((n) => this.d.a3Node?.(n) ?? false);
    return { type: 'observe', jobKey: key, a3, faults: faults.map((f) => ({ fault: f, level: f.level, reasons: [] })) };
  }

  /** Logs new relation windows and acts on strategy changes. */
  private take(jobs: RelationState['jobs'], outputs: readonly RelationOutput[], before?: RelationJobState): void {
    for (const [key, j] of Object.entries(jobs)) {
      const prev = before ?? this.jobs[key];
      for (const c of j.candidates) {
        if (prev?.candidates.some((x) => x.node === c.node && x.device === c.device && x.code === c.code && x.atMs === c.atMs)) continue;
        this.d.log.info('relation fault waiting for a trigger', { job: key, node: c.node, ...(c.device === null ? {} : { npu: c.device }), code: c.code, kind: c.kind, deadlineMs: c.deadlineMs });
      }
    }
    for (const o of outputs) {
      const reasons = formatChain(o.reasons);
      this.d.log.info('relation fault strategy decided', { job: o.jobKey, node: o.node, strategy: o.strategy, reasons });
      this.d.metrics?.relationDecisions.inc({ strategy: o.strategy });
      const e = this.index.job(o.jobKey, RELATION_QUERY);
      if (e === undefined) continue;
      const pods = e.view.pods.filter((p) => p.node === o.node && p.terminating !== true && p.npus.length > 0).map((p) => ({ name: p.name, uid: p.uid }));
      if (pods.length === 0) continue;
      const key = pendingLabelKey(o.jobKey, o.node);
      this.pending.set(key, { jobKey: o.jobKey, namespace: e.view.namespace, node: o.node, strategy: o.strategy, pods, reasons });
      if (this.acting) this.labels.queue.add(key);
    }
  }

  private decidedNothing(detail: string, code: string | undefined, job?: string): void {
    if (!detail.includes('without a matching trigger')) return;
    this.d.log.info('relation fault window over without a trigger; no strategy', { ...(job === undefined ? {} : { job }), code, reasons: detail });
    this.d.metrics?.relationDecisions.inc({ strategy: 'none' });
  }

  private deadlineOf(j: RelationJobState): number {
    return Math.min(Infinity, ...j.candidates.map((c) => c.deadlineMs));
  }

  /** Arms the deadline key for the earliest deadline (a key armed for earlier stays; see fireDue). */
  private rearm(): void {
    let next = Infinity;
    for (const [k, d] of this.deadlines) {
      if (d === Infinity) this.deadlines.delete(k);
      else next = Math.min(next, d);
    }
    if (next !== Infinity) this.timers.at(DEADLINE_KEY, next);
  }
}
