/**
 * Feeds ClusterD's job summary (reconcilers/job-summary.reconciler.ts): an index of PodGroups and
 * pods by job key (the controller ownerReference's UID, any kind, as ClusterD's GetJobKeyByPG /
 * GetJobKeyByPod), and a job key queued on every PodGroup or pod event of the job, except what
 * ClusterD ignores (soft-shared chips: `huawei.com/schedule_policy: chip1-softShareDev`).
 * The index is kept on every replica; the loop runs on the leader (started with the others).
 */
import type { Subscription } from 'rxjs';
import { map, merge } from 'rxjs';
import { objectKey, type WatchEvent } from '../runtime/reflector.ts';
import type { KubeObject } from '../runtime/kube-client.ts';
import type { ConfigMap, Node, Pod, PodGroup } from '../runtime/kube-objects.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { QueueClock } from '../runtime/clock.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { SummaryPod, SummaryPodGroup } from '../policy/jobs/job-summary.ts';
import type { ExceptionInputs, ExceptionJobObject } from '../policy/jobs/scheduling-exception.ts';
import { jobSummaryReconciler, JobSummaryStore } from '../reconcilers/job-summary.reconciler.ts';
import type { Sources } from './sources/sources.ts';
import { identityOf } from '../state/job-index.ts';

const SOFT_SHARE_KEY = 'huawei.com/schedule_policy';
const SOFT_SHARE = 'chip1-softShareDev';
const NODE_SN_ANNOTATION = 'product-serial-number';

/** The controller ownerReference (any kind): ClusterD's job key, name and kind. */
export function controllerOwner(o: KubeObject): { uid: string; name: string; kind: string } | undefined {
  const ref = o.metadata?.ownerReferences?.find((r) => r.controller === true);
  return ref === undefined ? undefined : { uid: ref.uid, name: ref.name, kind: ref.kind };
}

export function summaryPodGroupOf(pg: PodGroup): SummaryPodGroup | undefined {
  const owner = controllerOwner(pg);
  if (owner === undefined || owner.uid === '') return undefined;
  const spec = (pg.spec ?? {}) as { minMember?: unknown; minResources?: Record<string, unknown> };
  return {
    name: pg.metadata?.name ?? '', namespace: pg.metadata?.namespace ?? '',
    ownerUid: owner.uid, ownerName: owner.name, ownerKind: owner.kind,
    minMember: typeof spec.minMember === 'number' ? spec.minMember : 0,
    labels: pg.metadata?.labels ?? {}, annotations: pg.metadata?.annotations ?? {},
    minResources: spec.minResources === undefined || spec.minResources === null ? undefined : Object.keys(spec.minResources),
  };
}

export function summaryPodOf(p: Pod): SummaryPod {
  const containers = p.spec?.containers ?? [];
  const statuses = p.status?.containerStatuses ?? [];
  return {
    name: p.metadata?.name ?? '', namespace: p.metadata?.namespace ?? '', uid: p.metadata?.uid ?? '',
    nodeName: p.spec?.nodeName ?? '', phase: p.status?.phase ?? '',
    labels: p.metadata?.labels ?? {}, annotations: p.metadata?.annotations ?? {},
    containers: containers.map((c) => ({ limits: Object.keys(c.resources?.limits ?? {}), env: (c.env ?? []).map((e) => ({ name: e.name ?? '', value: e.value ?? '' })) })),
    containerStatuses: statuses.map((s) => ({ name: s.name ?? '', containerId: s.containerID ?? '' })),
  };
}

export interface JobSummaryControllerDeps {
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The controller's clock (runtime/clock.ts): report times and the loop's timers. */
  readonly clock: QueueClock;
}

export class JobSummaryController {
  readonly loop: ControllerLoop;
  readonly store = new JobSummaryStore();
  /** job key -> cache keys of the PodGroups naming it (the job's own is picked when read: `pgOf`) */
  private readonly pgByJob = new Map<string, Set<string>>();
  /** job key -> pod cache keys */
  private readonly podsByJob = new Map<string, Set<string>>();
  private sub: Subscription | undefined;
  private readonly d: JobSummaryControllerDeps;
  /**
   * `ns/name` of hot-switch backup pods whose source pod was deleted while in the hot switch (its
   * `inHotSwitchFlow=true`, naming them in `backupNewPodName`): ClusterD's backupPodsAfterSourcePodDeleted
   * (component/clusterd/pkg/domain/pod/pod_storage.go DeletePod).
   */
  private readonly releasedBackups = new Set<string>();

  constructor(d: JobSummaryControllerDeps) {
    this.d = d;
    const s = d.sources;
    this.loop = new ControllerLoop(jobSummaryReconciler({
      store: this.store, writer: d.writer, startMs: d.clock.now(),
      podGroup: (job) => { const k = this.pgOf(job); const pg = k === undefined ? undefined : s.podGroups.get(k); return pg === undefined ? undefined : summaryPodGroupOf(pg); },
      pods: (job) => this.podsOf(job).map(summaryPodOf),
      nodeSn: (n) => s.nodes.get(n)?.metadata?.annotations?.[NODE_SN_ANNOTATION] ?? '',
      snByIp: (ip) => snByIp(s.nodes.store.values(), ip),
      actual: (ns, name) => this.actual(ns, name),
      releasedBackup: (ns, name) => this.releasedBackups.has(`${ns}/${name}`),
      forgetReleasedBackup: (ns, name) => this.releasedBackups.delete(`${ns}/${name}`),
    }), { log: d.log, metrics: d.metrics, clock: d.clock });
  }

  /** Subscribes before the sources start so the initial lists feed the index. */
  start(): void {
    const s = this.d.sources;
    this.sub = merge(
      s.podGroups.events$.pipe(map((ev) => [true, ev] as const)),
      s.pods.events$.pipe(map((ev) => [false, ev] as const)),
    ).subscribe(([isPg, ev]) => this.apply(isPg, ev as WatchEvent<KubeObject>));
    // A job object arriving, changing or going can change which PodGroup and pods are its own.
    this.sub.add(merge(s.vcJobs.events$, s.ascendJobs.events$).subscribe((ev) => {
      const uid = ev.obj.metadata?.uid ?? '';
      if (this.pgByJob.has(uid) || this.podsByJob.has(uid)) this.loop.queue.add(uid);
    }));
  }

  stop(): void { this.sub?.unsubscribe(); }

  /** Leader: every known job once (ClusterD's informers' initial adds), then events. */
  startActing(): void {
    this.loop.start();
    for (const job of new Set([...this.pgByJob.keys(), ...this.podsByJob.keys()])) this.loop.queue.add(job);
  }

  async stopActing(): Promise<void> { await this.loop.stop(); }

  /** What ClusterD's scheduling exception collector reads: the job summary, PodGroups, pods, job objects. */
  exceptionInputs(): ExceptionInputs {
    const s = this.d.sources;
    type Cond = { type?: string; status?: string; reason?: string; message?: string };
    const conds = (cs: Cond[] | undefined) => (cs ?? []).map((c) => ({ type: c.type ?? '', status: c.status ?? '', reason: c.reason ?? '', message: c.message ?? '' }));
    const objects = (kind: 'vcjob' | 'acjob', store: Iterable<KubeObject & { status?: Record<string, unknown> }>): ExceptionJobObject[] =>
      [...store].map((o) => {
        const st = (o.status ?? {}) as { state?: { phase?: string }; conditions?: Cond[] };
        return { uid: o.metadata?.uid ?? '', name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? '', kind, phase: st.state?.phase ?? '', conditions: conds(st.conditions) };
      });
    return {
      jobs: [...this.store.all()].map(([key, j]) => ({ key, name: j.name, jobType: j.jobType, namespace: j.namespace, status: j.status, pgName: j.pgName })),
      podGroup: (ns, name) => {
        const pg = s.podGroups.get(`${ns}/${name}`);
        if (pg === undefined) return undefined;
        const spec = (pg.spec ?? {}) as { minMember?: number; queue?: string };
        return { phase: pg.status?.phase ?? '', conditions: conds(pg.status?.conditions as Cond[] | undefined), minMember: spec.minMember ?? 0, queue: spec.queue ?? '' };
      },
      pods: (job) => this.podsOf(job).map((p) => {
        const st = p.status ?? {};
        return { namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '', phase: st.phase ?? '', reason: st.reason ?? '', message: st.message ?? '' };
      }),
      jobObjects: [...objects('acjob', s.ascendJobs.store.values()), ...objects('vcjob', s.vcJobs.store.values())],
    };
  }

  private actual(namespace: string, name: string): ConfigMap | undefined {
    return this.d.sources.jobSummaryConfigMaps.get(`${namespace}/${name}`);
  }

  /**
   * The job's PodGroup. Jobs are keyed by the controller owner's UID, as ClusterD keys them, but a
   * PodGroup naming a Volcano Job or AscendJob is the job's only when that owner exists with the
   * claimed namespace, name and UID (policy/jobs/job-identity.ts), checked when read (the job caches
   * may fill after the PodGroup's event). A claim of another kind cannot be checked: the first seen
   * counts, and only if no claimant is verified.
   */
  private pgOf(job: string): string | undefined {
    const s = this.d.sources;
    let unchecked: string | undefined;
    for (const k of this.pgByJob.get(job) ?? []) {
      const pg = s.podGroups.get(k);
      if (pg === undefined) continue;
      const id = identityOf(pg, s);
      if (id === undefined) unchecked ??= k;
      else if (id.verdict.ok) return k;
    }
    return unchecked;
  }

  /** The job's PodGroup (as the summary picks it), for TrainingDataTrace (controllers/grpc-datatrace.ts). */
  podGroupOf(job: string): PodGroup | undefined {
    const k = this.pgOf(job);
    return k === undefined ? undefined : this.d.sources.podGroups.get(k);
  }

  /** The job's pods, as the summary reads them. */
  jobPods(job: string): Pod[] {
    return this.podsOf(job);
  }

  /** The job's pods: in its PodGroup's namespace, and not refused as another job's (as `pgOf`). */
  private podsOf(job: string): Pod[] {
    const s = this.d.sources;
    const pgKey = this.pgOf(job);
    const ns = pgKey === undefined ? undefined : s.podGroups.get(pgKey)?.metadata?.namespace;
    return [...this.podsByJob.get(job) ?? []].map((k) => s.pods.get(k))
      .filter((p): p is Pod => p !== undefined && (ns === undefined || p.metadata?.namespace === ns) && identityOf(p, s)?.verdict.ok !== false);
  }

  private apply(isPg: boolean, ev: WatchEvent<KubeObject>): void {
    const o = ev.obj;
    const owner = controllerOwner(o);
    if (owner === undefined || owner.uid === '') return;
    const key = objectKey(o);
    if (isPg) {
      if (ev.type === 'update') removeKey(this.pgByJob, controllerOwner(ev.old)?.uid, key);
      if (ev.type === 'delete') removeKey(this.pgByJob, owner.uid, key);
      else this.pgByJob.set(owner.uid, (this.pgByJob.get(owner.uid) ?? new Set<string>()).add(key));
      if (o.metadata?.annotations?.[SOFT_SHARE_KEY] === SOFT_SHARE) return;
    } else {
      if (ev.type === 'update') this.untrackPod(ev.old, objectKey(ev.old));
      if (ev.type === 'delete') {
        this.untrackPod(o, key);
        const a = o.metadata?.annotations ?? {};
        if (a.inHotSwitchFlow === 'true' && a.backupNewPodName !== undefined) this.releasedBackups.add(`${o.metadata?.namespace ?? ''}/${a.backupNewPodName}`);
      }
      else {
        const set = this.podsByJob.get(owner.uid) ?? new Set<string>();
        set.add(key);
        this.podsByJob.set(owner.uid, set);
      }
      if (o.metadata?.annotations?.[SOFT_SHARE_KEY] === SOFT_SHARE) return;
    }
    this.loop.queue.add(owner.uid);
  }

  private untrackPod(o: KubeObject, key: string): void {
    const uid = controllerOwner(o)?.uid;
    if (uid === undefined) return;
    const set = this.podsByJob.get(uid);
    set?.delete(key);
    if (set?.size === 0) this.podsByJob.delete(uid);
  }
}

function removeKey(m: Map<string, Set<string>>, uid: string | undefined, key: string): void {
  if (uid === undefined) return;
  const set = m.get(uid);
  set?.delete(key);
  if (set?.size === 0) m.delete(uid);
}

function snByIp(nodes: Iterable<Node>, ip: string): string {
  for (const n of nodes) {
    const addrs = n.status?.addresses ?? [];
    if (addrs.find((a) => a.type === 'InternalIP')?.address === ip) return n.metadata?.annotations?.[NODE_SN_ANNOTATION] ?? '';
  }
  return '';
}
