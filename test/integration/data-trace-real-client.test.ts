/**
 * TrainingDataTrace end to end: the shipped controller as a child process (`node main.ts`) on the
 * real apiserver, called through MindCluster's own profiling.proto (the snapshot's, as TaskD and
 * ascend-faultdiag-online call it). Two running jobs on kwok nodes, one whose pods mount
 * /user/cluster-info/datatrace-config: TaskD's subscription, Modify (pushed to the subscriber; on
 * the mounted job also written to `data-trace-<job>` with ClusterD's label, owner and JSON), Get,
 * and ClusterD's error answers.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap, Pod } from '../../runtime/kube-objects.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { fakeNodes, rand } from './recovery-fixtures.ts';
import { ControllerProcess, freePort } from './recovery-real-client.ts';

const MOUNT = '/user/cluster-info/datatrace-config';
const ON = { CommunicationOperator: 'on', Step: 'on', SaveCheckpoint: 'off', FP: 'on', DataLoader: 'off' };
const OFF = { CommunicationOperator: 'off', Step: 'off', SaveCheckpoint: 'off', FP: 'off', DataLoader: 'off' };
type Res = { message: string; code: number; profilingSwitch: unknown };

function traceClient(target: string): Client {
  const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'profiling', 'profiling.proto');
  const ctor = loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).TrainingDataTrace as ServiceClientConstructor;
  return new ctor(target, credentials.createInsecure());
}

const call = (c: Client, method: string, req: object): Promise<Res> => new Promise((resolve, reject) =>
  (c as unknown as Record<string, (r: object, cb: (e: ServiceError | null, res?: Res) => void) => void>)[method]!.call(c, req, (e, res) => (e ? reject(e) : resolve(res!))));
const callError = (c: Client, method: string, req: object): Promise<{ code: number; details: string }> =>
  call(c, method, req).then(() => { throw new Error(`${method} succeeded`); }, (e: ServiceError) => ({ code: e.code, details: e.details }));

describe('TrainingDataTrace on the shipped controller (real apiserver, MindCluster\'s profiling.proto)', () => {
  const admin = adminClient();
  let controller: ControllerProcess | undefined;
  const streams: Array<ClientReadableStream<Res>> = [];
  afterAll(async () => {
    for (const s of streams) s.cancel();
    await controller?.stop();
  }, 30_000);

  async function job(ns: string, nodes: readonly string[], mounted: boolean): Promise<{ name: string; uid: string; owner: Record<string, unknown> }> {
    const name = `dt-${rand()}`;
    const vc = await admin.create<KubeObject>(paths.vcJobs(ns), {
      apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: ns }, spec: { minAvailable: nodes.length, tasks: [{ name: 'worker', replicas: nodes.length }] },
    });
    const uid = vc.metadata!.uid!;
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true, blockOwnerDeletion: true };
    const pg = `${name}-${uid}`;
    await admin.create(paths.podGroups(ns), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: pg, namespace: ns, ownerReferences: [owner] },
      spec: { minMember: nodes.length }, status: { phase: 'Running' },
    });
    for (const [rank, node] of nodes.entries()) {
      const pod = `${name}-worker-${rank}`;
      await admin.create(paths.pods(ns), {
        apiVersion: 'v1', kind: 'Pod',
        metadata: {
          name: pod, namespace: ns, ownerReferences: [owner], labels: { app: name },
          annotations: {
            'hccl/rankIndex': String(rank), 'scheduling.k8s.io/group-name': pg, 'huawei.com/AscendReal': 'Ascend910-0,Ascend910-1',
            'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({ pod_name: pod, server_id: '10.0.0.1', devices: [{ device_id: '0', device_ip: '192.168.0.1' }] }),
          },
        },
        spec: {
          nodeName: node, tolerations: [{ operator: 'Exists' }], restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
          ...(mounted ? { volumes: [{ name: 'dt', emptyDir: {} }] } : {}),
          containers: [{
            name: 'train', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': '2' }, limits: { 'huawei.com/Ascend910': '2' } },
            ...(mounted ? { volumeMounts: [{ name: 'dt', mountPath: MOUNT }] } : {}),
          }],
        },
      });
    }
    // kwok runs the pods
    await eventually(async () => {
      const pods = await admin.list<Pod>(`${paths.pods(ns)}?labelSelector=app%3D${name}`);
      return pods.items.length === nodes.length && pods.items.every((p) => p.status?.phase === 'Running');
    }, 60_000);
    return { name, uid, owner };
  }

  it('subscription, push, data-trace-<job> ConfigMap and ClusterD\'s answers', async () => {
    const port = await freePort();
    controller = await new ControllerProcess(port, ['--rescheduling=false'], join(mkdtempSync(join(tmpdir(), 'dt-real-')), 'controller.log')).start().ready();
    const nodes = await fakeNodes(admin, `dt-${rand()}`, 3);
    const ns = await newNamespace(admin, 'dt');
    const mounted = await job(ns, nodes.slice(0, 2), true);
    const plain = await job(ns, nodes.slice(2), false);
    const c = traceClient(controller.target);

    // The plain job runs (job summary) and nobody subscribed yet: ClusterD's publisher error.
    await eventually(async () => {
      const e = await callError(c, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${ns}/${plain.name}`, profilingSwitch: ON });
      return e.details === `notify subscribe err publisher for job ${plain.uid} not found` ? e : undefined;
    }, 60_000);
    expect(await callError(c, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${ns}/nobody`, profilingSwitch: ON }))
      .toEqual({ code: GrpcStatus.UNKNOWN, details: 'notify subscribe err no such job' });

    // TaskD subscribes; an unknown job id is refused.
    const subscribe = (jobId: string): { messages: Res[]; status: Promise<{ code: number; details: string }> } => {
      const s = (c as unknown as Record<string, (r: object) => ClientReadableStream<Res>>).SubscribeDataTraceSwitch!.call(c, { jobId, role: 'taskd' });
      streams.push(s);
      const messages: Res[] = [];
      s.on('data', (m: Res) => void messages.push(m));
      s.on('error', () => undefined);
      return { messages, status: new Promise((r) => s.on('status', (st: { code: number; details: string }) => r({ code: st.code, details: st.details }))) };
    };
    expect(await subscribe('no-such-job').status).toEqual({ code: GrpcStatus.UNKNOWN, details: 'jobId=no-such-job not registered, role=taskd' });
    const plainStream = subscribe(plain.uid);
    await eventually(async () => (await call(c, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${ns}/${plain.name}`, profilingSwitch: ON }).catch(() => undefined))?.code === 200, 10_000);
    await eventually(() => plainStream.messages.length >= 1, 10_000);
    expect(plainStream.messages[0]).toEqual({ message: 'update profiling switch', code: 200, profilingSwitch: ON });
    expect(await admin.getOrUndefined(paths.configMap(ns, `data-trace-${plain.name}`))).toBeUndefined();

    // The mounted job: the switch goes to data-trace-<job> (and a Get right after reads it).
    expect(await call(c, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${ns}/${mounted.name}`, profilingSwitch: ON }))
      .toEqual({ message: 'successfully changed profiling marker enable status', code: 200 });
    expect(await call(c, 'GetTrainingDataTraceSwitch', { jobNsName: `${ns}/${mounted.name}` }))
      .toEqual({ message: `successfully get the status of job[${ns}/${mounted.name}]`, code: 200, profilingSwitch: ON });
    const cm = await admin.get<ConfigMap>(paths.configMap(ns, `data-trace-${mounted.name}`));
    expect(cm.metadata?.labels).toEqual({ reset: 'true' });
    expect(cm.metadata?.ownerReferences).toEqual([mounted.owner]);
    expect(cm.data).toEqual({ profilingSwitch: '{"CommunicationOperator":"on","Step":"on","SaveCheckpoint":"off","FP":"on","DataLoader":"off"}' });

    expect((await call(c, 'ModifyTrainingDataTraceSwitch', { jobNsName: `${ns}/${mounted.name}`, profilingSwitch: OFF })).code).toBe(200);
    expect((await call(c, 'GetTrainingDataTraceSwitch', { jobNsName: `${ns}/${mounted.name}` })).profilingSwitch).toEqual(OFF);
    expect((await admin.get<ConfigMap>(paths.configMap(ns, `data-trace-${mounted.name}`))).data?.profilingSwitch).toContain('"CommunicationOperator":"off"');
    expect(await callError(c, 'GetTrainingDataTraceSwitch', { jobNsName: `${ns}/${plain.name}` }))
      .toEqual({ code: GrpcStatus.UNKNOWN, details: `configmaps "data-trace-${plain.name}" not found` });
    expect(await call(c, 'GetTrainingDataTraceSwitch', { jobNsName: 'no-slash' }))
      .toEqual({ message: 'the format of jobNsName is not namespace/jobName', code: 300, profilingSwitch: null });
    c.close();
  }, 180_000);
});
