/**
 * Jobs that never go past pod level (docs/rules.md#resched.pod-level-cap): Volcano's ascend plugin
 * caps a job's rescheduling at its fault pods (`ReScheduleLimit=pod`) when the job is an OME
 * inference service (label `ome.io/inferenceservice` present), a MindIE controller or coordinator
 * (label `app=mindie-ms-controller|mindie-ms-coordinator`), or asks for it with the annotation
 * `huawei.com/recover_policy_path=pod` (component/ascend-for-volcano/internal/rescheduling/job.go,
 * setReScheduleLimit, allowUpgradePodRescheduling). A capped job deletes only its fault pods on
 * every path (rank 0, job level, sub-health exits) and never widens while replacements pend.
 *
 * The plugin reads a job's labels as the PodGroup's, then each pod's for keys the PodGroup lacks
 * (component/ascend-for-volcano/plugin/job.go, getJobLabelFromVcJob); different pod values of one
 * key join with `|` and so match no app type. MindIE *server* jobs (`app=mindie-ms-server`) are not
 * capped by the plugin: they are capped only by the annotation.
 */

/** Label whose presence marks an OME inference-service job. */
export const OME_INFERENCE_SERVICE_LABEL = 'ome.io/inferenceservice';
/** Label naming the MindIE job id an instance job belongs to (ClusterD's MultiInstanceJobId). */
export const MINDIE_JOB_ID_LABEL = 'jobID';
/** MindIE app-type label and the values the plugin caps. */
export const MINDIE_APP_LABEL = 'app';
export const CAPPED_MINDIE_APPS: readonly string[] = ['mindie-ms-controller', 'mindie-ms-coordinator'];

/** Why a job is an inference job the plugin keeps at pod level. */
export type InferenceCap = 'ome-inference-service' | 'mindie-ms-controller' | 'mindie-ms-coordinator';

type Labels = Readonly<Record<string, string>> | undefined;

/** The plugin's view of one job label: the PodGroup's value, else the pods' distinct values joined with `|`. */
function jobLabel(key: string, podGroup: Labels, pods: readonly Labels[]): string | undefined {
  const own = podGroup?.[key];
  if (own !== undefined) return own;
  const values = [...new Set(pods.map((l) => l?.[key]).filter((v): v is string => v !== undefined))];
  return values.length === 0 ? undefined : values.join('|');
}

/** The inference cap of a job from its PodGroup's and pods' labels; undefined when none applies. */
export function inferenceCapOf(podGroup: Labels, pods: readonly Labels[]): InferenceCap | undefined {
  if (jobLabel(OME_INFERENCE_SERVICE_LABEL, podGroup, pods) !== undefined) return 'ome-inference-service';
  const app = jobLabel(MINDIE_APP_LABEL, podGroup, pods);
  return app === 'mindie-ms-controller' || app === 'mindie-ms-coordinator' ? app : undefined;
}
