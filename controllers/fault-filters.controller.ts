/**
 * The scheduler-view filters (docs/rules.md#filter.custom to #filter.stress-test, #filter.two-views) wired onto the intake: pods and
 * PodGroups -> which job holds which NPU and with which filter annotations -> policy/filters/fault-filters.ts per
 * node. This file holds the flow's only subscribe (docs/CONVENTIONS.md#data-path).
 *
 * Wiring (controllers/manager.ts):
 * - the fault view's scheduler view is `evaluate(node, job view).visible`, so cluster-info,
 *   the jobs pipeline's decisions, vcjob-fault-npu-cm and node isolation see the filtered view, while
 *   the recovery FSM and the fault gRPC service keep the job view (hidden faults included);
 * - the step-retry stage is the recovery controller's `schedulerView` (its FSM's `setStepRetryHold`
 *   is the job's RecoverTime), called in its place in ClusterD's chain;
 * - the fault-view stage (controllers/fault-view-stage.ts) runs `evaluate` once per change of a node
 *   and publishes the result: the jobs pipeline's snapshot, cluster-info's withheld faults and the
 *   scheduler view;
 * - when a window ends (custom filter, UCE-accompany 5 s, step retry 10 s, recover-in-place 60 s) the
 *   stage's key for the node (the result's `recheckAtMs`) re-evaluates it; standalone (`windowKeys`)
 *   a key of this controller (runtime/timer-loop.ts) does and `notify`s. Cluster-info is re-rendered
 *   and the job re-decided, so a fault still present at the end of its window restarts the job then;
 * - cluster-info leaves out what the last evaluation of a node hid or dropped (`withheld`): chips
 *   whose only non-normal faults are withheld leave the device plugin's unhealthy lists, withheld
 *   UB switch codes leave the switch entry (docs/rules.md#filter.two-views);
 * - the UCE-accompany memory and the UB switch link-downs remembered for HCCL retries
 *   (--link-down-memory-seconds) are persisted with the escalation state (`state()` / `restore()`).
 * Every change of a fault's verdict is logged once with its reason chain and counted.
 */
import { merge, map, type Subscription } from 'rxjs';
import { objectKey, type WatchEvent } from '../runtime/reflector.ts';
import type { QueueClock } from '../runtime/clock.ts';
import { TimerLoop } from '../runtime/timer-loop.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { faultKey, type FaultRecord } from '../vocabulary/fault-types.ts';
import type { HiddenFault } from '../policy/jobs/job-aggregation.ts';
import { customFilterRules, FILTER_FAULT_CODE_ANNOTATION, FILTER_FAULT_LEVEL_ANNOTATION, type CustomFilterRules } from '../policy/filters/custom-filter.ts';
import type { UceAccompanyState } from '../policy/filters/uce-accompany.ts';
import { formatChain } from '../policy/reasons.ts';
import type { FilterState } from '../schemas/escalation-state/escalation-state.ts';
import { LINK_DOWN_MEMORY_MS, linkDownsToForceAdd, rememberLinkDowns } from '../policy/filters/step-retry-filter.ts';
import { CONTESTED, filterNode, type FilterJob, type FilterOutcome, type NodeFilterResult } from '../policy/filters/fault-filters.ts';
import type { JobEntry, JobIndex, JobQuery } from '../state/job-index.ts';
import type { Pod, PodGroup } from '../runtime/kube-objects.ts';
import type { Sources } from './sources/sources.ts';
import { jobNodes } from '../policy/jobs/job-view.ts';
import { npuClaimOf, type NpuClaimMode } from '../policy/jobs/npu-claims.ts';
import type { FaultSubscriptions, RecoveryStatus } from './ports.ts';
import { MINDIE_APP_LABEL, MINDIE_JOB_ID_LABEL } from '../policy/jobs/pod-level-cap.ts';

/** MindIE server pods (docs/rules.md#filter.mindie-hold): label `jobID` set and `app=mindie-ms-server`. */
export const MINDIE_SERVER_APP = 'mindie-ms-server';
/** The MindIE controller's role: its fault subscription by the MindIE job id starts the hold. */
export const MINDIE_CONTROLLER_APP = 'mindie-ms-controller';
/** An open-ended hide (step retry absorbed, stress test) is looked at again after this long. */
export const OPEN_ENDED_RECHECK_MS = 30_000;
/** Job facts are rebuilt at least this often. */
const JOB_CACHE_MS = 1_000;
/** A node's key fires this long after a window's end, so the re-evaluation is past it. */
const SLACK_MS = 20;
/** PodGroup metadata the filters read; a change re-renders the job's nodes. */
const FILTER_LABELS = ['process-recover-enable', 'subHealthyStrategy'] as const;
const FILTER_ANNOTATIONS = [FILTER_FAULT_CODE_ANNOTATION, FILTER_FAULT_LEVEL_ANNOTATION, 'recover-strategy'] as const;

export interface FaultFiltersDeps {
  /** The pod cache, and the one job index with its pod and PodGroup events (controllers/sources/job-index-feed.ts). */
  readonly sources: Pick<Sources, 'pods' | 'jobIndex'>;
  readonly log: Logger;
  readonly metrics?: Metrics;
  /** The controller's clock (runtime/clock.ts): time and the timers of the window queue. */
  readonly clock: QueueClock;
  /** The job view of a node: its records after the fault policy, before these filters. */
  readonly jobView: (node: string) => readonly FaultRecord[];
  /**
   * The recovery flow's feedback (controllers/ports.ts RecoveryStatus): docs/rules.md#filter.step-retry's stage,
   * #filter.uce-accompany's business-plane UCEs, #filter.recover-in-place's must-exit reports (a new
   * report re-announces the job's nodes), #filter.stress-test's tested nodes. Without it none of these applies.
   */
  readonly recovery?: Pick<RecoveryStatus, 'schedulerView' | 'businessUce' | 'mustExitReportedMs' | 'stressTestNodes'>;
  /** docs/rules.md#filter.mindie-hold: the job's controller subscribed to the fault gRPC service (by job UID). */
  readonly subscriptions?: FaultSubscriptions;
  /**
   * Which AscendReal claims count (policy/jobs/npu-claims.ts): `verified` (default) also keeps a
   * job's filters to chips it alone holds; `annotation` is ClusterD's (--trust-pod-npu-annotations).
   */
  readonly npuClaims?: NpuClaimMode;
  /** The scheduler view of these nodes changed with no new intake. */
  readonly notify: (nodes: readonly string[]) => void;
  /**
   * Whether the filters re-evaluate a node at its window's end on a key of their own and `notify`
   * it (default). Off under the fault-view stage (controllers/fault-view-stage.ts), which requeues
   * the node at that time itself: one evaluator of the verdict.
   */
  readonly windowKeys?: boolean;
  /** The persisted filter memory changed (escalation-state reconciler). */
  readonly onStateChange?: () => void;
  /** How long a UB switch link-down is remembered for an HCCL retry (--link-down-memory-seconds; ClusterD 180 s). */
  readonly linkDownMemoryMs?: number;
}

type Input = { kind: 'pod'; ev: WatchEvent<Pod> } | { kind: 'pg'; ev: WatchEvent<PodGroup> };

const EMPTY: NodeFilterResult = { visible: [], hidden: [], dropped: [], relevelled: [], reported: [], uce: {}, recheckAtMs: undefined };
const instanceKey = (r: FaultRecord): string => `${faultKey(r)}@${r.firstSeenMs}`;
const filterMeta = (pg: PodGroup | undefined): string => JSON.stringify([
  FILTER_LABELS.map((k) => pg?.metadata?.labels?.[k] ?? null), FILTER_ANNOTATIONS.map((k) => pg?.metadata?.annotations?.[k] ?? null),
]);

export interface JobSnapshot { faults: FaultRecord[]; hidden: Map<string, HiddenFault> }

/** Visible plus hidden faults of some nodes' evaluations, and the hide windows (an open-ended one is looked at again in 30 s). */
export function jobSnapshotOf(results: Iterable<Pick<NodeFilterResult, 'visible' | 'hidden'>>, nowMs: number): JobSnapshot {
  const faults: FaultRecord[] = [];
  const hidden = new Map<string, HiddenFault>();
  for (const r of results) {
    faults.push(...r.visible);
    for (const h of r.hidden) {
      faults.push(h.record);
      hidden.set(faultKey(h.record), { by: h.by, untilMs: h.untilMs ?? nowMs + OPEN_ENDED_RECHECK_MS });
    }
  }
  return { faults, hidden };
}

export class FaultFiltersController {
  /** The sources' one job index, read with this controller's claims (`query`). */
  readonly index: JobIndex;
  private readonly query: JobQuery;
  private readonly d: FaultFiltersDeps;
  private readonly clock: QueueClock;
  private readonly uce = new Map<string, UceAccompanyState>();
  private linkDowns: FilterState['linkDowns'] = {};
  /** node -> fault instance -> last verdict tag (for transition logs). */
  private readonly tags = new Map<string, Map<string, string>>();
  /** One key per node, armed for its earliest window end. */
  private readonly timers: TimerLoop;
  /** Job facts by key, dropped on every pod or PodGroup event and after JOB_CACHE_MS (fault subscriptions change too). */
  private readonly jobs = new Map<string, FilterJob | undefined>();
  private jobsSinceMs = 0;
  private readonly rules = new Map<string, { readonly sig: string; readonly rules: CustomFilterRules }>();
  /** node -> what its last evaluation hid or dropped (nodes with none are absent). */
  private readonly lastWithheld = new Map<string, readonly FaultRecord[]>();
  private sub: Subscription | undefined;
  private readonly claims: NpuClaimMode;
  private readonly linkDownMemoryMs: number;
  /** pod key -> its refused claim (reason and chips), so each is logged and counted once. */
  private readonly refused = new Map<string, string>();

  constructor(d: FaultFiltersDeps) {
    this.d = d;
    this.clock = d.clock;
    this.claims = d.npuClaims ?? 'verified';
    this.linkDownMemoryMs = d.linkDownMemoryMs ?? LINK_DOWN_MEMORY_MS;
    this.index = d.sources.jobIndex.index;
    this.query = { claims: this.claims };
    // A window ended: evaluate the node (the verdict's log line and the persisted memory change
    // here), then re-announce it so the fault view keeps the new result.
    this.timers = new TimerLoop({ name: 'fault_filter_windows', log: d.log, clock: this.clock, ...(d.metrics ? { metrics: d.metrics } : {}) }, (node, nowMs) => {
      this.evaluate(node, this.d.jobView(node), nowMs);
      this.d.notify([node]);
    });
  }

  /** Subscribes pods and PodGroups (after the index applied them); call before the sources start. */
  start(): void {
    this.timers.start();
    const feed = this.d.sources.jobIndex;
    this.sub = merge(
      feed.pods$.pipe(map(({ ev }): Input => ({ kind: 'pod', ev }))),
      feed.podGroups$.pipe(map((ev): Input => ({ kind: 'pg', ev }))),
    ).subscribe({
      next: (i) => this.apply(i),
      error: (err: unknown) => this.d.log.error('fault filter input stream failed', { err: String(err) }),
    });
  }

  stop(): void {
    this.sub?.unsubscribe();
    void this.timers.stop(); // drops the armed keys at once; the loop ends on its own
  }

  /** The persisted memory (UCE-accompany decisions, switch link-downs remembered for HCCL retries). */
  state(): FilterState {
    const uceAccompany: Record<string, 'drop' | 'report'> = {};
    for (const s of this.uce.values()) Object.assign(uceAccompany, s);
    return { uceAccompany, linkDowns: this.linkDowns };
  }

  /** Adopts the persisted memory (decisions made since start win). */
  restore(s: FilterState): void {
    for (const [k, v] of Object.entries(s.uceAccompany)) {
      const node = k.slice(0, k.indexOf('/'));
      const slice = this.uce.get(node) ?? {};
      if (slice[k] === undefined) this.uce.set(node, { ...slice, [k]: v });
    }
    this.linkDowns = { ...s.linkDowns, ...this.linkDowns };
    this.d.onStateChange?.();
  }

  /** Every node with a remembered link-down (policy/filters/fault-filters.ts narrows them to a job's nodes). */
  private linkDownNodes(): ReadonlySet<string> {
    return new Set(Object.values(this.linkDowns).map((l) => l.node));
  }

  /** The node's records as the scheduler sees them. */
  schedulerView(node: string, records: readonly FaultRecord[], nowMs: number): readonly FaultRecord[] {
    return this.evaluate(node, records, nowMs).visible;
  }

  /**
   * What the node's last evaluation hid or dropped: the faults cluster-info must leave out of the
   * lists Volcano reads (reconcilers/cluster-info.reconciler.ts). Read it right after the node's
   * scheduler view, which is that evaluation.
   */
  withheld(node: string): readonly FaultRecord[] {
    return this.lastWithheld.get(node) ?? [];
  }

  /** For the jobs pipeline: visible and hidden faults of these nodes, and the hide windows (faultKey -> window). */
  jobSnapshot(nodes: readonly string[], nowMs: number = this.clock.now()): JobSnapshot {
    return jobSnapshotOf(nodes.map((n) => this.evaluate(n, this.d.jobView(n), nowMs)), nowMs);
  }

  /**
   * Runs the chain for one node and records what changed. `jobViewOf`: the job view of another
   * node (recover-in-place reads the job's other ranks), by default the `jobView` dependency.
   */
  evaluate(node: string, records: readonly FaultRecord[], nowMs: number, jobViewOf: (node: string) => readonly FaultRecord[] = this.d.jobView): NodeFilterResult {
    if (records.length === 0 && !this.uce.has(node) && !this.tags.has(node)) {
      this.lastWithheld.delete(node);
      return { ...EMPTY, visible: records };
    }
    this.rememberLinkDowns(node, records, nowMs);
    const result = this.run(node, records, nowMs, jobViewOf);
    this.commit(node, records, result, nowMs);
    const withheld = [...result.hidden, ...result.dropped].map((o) => o.record);
    if (withheld.length === 0) this.lastWithheld.delete(node);
    else this.lastWithheld.set(node, withheld);
    return result;
  }

  /**
   * The switch link-downs reported on the node now are remembered; older ones than the memory are
   * forgotten. Persisted when one comes or goes, not at every refresh of its last sight (a restart
   * then ends the memory early, never late).
   */
  private rememberLinkDowns(node: string, records: readonly FaultRecord[], nowMs: number): void {
    const next = rememberLinkDowns(this.linkDowns, node, records, nowMs, this.linkDownMemoryMs);
    const keys = (m: object): string => Object.keys(m).sort().join('\n');
    const changed = keys(next) !== keys(this.linkDowns);
    for (const k of Object.keys(next)) if (this.linkDowns[k] === undefined) this.d.log.info('switch link-down remembered for HCCL retries', { node: next[k]!.node, code: next[k]!.code, memoryMs: this.linkDownMemoryMs });
    this.linkDowns = next;
    if (changed) this.d.onStateChange?.();
  }

  /** `jobViewOf` undefined: a peer's own run, which reads no further node. */
  private run(node: string, records: readonly FaultRecord[], nowMs: number, jobViewOf: ((node: string) => readonly FaultRecord[]) | undefined): NodeFilterResult {
    const d = this.d;
    const recovery = d.recovery;
    const businessUce = recovery?.businessUce(node);
    const stress = recovery?.stressTestNodes();
    return filterNode({
      node, records, nowMs, jobs: this.jobsOn(node), uce: this.uce.get(node) ?? {},
      ...(businessUce === undefined ? {} : { businessUce }),
      ...(stress === undefined ? {} : { stressTestNodes: stress }),
      ...(recovery === undefined ? {} : { stepRetry: (r: readonly FaultRecord[]) => recovery.schedulerView(node, r, nowMs) }),
      ...(jobViewOf === undefined ? {} : { otherNode: (n: string) => this.run(n, jobViewOf(n), nowMs, undefined).visible }),
      ...(this.claims === 'annotation' ? { openClaims: true } : {}),
      linkDowns: linkDownsToForceAdd(this.linkDowns, this.linkDownNodes(), nowMs, this.linkDownMemoryMs),
    });
  }

  private apply(input: Input): void {
    this.jobs.clear();
    if (input.kind === 'pod') {
      const ev = input.ev;
      this.noteClaim(ev);
      // A pod change can start or end a hide (a pod of a filtered job arriving, terminating, its rank
      // or group changing) without any intake change: look at its nodes again where they have faults.
      const nodes = [ev.obj.spec?.nodeName, ev.type === 'update' ? ev.old.spec?.nodeName : undefined];
      const hit = [...new Set(nodes)].filter((n): n is string => n !== undefined && n !== '' && (this.lastWithheld.has(n) || this.d.jobView(n).length > 0));
      if (hit.length > 0) this.d.notify(hit);
      return;
    }
    const ev = input.ev;
    const key = objectKey(ev.obj);
    if (ev.type === 'delete') {
      this.rules.delete(key);
      // Its filter annotations are gone with it; the cache no longer says which nodes it had, and
      // PodGroup deletions are rare: look again at every node that withholds something.
      this.notifyWithheld([...this.lastWithheld.keys()]);
      return;
    }
    const before = ev.type === 'update' ? filterMeta(ev.old) : filterMeta(undefined);
    if (filterMeta(ev.obj) === before) return;
    const e = this.index.job(key, this.query);
    const nodes = e === undefined ? [] : jobNodes(e.view);
    if (nodes.length > 0) this.d.notify(nodes);
  }

  /** A pod whose AscendReal does not count (policy/jobs/npu-claims.ts): one warning and one count when it starts to be so. */
  private noteClaim(ev: WatchEvent<Pod>): void {
    const key = objectKey(ev.obj);
    const refusal = ev.type === 'delete' ? undefined : npuClaimOf(ev.obj, this.claims).refused;
    if (refusal === undefined) { this.refused.delete(key); return; }
    const sig = `${refusal.reason}/${refusal.claimed.join(',')}`;
    if (this.refused.get(key) === sig) return;
    this.refused.set(key, sig);
    this.d.log.warn('pod NPU claim not trusted', {
      pod: key, ...(ev.obj.spec?.nodeName ? { node: ev.obj.spec.nodeName } : {}), reason: refusal.reason, claimed: refusal.claimed.join(','), requested: refusal.requested,
      effect: 'the chips it names are not held by its job: its filters hide nothing there, faults there do not restart it, the chips are not in use',
    });
    this.d.metrics?.npuClaimsUntrusted.inc({ reason: refusal.reason });
  }

  /**
   * A fact about a job that the filters read from outside the informers changed (its fault gRPC
   * subscription, the MindIE hold of docs/rules.md#filter.mindie-hold): forget the cached job facts and look at its nodes again.
   */
  jobFactsChanged(jobId: string, nodes: readonly string[]): void {
    this.jobs.clear();
    const hit = [...new Set(nodes)];
    this.d.log.debug('job facts changed; its nodes are evaluated again', { jobId, nodes: hit });
    if (hit.length > 0) this.d.notify(hit);
  }

  /** `notify` the nodes among these whose last evaluation withheld a fault (the rest cannot change). */
  private notifyWithheld(nodes: readonly string[]): void {
    const hit = [...new Set(nodes)].filter((n) => this.lastWithheld.has(n));
    if (hit.length > 0) this.d.notify(hit);
  }

  private jobsOn(node: string): FilterJob[] {
    const now = this.clock.now();
    if (now - this.jobsSinceMs > JOB_CACHE_MS || now < this.jobsSinceMs) {
      this.jobs.clear();
      this.jobsSinceMs = now;
    }
    const out: FilterJob[] = [];
    for (const key of this.index.jobKeysOnNodes([node])) {
      if (!this.jobs.has(key)) this.jobs.set(key, this.jobOf(key));
      const j = this.jobs.get(key);
      if (j !== undefined) out.push(j);
    }
    return out;
  }

  private jobOf(key: string): FilterJob | undefined {
    const e = this.index.job(key, this.query);
    if (e === undefined) return undefined;
    const uid = e.view.uid;
    // The hold needs the MindIE controller's own subscription by its MindIE job id (ClusterD's
    // IsSubscribed(MultiInstanceJobId, mindie-ms-controller) in
    // component/clusterd/pkg/application/faultmanager/cmprocess/custom/custom_filter_fault_processor.go).
    const mindIeId = this.mindIeServerId(e);
    const mindIe = mindIeId !== undefined && (this.d.subscriptions?.subscribed(mindIeId, MINDIE_CONTROLLER_APP) ?? false);
    const meta = e.podGroup.metadata;
    const sig = `${meta?.resourceVersion ?? ''}/${String(mindIe)}`;
    let cached = this.rules.get(key);
    if (cached?.sig !== sig) {
      const rules = customFilterRules(meta?.annotations, { mindIeServerSubscribed: mindIe });
      for (const w of rules.warnings) this.d.log.warn('PodGroup fault filter annotation corrected', { job: key, reason: w });
      cached = { sig, rules };
      this.rules.set(key, cached);
    }
    const recovery = this.d.recovery;
    return {
      key, uid, pods: e.view.pods, rules: cached.rules,
      recoverInPlace: { recoverInPlace: e.knobs.processRecoverEnable === 'on' && e.knobs.recoverStrategies.includes('recover-in-place'), subHealthyStrategy: e.knobs.subHealthyStrategy },
      ...(recovery === undefined ? {} : { mustExitReportedMs: (rank: number) => recovery.mustExitReportedMs(uid, rank) }),
    };
  }

  /** The MindIE job id of a MindIE server job (a pod labelled `jobID` and `app=mindie-ms-server`); undefined for any other job. */
  private mindIeServerId(e: JobEntry): string | undefined {
    for (const p of e.view.pods) {
      const labels = this.d.sources.pods.get(`${e.view.namespace}/${p.name}`)?.metadata?.labels ?? {};
      const id = labels[MINDIE_JOB_ID_LABEL] ?? '';
      if (id !== '' && labels[MINDIE_APP_LABEL] === MINDIE_SERVER_APP) return id;
    }
    return undefined;
  }

  private commit(node: string, records: readonly FaultRecord[], r: NodeFilterResult, nowMs: number): void {
    const before = this.uce.get(node) ?? {};
    if (JSON.stringify(before) !== JSON.stringify(r.uce)) {
      if (Object.keys(r.uce).length === 0) this.uce.delete(node);
      else this.uce.set(node, r.uce);
      this.d.onStateChange?.();
    }
    const prev = this.tags.get(node) ?? new Map<string, string>();
    const next = new Map<string, string>();
    const seen = (verdict: string, o: FilterOutcome): void => {
      const key = instanceKey(o.record);
      const tag = `${verdict}:${o.by}:${o.record.level}`;
      next.set(key, tag);
      if (prev.get(key) === tag) return;
      this.report(verdict, o, prev.get(key));
      if (o.reasons.some((x) => x.rule === 'custom-filter' && x.level === CONTESTED)) this.d.metrics?.npuClaimsUntrusted.inc({ reason: 'contested' });
    };
    for (const o of r.reported) seen('report', o);
    for (const o of r.relevelled) seen('relevel', o);
    for (const o of r.hidden) seen('hide', o);
    for (const o of r.dropped) seen('drop', o);
    const present = new Set(records.map(instanceKey));
    for (const [key, tag] of prev) {
      if (next.has(key) || !present.has(key) || !tag.startsWith('hide:')) continue;
      const rec = r.visible.find((x) => instanceKey(x) === key);
      if (rec !== undefined) this.report('report', { record: rec, by: tag.split(':')[1] as FilterOutcome['by'], reasons: [] }, tag, 'filter no longer applies');
    }
    if (next.size === 0) this.tags.delete(node);
    else this.tags.set(node, next);
    this.arm(node, r.recheckAtMs, nowMs);
  }

  private report(verdict: string, o: FilterOutcome, prevTag: string | undefined, note?: string): void {
    const r = o.record;
    const fields = {
      node: r.node, ...(r.device === undefined ? {} : { npu: r.device }), code: r.code, faultLevel: r.level, filter: o.by, verdict,
      ...(o.untilMs === undefined ? {} : { untilMs: o.untilMs }), ...(o.from === undefined ? {} : { from: o.from }),
      ...(prevTag === undefined ? {} : { before: prevTag.split(':')[0] }),
      reasons: note ?? formatChain(o.reasons),
    };
    const msg = verdict === 'hide' ? 'fault hidden from the scheduler by a filter'
      : verdict === 'drop' ? 'fault dropped by a filter'
        : verdict === 'relevel' ? 'fault re-levelled by a filter' : 'fault reported to the scheduler by its filter';
    this.d.log.info(msg, fields);
    this.d.metrics?.filterVerdicts.inc({ filter: o.by, verdict });
  }

  /** The node's key, at the earliest pending window end (an earlier armed one stays). */
  private arm(node: string, atMs: number | undefined, nowMs: number): void {
    if (atMs === undefined || this.d.windowKeys === false) return;
    if (atMs <= nowMs) atMs = nowMs + OPEN_ENDED_RECHECK_MS; // never spin on a window already over
    this.timers.after(node, Math.max(1, atMs + SLACK_MS - nowMs));
  }
}
