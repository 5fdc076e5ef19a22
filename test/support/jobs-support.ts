/**
 * Helpers of the jobs integration tests (not a test file): the per-test harness (a job-peer world and
 * Managers in-process, stopped after each test), the job's pods, ConfigMap reads.
 */
import { afterEach } from '@jest/globals';
import { paths, type HttpKubeClient, type KubeClient } from '../../runtime/kube-client.ts';
import { Manager, type ManagerDeps } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { createLogger, silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { parseRescheduleHistory, type RescheduleReason } from '../../schemas/job-reschedule-reason/job-reschedule-reason.ts';
import { parseVcjobFaultNpuData, type VcjobFaultNpuContent } from '../../schemas/vcjob-fault-npu/vcjob-fault-npu.ts';
import { JOB_JOURNAL_LABELS, JOB_STATE_KEY, JOB_STATE_NAMESPACE, jobStateCmName, journalShardOf, parseJobState, type JobStateRecord } from '../../schemas/job-state/job-state.ts';
import { jobPods, runningWithNpus, startWorld, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { adminClient, eventually } from './cluster.ts';
import { realClock } from '../../runtime/clock.ts';

export const BASE_ARGS = ['--http-port=0', '--cluster-info-refresh-seconds=0', '--burst-window-ms=200'];

/** A Manager built as main.ts builds it (flags), plus at most an action fault-injection hook. */
export async function startManager(client: KubeClient, args: readonly string[] = [], jobs?: ManagerDeps['jobs']): Promise<{ manager: Manager; metrics: Metrics }> {
  const metrics = new Metrics({ processMetrics: false });
  const level = process.env.JOBS_TEST_LOG;
  const log = level === '1' || level === 'debug' ? createLogger(level === 'debug' ? 'debug' : 'info', process.stderr) : silentLogger;
  const manager = new Manager({ clock: realClock, client, options: parseOptions([...BASE_ARGS, ...args], {}), log, metrics, ...(jobs ? { jobs } : {}) });
  await manager.start();
  return { manager, metrics };
}

export interface JobsHarness {
  /** Admin client on the shared control plane. */
  readonly client: HttpKubeClient;
  /** A job-peer world (nodes, device plugin, job peer), stopped after the test. */
  startWorld(opts: Parameters<typeof startWorld>[1]): Promise<World>;
  /** startManager on the harness's client; the Manager is stopped after the test. */
  startManager(args?: readonly string[], jobs?: ManagerDeps['jobs']): Promise<{ manager: Manager; metrics: Metrics }>;
  /** Stops a Manager now (a controller restart or kill) and forgets it. */
  stopManager(manager: Manager): Promise<void>;
}

/**
 * Call inside a describe: registers the afterEach that stops what each test started (its Managers
 * first, then its world), so one test's controller never acts on the next test's world.
 */
export function jobsHarness(client: HttpKubeClient = adminClient()): JobsHarness {
  const managers: Manager[] = [];
  let world: World | undefined;
  afterEach(async () => {
    for (const m of managers.splice(0)) await m.stop();
    await world?.stop();
    world = undefined;
  });
  return {
    client,
    async startWorld(opts) {
      world = await startWorld(client, opts);
      return world;
    },
    async startManager(args = [], jobs) {
      const started = await startManager(client, args, jobs);
      managers.push(started.manager);
      return started;
    },
    async stopManager(manager) {
      const i = managers.indexOf(manager);
      if (i >= 0) managers.splice(i, 1);
      await manager.stop();
    },
  };
}

/**
 * The real-stack block-widening tests' Volcano Job: 4 pods of 8 `resource` chips each, pod-level
 * rescheduling (`fault-scheduling: force`, `pod-rescheduling: on`), on the nodes labelled `vc-test: group`.
 */
export function blockJob(ns: string, name: string, resource: string, group: string, annotations: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
    metadata: { name, namespace: ns, labels: { 'ring-controller.atlas': 'ascend-910', 'fault-scheduling': 'force', 'pod-rescheduling': 'on' }, annotations },
    spec: {
      schedulerName: 'volcano', queue: 'default', minAvailable: 4, maxRetry: 3,
      tasks: [{
        name: 'worker', replicas: 4, minAvailable: 4, maxRetry: 3,
        template: {
          metadata: { labels: { app: 'mindspore', 'ring-controller.atlas': 'ascend-910' } },
          spec: { restartPolicy: 'Never', nodeSelector: { 'vc-test': group }, containers: [{ name: 'train', image: 'train:latest', resources: { requests: { [resource]: '8' }, limits: { [resource]: '8' } } }] },
        },
      }],
    },
  };
}

export const uidOf = (p: PodObj): string => p.metadata?.uid ?? '';
export const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);

/** The job's pods once there are `count` of them, all Running with NPUs. */
export async function runningPods(client: KubeClient, ns: string, job: string, count: number, timeoutMs = 30_000): Promise<PodObj[]> {
  return eventually(async () => { const ps = await jobPods(client, ns, job); return ps.length === count && ps.every(runningWithNpus) ? ps : undefined; }, timeoutMs);
}

export async function readCm(client: KubeClient, ns: string, name: string): Promise<ConfigMap | undefined> {
  return client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
}

export async function rescheduleReasonOf(client: KubeClient, jobKey: string): Promise<RescheduleReason | undefined> {
  const cm = await readCm(client, 'mindx-dl', 'job-reschedule-reason');
  const parsed = parseRescheduleHistory(cm?.data?.['recent-reschedule-records'] ?? '');
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value.get(jobKey);
}

/**
 * The job's reason record once it counts at least `times` reschedules. A decision writes its record
 * after its pod deletions, so a test that saw the pods go must wait for the record, not race it.
 */
export async function rescheduleReasonAfter(client: KubeClient, jobKey: string, times: number, timeoutMs = 10_000): Promise<RescheduleReason> {
  return eventually(async () => { const r = await rescheduleReasonOf(client, jobKey); return (r?.TotalRescheduleTimes ?? 0) >= times ? r : undefined; }, timeoutMs);
}

/**
 * A reason record as the ranks each round names with their reason (`rank:reason`, ranks sorted),
 * oldest round first: what the plugin's and our records must agree on (pod names, nodes and times differ).
 */
export function recordRounds(r: RescheduleReason): string[] {
  return [...(r.RescheduleRecords ?? [])].sort((a, b) => a.RescheduleTimeStamp - b.RescheduleTimeStamp)
    .map((rec) => [...(rec.ReasonOfTask ?? [])].sort((a, b) => Number(a.NodeRankIndex) - Number(b.NodeRankIndex)).map((t) => `${t.NodeRankIndex}:${t.RescheduleReason}`).join(' '));
}

export async function vcjobFaultNpu(client: KubeClient): Promise<VcjobFaultNpuContent> {
  const cm = await readCm(client, 'volcano-system', 'vcjob-fault-npu-cm');
  const parsed = parseVcjobFaultNpuData(cm?.data);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
}

/** The job's record as stored: the highest journal shard holding its UID, else an older per-job ConfigMap. */
export async function jobState(client: KubeClient, uid: string): Promise<JobStateRecord | undefined> {
  const shards = (await client.list<ConfigMap>(paths.configMaps(JOB_STATE_NAMESPACE), { labelSelector: Object.entries(JOB_JOURNAL_LABELS).map(([k, v]) => `${k}=${v}`).join(',') })).items
    .filter((c) => journalShardOf(c.metadata?.name ?? '') !== undefined)
    .sort((a, b) => journalShardOf(b.metadata!.name!)! - journalShardOf(a.metadata!.name!)!);
  const text = shards.find((c) => c.data?.[uid] !== undefined)?.data?.[uid] ?? (await readCm(client, JOB_STATE_NAMESPACE, jobStateCmName(uid)))?.data?.[JOB_STATE_KEY];
  if (text === undefined) return undefined;
  const parsed = parseJobState(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
}

export interface EventObj { reason?: string; message?: string; type?: string; involvedObject?: { name?: string; kind?: string } }

export async function podGroupEvents(client: KubeClient, ns: string, podGroup: string): Promise<EventObj[]> {
  const list = await client.list<EventObj>(paths.events(ns), { fieldSelector: `involvedObject.name=${podGroup}` });
  return list.items;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Prints a measurement line the note can quote. */
export function report(line: string): void {
  process.stdout.write(`[jobs] ${line}\n`);
}
