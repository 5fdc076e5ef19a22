/**
 * Every informer the controller runs, built in one place so main.ts, tests and the benchmark wire
 * the same set. This is the only place that lists and watches the apiserver (docs/CONVENTIONS.md#data-path). The one
 * job index over the pod, PodGroup and job caches is built and fed here too (job-index-feed.ts).
 */
import { combineLatest, map, type Observable } from 'rxjs';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap, JobObject, Node, Pod, PodGroup } from '../../runtime/kube-objects.ts';
import { Reflector, type ReflectorHealth, type ReflectorOptions } from '../../runtime/reflector.ts';
import type { NpuClaimMode } from '../../policy/jobs/npu-claims.ts';
import { JobIndexFeed } from './job-index-feed.ts';
import { digestClusterInfo, digestJobSummary, isJobSummaryName, trimJobObject, trimNode, trimPod, trimPodGroup, trimPublicFault } from './cache-shapes.ts';

/** Label selectors and namespaces of MindCluster's ConfigMaps (docs/formats.md#namespaces, #label-selectors). */
export const CM_SELECTORS = {
  deviceInfo: { namespace: 'kube-system', label: 'mx-consumer-cim=true', prefix: 'mindx-dl-deviceinfo-' },
  nodeInfo: { namespace: 'mindx-dl', label: 'mx-consumer-cim=true', prefix: 'mindx-dl-nodeinfo-' },
  publicFault: { label: 'mc-consumer-publicfault=true' },
  resetConfig: { label: 'reset=true', prefix: 'reset-config-' },
  /**
   * ClusterD creates `data-trace-<job>` with `reset=true` (component/clusterd/pkg/domain/profile/profiling_utils.go),
   * the label the device plugin syncs into the pods' mount; one without it is not watched (docs/grpc.md#trainingdatatrace-service).
   */
  dataTrace: { label: 'reset=true', prefix: 'data-trace-' },
  /** MindIE's per-instance rank tables, read by config.Config (ClusterD's ConfigMap informer: label mx-consumer-cim=true, component/clusterd/pkg/interface/kube/informer.go). */
  ringsConfig: { label: 'mx-consumer-cim=true', prefix: 'rings-config-' },
  faultConfig: { namespace: 'kube-system', name: 'mindx-dl-fault-config' },
} as const;

const hasPrefix = (prefix: string) => (o: KubeObject): boolean => (o.metadata?.name ?? '').startsWith(prefix);

export interface Sources {
  readonly deviceInfo: Reflector<ConfigMap>;
  readonly nodeInfo: Reflector<ConfigMap>;
  readonly publicFaults: Reflector<ConfigMap>;
  readonly faultConfig: Reflector<ConfigMap>;
  readonly resetConfigs: Reflector<ConfigMap>;
  /** `data-trace-<job>` in every namespace (TrainingDataTrace reads and writes them). */
  readonly dataTraceConfigMaps: Reflector<ConfigMap>;
  /** `rings-config-*` in every namespace (label mx-consumer-cim=true): MindIE instance rank tables. */
  readonly ringsConfigMaps: Reflector<ConfigMap>;
  readonly nodes: Reflector<Node>;
  readonly pods: Reflector<Pod>;
  readonly podGroups: Reflector<PodGroup>;
  /** Volcano Jobs and AscendJobs, trimmed to what the job statistic and exception report read. */
  readonly vcJobs: Reflector<JobObject>;
  readonly ascendJobs: Reflector<JobObject>;
  /** ConfigMaps we write in mindx-dl (cluster-info-*, job-reschedule-reason, escalation state). */
  readonly mindxDlConfigMaps: Reflector<ConfigMap>;
  /** ConfigMaps we write in volcano-system (vcjob-fault-npu-cm, tor-share-cm). */
  readonly volcanoConfigMaps: Reflector<ConfigMap>;
  /**
   * ClusterD's per-job summaries we write, in every namespace (label outside-job-info=true, names
   * job-summary-*): identity, our labels and a digest of the data (cache-shapes.ts digestJobSummary).
   */
  readonly jobSummaryConfigMaps: Reflector<ConfigMap>;
  /** ConfigMaps of cluster-system: clusterd-config-cm (read), clusterd-manual-info-cm and the escalation state (written). */
  readonly clusterSystemConfigMaps: Reflector<ConfigMap>;
  /** The one job index over pods, PodGroups and jobs, and its event streams (every reader of jobs shares it). */
  readonly jobIndex: JobIndexFeed;
}

export interface SourcesOptions {
  readonly log?: ReflectorOptions['log'];
  /** The controller's clock (runtime/clock.ts): every informer's health times, backoff and inactivity limit. */
  readonly clock: ReflectorOptions['clock'];
  /** Only watch pods carrying this label selector (all pods when unset). */
  readonly podLabelSelector?: string;
  /** Namespace of clusterd-config-cm, clusterd-manual-info-cm and the escalation state (default cluster-system). */
  readonly clusterSystemNamespace?: string;
  /** The job caches cut `custom-job-id` to one character past this (undefined: kept whole, ClusterD). */
  readonly customJobIdMaxChars?: number;
  /** PodGroup and job caches cut condition messages to one character past this (undefined: whole, ClusterD). */
  readonly conditionMessageMaxChars?: number;
  /** Which AscendReal claims the job index counts by default (--trust-pod-npu-annotations: `annotation`; default `verified`). */
  readonly npuClaims?: NpuClaimMode;
}

export function createSources(client: KubeClient, opts: SourcesOptions): Sources {
  const mk = <T extends KubeObject>(o: Omit<ReflectorOptions, 'clock'>): Reflector<T> => new Reflector<T>(client, { log: opts.log, clock: opts.clock, ...o });
  const s = CM_SELECTORS;
  const pods = mk<Pod>({ name: 'pods', path: paths.pods(), labelSelector: opts.podLabelSelector, transform: trimPod });
  const podGroups = mk<PodGroup>({ name: 'podgroups', path: paths.podGroups(), transform: trimPodGroup(opts.conditionMessageMaxChars) });
  const vcJobs = mk<JobObject>({ name: 'vcjobs', path: paths.vcJobs(), transform: trimJobObject(opts.customJobIdMaxChars, opts.conditionMessageMaxChars) });
  const ascendJobs = mk<JobObject>({ name: 'ascendjobs', path: paths.ascendJobs(), transform: trimJobObject(opts.customJobIdMaxChars, opts.conditionMessageMaxChars) });
  return {
    deviceInfo: mk({ name: 'device_info', path: paths.configMaps(s.deviceInfo.namespace), labelSelector: s.deviceInfo.label, filter: hasPrefix(s.deviceInfo.prefix) }),
    nodeInfo: mk({ name: 'node_info', path: paths.configMaps(s.nodeInfo.namespace), labelSelector: s.nodeInfo.label, filter: hasPrefix(s.nodeInfo.prefix) }),
    publicFaults: mk({ name: 'public_fault', path: paths.configMaps(), labelSelector: s.publicFault.label, transform: trimPublicFault }),
    faultConfig: mk({ name: 'fault_config', path: paths.configMaps(s.faultConfig.namespace), fieldSelector: `metadata.name=${s.faultConfig.name}` }),
    resetConfigs: mk({ name: 'reset_config', path: paths.configMaps(), labelSelector: s.resetConfig.label, filter: hasPrefix(s.resetConfig.prefix) }),
    ringsConfigMaps: mk({ name: 'rings_config', path: paths.configMaps(), labelSelector: s.ringsConfig.label, filter: hasPrefix(s.ringsConfig.prefix) }),
    dataTraceConfigMaps: mk({ name: 'data_trace', path: paths.configMaps(), labelSelector: s.dataTrace.label, filter: hasPrefix(s.dataTrace.prefix) }),
    nodes: mk({ name: 'nodes', path: paths.nodes(), transform: trimNode }),
    pods, podGroups, vcJobs, ascendJobs,
    mindxDlConfigMaps: mk({ name: 'configmaps_mindx_dl', path: paths.configMaps('mindx-dl'), transform: digestClusterInfo }),
    volcanoConfigMaps: mk({ name: 'configmaps_volcano_system', path: paths.configMaps('volcano-system') }),
    jobSummaryConfigMaps: mk({ name: 'configmaps_job_summary', path: paths.configMaps(), labelSelector: 'outside-job-info=true', filter: isJobSummaryName, transform: digestJobSummary }),
    clusterSystemConfigMaps: mk({ name: 'configmaps_cluster_system', path: paths.configMaps(opts.clusterSystemNamespace ?? 'cluster-system') }),
    // Before any reflector starts, so it indexes the initial lists.
    jobIndex: new JobIndexFeed({ pods, podGroups, vcJobs, ascendJobs }, opts.npuClaims ?? 'verified'),
  };
}

export const allReflectors = (s: Sources): Array<Reflector<KubeObject>> => Object.values(s).filter((r): r is Reflector<KubeObject> => r instanceof Reflector);

export function startSources(s: Sources): void {
  for (const r of allReflectors(s)) r.start();
}

export function stopSources(s: Sources): void {
  for (const r of allReflectors(s)) r.stop();
  s.jobIndex.stop();
}

export async function waitForSync(s: Sources, timeoutMs = 120_000): Promise<void> {
  await Promise.all(allReflectors(s).map((r) => r.waitForSync(timeoutMs)));
}

/** true once every source has synced, false while any is (re)listing. */
export function allSynced$(s: Sources): Observable<boolean> {
  return combineLatest(allReflectors(s).map((r) => r.synced$)).pipe(map((xs) => xs.every(Boolean)));
}

export function sourcesHealth(s: Sources): ReflectorHealth[] {
  return allReflectors(s).map((r) => r.health());
}
