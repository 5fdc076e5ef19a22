/**
 * The job peer: a small stand-in for Volcano's job controller, for tests and the demo on a control
 * plane without Volcano. It does only what the fault-handling path needs from that controller:
 *
 * - For each Volcano Job (batch.volcano.sh/v1alpha1) in its namespace, it creates the PodGroup
 *   `<job>-<uid>` (scheduling.volcano.sh/v1beta1), copying the job's labels and annotations, with a
 *   controller ownerReference to the Job and `spec.minMember` = `spec.minAvailable` (else the sum of
 *   replicas), as Volcano does (docs/formats.md#crds).
 * - For each `spec.tasks[i]` (name, replicas, template) it keeps the pods `<job>-<task>-<index>`:
 *   the template's spec with `schedulerName: default-scheduler` (no vc-scheduler here), its labels
 *   plus `volcano.sh/job-name`, `volcano.sh/job-namespace`, `volcano.sh/task-spec`, its annotations
 *   plus `hccl/rankIndex` (ranks numbered across tasks in order), `scheduling.k8s.io/group-name`,
 *   and a controller ownerReference to the Job.
 * - When such a pod is deleted (gone from the apiserver, not merely terminating) it creates it again
 *   under the same name, as Volcano's job controller does for a restarted job; Failed pods are left
 *   alone (vcjob `policies: [{event: PodFailed, action: Ignore}]`).
 * - It counts, per job, pods created again (`restarts`), pod UIDs that were deleted, and when each
 *   pod was first seen terminating or gone (`goneAtMs`), for the tests' measurements.
 *
 * Not modelled: job phases, maxRetry, plugins (svc/ssh/env), Commands.
 */
import { paths, isConflict, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { Reflector, type WatchEvent } from '../../runtime/reflector.ts';
import { realClock } from '../../runtime/clock.ts';

export const JOB_NAME_LABEL = 'volcano.sh/job-name';
export const JOB_NAMESPACE_LABEL = 'volcano.sh/job-namespace';
export const TASK_SPEC_LABEL = 'volcano.sh/task-spec';
export const RANK_INDEX_ANNOTATION = 'hccl/rankIndex';
export const GROUP_NAME_ANNOTATION = 'scheduling.k8s.io/group-name';
const VCJOB_API = 'batch.volcano.sh/v1alpha1';

type Meta = { labels?: Record<string, string>; annotations?: Record<string, string> };
interface Task { name?: string; replicas?: number; template?: { metadata?: Meta; spec?: Record<string, unknown> } }
type VcJob = KubeObject & { spec?: { minAvailable?: number; queue?: string; tasks?: Task[] } };
type Pod = KubeObject & { spec?: { nodeName?: string } };

export interface JobPeerOptions {
  readonly namespace: string;
  readonly now?: () => number;
}

export interface JobStats {
  /** Pods created again after their first creation. */
  restarts: number;
  /** Pod UIDs of this job seen deleted or terminating. */
  readonly deletedUids: Set<string>;
}

export class JobPeer {
  private readonly client: KubeClient;
  private readonly ns: string;
  private readonly now: () => number;
  private readonly jobs: Reflector<VcJob>;
  private readonly pods: Reflector<Pod>;
  private readonly groups: Reflector<KubeObject>;
  private readonly created = new Set<string>();
  private readonly stats = new Map<string, JobStats>();
  private readonly gone = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Errors met while syncing (tests assert it stays empty). */
  readonly errors: string[] = [];

  constructor(client: KubeClient, opts: JobPeerOptions) {
    this.client = client;
    this.ns = opts.namespace;
    this.now = opts.now ?? Date.now;
    this.jobs = new Reflector<VcJob>(client, { clock: realClock, name: 'peer_vcjobs', path: paths.vcJobs(this.ns) });
    this.pods = new Reflector<Pod>(client, { clock: realClock, name: 'peer_pods', path: paths.pods(this.ns) });
    this.groups = new Reflector<KubeObject>(client, { clock: realClock, name: 'peer_podgroups', path: paths.podGroups(this.ns) });
    this.jobs.events$.subscribe({ next: (ev) => this.kick(ev.obj.metadata?.name ?? ''), error: () => undefined });
    this.pods.events$.subscribe({ next: (ev) => this.onPod(ev), error: () => undefined });
  }

  async start(): Promise<void> {
    for (const r of [this.jobs, this.pods, this.groups]) r.start();
    await Promise.all([this.jobs.waitForSync(), this.pods.waitForSync(), this.groups.waitForSync()]);
    for (const name of this.jobs.store.keys()) this.kick(name.split('/')[1] ?? '');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const r of [this.jobs, this.pods, this.groups]) r.stop();
    await this.chain;
  }

  /** Per-job counters (created on first use). */
  statsOf(job: string): JobStats {
    let s = this.stats.get(job);
    if (s === undefined) { s = { restarts: 0, deletedUids: new Set() }; this.stats.set(job, s); }
    return s;
  }

  /** When the pod with this UID was first seen terminating or gone (Unix ms). */
  goneAtMs(uid: string): number | undefined {
    return this.gone.get(uid);
  }

  /** Resolves when every queued sync has run. */
  async idle(): Promise<void> {
    await this.chain;
  }

  private onPod(ev: WatchEvent<Pod>): void {
    const job = ev.obj.metadata?.labels?.[JOB_NAME_LABEL];
    if (job === undefined) return;
    const uid = ev.obj.metadata?.uid ?? '';
    if ((ev.type === 'delete' || ev.obj.metadata?.deletionTimestamp !== undefined) && !this.gone.has(uid)) {
      this.gone.set(uid, this.now());
      this.statsOf(job).deletedUids.add(uid);
    }
    if (ev.type === 'delete') this.kick(job);
  }

  private kick(job: string): void {
    if (job === '' || this.stopped) return;
    this.dirty.add(job);
    this.chain = this.chain.then(async () => {
      if (!this.dirty.delete(job) || this.stopped) return;
      try {
        await this.sync(job);
      } catch (e) {
        this.errors.push(`${job}: ${String(e)}`);
        setTimeout(() => this.kick(job), 200).unref();
      }
    });
  }

  private async sync(name: string): Promise<void> {
    const job = this.jobs.get(`${this.ns}/${name}`);
    const uid = job?.metadata?.uid;
    if (job === undefined || uid === undefined) return;
    const owner = { apiVersion: VCJOB_API, kind: 'Job', name, uid, controller: true, blockOwnerDeletion: true };
    const tasks = job.spec?.tasks ?? [];
    const pgName = `${name}-${uid}`;
    if (this.groups.get(`${this.ns}/${pgName}`) === undefined) {
      const replicas = tasks.reduce((n, t) => n + (t.replicas ?? 0), 0);
      await this.createOnce(paths.podGroups(this.ns), {
        apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
        metadata: { name: pgName, namespace: this.ns, labels: { ...job.metadata?.labels }, annotations: { ...job.metadata?.annotations }, ownerReferences: [owner] },
        spec: { minMember: job.spec?.minAvailable ?? replicas, queue: job.spec?.queue ?? 'default' },
      });
    }
    let rank = 0;
    for (const task of tasks) {
      const taskName = task.name ?? 'task';
      for (let i = 0; i < (task.replicas ?? 0); i++, rank++) {
        const podName = `${name}-${taskName}-${i}`;
        if (this.pods.get(`${this.ns}/${podName}`) !== undefined) continue;
        const tm = task.template?.metadata ?? {};
        const pod = {
          apiVersion: 'v1', kind: 'Pod',
          metadata: {
            name: podName, namespace: this.ns, ownerReferences: [owner],
            labels: { ...tm.labels, [JOB_NAME_LABEL]: name, [JOB_NAMESPACE_LABEL]: this.ns, [TASK_SPEC_LABEL]: taskName },
            annotations: { ...tm.annotations, [RANK_INDEX_ANNOTATION]: String(rank), [GROUP_NAME_ANNOTATION]: pgName, [JOB_NAME_LABEL]: name, [TASK_SPEC_LABEL]: taskName },
          },
          spec: { ...task.template?.spec, schedulerName: 'default-scheduler' },
        };
        const key = `${uid}/${podName}`;
        if (await this.createOnce(paths.pods(this.ns), pod)) {
          if (this.created.has(key)) this.statsOf(name).restarts++;
          this.created.add(key);
        }
      }
    }
  }

  /** POST; an AlreadyExists (the cache lagging our own create) is fine. */
  private async createOnce(path: string, obj: KubeObject): Promise<boolean> {
    try {
      await this.client.create(path, obj);
      return true;
    } catch (e) {
      if (isConflict(e)) return false;
      throw e;
    }
  }
}

/** Starts a peer for one namespace (the demo's entry point). */
export async function startJobPeer(client: KubeClient, opts: JobPeerOptions): Promise<JobPeer> {
  const peer = new JobPeer(client, opts);
  await peer.start();
  return peer;
}
