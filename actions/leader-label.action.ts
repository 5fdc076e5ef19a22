/**
 * The leader's pod carries the label `clusterd-ts.io/leader=true`. The chart's gRPC Service
 * (`clusterd-grpc-svc`) selects it, so TaskD, the Elastic Agent and public-fault senders reach the
 * one replica that serves gRPC (it listens on the Lease holder only); the metrics Service selects
 * every replica.
 *
 * Why a label and not leadership in the readiness probe: a standby that is never Ready would hold
 * the PodDisruptionBudget (minAvailable 1) at zero allowed disruptions for the leader and stall a
 * rolling update (maxUnavailable 0) waiting for a new pod that can never become Ready. Readiness
 * stays "caches synced" and the label steers the traffic.
 *
 * Who writes what:
 * - the leader labels its own pod first (so the Service never goes empty because of us), then
 *   clears the label from the other pods of its release (same `app.kubernetes.io/name` and
 *   `/instance`) that still carry it: a leader that crashed or lost the apiserver cannot remove its
 *   own label;
 * - a replica standing down removes the label from its own pod, and so does every replica at start
 *   (a container restarted in place keeps its pod's labels).
 * Every write is a JSON merge patch carrying the resourceVersion it was based on (409: read again),
 * so a decision taken on a stale read never lands. Passes run one at a time on a work queue (one
 * key): failures are logged, counted and retried with the queue's backoff; nothing here throws into
 * the caller. While leading, the state is checked again every resync period (a label removed by
 * hand, a late write from a deposed leader): the pass's `requeueAfterMs`.
 */
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { isConflict, isNotFound, paths, type KubeClient, type KubeObject } from '../runtime/kube-client.ts';
import type { Outcome as PassOutcome } from '../runtime/reconciler.ts';
import { WorkQueue } from '../runtime/work-queue.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export const LEADER_LABEL = 'clusterd-ts.io/leader';
export const LEADER_LABEL_VALUE = 'true';
/** Labels that tell the pods of one release apart: the chart's selector labels. */
export const RELEASE_LABELS = ['app.kubernetes.io/name', 'app.kubernetes.io/instance'] as const;

export interface PodRef {
  readonly name: string;
  readonly namespace: string;
}

export type LabelChange = 'set' | 'remove' | 'clear';
export type LabelResult = 'success' | 'conflict' | 'gone' | 'error';
/** The own pod's label as last read or written; `unknown` before the first read or after errors. */
export type OwnLabelState = 'set' | 'absent' | 'unknown';

export interface LeaderLabelDeps {
  readonly client: KubeClient;
  readonly pod: PodRef;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** While leading, check the labels again this often. */
  readonly resyncMs: number;
  readonly retryMinMs?: number;
  readonly retryMaxMs?: number;
  /** The controller's clock (runtime/clock.ts): resyncs and retries. */
  readonly clock: QueueClock;
}

type Outcome = 'converged' | 'conflict';

/** The one key of the labeler's queue. */
const KEY = 'leader-label';

export class LeaderLabeler {
  private readonly d: LeaderLabelDeps;
  private readonly retryMinMs: number;
  private readonly loop: ControllerLoop;
  private desired: boolean | undefined;
  private stopped = false;
  private warnedMissing = false;
  private own: OwnLabelState = 'unknown';

  constructor(d: LeaderLabelDeps) {
    this.d = d;
    this.retryMinMs = d.retryMinMs ?? 1_000;
    // A change of mind during a pass re-adds the key: the queue runs one more pass right after it.
    const queue = new WorkQueue({ baseDelayMs: this.retryMinMs, maxDelayMs: d.retryMaxMs ?? 30_000, clock: d.clock });
    this.loop = new ControllerLoop({ name: 'leader_label', reconcile: async () => this.run() }, { log: d.log, queue, clock: d.clock });
    this.loop.start();
  }

  get ownLabel(): OwnLabelState { return this.own; }

  /** This replica holds the Lease: label its pod, clear the label from the release's other pods. */
  claim(): void { this.want(true); }

  /** This replica stands by: its pod must not carry the label. */
  release(): void { this.want(false); }

  /**
   * No more retries or resyncs; waits (at most `waitMs`) for the passes already asked for, e.g. a
   * release, then stops the queue.
   */
  async stop(waitMs = 5_000): Promise<void> {
    this.stopped = true;
    await this.loop.idle(waitMs).catch(() => undefined);
    await this.loop.stop();
  }

  private want(leading: boolean): void {
    if (this.stopped) return;
    this.desired = leading;
    this.loop.queue.forget(KEY); // a new wish starts the backoff over
    this.loop.queue.add(KEY);
  }

  /** One pass (the queue runs them one at a time); a failure throws: retried with the queue's backoff. */
  private async run(): Promise<PassOutcome> {
    const leading = this.desired;
    if (leading === undefined) return {};
    let out: Outcome;
    try {
      out = await this.pass(leading);
    } catch (e) {
      this.own = 'unknown';
      if (this.stopped) return {};
      // The loop logs it ('reconcile failed; requeued', with the backoff) and runs the pass again.
      throw new Error(`leader label of ${this.ownKey()} (leading: ${leading}): pod read or write failed: ${String(e)}`);
    }
    if (this.stopped) return {};
    if (out === 'conflict') return { requeueAfterMs: this.retryMinMs }; // someone wrote the pod meanwhile: read again soon
    return leading ? { requeueAfterMs: this.d.resyncMs } : {};
  }

  private async pass(leading: boolean): Promise<Outcome> {
    const { client, pod } = this.d;
    const self = await client.getOrUndefined<KubeObject>(paths.pod(pod.namespace, pod.name));
    if (self === undefined) {
      this.own = 'unknown';
      if (!this.warnedMissing) this.d.log.warn('leader label: own pod not found (POD_NAME / POD_NAMESPACE?); the gRPC Service cannot select this replica', { pod: this.ownKey() });
      this.warnedMissing = true;
      return 'converged';
    }
    this.warnedMissing = false;
    const has = self.metadata?.labels?.[LEADER_LABEL] === LEADER_LABEL_VALUE;
    if (!leading) {
      if (!has) { this.own = 'absent'; return 'converged'; }
      const r = await this.write(self, null, 'remove');
      if (r === 'success') this.own = 'absent';
      return r === 'conflict' ? 'conflict' : 'converged';
    }
    if (!has) {
      const r = await this.write(self, LEADER_LABEL_VALUE, 'set');
      if (r !== 'success') return r === 'conflict' ? 'conflict' : 'converged';
    }
    this.own = 'set';
    // Other pods of this release still labelled: a former leader that could not remove its own.
    const selector = [`${LEADER_LABEL}=${LEADER_LABEL_VALUE}`,
      ...RELEASE_LABELS.flatMap((k) => { const v = self.metadata?.labels?.[k]; return v === undefined ? [] : [`${k}=${v}`]; })].join(',');
    const stale = (await client.list<KubeObject>(paths.pods(pod.namespace), { labelSelector: selector })).items
      .filter((p) => p.metadata?.name !== pod.name);
    let outcome: Outcome = 'converged';
    for (const p of stale) {
      if (this.desired !== true) break; // stood down meanwhile: leave the rest to the next leader
      if ((await this.write(p, null, 'clear')) === 'conflict') outcome = 'conflict';
    }
    return outcome;
  }

  /** One merge patch of the label, conditional on the resourceVersion read; counts and logs it. */
  private async write(target: KubeObject, value: string | null, change: LabelChange): Promise<LabelResult> {
    const name = target.metadata?.name ?? '';
    const { client, pod, metrics, log } = this.d;
    let result: LabelResult;
    try {
      await client.patch(paths.pod(pod.namespace, name), {
        metadata: { resourceVersion: target.metadata?.resourceVersion, labels: { [LEADER_LABEL]: value } },
      }, 'merge');
      result = 'success';
    } catch (e) {
      result = isNotFound(e) ? 'gone' : isConflict(e) ? 'conflict' : 'error';
      metrics.leaderLabelChanges.inc({ change, result });
      metrics.apiWrites.inc({ kind: 'pod_leader_label', result });
      if (result === 'conflict') metrics.apiConflicts.inc({ kind: 'pod_leader_label' });
      if (result === 'error') throw e;
      log.info('leader label: pod changed meanwhile', { pod: `${pod.namespace}/${name}`, change, result });
      return result;
    }
    metrics.leaderLabelChanges.inc({ change, result });
    metrics.apiWrites.inc({ kind: 'pod_leader_label', result });
    const what = { set: 'leader label set on own pod', remove: 'leader label removed from own pod', clear: 'leader label cleared from a former leader\'s pod' }[change];
    log.info(what, { pod: `${pod.namespace}/${name}`, label: LEADER_LABEL });
    return result;
  }

  private ownKey(): string { return `${this.d.pod.namespace}/${this.d.pod.name}`; }
}
