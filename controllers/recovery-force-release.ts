/**
 * The recovery flow's part of SuperPod IPC force release (docs/rules.md#recover.force-release,
 * #recover.fault-job-info-clear): turns the FSM's publish and clear commands, a PodGroup going away and
 * a pod annotated `reschedule-in-place=true` into operations of the fault-job-info reconciler
 * (reconcilers/fault-job-info.reconciler.ts), with the job's facts read from the caches: its last
 * complete placement and pods' device annotations, and the Nodes' SuperPod annotations. The FSM
 * itself waits for NodeD (`--recovery-timings` forceRelease, 10 s), whatever was written, except for
 * an A5 job, which has neither entry nor wait (docs/rules.md#recover.force-release-a5).
 * Leader only: the loop runs between startActing and stopActing.
 */
import type { WatchEvent } from '../runtime/reflector.ts';
import type { Node, Pod } from '../runtime/kube-objects.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import type { Clock } from '../runtime/clock.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { RULE } from '../vocabulary/rule-ids.ts';
import { encodeFaultJobEntry, FAULT_JOB_INFO_CM_NAME } from '../schemas/fault-job-info/fault-job-info.ts';
import { BASE_DEVICE_INFOS_ANNOTATION, chipPrefixOf, parseBaseDeviceInfos, SERVER_TYPE_ANNOTATION, SUPER_POD_ID_ANNOTATION, superPodIdOf, type SuperPodNode } from '../schemas/super-pod-device/super-pod-device.ts';
import { clearDelayMs, forceReleasePlan, type ClearCause, type ForceReleaseServer } from '../policy/recovery/force-release.ts';
import { DEVICE_910_ANNOTATION, DEVICE_NPU_ANNOTATION, parsePodDevice } from '../policy/jobs/job-summary.ts';
import { FAULT_JOB_INFO_OPS_KEY, FAULT_JOB_INFO_PRUNE_KEY, faultJobInfoReconciler, type FaultJobInfoReconciler } from '../reconcilers/fault-job-info.reconciler.ts';
import { jobOwnerOf, type JobEntry } from '../state/job-index.ts';
import type { Sources } from './sources/sources.ts';

/** api.RescheduleInPlaceKey / RescheduleInPlaceValue: Volcano's mark of a fault pod placed back on its node. */
export const RESCHEDULE_IN_PLACE_ANNOTATION = 'reschedule-in-place';
const RESCHEDULE_IN_PLACE_VALUE = 'true';

export interface ForceReleaseDeps {
  readonly sources: Sources;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
  /** The job UID is a job the controller knows. */
  readonly known: (jobId: string) => boolean;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly clock: Clock;
}

export class ForceRelease {
  private readonly d: ForceReleaseDeps;
  private loop: ControllerLoop | undefined;
  private reconciler: FaultJobInfoReconciler | undefined;
  /** Nodes whose SuperPod annotations were last found unreadable (logged and counted once per value). */
  private readonly badNodes = new Map<string, string>();

  constructor(d: ForceReleaseDeps) {
    this.d = d;
  }

  startActing(): void {
    if (this.loop !== undefined) return;
    const d = this.d;
    this.reconciler = faultJobInfoReconciler({
      namespace: d.namespace, writer: d.writer, known: d.known, metrics: d.metrics,
      actual: () => d.sources.clusterSystemConfigMaps.get(`${d.namespace}/${FAULT_JOB_INFO_CM_NAME}`),
    });
    this.loop = new ControllerLoop(this.reconciler, { log: d.log, metrics: d.metrics, clock: d.clock });
    this.loop.start();
    this.loop.queue.add(FAULT_JOB_INFO_PRUNE_KEY);
  }

  async stopActing(): Promise<void> {
    const loop = this.loop;
    this.loop = undefined;
    this.reconciler = undefined;
    await loop?.stop();
  }

  /**
   * The FSM's publishFaultJobInfo: the job's entry now, or a log line saying why none. An A5 job
   * (`a5`) gets none and no wait (docs/rules.md#recover.force-release-a5).
   */
  publish(jobId: string, jobKey: string, entry: JobEntry | undefined, podRanks: readonly number[], a5 = false): void {
    const r = this.reconciler;
    if (r === undefined) return;
    if (a5) {
      this.d.metrics.forceRelease.inc({ outcome: 'skipped_a5' });
      this.d.log.info('force release: A5 job, SDID-based force release skipped; no fault-job-info entry and no wait for NodeD', { rule: RULE.recover.forceReleaseA5, job: jobKey });
      return;
    }
    const nowMs = this.d.clock.now();
    const plan = forceReleasePlan({
      jobId, servers: entry === undefined ? [] : this.servers(entry), faultPodRanks: podRanks,
      superPodNodes: this.superPodNodes(), nowSec: Math.floor(nowMs / 1000),
    });
    if (!plan.write) {
      this.d.metrics.forceRelease.inc({ outcome: 'skipped' });
      this.d.log.info('force release: no fault-job-info entry; the wait for NodeD runs all the same', { rule: RULE.recover.forceRelease, job: jobKey, reason: plan.reason });
      return;
    }
    this.d.log.info('force release: fault-job-info entry', { rule: RULE.recover.forceRelease, job: jobKey, faultNodes: plan.faultNodes, superPods: [...plan.entry.keys()] });
    r.add({ kind: 'publish', jobId, value: encodeFaultJobEntry(plan.entry), dueMs: nowMs });
    this.loop?.queue.add(FAULT_JOB_INFO_OPS_KEY);
  }

  /** Clears the job's entry after ClusterD's wait; `node` set: only if the entry names it a fault node. */
  clear(jobId: string, cause: ClearCause, node = ''): void {
    const r = this.reconciler;
    if (r === undefined || jobId === '') return;
    const delay = clearDelayMs(cause, r.updatedBefore(jobId));
    r.add({ kind: 'clear', jobId, node, cause, dueMs: this.d.clock.now() + delay });
    this.loop?.queue.addAfter(FAULT_JOB_INFO_OPS_KEY, delay);
  }

  /** A pod update that sets `reschedule-in-place=true` (it was absent or empty) clears its node from the job's entry. */
  podEvent(ev: WatchEvent<Pod>): void {
    if (ev.type !== 'update') return;
    const before = ev.old.metadata?.annotations?.[RESCHEDULE_IN_PLACE_ANNOTATION] ?? '';
    if (before !== '' || ev.obj.metadata?.annotations?.[RESCHEDULE_IN_PLACE_ANNOTATION] !== RESCHEDULE_IN_PLACE_VALUE) return;
    const jobId = jobOwnerOf(ev.obj)?.uid ?? '';
    this.d.log.info('force release: pod placed back on its node (reschedule-in-place)', { rule: RULE.recover.faultJobInfoClear, pod: ev.obj.metadata?.name, jobId });
    this.clear(jobId, 'reschedule-in-place', ev.obj.spec?.nodeName ?? '');
  }

  /** The job's rank pods with a device allocation, rank order (ClusterD's PreServerList). */
  private servers(entry: JobEntry): ForceReleaseServer[] {
    const ns = entry.view.namespace;
    return entry.view.pods.flatMap((p): ForceReleaseServer[] => {
      const pod = this.d.sources.pods.get(`${ns}/${p.name}`);
      const text = pod?.metadata?.annotations?.[DEVICE_910_ANNOTATION] ?? pod?.metadata?.annotations?.[DEVICE_NPU_ANNOTATION];
      if (p.rank === undefined || text === undefined) return [];
      const dev = parsePodDevice(text);
      return dev.devices.length === 0 ? [] : [{ podRank: p.rank, node: p.node ?? '', superPodId: dev.superPodId }];
    }).sort((a, b) => a.podRank - b.podRank);
  }

  /** Nodes with a SuperPod ID and readable chips (ClusterD's ListClusterDevice). */
  private superPodNodes(): SuperPodNode[] {
    const out: SuperPodNode[] = [];
    for (const n of this.d.sources.nodes.store.values()) {
      const name = n.metadata?.name ?? '';
      const a = n.metadata?.annotations ?? {};
      const superPodId = superPodIdOf(a[SUPER_POD_ID_ANNOTATION]);
      const text = a[BASE_DEVICE_INFOS_ANNOTATION];
      if (superPodId === undefined || text === undefined) continue;
      const devices = parseBaseDeviceInfos(text, chipPrefixOf(a[SERVER_TYPE_ANNOTATION]));
      if (devices.ok) out.push({ superPodId, node: name, devices: devices.value });
      else this.warnNode(n, devices.reason);
    }
    return out;
  }

  private warnNode(n: Node, reason: string): void {
    const name = n.metadata?.name ?? '';
    if (this.badNodes.get(name) === reason) return;
    this.badNodes.set(name, reason);
    this.d.metrics.invalidInput.inc({ format: 'node-base-device-infos', reason: 'schema' });
    this.d.log.warn('force release: node SuperPod annotations unreadable; the node is in no SuperPod', { node: name, reason });
  }
}
