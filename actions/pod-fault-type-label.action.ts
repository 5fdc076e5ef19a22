/**
 * Relation-fault pod label (docs/rules.md#job.relation-faults; docs/formats.md#pod-contract): `fault-type=Separate` or `fault-type=SubHealth`
 * on the job's pod on the node a relation strategy was decided for. Volcano (and our jobs pipeline,
 * policy/jobs/job-aggregation.ts) reads `Separate` as the task fault `RelationFaultSeparate` and
 * `SubHealth` as a sub-health fault. A JSON merge patch carrying the pod's UID as a precondition, so a
 * pod recreated under the same name after the restart is never labelled (answered `gone`).
 */
import type { RelationStrategy } from '../schemas/escalation-state/escalation-state.ts';
import { FAULT_TYPE_LABEL } from '../policy/jobs/job-view.ts';
import { patchPodMeta, type PatchDeps, type PatchResult } from './recovery-patch.action.ts';

export interface LabelTarget {
  readonly name: string;
  readonly uid: string;
}

export async function labelPodFaultType(d: PatchDeps, namespace: string, pod: LabelTarget, value: RelationStrategy): Promise<PatchResult> {
  return patchPodMeta(d, namespace, pod, { labels: { [FAULT_TYPE_LABEL]: value } });
}
