/**
 * The job view: which pods, nodes and NPUs make up each training job, built from the
 * informer caches of Pods and PodGroups.
 *
 * - A job is its PodGroup. Its key is `<ns>/<podGroupName>`, and the operator / Volcano name the
 *   PodGroup `<jobName>-<jobUID>` (docs/formats.md#crds), so the key is also Volcano's JobID
 *   `<ns>/<jobName>-<uid>`. The job's name and UID come from the PodGroup's controller
 *   ownerReference (a Volcano Job or an AscendJob); a PodGroup without one is not a job we handle.
 * - That ownerReference is a claim, checked against the owner object in the Job / AscendJob caches
 *   (policy/jobs/job-identity.ts): a PodGroup whose owner does not exist in its namespace with that
 *   name and UID is not a job (`job`, `jobKeys`, `jobHeaders`, `jobKeyOfUid` leave it out), so
 *   nothing keyed by the UID it names is read or written for it.
 * - A pod belongs to the job whose controller ownerReference it carries (both Volcano and the Ascend
 *   operator own their pods: same namespace, name and UID), or whose PodGroup its
 *   `scheduling.k8s.io/group-name` annotation names.
 * - Rank = `hccl/rankIndex`, NPUs = `huawei.com/AscendReal` (policy/jobs/job-view.ts podViewFromMeta),
 *   only when the pod requests that many NPUs (`verified`: what the filters, the jobs pipeline and the
 *   recovery controller read, where a claim lets a job's filter or step retry hide faults or makes
 *   it restart; policy/jobs/npu-claims.ts) or as written (`annotation`: what the relation faults read,
 *   where a claim only labels its own pods; everywhere with --trust-pod-npu-annotations). The index
 *   has one mode (its default, the flag's) and a reader may ask for the other (`JobQuery.claims`):
 *   claims are judged when a job is read, not when a pod is indexed.
 * - Knobs are read from the PodGroup's labels and annotations (docs/formats.md#job-knobs; schemas/job-knobs).
 *
 * There is one index, owned by the sources (controllers/sources/job-index-feed.ts), which feed it
 * every pod and PodGroup event once (`apply`, `applyPodGroup`) before any reader hears of the event.
 * The index of pods by owner, group and node is kept incrementally, so mapping "faults changed on
 * node X" to jobs costs O(pods on X).
 */
import { objectKey, type WatchEvent } from '../runtime/reflector.ts';
import type { KubeObject } from '../runtime/kube-client.ts';
import { parseJobKnobs, type JobKnobs } from '../schemas/job-knobs/job-knobs.ts';
import { ASCEND_REAL_ANNOTATION, POD_TYPE_ANNOTATION, RANK_INDEX_ANNOTATION, podViewFromMeta, type BlockKnobs, type JobKind, type JobKnobsInput, type JobView, type PodMetaInput } from '../policy/jobs/job-view.ts';
import type { JobFacts, JobLookup } from '../policy/jobs/job-facts.ts';
import { npuClaimOf, requestedNpus, type NpuClaimMode } from '../policy/jobs/npu-claims.ts';
import { inferenceCapOf, type InferenceCap } from '../policy/jobs/pod-level-cap.ts';
import { completePlacement, placementNodes, type JobPlacement } from '../policy/jobs/job-placement.ts';
import { pickClaimant, verifyJobIdentity, type IdentityVerdict, type OwnerClaim, type OwnerObject } from '../policy/jobs/job-identity.ts';
import type { Pod, PodGroup } from '../runtime/kube-objects.ts';
import type { Reflector } from '../runtime/reflector.ts';

/** Volcano's pod annotation naming the pod's PodGroup. */
export const GROUP_NAME_ANNOTATION = 'scheduling.k8s.io/group-name';
/** Labels that mark a pod as a worker replica, exempt from the rank-0 rule (docs/rules.md#resched.master-rank). */
export const REPLICA_TYPE_LABELS = ['training.kubeflow.org/replica-type', 'replica-type'] as const;

const JOB_KINDS: Readonly<Record<string, JobKind>> = { 'batch.volcano.sh/Job': 'vcjob', 'mindxdl.gitee.com/AscendJob': 'acjob' };

export interface JobOwner {
  readonly kind: JobKind;
  readonly name: string;
  readonly uid: string;
}

/** The controller ownerReference of a PodGroup or pod, when it is a Volcano Job or an AscendJob. */
export function jobOwnerOf(o: KubeObject): JobOwner | undefined {
  for (const ref of o.metadata?.ownerReferences ?? []) {
    if (ref.controller !== true) continue;
    const group = ref.apiVersion.split('/')[0] ?? '';
    const kind = JOB_KINDS[`${group}/${ref.kind}`];
    if (kind !== undefined) return { kind, name: ref.name, uid: ref.uid };
  }
  return undefined;
}

/** Adapts a Pod object into the policy's input shape. */
export function podMetaOf(p: Pod): PodMetaInput {
  const status = p.status;
  const failedExit = (t: { exitCode?: number } | undefined): boolean => t !== undefined && (t.exitCode ?? 0) !== 0;
  const labels = p.metadata?.labels ?? {};
  const replica = REPLICA_TYPE_LABELS.map((k) => labels[k]).find((v) => v !== undefined);
  return {
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
    phase: status?.phase ?? 'Pending',
    ready: status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    containerFailed: (status?.containerStatuses ?? []).some((c) => failedExit(c.state?.terminated) || failedExit(c.lastState?.terminated)),
    terminating: p.metadata?.deletionTimestamp !== undefined,
    labels,
    annotations: p.metadata?.annotations ?? {},
    workerReplica: replica?.toLowerCase() === 'worker',
  };
}

/** The policy's knob subset from the parsed PodGroup knobs. */
export function knobsInputOf(k: JobKnobs, inferenceCap?: InferenceCap): JobKnobsInput {
  return {
    ...(inferenceCap === undefined ? {} : { inferenceCap }),
    faultScheduling: k.faultScheduling,
    podRescheduling: k.podRescheduling,
    faultRetryTimes: k.faultRetryTimes,
    subHealthyStrategy: k.subHealthyStrategy,
    ...(k.recoverPolicyPath === undefined ? {} : { recoverPolicyPath: k.recoverPolicyPath }),
    processRecoverEnable: k.processRecoverEnable,
    recoverStrategies: k.recoverStrategies,
    platformMode: k.platformMode,
    ...(k.framework === undefined ? {} : { framework: k.framework }),
    ...withBlocks(blocksOf(k)),
  };
}

const withBlocks = (b: BlockKnobs | undefined): { blocks?: BlockKnobs } => (b === undefined ? {} : { blocks: b });

function blocksOf(k: JobKnobs): BlockKnobs | undefined {
  const b: BlockKnobs = {
    ...(k.schedulePolicy === undefined ? {} : { schedulePolicy: k.schedulePolicy }),
    ...(k.spBlockNpus === undefined ? {} : { spBlockNpus: k.spBlockNpus }),
    ...(k.raBlockNpus === undefined ? {} : { raBlockNpus: k.raBlockNpus }),
    ...(k.affinityLevel1 === undefined ? {} : { affinityLevel1: k.affinityLevel1 }),
  };
  return Object.keys(b).length === 0 ? undefined : b;
}

/** A job as the index builds it; policy reads the JobFacts part (policy/jobs/job-facts.ts). */
export interface JobEntry extends JobFacts {
  readonly knobsInput: JobKnobsInput;
  readonly warnings: readonly string[];
  readonly podGroup: PodGroup;
  /** The job's last complete placement, when the index keeps them (`keepPlacements`) and the job was ever complete. */
  readonly placement?: JobPlacement;
}

export interface JobHeader {
  readonly key: string;
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly knobs: JobKnobs;
}

interface PodIndexEntry {
  readonly owner?: string;
  readonly group?: string;
  readonly node?: string;
}

const addTo = (m: Map<string, Set<string>>, k: string | undefined, v: string): void => {
  if (k === undefined) return;
  const s = m.get(k);
  if (s === undefined) m.set(k, new Set([v]));
  else s.add(v);
};
const removeFrom = (m: Map<string, Set<string>>, k: string | undefined, v: string): void => {
  if (k === undefined) return;
  const s = m.get(k);
  if (s === undefined) return;
  s.delete(v);
  if (s.size === 0) m.delete(k);
};

/** Length of a Kubernetes UID (a PodGroup is named `<jobName>-<jobUID>`). */
const UID_LENGTH = 36;
/** Volcano Job phases between killJob (PodGroup deleted) and syncJob (PodGroup re-created) of a restart. */
const VOLCANO_RESTART_PHASES: ReadonlySet<string> = new Set(['Restarting', 'Pending']);

/** A cache of job objects (Volcano Jobs, AscendJobs) by `<ns>/<name>`. */
export interface JobObjectCache {
  get(key: string): KubeObject | undefined;
  readonly store: ReadonlyMap<string, KubeObject>;
}

/** The informer caches the index reads (the controller's Sources has them all). */
export interface JobIndexSources {
  readonly pods: Pick<Reflector<Pod>, 'store' | 'get'>;
  readonly podGroups: Pick<Reflector<PodGroup>, 'store' | 'get'>;
  /** The owners a PodGroup's claim is checked against (policy/jobs/job-identity.ts). */
  readonly vcJobs: JobObjectCache;
  readonly ascendJobs: JobObjectCache;
}

const ownerObject = (o: KubeObject | undefined): OwnerObject | undefined =>
  o === undefined ? undefined : { namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '', uid: o.metadata?.uid ?? '' };

/**
 * A PodGroup's or pod's claim checked against the job caches; undefined when it claims no Volcano Job
 * or AscendJob (not a job we handle). `explain` also looks for the claimed UID elsewhere (a scan of
 * the cache; for the refusal's log line, not for the hot path).
 */
export function identityOf(o: KubeObject, jobs: Pick<JobIndexSources, 'vcJobs' | 'ascendJobs'>, explain = false): { claim: OwnerClaim; verdict: IdentityVerdict } | undefined {
  const claim = jobOwnerOf(o);
  if (claim === undefined) return undefined;
  const cache = claim.kind === 'vcjob' ? jobs.vcJobs : jobs.ascendJobs;
  const ns = o.metadata?.namespace ?? '';
  const owner = ownerObject(cache.get(`${ns}/${claim.name}`));
  let holder: OwnerObject | undefined;
  if (explain && owner?.uid !== claim.uid) {
    for (const j of cache.store.values()) if (j.metadata?.uid === claim.uid) { holder = ownerObject(j); break; }
  }
  return { claim, verdict: verifyJobIdentity({ namespace: ns, name: o.metadata?.name ?? '' }, claim, owner, holder) };
}

/** What of a pod a placement is made of: a change of it may take the pod out of the job's placement. */
const placementSignature = (p: Pod): string => {
  const a = p.metadata?.annotations ?? {};
  return JSON.stringify([p.spec?.nodeName, a[RANK_INDEX_ANNOTATION], a[ASCEND_REAL_ANNOTATION], p.metadata?.deletionTimestamp !== undefined, a[POD_TYPE_ANNOTATION] ?? p.metadata?.labels?.[POD_TYPE_ANNOTATION]]);
};

/**
 * How a reader reads a job. `claims`: which AscendReal claims count for its pods' NPUs (default: the
 * index's mode). `placement`: also the job's last complete placement (an index that keeps them); only
 * such a read brings the placement up to date (or drops it with the job), so the placement moves at
 * the moments its own readers look, whoever else reads the job.
 */
export interface JobQuery {
  readonly claims?: NpuClaimMode;
  readonly placement?: boolean;
}

export interface JobIndexOptions {
  /**
   * Keep each job's last complete placement (policy/jobs/job-placement.ts): ClusterD's
   * PreServerList, through which it maps faults to jobs. Off: nothing is kept (no cost).
   */
  readonly keepPlacements?: boolean;
}

export class JobIndex implements JobLookup {
  private readonly sources: JobIndexSources;
  private readonly npuClaims: NpuClaimMode;
  private readonly keepPlacements: boolean;
  /** Job key -> its last complete placement (`keepPlacements`). */
  private readonly placements = new Map<string, JobPlacement>();
  /** Node -> keys of the jobs whose placement has a pod there. */
  private readonly placedOnNode = new Map<string, Set<string>>();
  /** Jobs whose pods changed since their placement was last computed (computed when read, or before a pod of theirs goes). */
  private readonly unsettled = new Set<string>();
  private readonly entries = new Map<string, PodIndexEntry>();
  private readonly byOwner = new Map<string, Set<string>>();
  private readonly byGroup = new Map<string, Set<string>>();
  private readonly byNode = new Map<string, Set<string>>();
  /** Claimed owner UID -> keys of the PodGroups claiming it (kept by `applyPodGroup`, for `jobKeyOfUid`). */
  private readonly claims = new Map<string, Set<string>>();
  private readonly counts = { pods: 0, podGroups: 0 };

  constructor(sources: JobIndexSources, claims: NpuClaimMode = 'annotation', options: JobIndexOptions = {}) {
    this.sources = sources;
    this.npuClaims = claims;
    this.keepPlacements = options.keepPlacements === true;
  }

  /** Pod and PodGroup events applied so far (each event is applied once, by the sources' feed). */
  get eventsApplied(): { readonly pods: number; readonly podGroups: number } { return { ...this.counts }; }

  /** Rebuilds the pod index from the pod cache (kept placements stay; each is recomputed when next read). */
  rebuild(): void {
    for (const k of [...this.entries.keys()]) this.remove(k);
    for (const pod of this.sources.pods.store.values()) this.put(pod);
    this.recheckPlacements();
  }

  /** Every job's placement is computed again when next read (kept until then, and kept when its pods are not complete). */
  recheckPlacements(): void {
    if (!this.keepPlacements) return;
    for (const pod of this.sources.pods.store.values()) for (const k of this.jobKeysOfPod(pod)) this.unsettled.add(k);
    for (const k of this.placements.keys()) this.unsettled.add(k);
  }

  /** Keeps the index in step with one pod event; returns the job key(s) the pod belongs to. */
  apply(ev: WatchEvent<Pod>): string[] {
    this.counts.pods++;
    const before = ev.type === 'update' ? this.jobKeysOfPod(ev.old) : [];
    const changed = ev.type !== 'update' || placementSignature(ev.old) !== placementSignature(ev.obj);
    if (this.keepPlacements && ev.type !== 'add' && changed) {
      // The pod may leave its job's placement: record the job's placement as it stood before the
      // event (the informer cache holds the pod as it is after it, so the old one stands in).
      const old = ev.type === 'update' ? ev.old : ev.obj;
      for (const k of this.jobKeysOfPod(old)) if (this.unsettled.delete(k)) this.computePlacement(k, this.jobPods(k, old));
    }
    if (ev.type === 'delete') this.remove(objectKey(ev.obj));
    else this.put(ev.obj);
    const keys = [...new Set([...before, ...this.jobKeysOfPod(ev.obj)])];
    // Only a pod arriving or changing its place can complete a job; a pod going (deleted, or marked
    // for deletion) cannot, so a job losing all its pods is computed once, not once per pod.
    const mayComplete = ev.type === 'add' || (ev.type === 'update' && changed && ev.obj.metadata?.deletionTimestamp === undefined);
    if (this.keepPlacements && mayComplete) for (const k of keys) this.unsettled.add(k);
    return keys;
  }

  /**
   * The job's last complete placement (`keepPlacements`): kept while pods are missing, replaced once
   * the job is complete again, dropped with the job.
   */
  placement(key: string): JobPlacement | undefined {
    this.settle(key);
    return this.placements.get(key);
  }

  /** Job keys a pod can belong to: from its controller owner and from its group-name annotation. */
  jobKeysOfPod(p: Pod): string[] {
    const ns = p.metadata?.namespace ?? '';
    const out: string[] = [];
    const owner = jobOwnerOf(p);
    if (owner !== undefined) out.push(`${ns}/${owner.name}-${owner.uid}`);
    const group = p.metadata?.annotations?.[GROUP_NAME_ANNOTATION];
    if (group !== undefined && group !== '' && !out.includes(`${ns}/${group}`)) out.push(`${ns}/${group}`);
    return out;
  }

  /**
   * Keys of jobs with a pod on any of these nodes; with `placed` (`keepPlacements`), also of jobs
   * whose last complete placement has a pod there (ClusterD's fault-to-job mapping).
   */
  jobKeysOnNodes(nodes: Iterable<string>, placed = false): Set<string> {
    const out = new Set<string>();
    const list = [...nodes];
    for (const n of list) {
      for (const podKey of this.byNode.get(n) ?? []) {
        const pod = this.sources.pods.get(podKey);
        if (pod !== undefined) for (const k of this.jobKeysOfPod(pod)) out.add(k);
      }
    }
    if (placed && this.keepPlacements) {
      const candidates = new Set(list.flatMap((n) => [...this.placedOnNode.get(n) ?? []]));
      for (const k of candidates) {
        if (out.has(k)) continue;
        this.settle(k);
        if (this.placements.get(k)?.pods.some((p) => list.includes(p.node)) === true) out.add(k);
      }
    }
    return out;
  }

  /** Every PodGroup key: the jobs "in the session" (Volcano keeps reason history only for them). */
  liveJobKeys(): Set<string> {
    const keys = new Set(this.sources.podGroups.store.keys());
    // A Volcano Job between the PodGroups of its restart is still in the session (restartingPodGroup).
    for (const [k, job] of this.sources.vcJobs.store) {
      const uid = job.metadata?.uid;
      if (uid !== undefined && VOLCANO_RESTART_PHASES.has((job as { status?: { state?: { phase?: string } } }).status?.state?.phase ?? '')) keys.add(`${k}-${uid}`);
    }
    return keys;
  }

  /** The owner a PodGroup names, when the job caches confirm it (namespace, name and UID); else undefined. */
  verifiedOwner(pg: PodGroup): JobOwner | undefined {
    const id = identityOf(pg, this.sources);
    return id?.verdict.ok === true ? id.claim : undefined;
  }

  /** Keys of PodGroups that are jobs we handle (their owner verified). */
  jobKeys(): string[] {
    return [...this.sources.podGroups.store.entries()].filter(([, pg]) => this.verifiedOwner(pg) !== undefined).map(([k]) => k);
  }

  /** Every job's identity, knobs and PodGroup labels, without its pods (cheap). */
  jobHeaders(): JobHeader[] {
    const out: JobHeader[] = [];
    for (const [key, pg] of this.sources.podGroups.store) {
      const owner = this.verifiedOwner(pg);
      if (owner === undefined) continue;
      const labels = pg.metadata?.labels ?? {};
      out.push({ key, uid: owner.uid, name: owner.name, namespace: pg.metadata?.namespace ?? '', labels, knobs: parseJobKnobs(labels, pg.metadata?.annotations).knobs });
    }
    return out;
  }

  /**
   * Keeps the claims index (`jobKeyOfUid`) and the placements in step with one PodGroup event (the
   * sources' feed calls it for every event).
   */
  applyPodGroup(ev: WatchEvent<PodGroup>): void {
    this.counts.podGroups++;
    const key = objectKey(ev.obj);
    if (ev.type === 'update') removeFrom(this.claims, jobOwnerOf(ev.old)?.uid, key);
    if (ev.type === 'delete') removeFrom(this.claims, jobOwnerOf(ev.obj)?.uid, key);
    else addTo(this.claims, jobOwnerOf(ev.obj)?.uid, key);
    if (ev.type !== 'delete' && this.keepPlacements) this.unsettled.add(key); // minMember may have changed
    // A job gone (not a Volcano restart between its PodGroups) takes its placement with it.
    if (ev.type === 'delete' && this.restartingPodGroup(key) === undefined) this.setPlacement(key, undefined);
  }

  /**
   * The key of the job whose UID this is (a gRPC jobId): of the PodGroups claiming the UID, the one
   * whose owner is verified; a claimant whose owner is not is never it, whichever came first.
   */
  jobKeyOfUid(uid: string): string | undefined {
    const keys = [...this.claims.get(uid) ?? []].filter((k) => { const pg = this.sources.podGroups.get(k); return pg !== undefined && this.verifiedOwner(pg)?.uid === uid; });
    if (keys.length <= 1) return keys[0];
    const pg = this.sources.podGroups.get(keys[0]!)!;
    const owner = this.verifiedOwner(pg)!;
    return pickClaimant(keys, { namespace: pg.metadata?.namespace ?? '', name: owner.name, uid });
  }

  /**
   * The job view of one PodGroup key, or undefined when it is gone or not a job (no owner, or one not
   * verified): its current pods, their NPUs counted in `q.claims`; with `q.placement`, also its last
   * complete placement (see JobQuery).
   */
  job(key: string, q: JobQuery = {}): JobEntry | undefined {
    const claims = q.claims ?? this.npuClaims;
    // A placement is always computed in the index's own mode, whoever reads it.
    const found = this.jobPods(key, undefined, q.placement === true ? this.npuClaims : claims);
    if (q.placement !== true) return found === undefined ? undefined : this.entryOf(found);
    if (found === undefined) {
      this.setPlacement(key, undefined);
      return undefined;
    }
    this.settle(key, found);
    const placement = this.placements.get(key);
    const entry = this.entryOf(claims === this.npuClaims ? found : this.jobPods(key, undefined, claims)!);
    return placement === undefined ? entry : { ...entry, placement };
  }

  private entryOf({ pg, view, raw }: NonNullable<ReturnType<JobIndex['jobPods']>>): JobEntry {
    const { knobs, warnings } = parseJobKnobs(pg.metadata?.labels, pg.metadata?.annotations);
    const cap = inferenceCapOf(pg.metadata?.labels, [...raw.values()].map((p) => p.metadata?.labels));
    return { view, knobs, knobsInput: knobsInputOf(knobs, cap), warnings, podGroup: pg };
  }

  /** The job's PodGroup, verified owner, raw pods and view (NPUs counted in `claims`); undefined when it is gone or not a job. */
  private jobPods(key: string, before?: Pod, claims: NpuClaimMode = this.npuClaims): { pg: PodGroup; owner: JobOwner; raw: Map<string, Pod>; view: JobView } | undefined {
    const pg = this.sources.podGroups.get(key) ?? this.restartingPodGroup(key);
    if (pg === undefined) return undefined;
    const owner = this.verifiedOwner(pg);
    if (owner === undefined) return undefined;
    const ns = pg.metadata?.namespace ?? '';
    // Pods by owner: those whose controller reference names this very owner (name and UID) in its namespace.
    const owned = (p: Pod): boolean => { const o = jobOwnerOf(p); return o === undefined || (o.uid === owner.uid && o.name === owner.name); };
    const podKeys = new Set([...(this.byOwner.get(owner.uid) ?? []), ...(this.byGroup.get(key) ?? [])]);
    const raw = new Map<string, Pod>();
    const beforeKey = before === undefined ? undefined : objectKey(before);
    for (const k of podKeys) {
      const p = k === beforeKey ? before : this.sources.pods.get(k);
      if (p !== undefined && p.metadata?.namespace === ns && (this.byGroup.get(key)?.has(objectKey(p)) === true || owned(p))) raw.set(p.metadata?.name ?? '', p);
    }
    const pods = [...raw.values()]
      .map((p) => podViewFromMeta({ ...podMetaOf(p), npus: npuClaimOf(p, claims).npus }))
      .sort((a, b) => (a.rank ?? Number.MAX_SAFE_INTEGER) - (b.rank ?? Number.MAX_SAFE_INTEGER) || a.name.localeCompare(b.name));
    const minMember = (pg.spec as { minMember?: unknown } | undefined)?.minMember;
    const view: JobView = {
      key, namespace: ns, name: owner.name, uid: owner.uid, kind: owner.kind, pods,
      ...(typeof minMember === 'number' && minMember > 0 ? { minAvailable: minMember } : {}),
    };
    return { pg, owner, raw, view };
  }

  /** Recomputes the job's placement if its pods changed since: replaced when complete, dropped when the job is gone. */
  private settle(key: string, known?: ReturnType<JobIndex['jobPods']>): void {
    if (!this.keepPlacements || !this.unsettled.delete(key)) return;
    this.computePlacement(key, known ?? this.jobPods(key));
  }

  private computePlacement(key: string, found: ReturnType<JobIndex['jobPods']>): void {
    if (found === undefined) {
      this.setPlacement(key, undefined);
      return;
    }
    const next = completePlacement(found.view, (p) => { const r = found.raw.get(p.name); return r !== undefined && requestedNpus(r) > 0; }, this.placements.get(key)?.pods.length);
    if (next !== undefined) this.setPlacement(key, next);
  }

  private setPlacement(key: string, next: JobPlacement | undefined): void {
    const prev = this.placements.get(key);
    if (prev !== undefined) for (const n of placementNodes(prev)) removeFrom(this.placedOnNode, n, key);
    if (next === undefined) {
      this.placements.delete(key);
      this.unsettled.delete(key);
      return;
    }
    this.placements.set(key, next);
    for (const n of placementNodes(next)) addTo(this.placedOnNode, n, key);
  }

  /**
   * The PodGroup of a Volcano Job its controller is restarting. RestartJob's killJob deletes the
   * PodGroup and syncJob re-creates it (the Job's labels and annotations, minMember = minAvailable)
   * only once every pod is gone (volcano pkg/controllers/job/job_controller_actions.go killJob,
   * createOrUpdatePodGroup). The job is the same (same UID) meanwhile: a restart in progress (the
   * force after grace-over-time, its completion, the retry budget) must go on, not be dropped as gone.
   */
  private restartingPodGroup(key: string): PodGroup | undefined {
    const slash = key.indexOf('/');
    const ns = key.slice(0, slash);
    const pgName = key.slice(slash + 1);
    const dash = pgName.length - UID_LENGTH - 1;
    if (slash < 0 || dash <= 0 || pgName[dash] !== '-') return undefined;
    const name = pgName.slice(0, dash);
    const job = this.sources.vcJobs.get(`${ns}/${name}`) as (KubeObject & { spec?: { minAvailable?: unknown }; status?: { state?: { phase?: string } } }) | undefined;
    const uid = job?.metadata?.uid;
    if (job === undefined || uid !== pgName.slice(dash + 1) || !VOLCANO_RESTART_PHASES.has(job.status?.state?.phase ?? '')) return undefined;
    const minAvailable = job.spec?.minAvailable;
    return {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: {
        name: pgName, namespace: ns, labels: { ...job.metadata?.labels }, annotations: { ...job.metadata?.annotations },
        ownerReferences: [{ apiVersion: job.apiVersion ?? 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true }],
      },
      spec: typeof minAvailable === 'number' ? { minMember: minAvailable } : {},
    } as PodGroup;
  }

  private put(p: Pod): void {
    const key = objectKey(p);
    this.remove(key);
    const ns = p.metadata?.namespace ?? '';
    const group = p.metadata?.annotations?.[GROUP_NAME_ANNOTATION];
    const owner = jobOwnerOf(p);
    const entry: PodIndexEntry = {
      ...(owner ? { owner: owner.uid } : {}),
      ...(group ? { group: `${ns}/${group}` } : {}),
      ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
    };
    this.entries.set(key, entry);
    addTo(this.byOwner, entry.owner, key);
    addTo(this.byGroup, entry.group, key);
    addTo(this.byNode, entry.node, key);
  }

  private remove(key: string): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    this.entries.delete(key);
    removeFrom(this.byOwner, e.owner, key);
    removeFrom(this.byGroup, e.group, key);
    removeFrom(this.byNode, e.node, key);
  }
}
