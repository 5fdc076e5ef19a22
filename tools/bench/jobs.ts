/**
 * The bench's running jobs: creates the Volcano Jobs, PodGroups (phase Running) and bound pods, and
 * plays Volcano's job controller afterwards: once a job's pods were deleted and its node is healthy
 * again, the same pods (same names, new UIDs) are created again on the same nodes and kwok runs them.
 */
import { isConflict, isNotFound, paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { Pod } from '../../runtime/kube-objects.ts';
import type { Observer } from './observe.ts';
import { BENCH_NAMESPACE, podGroupObject, podName, podObject, vcJobObject, type JobSpec } from './fixtures.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` over items, `parallel` at a time. */
export async function inParallel<T>(items: readonly T[], parallel: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => { while (next < items.length) await fn(items[next++]!); };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker));
}

export class JobFleet {
  readonly jobs: readonly JobSpec[];
  private readonly client: KubeClient;
  private readonly observer: Observer;
  private readonly byNode = new Map<string, JobSpec>();

  constructor(client: KubeClient, observer: Observer, jobs: readonly JobSpec[]) {
    this.client = client;
    this.observer = observer;
    this.jobs = jobs;
    for (const j of jobs) for (const n of j.nodes) this.byNode.set(n, j);
  }

  jobOf(node: string): JobSpec | undefined { return this.byNode.get(node); }

  /** Current pod UIDs of a job, by pod name (from the watch cache). */
  podUids(job: JobSpec): Map<string, string> {
    const out = new Map<string, string>();
    for (let r = 0; r < job.nodes.length; r++) {
      const p = this.observer.pods.get(`${BENCH_NAMESPACE}/${podName(job, r)}`);
      if (p?.metadata?.uid !== undefined) out.set(podName(job, r), p.metadata.uid);
    }
    return out;
  }

  async create(parallel = 16): Promise<void> {
    await inParallel(this.jobs, parallel, async (job) => {
      let vj: KubeObject;
      try {
        vj = await this.client.create(paths.vcJobs(BENCH_NAMESPACE), vcJobObject(job));
      } catch (e) {
        if (!isConflict(e)) throw e;
        vj = await this.client.get(paths.vcJob(BENCH_NAMESPACE, job.name));
      }
      job.uid = vj.metadata?.uid ?? '';
      await this.createIfMissing(paths.podGroups(BENCH_NAMESPACE), podGroupObject(job));
      for (let r = 0; r < job.nodes.length; r++) await this.createIfMissing(paths.pods(BENCH_NAMESPACE), podObject(job, r));
    });
  }

  private async createIfMissing(collection: string, obj: KubeObject): Promise<void> {
    try {
      await this.client.create(collection, obj);
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }

  /** Every bench pod exists, is not being deleted and is Running. */
  allRunning(jobs: readonly JobSpec[] = this.jobs): boolean {
    for (const job of jobs) {
      for (let r = 0; r < job.nodes.length; r++) {
        const p: Pod | undefined = this.observer.pods.get(`${BENCH_NAMESPACE}/${podName(job, r)}`);
        if (p === undefined || p.metadata?.deletionTimestamp !== undefined || p.status?.phase !== 'Running') return false;
      }
    }
    return true;
  }

  async waitRunning(jobs: readonly JobSpec[] = this.jobs, timeoutMs = 300_000): Promise<void> {
    const t = await this.observer.waitFor(() => (this.allRunning(jobs) ? Date.now() : undefined), timeoutMs);
    if (Number.isNaN(t)) throw new Error(`bench pods not Running after ${timeoutMs} ms`);
  }

  /**
   * Volcano's part after a job-level reschedule: pods that were deleted come back (same name, new
   * UID) once the old ones are gone. Call after the faults of the job's nodes were recovered.
   */
  async restore(jobs: readonly JobSpec[], timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const missing: Array<{ job: JobSpec; rank: number }> = [];
    for (const job of jobs) {
      for (let r = 0; r < job.nodes.length; r++) {
        const key = `${BENCH_NAMESPACE}/${podName(job, r)}`;
        const p = this.observer.pods.get(key);
        if (p !== undefined && p.metadata?.deletionTimestamp === undefined) continue;
        missing.push({ job, rank: r });
      }
    }
    await inParallel(missing, 16, async ({ job, rank }) => {
      const key = `${BENCH_NAMESPACE}/${podName(job, rank)}`;
      for (;;) {
        const p = this.observer.pods.get(key);
        if (p === undefined) break;
        if (Date.now() > deadline) throw new Error(`pod ${key} still terminating`);
        // kwok removes a deleted pod at once; a graceful delete may need a push.
        if (p.metadata?.deletionTimestamp !== undefined) {
          try { await this.client.delete(paths.pod(BENCH_NAMESPACE, podName(job, rank)), { gracePeriodSeconds: 0 }); } catch (e) { if (!isNotFound(e)) throw e; }
        }
        await sleep(50);
      }
      await this.createIfMissing(paths.pods(BENCH_NAMESPACE), podObject(job, rank));
    });
    await this.waitRunning(jobs, Math.max(1000, deadline - Date.now()));
  }
}
