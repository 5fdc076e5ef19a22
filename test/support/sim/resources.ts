/**
 * The resources the in-memory apiserver serves and how a REST path names one (Kubernetes API
 * conventions, "Resources": `/api/v1/...` for the core group, `/apis/<group>/<version>/...` for the
 * others; namespaced objects under `namespaces/<ns>/`; a subresource as a last segment).
 */
import { DECISION_RECORD_API_VERSION, DECISION_RECORD_KIND, DECISION_RECORD_PLURAL } from '../../../schemas/decision-record/decision-record.ts';

export interface ResourceType {
  /** `v1`, `coordination.k8s.io/v1`, ... */
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /** Writes to the object leave `status` alone and `/status` writes change only `status`. */
  readonly statusSubresource: boolean;
  /**
   * A custom resource (served from a CRD): metadata.generation tracks spec changes, an update must
   * carry metadata.resourceVersion, strategic merge patch is refused, and list items keep their
   * apiVersion and kind (the apiserver writes them as unstructured objects).
   */
  readonly custom: boolean;
  /** Fields a fieldSelector may name besides metadata.name and metadata.namespace. */
  readonly fields: readonly string[];
}

const builtin = (apiVersion: string, kind: string, plural: string, namespaced: boolean, statusSubresource: boolean, fields: readonly string[] = []): ResourceType =>
  ({ apiVersion, kind, plural, namespaced, statusSubresource, custom: false, fields });
const crd = (apiVersion: string, kind: string, plural: string, statusSubresource: boolean): ResourceType =>
  ({ apiVersion, kind, plural, namespaced: true, statusSubresource, custom: true, fields: [] });

/** Every kind the controller, its tools and the tests touch (crds/ for the custom ones' subresources). */
export const RESOURCE_TYPES: readonly ResourceType[] = [
  builtin('v1', 'ConfigMap', 'configmaps', true, false),
  builtin('v1', 'Pod', 'pods', true, true, ['spec.nodeName', 'spec.schedulerName', 'spec.serviceAccountName', 'status.phase', 'status.podIP', 'status.nominatedNodeName', 'spec.restartPolicy']),
  builtin('v1', 'Node', 'nodes', false, true, ['spec.unschedulable']),
  builtin('v1', 'Namespace', 'namespaces', false, true, ['status.phase']),
  builtin('v1', 'Event', 'events', true, false, ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type']),
  builtin('v1', 'ServiceAccount', 'serviceaccounts', true, false),
  builtin('coordination.k8s.io/v1', 'Lease', 'leases', true, false),
  crd('scheduling.volcano.sh/v1beta1', 'PodGroup', 'podgroups', false),
  crd('batch.volcano.sh/v1alpha1', 'Job', 'jobs', true),
  crd('mindxdl.gitee.com/v1', 'AscendJob', 'ascendjobs', true),
  crd(DECISION_RECORD_API_VERSION, DECISION_RECORD_KIND, DECISION_RECORD_PLURAL, false),
];

/** What one request path names. */
export interface Target {
  readonly type: ResourceType;
  /** Undefined: every namespace (a collection) or a cluster-scoped kind. */
  readonly namespace: string | undefined;
  /** Undefined: the collection. */
  readonly name: string | undefined;
  readonly subresource: string | undefined;
}

/**
 * Parsed paths per type list: a simulation names the same few hundred paths thousands of times.
 * Targets are read-only, so one object serves every caller; a list that grows past the bound is dropped.
 */
const parsed = new WeakMap<readonly ResourceType[], Map<string, Target | undefined>>();
const PARSED_MAX = 10_000;

/** The parsed target, or undefined when the path names no resource served here (the apiserver's 404). */
export function parsePath(path: string, types: readonly ResourceType[] = RESOURCE_TYPES): Target | undefined {
  let memo = parsed.get(types);
  if (memo === undefined) { memo = new Map(); parsed.set(types, memo); }
  if (memo.has(path)) return memo.get(path);
  if (memo.size >= PARSED_MAX) memo.clear();
  const tg = parseUncached(path, types);
  memo.set(path, tg);
  return tg;
}

function parseUncached(path: string, types: readonly ResourceType[]): Target | undefined {
  const segs = path.split('?')[0]!.split('/').filter((s) => s !== '').map(decodeURIComponent);
  let apiVersion: string;
  let rest: string[];
  if (segs[0] === 'api' && segs.length >= 2) { apiVersion = segs[1]!; rest = segs.slice(2); }
  else if (segs[0] === 'apis' && segs.length >= 3) { apiVersion = `${segs[1]}/${segs[2]}`; rest = segs.slice(3); }
  else return undefined;
  const find = (plural: string | undefined): ResourceType | undefined => types.find((t) => t.apiVersion === apiVersion && t.plural === plural);
  // namespaces/<ns>/<plural>[/<name>[/<sub>]] names a namespaced kind; otherwise <plural>[/<name>[/<sub>]].
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const type = find(rest[2]);
    if (type === undefined || !type.namespaced || rest.length > 5) return undefined;
    return { type, namespace: rest[1], name: rest[3], subresource: rest[4] };
  }
  const type = find(rest[0]);
  if (type === undefined || rest.length > 3 || (type.namespaced && rest.length > 1)) return undefined;
  return { type, namespace: undefined, name: rest[1], subresource: rest[2] };
}

/** The storage key: kind, namespace, name (etcd's `/registry/<resource>/<ns>/<name>` order). */
export const storageKey = (type: ResourceType, namespace: string | undefined, name: string): string =>
  `${type.apiVersion}/${type.plural}/${namespace ?? ''}/${name}`;
