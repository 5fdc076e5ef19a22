/**
 * job.Job end to end: the shipped controller (`node main.ts`) on the real apiserver, called through
 * MindCluster's job.proto as CCAgent / ascend-faultdiag-online's FdAgent call it: Register, a plain
 * and a List subscription, and the signals of a job on kwok nodes going pending -> running ->
 * deleted, with ClusterD's refusals of an unknown client and a role outside the whitelist.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, status as GrpcStatus, type Client, type ClientReadableStream, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { fakeNodes, rand } from './recovery-fixtures.ts';
import { ControllerProcess, freePort } from './recovery-real-client.ts';

type Signal = { uuid: string; jobId: string; jobName: string; jobStatus: string; operator: string; HcclJson: string; frameWork: string };
type SignalList = { jobSummarySignals: Signal[]; JobTotalNum: number };

function jobClient(target: string): Client {
  const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'job', 'job.proto');
  const ctor = (loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).job as GrpcObject).Job as ServiceClientConstructor;
  return new ctor(target, credentials.createInsecure());
}

describe('job.Job on the shipped controller (real apiserver, MindCluster\'s job.proto)', () => {
  const admin = adminClient();
  let controller: ControllerProcess | undefined;
  const streams: Array<ClientReadableStream<unknown>> = [];
  afterAll(async () => {
    for (const s of streams) s.cancel();
    await controller?.stop();
  }, 30_000);

  it('registers, subscribes and hears a job go pending -> running -> deleted', async () => {
    controller = await new ControllerProcess(await freePort(), ['--rescheduling=false'], join(mkdtempSync(join(tmpdir(), 'job-real-')), 'controller.log')).start().ready();
    const c = jobClient(controller.target);
    const register = (role: string) => new Promise<{ code: number; info: string; clientId: string }>((resolve, reject) =>
      (c as unknown as Record<string, (r: object, cb: (e: ServiceError | null, r?: { code: number; info: string; clientId: string }) => void) => void>).Register!.call(c, { role }, (e, r) => (e ? reject(e) : resolve(r!))));
    const subscribe = <T>(method: string, role: string, clientId: string) => {
      const s = (c as unknown as Record<string, (r: object) => ClientReadableStream<T>>)[method]!.call(c, { role, clientId });
      streams.push(s as ClientReadableStream<unknown>);
      const messages: T[] = [];
      s.on('data', (m: T) => void messages.push(m));
      s.on('error', () => undefined);
      return { messages, status: new Promise<{ code: number; details: string }>((r) => s.on('status', (st: { code: number; details: string }) => r({ code: st.code, details: st.details }))) };
    };

    await expect(register('taskd')).rejects.toMatchObject({ code: GrpcStatus.UNKNOWN, details: 'role:taskd is not in whitelist' });
    expect(await subscribe('SubscribeJobSummarySignal', 'CCAgent', 'nobody').status).toEqual({ code: GrpcStatus.UNKNOWN, details: 'invalid clientId: nobody, please register first' });
    const cc = await register('CCAgent');
    expect(cc).toMatchObject({ code: 200, info: 'registration successful' });
    expect(cc.clientId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const plain = subscribe<Signal>('SubscribeJobSummarySignal', 'CCAgent', cc.clientId);
    const fd = await register('FdAgent');
    const list = subscribe<SignalList>('SubscribeJobSummarySignalList', 'FdAgent', fd.clientId);

    const [node] = await fakeNodes(admin, `job-${rand()}`, 1);
    const ns = await newNamespace(admin, 'jobsig');
    const name = `jobsig-${rand()}`;
    const vc = await admin.create<KubeObject>(paths.vcJobs(ns), { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: ns, labels: { framework: 'pytorch' } }, spec: { minAvailable: 1, tasks: [{ name: 'w', replicas: 1 }] } });
    const uid = vc.metadata!.uid!;
    const owner = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true };
    await admin.create(paths.podGroups(ns), { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name: `${name}-pg`, namespace: ns, labels: { framework: 'pytorch' }, ownerReferences: [owner] }, spec: { minMember: 1 }, status: { phase: 'Running' } });
    await admin.create(paths.pods(ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        name: `${name}-0`, namespace: ns, ownerReferences: [owner], labels: { app: name },
        annotations: { 'hccl/rankIndex': '0', 'scheduling.k8s.io/group-name': `${name}-pg`, 'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({ pod_name: `${name}-0`, server_id: '10.0.0.1', devices: [{ device_id: '0', device_ip: '192.168.0.1' }] }) },
      },
      spec: { nodeName: node, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image: 'x', resources: { requests: { 'huawei.com/Ascend910': '1' }, limits: { 'huawei.com/Ascend910': '1' } } }] },
    });
    const mine = (s: Signal) => s.jobId === uid;
    await eventually(() => plain.messages.filter(mine).some((s) => s.jobStatus === 'running'), 60_000);
    const seen = plain.messages.filter(mine);
    expect(seen.map((s) => `${s.operator} ${s.jobStatus}`)).toEqual(['add pending', 'add running']);
    expect(seen[0]).toMatchObject({ jobName: name, frameWork: 'pytorch', HcclJson: '{"status":"initializing"}' });
    expect(seen[1]!.HcclJson).toContain('"server_list"');
    expect(new Set(seen.map((s) => s.uuid)).size).toBe(2);
    await eventually(() => list.messages.some((l) => l.jobSummarySignals.some((s) => mine(s) && s.jobStatus === 'running')), 10_000);
    // Each transition goes out alone (other tests' jobs on the shared apiserver may fill the first batch).
    expect(list.messages.filter((l) => l.jobSummarySignals.some(mine)).every((l) => l.JobTotalNum === 1 && l.jobSummarySignals.length === 1)).toBe(true);

    await admin.delete(paths.podGroup(ns, `${name}-pg`));
    await admin.delete(paths.pod(ns, `${name}-0`), { gracePeriodSeconds: 0 });
    await eventually(() => plain.messages.filter(mine).some((s) => s.operator === 'delete'), 60_000);
    expect(plain.messages.filter(mine).at(-1)).toMatchObject({ operator: 'delete' });

    // A late List subscriber gets the job summary (the deleted job stays 60 s) first.
    const late = await register('DefaultUser1');
    const lateList = subscribe<SignalList>('SubscribeJobSummarySignalList', 'DefaultUser1', late.clientId);
    await eventually(() => lateList.messages.length >= 1, 10_000);
    expect(lateList.messages[0]!.jobSummarySignals.some(mine)).toBe(true);
    c.close();
  }, 180_000);
});
