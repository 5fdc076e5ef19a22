/**
 * What the apiserver accepts as a ConfigMap data key and as an object name, and whether a job's
 * identity can be used in the keys and names built from it. The apiserver validates neither an
 * ownerReference's `uid` nor its `name` (any string is stored), yet the job journal uses the owner's
 * UID as a data key of a shared ConfigMap (schemas/job-state), the recovery state and the old
 * per-job state ConfigMaps put it in an object name (`clusterd-ts-recovery-<uid>`,
 * `clusterd-ts-job-state-<uid>`), and reset-config is `reset-config-<job name>`. A value the
 * apiserver would reject there makes the write fail with 422, so it is checked before any write.
 */
import { RESET_CONFIG_NAME_PREFIX } from './reset-config/reset-config.ts';

/** k8s.io/apimachinery validation IsConfigMapKey: `[-._a-zA-Z0-9]+`, at most 253, not `.` or `..`. */
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;
export const isConfigMapKey = (s: string): boolean => s.length > 0 && s.length <= 253 && CONFIG_MAP_KEY.test(s) && s !== '.' && s !== '..';

/** IsDNS1123Label: lower-case alphanumerics and `-`, alphanumeric at both ends, at most 63. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const isDnsLabel = (s: string): boolean => s.length <= 63 && DNS_LABEL.test(s);

/** IsDNS1123Subdomain (the name of a ConfigMap, a Pod, a PodGroup...): dot-separated labels, at most 253. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const isDnsSubdomain = (s: string): boolean => s.length <= 253 && DNS_SUBDOMAIN.test(s);

/**
 * A job UID we key state by: a DNS-1123 label, so it is at once a valid data key and a valid part
 * of an object name or a label value. Every UID the apiserver assigns (an RFC 4122 UUID) is one.
 */
export const isJobUid = (uid: string): boolean => isDnsLabel(uid);

export type JobIdentityProblem = 'uid' | 'name';

/**
 * Why the job's identity (its PodGroup's controller ownerReference) cannot be used in the keys and
 * names built from it; undefined when it can. `name` must make `reset-config-<name>` a valid name.
 */
export function jobIdentityProblem(id: { readonly uid: string; readonly name: string }): { readonly kind: JobIdentityProblem; readonly reason: string } | undefined {
  if (!isJobUid(id.uid)) return { kind: 'uid', reason: `owner uid ${JSON.stringify(id.uid.slice(0, 80))} is not a DNS-1123 label (lower-case alphanumerics and '-', at most 63), so it cannot be a ConfigMap data key or part of a name` };
  if (!isDnsSubdomain(`${RESET_CONFIG_NAME_PREFIX}${id.name}`) || id.name === '') return { kind: 'name', reason: `owner name ${JSON.stringify(id.name.slice(0, 80))} is not a DNS-1123 subdomain (or too long for ${RESET_CONFIG_NAME_PREFIX}<name>)` };
  return undefined;
}
