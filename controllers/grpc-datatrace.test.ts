import { DataTraceConfigMaps } from '../actions/data-trace.action.ts';
import { ApiError, type KubeClient } from '../runtime/kube-client.ts';
import type { ConfigMap, Pod, PodGroup } from '../runtime/kube-objects.ts';
import type { JobSummaryState } from '../policy/jobs/job-summary.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { dataTraceHandlers, decodeSwitch } from './grpc-datatrace.ts';
import { DATA_TRACE_MOUNT_PATH } from './sources/cache-shapes.ts';

const ON = { CommunicationOperator: 'on', Step: 'on', SaveCheckpoint: 'on', FP: 'on', DataLoader: 'on' };
const OWNER = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'train', uid: 'uid-1', controller: true };

function world(opts: { mounted: boolean; status?: string; cm?: ConfigMap }) {
  const writes: Array<{ verb: string; path: string; body: unknown }> = [];
  const client = {
    create: async (path: string, body: ConfigMap) => (writes.push({ verb: 'create', path, body }), { ...body, metadata: { ...body.metadata, resourceVersion: '10' } }),
    patch: async (path: string, body: unknown) => (writes.push({ verb: 'patch', path, body }), { metadata: { name: 'data-trace-train', namespace: 'ns', resourceVersion: '11' }, data: { profilingSwitch: 'x' } }),
  } as unknown as KubeClient;
  const cms = new Map<string, ConfigMap>(opts.cm ? [['ns/data-trace-train', opts.cm]] : []);
  const configMaps = new DataTraceConfigMaps({ client, cached: (ns, n) => cms.get(`${ns}/${n}`), now: () => 0 });
  const job = { key: 'uid-1', name: 'train', namespace: 'ns', status: opts.status ?? 'running' } as unknown as JobSummaryState;
  const pod = (mount: boolean): Pod => ({ metadata: { name: 'p' }, spec: { containers: [{ name: 'c', ...(mount ? { volumeMounts: [{ mountPath: DATA_TRACE_MOUNT_PATH }] } : {}) }] } });
  const pg: PodGroup = { metadata: { name: 'pg', namespace: 'ns', ownerReferences: [OWNER], labels: { jobID: 'mindie-1', app: 'mindie-ms-server' } } };
  const h = dataTraceHandlers({
    jobs: () => new Map([['uid-1', job]]), podGroup: () => pg, pods: () => [pod(true), pod(opts.mounted)], configMaps, log: silentLogger,
  });
  const pushed: unknown[] = [];
  const publish = (jobId: string, sw: unknown): string | undefined => (pushed.push([jobId, sw]), undefined);
  return { h, writes, pushed, publish, cms };
}

describe('TrainingDataTrace handlers (ClusterD application/profiling/grpc_service.go)', () => {
  it('pods not all mounting the data-trace path: push only; no running job is "notify subscribe err no such job"', async () => {
    const w = world({ mounted: false });
    expect(await w.h.modify({ namespace: 'ns', name: 'train', profilingSwitch: ON }, w.publish)).toEqual({ reply: { message: 'successfully changed profiling marker enable status', code: 200 } });
    expect(w.pushed).toEqual([['uid-1', ON]]);
    expect(w.writes).toEqual([]);
    const pending = world({ mounted: false, status: 'pending' });
    expect(await pending.h.modify({ namespace: 'ns', name: 'train', profilingSwitch: ON }, pending.publish)).toEqual({ error: 'notify subscribe err no such job' });
  });

  it('every pod mounting it: creates data-trace-<job> (reset=true, the PodGroup\'s controller owner, Go JSON), pushing too', async () => {
    const w = world({ mounted: true });
    expect(await w.h.modify({ namespace: 'ns', name: 'train', profilingSwitch: { ...ON, FP: 'off' } }, () => 'publisher for job uid-1 not found')).toMatchObject({ reply: { code: 200 } });
    expect(w.writes).toEqual([{
      verb: 'create', path: '/api/v1/namespaces/ns/configmaps',
      body: {
        apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'data-trace-train', namespace: 'ns', labels: { reset: 'true' }, ownerReferences: [OWNER] },
        data: { profilingSwitch: '{"CommunicationOperator":"on","Step":"on","SaveCheckpoint":"on","FP":"off","DataLoader":"on"}' },
      },
    }]);
    // Get reads our own write before the informer has it.
    expect(await w.h.get('ns', 'train')).toEqual({ reply: { message: 'successfully get the status of job[ns/train]', profilingSwitch: { ...ON, FP: 'off' }, code: 200 } });
  });

  it('an existing ConfigMap is patched (owner and profilingSwitch); a nil switch and an apiserver refusal are UNKNOWN texts', async () => {
    const cm: ConfigMap = { metadata: { name: 'data-trace-train', namespace: 'ns', resourceVersion: '5' }, data: { other: 'kept' } };
    const w = world({ mounted: true, cm });
    await w.h.modify({ namespace: 'ns', name: 'train', profilingSwitch: ON }, w.publish);
    expect(w.writes[0]).toMatchObject({ verb: 'patch', path: '/api/v1/namespaces/ns/configmaps/data-trace-train', body: { metadata: { ownerReferences: [OWNER] } } });
    expect(await w.h.modify({ namespace: 'ns', name: 'train', profilingSwitch: null }, w.publish)).toEqual({ error: 'update cm err:the incoming param is nil' });
    const client = { create: async () => { throw new ApiError('POST', '/x', 422, { message: 'ConfigMap "data-trace-train" is invalid' }); } } as unknown as KubeClient;
    const maps = new DataTraceConfigMaps({ client, cached: () => undefined, now: () => 0 });
    expect(await maps.create('ns', 'train', ON, OWNER)).toBe('failed to create configmap [ns/train], err: ConfigMap "data-trace-train" is invalid');
  });

  it('Get: missing ConfigMap, missing key, and Go json.Unmarshal of the switch', async () => {
    const none = world({ mounted: true });
    expect(await none.h.get('ns', 'train')).toEqual({ error: 'configmaps "data-trace-train" not found' });
    const nokey = world({ mounted: true, cm: { metadata: { name: 'data-trace-train', namespace: 'ns' }, data: {} } });
    expect(await nokey.h.get('ns', 'train')).toEqual({ reply: { message: "data trace configmap does not contain the 'profilingSwitch' field", profilingSwitch: null, code: 404 } });
    expect(decodeSwitch('{"fp":"on","step":null,"x":1}')).toEqual({ ok: { CommunicationOperator: '', Step: '', SaveCheckpoint: '', FP: 'on', DataLoader: '' } });
    expect(decodeSwitch('{"FP":1}')).toEqual({ error: 'json: cannot unmarshal number into Go struct field ProfilingSwitch.FP of type string' });
    expect(decodeSwitch('[]')).toEqual({ error: 'json: cannot unmarshal array into Go value of type profiling.ProfilingSwitch' });
    expect(decodeSwitch('')).toEqual({ error: 'unexpected end of JSON input' });
    expect(decodeSwitch('x')).toEqual({ error: "invalid character 'x' looking for beginning of value" });
  });

  it('a subscription names a job key, or a multi-instance job\'s jobID label with its app as the role', async () => {
    const w = world({ mounted: true });
    expect(await w.h.jobOf('uid-1', 'taskd')).toBe('uid-1');
    expect(await w.h.jobOf('mindie-1', 'mindie-ms-server')).toBe('uid-1');
    expect(await w.h.jobOf('mindie-1', 'taskd')).toBeUndefined();
    expect(await w.h.jobOf('other', 'taskd')).toBeUndefined();
  });
});
