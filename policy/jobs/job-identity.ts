/**
 * Whose job a PodGroup is (README "Threat model", job identity). A PodGroup names its job in its
 * controller ownerReference (apiVersion, kind, name, uid), and everything the controller keeps about
 * a job is keyed by that UID: the journal record, the DecisionRecords' per-job bound, the recovery
 * state `clusterd-ts-recovery-<uid>`, the gRPC jobId. Anyone who may create a PodGroup may write any
 * UID there, so the claim is checked against the owner object itself: the Volcano Job or AscendJob
 * that exists in the PodGroup's namespace under the claimed name with the claimed UID. This is the
 * check Kubernetes' garbage collector makes (an owner is looked up by name in the dependent's
 * namespace and must have the referenced UID; ownerReferences never cross namespaces), so every
 * PodGroup Volcano or the Ascend operator creates passes it; a claim of another namespace's job, of
 * a job under another name or of a job that does not exist does not.
 *
 * ClusterD takes the UID as written (component/clusterd/pkg/domain/podgroup/pg_util.go
 * GetJobInfoByPG, pkg/domain/pod/pod_util.go GetJobKeyByPod).
 */
import type { JobKind } from './job-view.ts';

/** The controller ownerReference of a PodGroup or pod, when it is a Volcano Job or an AscendJob. */
export interface OwnerClaim {
  readonly kind: JobKind;
  readonly name: string;
  readonly uid: string;
}

/** An object as the cache holds it (a Volcano Job, an AscendJob). */
export interface OwnerObject {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** Why a claim is refused; the metric label `reason`. */
export type IdentityRefusal = 'owner_not_found' | 'owner_uid_mismatch' | 'owner_other_namespace' | 'owner_other_name';

export interface JobIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly kind: JobKind;
}

export type IdentityVerdict =
  | { readonly ok: true; readonly identity: JobIdentity }
  | { readonly ok: false; readonly reason: IdentityRefusal; readonly detail: string };

const KIND_NAMES: Readonly<Record<JobKind, string>> = { vcjob: 'Volcano Job', acjob: 'AscendJob' };

/**
 * The claim of `claimer` (a PodGroup or pod in `namespace`) checked against `owner`, the object of the
 * claimed kind at `<namespace>/<claimed name>` in the cache (undefined: none). `holder`, when the
 * caller looked it up, is the object of that kind that carries the claimed UID wherever it is; it only
 * sharpens the reason of a refusal (another namespace, another name).
 */
export function verifyJobIdentity(claimer: { readonly namespace: string; readonly name: string }, claim: OwnerClaim, owner: OwnerObject | undefined, holder?: OwnerObject): IdentityVerdict {
  if (owner !== undefined && owner.uid === claim.uid && owner.namespace === claimer.namespace && owner.name === claim.name) {
    return { ok: true, identity: { namespace: claimer.namespace, name: claim.name, uid: claim.uid, kind: claim.kind } };
  }
  const what = `${KIND_NAMES[claim.kind]} ${claimer.namespace}/${claim.name} uid ${claim.uid}`;
  const at = `${claimer.namespace}/${claimer.name} claims ${what}`;
  if (holder !== undefined && holder.uid === claim.uid) {
    if (holder.namespace !== claimer.namespace) return { ok: false, reason: 'owner_other_namespace', detail: `${at}, but that UID is ${holder.namespace}/${holder.name}'s` };
    if (holder.name !== claim.name) return { ok: false, reason: 'owner_other_name', detail: `${at}, but that UID is ${holder.namespace}/${holder.name}'s` };
  }
  if (owner === undefined) return { ok: false, reason: 'owner_not_found', detail: `${at}, which does not exist` };
  return { ok: false, reason: 'owner_uid_mismatch', detail: `${at}, but ${owner.namespace}/${owner.name} has uid ${owner.uid}` };
}

/**
 * Of several PodGroups that pass for one UID (possible only inside the job's own namespace), the one
 * the job's controller made: named `<jobName>-<uid>` (Volcano and the Ascend operator, docs/formats.md#crds); else the first key, so the choice is stable.
 */
export function pickClaimant(keys: readonly string[], identity: Pick<JobIdentity, 'namespace' | 'name' | 'uid'>): string | undefined {
  const conventional = `${identity.namespace}/${identity.name}-${identity.uid}`;
  if (keys.includes(conventional)) return conventional;
  return [...keys].sort()[0];
}
