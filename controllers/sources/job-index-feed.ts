/**
 * The one job index (state/job-index.ts), owned by the sources: created with the informer caches
 * (sources.ts createSources) and fed each pod and PodGroup event once, before any reader hears of
 * it. The filters, the relation faults, the jobs flow and the recovery flow read this index and
 * subscribe to `pods$` / `podGroups$` here instead of to the informers, so they never see an event
 * the index has not applied and never disagree about a job. Where they need different answers they
 * ask for them (state/job-index.ts JobQuery): the relation faults count AscendReal claims as written,
 * the recovery flow reads the last complete placement.
 *
 * Order: a Subject calls its subscribers in the order they subscribed, which is the Manager's flow
 * order (controllers/manager.ts buildFlows: filters, relation faults, jobs, recovery). It matters:
 * the filters re-announce a pod's nodes (a hide window may start or end with the pod) and so
 * re-compute the fault view before the jobs flow queues the job's decision and the recovery flow
 * feeds its FSMs. The index has applied the event by then, so whatever that re-computation reaches
 * (the other flows' fault-change handlers) reads the pods as they now are.
 */
import { Subject, connectable, map, tap, type Observable, type Subscription } from 'rxjs';
import type { WatchEvent } from '../../runtime/reflector.ts';
import type { Pod, PodGroup } from '../../runtime/kube-objects.ts';
import type { NpuClaimMode } from '../../policy/jobs/npu-claims.ts';
import { JobIndex, type JobIndexSources } from '../../state/job-index.ts';

/** A pod event as the index applied it: the event and the keys of the jobs the pod belongs (or belonged) to. */
export interface IndexedPodEvent {
  readonly ev: WatchEvent<Pod>;
  readonly keys: readonly string[];
}

/** The caches and event streams the index is fed from (the Sources' reflectors, or test stand-ins). */
export interface JobIndexFeedSources extends JobIndexSources {
  readonly pods: JobIndexSources['pods'] & { readonly events$: Observable<WatchEvent<Pod>> };
  readonly podGroups: JobIndexSources['podGroups'] & { readonly events$: Observable<WatchEvent<PodGroup>> };
}

export class JobIndexFeed {
  readonly index: JobIndex;
  /** Every pod event, after the index applied it. */
  readonly pods$: Observable<IndexedPodEvent>;
  /** Every PodGroup event, after the index applied it (the claims of `jobKeyOfUid`, placements). */
  readonly podGroups$: Observable<WatchEvent<PodGroup>>;
  private readonly subs: Subscription[];

  /**
   * `claims`: the mode reads use by default (--trust-pod-npu-annotations: `annotation`, else
   * `verified`). Placements are kept: the recovery flow maps faults to jobs through them, as ClusterD
   * does (policy/jobs/job-placement.ts). Connected at once, so the initial lists are indexed whoever
   * subscribed; an error (a bug in the index) reaches every subscriber's error handler, as it did
   * when each applied the event in its own pipe.
   */
  constructor(sources: JobIndexFeedSources, claims: NpuClaimMode) {
    const index = new JobIndex(sources, claims, { keepPlacements: true });
    this.index = index;
    const pods$ = connectable(sources.pods.events$.pipe(map((ev): IndexedPodEvent => ({ ev, keys: index.apply(ev) }))), { connector: () => new Subject<IndexedPodEvent>(), resetOnDisconnect: false });
    const podGroups$ = connectable(sources.podGroups.events$.pipe(tap((ev) => index.applyPodGroup(ev))), { connector: () => new Subject<WatchEvent<PodGroup>>(), resetOnDisconnect: false });
    this.pods$ = pods$;
    this.podGroups$ = podGroups$;
    this.subs = [pods$.connect(), podGroups$.connect()];
  }

  stop(): void {
    for (const s of this.subs.splice(0)) s.unsubscribe();
  }
}
