/**
 * TrainingDataTrace handlers (grpc/datatrace.service.ts, docs/grpc.md#trainingdatatrace-service)
 * on the controller's state, as ClusterD's component/clusterd/pkg/application/profiling/grpc_service.go:
 * - jobs come from the job summary (ClusterD's job cache): `namespace/name` names the first job of
 *   that name, a push goes to the first *running* one, a subscription's job id is a job key or the
 *   `jobID` label of a multi-instance job's PodGroup (with `app` = the role);
 * - Modify: if the job has pods and every one mounts /user/cluster-info/datatrace-config, the
 *   switch is written to `data-trace-<job>` (actions/data-trace.action.ts) and pushed to the
 *   subscriber if there is one; otherwise it is only pushed, and no running job or no subscriber
 *   is an error;
 * - Get reads `data-trace-<job>` and decodes `profilingSwitch` as Go's json.Unmarshal does.
 */
import type { DataTraceHandlers } from '../grpc/handlers.ts';
import type { ProfilingSwitch } from '../grpc/messages.ts';
import { DataTraceCode } from '../grpc/service-constants.ts';
import { DATA_TRACE_KEY, DATA_TRACE_PREFIX, NO_OWNER, type DataTraceConfigMaps, type OwnerReference } from '../actions/data-trace.action.ts';
import { DATA_TRACE_MOUNT_PATH } from './sources/cache-shapes.ts';
import type { JobSummaryState } from '../policy/jobs/job-summary.ts';
import type { Pod, PodGroup } from '../runtime/kube-objects.ts';
import type { Logger } from '../telemetry/logger.ts';

/** PodGroup labels of a multi-instance (MindIE) job (component/clusterd/pkg/common/constant/constants.go). */
const MULTI_INSTANCE_JOB_ID_LABEL = 'jobID';
const MULTI_INSTANCE_APP_LABEL = 'app';

export interface DataTraceWiringDeps {
  /** The job summary: job key -> state (ClusterD's job cache). */
  readonly jobs: () => ReadonlyMap<string, JobSummaryState>;
  /** The job's PodGroup and pods (ClusterD's podgroup / pod storage by job key). */
  readonly podGroup: (jobKey: string) => PodGroup | undefined;
  readonly pods: (jobKey: string) => readonly Pod[];
  readonly configMaps: DataTraceConfigMaps;
  readonly log: Logger;
}

type Decoded = { readonly ok: ProfilingSwitch } | { readonly error: string };

const FIELDS = ['CommunicationOperator', 'Step', 'SaveCheckpoint', 'FP', 'DataLoader'] as const;

const goKind = (v: unknown): string =>
  Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'boolean' ? 'bool' : typeof v === 'object' ? 'object' : typeof v;

/**
 * json.Unmarshal(data, &profiling.ProfilingSwitch): keys match a field exactly or else case-insensitively,
 * null leaves a field empty, unknown keys are ignored, a value of another type is the first error
 * (the others still set). Syntax errors are Go's for the common cases only (docs/grpc.md#trainingdatatrace-service).
 */
export function decodeSwitch(data: string): Decoded {
  if (data.trim() === '') return { error: 'unexpected end of JSON input' };
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    const c = data.trim()[0]!;
    return /[[{"\-0-9tfn]/.test(c) ? { error: 'unexpected end of JSON input' } : { error: `invalid character '${c}' looking for beginning of value` };
  }
  const out: Record<(typeof FIELDS)[number], string> = { CommunicationOperator: '', Step: '', SaveCheckpoint: '', FP: '', DataLoader: '' };
  if (v === null) return { ok: out };
  if (typeof v !== 'object' || Array.isArray(v)) return { error: `json: cannot unmarshal ${goKind(v)} into Go value of type profiling.ProfilingSwitch` };
  let error: string | undefined;
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    const field = FIELDS.find((f) => f === k) ?? FIELDS.find((f) => f.toLowerCase() === k.toLowerCase());
    if (field === undefined || val === null) continue;
    if (typeof val === 'string') out[field] = val;
    else error ??= `json: cannot unmarshal ${goKind(val)} into Go struct field ProfilingSwitch.${field} of type string`;
  }
  return error === undefined ? { ok: out } : { error };
}

const mountsDataTrace = (p: Pod): boolean => (p.spec?.containers ?? []).some((c) => (c.volumeMounts ?? []).some((m) => m.mountPath === DATA_TRACE_MOUNT_PATH));

export function dataTraceHandlers(d: DataTraceWiringDeps): DataTraceHandlers {
  const find = (namespace: string, name: string, running: boolean): JobSummaryState | undefined => {
    for (const s of d.jobs().values()) if (s.name === name && s.namespace === namespace && (!running || s.status === 'running')) return s;
    return undefined;
  };
  const ownerOf = (jobKey: string): OwnerReference | typeof NO_OWNER => {
    const owner = d.podGroup(jobKey)?.metadata?.ownerReferences?.find((r) => r.controller === true);
    return owner ?? NO_OWNER;
  };
  return {
    jobOf: (jobId, role) => {
      const jobs = d.jobs();
      if (jobs.has(jobId)) return jobId;
      for (const [key] of jobs) {
        const labels = d.podGroup(key)?.metadata?.labels ?? {};
        if ((labels[MULTI_INSTANCE_JOB_ID_LABEL] ?? '') === jobId && (labels[MULTI_INSTANCE_APP_LABEL] ?? '') === role) return key;
      }
      return undefined;
    },
    modify: async ({ namespace, name, profilingSwitch }, publish) => {
      const notify = (): string | undefined => {
        const running = find(namespace, name, true);
        return running === undefined ? 'no such job' : publish(running.key, profilingSwitch);
      };
      const job = find(namespace, name, false);
      const pods = job === undefined ? [] : d.pods(job.key);
      if (job === undefined || pods.length === 0 || !pods.every(mountsDataTrace)) {
        const err = notify();
        return err === undefined ? { reply: { message: 'successfully changed profiling marker enable status', code: DataTraceCode.OK } } : { error: `notify subscribe err ${err}` };
      }
      const pushErr = notify();
      if (pushErr !== undefined) d.log.warn('data trace switch not pushed', { namespace, name, reason: pushErr });
      const owner = ownerOf(job.key);
      const exists = d.configMaps.read(namespace, name) !== undefined;
      if (profilingSwitch === null) return { error: `${exists ? 'update' : 'create'} cm err:the incoming param is nil` };
      const err = exists ? await d.configMaps.update(namespace, name, profilingSwitch, owner) : await d.configMaps.create(namespace, name, profilingSwitch, owner);
      if (err !== undefined) {
        d.log.error('data trace ConfigMap not written', { namespace, name: DATA_TRACE_PREFIX + name, err });
        return { error: `${exists ? 'update' : 'create'} cm err:${err}` };
      }
      return { reply: { message: 'successfully changed profiling marker enable status', code: DataTraceCode.OK } };
    },
    get: (namespace, name) => {
      const cm = d.configMaps.read(namespace, name);
      // client-go's NotFound text; with no namespace the GET fails otherwise (IsDataTraceCmExist's own text).
      if (cm === undefined) return { error: namespace === '' ? `failed to get configmap [${namespace}/${name}]` : `configmaps "${DATA_TRACE_PREFIX}${name}" not found` };
      const data = cm.data?.[DATA_TRACE_KEY];
      if (data === undefined) return { reply: { message: "data trace configmap does not contain the 'profilingSwitch' field", profilingSwitch: null, code: DataTraceCode.NotFound } };
      const decoded = decodeSwitch(data);
      if ('error' in decoded) return { error: decoded.error };
      return { reply: { message: `successfully get the status of job[${namespace}/${name}]`, profilingSwitch: decoded.ok, code: DataTraceCode.OK } };
    },
  };
}
