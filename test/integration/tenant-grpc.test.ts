/**
 * Tenant isolation, the gRPC server (README "Threat model"): a tenant who may create Volcano Jobs,
 * PodGroups and Pods in its own namespace, plus an unauthenticated gRPC client, against the
 * controller with its default flags on the real apiserver.
 *
 * - Jobs of its own without a pod at the caller's address: Recover Init + Register from that address
 *   are refused (PERMISSION_DENIED), so they neither fill --max-served-jobs nor make the controller
 *   write mindx-dl/clusterd-ts-recovery-<uid>; the real job, called from its pod's address, is served.
 *   ClusterD serves any address (component/clusterd/pkg/application/recover/fault_recover_service.go).
 * - fault.Fault Register with a new role each time: the publishers held stay under the caps; for a
 *   job, only from a pod in the job's namespace (a MindIE controller beside its server job).
 * - A fault stream whose client never reads is reset at --grpc-stream-max-pending queued messages.
 * - Calls that name a namespace (docs/grpc.md#system-callers): a pod in A can neither switch nor read
 *   B's TrainingDataTrace (nothing written in B), gets only A's jobs from job.Job, and cannot register
 *   B's MindIE job id in config.Config; B's pod and a system pod (mindx-dl) can. With
 *   --grpc-caller-check=off, A switches B's data trace, as ClusterD lets any caller.
 *
 * "A pod's address" is real here: the pod's status.podIP (written by the admin, as the kubelet
 * would) is a 127.0.0.x loopback alias, and the client binds its connections to it
 * (grpc/testing.ts fromTarget).
 */
import { connect, constants as http2 } from 'node:http2';
import { connect as tcpConnect } from 'node:net';
import { Client, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { loadClusterdServices } from '../../grpc/protos.ts';
import { fromTarget, openStream, unaryCall } from '../../grpc/testing.ts';
import { recoveryStateCmName, RECOVERY_STATE_NAMESPACE } from '../../reconcilers/recovery-state.reconciler.ts';
import { adminClient, ensureNamespace, eventually } from '../support/cluster.ts';
import { newTenant, removeJobs, type Tenant } from '../support/tenant.ts';
import { createJob, fakeNodes, rand, reportChipFault } from './recovery-fixtures.ts';
import { realClock } from '../../runtime/clock.ts';

const POD_IP = '127.0.0.23';
const OTHER_POD_IP = '127.0.0.31';
/** Not a pod of any job. */
const STRANGER = '127.0.0.1';
const FAKE_JOBS = 4;
/** TrainingDataTrace writes data-trace-<job> only for a job whose pods all mount this. */
const DATA_TRACE_MOUNT = '/user/cluster-info/datatrace-config';
const ON = { CommunicationOperator: 'on', Step: 'on', SaveCheckpoint: 'off', FP: 'on', DataLoader: 'off' };

interface TenantJob { readonly name: string; readonly uid: string; readonly pg: string }

/** What a tenant creates for a job: a Volcano Job and its PodGroup (process recovery on). */
async function tenantJob(t: Tenant, labels: Record<string, string> = {}): Promise<TenantJob> {
  const name = `job-${rand()}`;
  const vc = await t.client.create<KubeObject>(paths.vcJobs(t.ns), {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: t.ns },
    spec: { minAvailable: 1, tasks: [{ name: 'worker', replicas: 1 }] },
  });
  const uid = vc.metadata!.uid!;
  const pg = `${name}-${uid}`;
  await t.client.create(paths.podGroups(t.ns), {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: pg, namespace: t.ns, labels: { 'process-recover-enable': 'on', ...labels }, ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true }] },
    spec: { minMember: 1 },
  });
  return { name, uid, pg };
}

/**
 * A pod of the job (created by the tenant) that runs at `ip`: bound to a node nobody runs, so
 * neither the scheduler nor kwok touches it, and its status written by the admin as a kubelet would.
 */
async function podAt(t: Tenant, admin: KubeClient, job: TenantJob, ip: string, dataTrace = false): Promise<void> {
  const name = `${job.name}-worker-0`;
  const mount = dataTrace ? { volumes: [{ name: 'dt', emptyDir: {} }] } : {};
  await t.client.create(paths.pods(t.ns), {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: t.ns, annotations: { 'scheduling.k8s.io/group-name': job.pg, 'hccl/rankIndex': '0' },
      ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: job.name, uid: job.uid, controller: true }],
    },
    spec: {
      nodeName: `tenant-grpc-host-${rand()}`, restartPolicy: 'Never', ...mount,
      containers: [{ name: 'train', image: 'training:latest', ...(dataTrace ? { volumeMounts: [{ name: 'dt', mountPath: DATA_TRACE_MOUNT }] } : {}) }],
    },
  });
  await admin.patch(paths.podStatus(t.ns, name), { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] } });
}

/** A pod of a system component (admin-created, in a system namespace) running at `ip`. */
async function systemPodAt(admin: KubeClient, ns: string, ip: string): Promise<void> {
  const name = `system-agent-${rand()}`;
  await admin.create(paths.pods(ns), {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns },
    spec: { nodeName: `tenant-grpc-host-${rand()}`, restartPolicy: 'Never', containers: [{ name: 'agent', image: 'agent:latest' }] },
  });
  await admin.patch(paths.podStatus(ns, name), { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } });
}

const code = (p: Promise<{ code: number }>): Promise<string> =>
  p.then((r) => `code ${r.code}`, (e: { code: number }) => `grpc ${GrpcStatus[e.code] ?? e.code}`);
const refusedOf = async (metrics: Metrics, method: string): Promise<number> =>
  (await metrics.grpcCallerRefused.get()).values.find((v) => v.labels.method === method)?.value ?? 0;
type SignalList = { jobSummarySignals: Array<{ jobId: string; namespace: string }>; JobTotalNum: number };

describe('tenant gRPC: calls act only on a job with a pod at the caller\'s address; caps hold', () => {
  const admin = adminClient();
  const metrics = new Metrics({ processMetrics: false });
  let manager: Manager;
  let target = '';
  let tenant: Tenant;
  const clients: Client[] = [];
  const from = (ip: string): Client => {
    const c = new Client(fromTarget(ip, target), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system']) await ensureNamespace(admin, ns);
    // Default flags (--grpc-caller-check=pod-ip) but a small served-jobs cap, so the fake jobs could fill it.
    manager = new Manager({ clock: realClock,
      client: admin, metrics, log: silentLogger,
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--grpc-host=127.0.0.1', '--cluster-info-refresh-seconds=0', `--max-served-jobs=${FAKE_JOBS}`], {}),
    });
    await manager.start();
    const server = await manager.grpc.ready();
    target = `127.0.0.1:${server!.port}`;
    tenant = await newTenant(admin, 'tgrpc');
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await manager?.stop();
    if (tenant !== undefined) await removeJobs(admin, [tenant.ns]);
  }, 30_000);

  it('fake jobs cannot be registered from an address that is no pod of theirs: no served-job slot, no recovery ConfigMap; the real job is served', async () => {
    const real = await tenantJob(tenant);
    await podAt(tenant, admin, real, POD_IP);
    const fakes: TenantJob[] = [];
    for (let i = 0; i < FAKE_JOBS; i++) fakes.push(await tenantJob(tenant));
    await podAt(tenant, admin, fakes[0]!, OTHER_POD_IP); // a pod of its own, elsewhere: still not the caller
    await eventually(() => [real, ...fakes].every((j) => manager.recovery.lookup(j.uid) !== undefined), 15_000);
    await eventually(() => manager.grpc.server?.recoverRegistry !== undefined);

    const anon = from(STRANGER);
    const answers: string[] = [];
    for (const j of fakes) {
      const who = { jobId: j.uid, role: 'taskd' };
      answers.push(await code(unaryCall(anon, 'recover', 'Init', who)), await code(unaryCall(anon, 'recover', 'Register', who)));
    }
    // nor may the stranger register the real job
    answers.push(await code(unaryCall(anon, 'recover', 'Init', { jobId: real.uid, role: 'taskd' })));
    expect(answers).toEqual(Array.from({ length: FAKE_JOBS * 2 + 1 }, () => 'grpc PERMISSION_DENIED'));
    expect(manager.grpc.server!.recoverRegistry.registeredCount()).toBe(0);
    expect(manager.recovery.registeredJobIds()).toEqual([]);
    const refused = (await metrics.grpcCallerRefused.get()).values.reduce((n, v) => n + v.value, 0);
    expect(refused).toBe(FAKE_JOBS * 2 + 1);

    // The job's own pod: Init, Register, subscribe.
    const pod = from(POD_IP);
    const who = { jobId: real.uid, role: 'taskd' };
    expect(await code(unaryCall(pod, 'recover', 'Init', who))).toBe('code 0');
    expect(await code(unaryCall(pod, 'recover', 'Register', who))).toBe('code 0');
    const sub = openStream(pod, 'recover', 'SubscribeProcessManageSignal', who);
    await eventually(() => manager.grpc.server!.recoverRegistry.entry(real.uid)?.streamId !== undefined);
    expect(manager.recovery.registeredJobIds()).toEqual([real.uid]);
    await eventually(() => admin.getOrUndefined<ConfigMap>(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(real.uid))));
    for (const j of fakes) expect(await admin.getOrUndefined(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(j.uid)))).toBeUndefined();
    sub.cancel();
  }, 120_000);

  it('fault.Fault Register with a new role each time: the publishers held stay under the per-job and per-client caps', async () => {
    const job = await tenantJob(tenant);
    const ip = '127.0.0.41';
    await podAt(tenant, admin, job, ip);
    await eventually(() => manager.recovery.lookup(job.uid) !== undefined, 15_000);
    const registry = manager.grpc.server!.faultRegistry;
    const before = registry.size();
    const anon = from('127.0.0.42');
    const pod = from(ip);
    const results = new Map<string, number>();
    const tally = (s: string): void => void results.set(s, (results.get(s) ?? 0) + 1);
    // A pod beside the job in its namespace (a MindIE controller beside its server job) may subscribe for it.
    tally(`neighbour ${await code(unaryCall(from(POD_IP), 'fault', 'Register', { jobId: job.uid, role: 'mindie-controller' }))}`);
    for (let i = 0; i < 300; i++) tally(`cluster ${await code(unaryCall(anon, 'fault', 'Register', { jobId: '', role: `role-${i}` }))}`);
    for (let i = 0; i < 100; i++) tally(`job ${await code(unaryCall(pod, 'fault', 'Register', { jobId: job.uid, role: `role-${i}` }))}`);
    tally(`stranger ${await code(unaryCall(anon, 'fault', 'Register', { jobId: job.uid, role: 'x' }))}`);
    // defaults: 64 publishers per client address, 16 roles per job
    expect(Object.fromEntries(results)).toEqual({
      'cluster code 0': 64, 'cluster grpc RESOURCE_EXHAUSTED': 236,
      'neighbour code 0': 1, 'job code 0': 15, 'job grpc RESOURCE_EXHAUSTED': 85,
      'stranger grpc PERMISSION_DENIED': 1,
    });
    expect(registry.size() - before).toBe(80);
    const hits = Object.fromEntries((await metrics.boundHits.get()).values.map((v) => [v.labels.bound, v.value]));
    expect(hits).toMatchObject({ grpc_fault_publishers_per_client: 236, grpc_fault_roles_per_job: 85 });
  }, 120_000);

  it('a cluster-wide fault stream whose client never reads is reset once its queued messages reach the bound', async () => {
    const nodes = await fakeNodes(admin, `tgrpc-${rand()}`, 1);
    // A job holds the chip: cluster-wide subscribers get the faults of jobs' nodes only (as ClusterD).
    const ns = `tgrpc-${rand()}`;
    await ensureNamespace(admin, ns);
    await createJob(admin, { ns, nodes, labels: { 'fault-scheduling': 'off' } });
    const role = `never-reads-${rand()}`;
    expect(await code(unaryCall(from('127.0.0.51'), 'fault', 'Register', { jobId: '', role }))).toBe('code 0');
    // An HTTP/2 client that grants no flow-control window: nothing the server writes can leave.
    const def = loadClusterdServices().fault.SubscribeFaultMsgSignal!;
    const body = def.requestSerialize({ jobId: '', role });
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), body]);
    frame.writeUInt32BE(body.length, 1);
    const [host, port] = target.split(':');
    const session = connect(`http://${target}`, {
      settings: { initialWindowSize: 0 },
      createConnection: () => tcpConnect({ host: host!, port: Number(port), localAddress: '127.0.0.51' }),
    });
    const req = session.request({ ':method': 'POST', ':path': def.path, 'content-type': 'application/grpc', te: 'trailers' });
    req.end(frame);
    req.pause();
    let rst: number | undefined;
    req.on('close', () => { rst = req.rstCode; });
    req.on('error', () => undefined);
    await eventually(() => manager.grpc.faults.subscribed('-1'));
    // Faults come and go on a node: each change is one message to every cluster-wide subscriber.
    for (let i = 0; i < 100 && rst === undefined; i++) {
      await reportChipFault(admin, nodes[0]!, 'Ascend910-0', `8C${i.toString(16).padStart(6, '0')}`, 'RestartBusiness', true);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(rst).toBe(http2.NGHTTP2_CANCEL);
    const hits = (await metrics.boundHits.get()).values.find((v) => v.labels.bound === 'grpc_stream_pending_writes')?.value;
    expect(hits).toBe(1);
    session.destroy();
    await reportChipFault(admin, nodes[0]!, 'Ascend910-0', '8C000000', 'NotHandleFault', false);
  }, 120_000);
  describe('calls that name a namespace: TrainingDataTrace Modify/Get, job.Job, config.Config', () => {
    const POD_A = '127.0.0.61';
    const POD_B = '127.0.0.62';
    const SYSTEM_POD = '127.0.0.63';
    let a: Tenant;
    let b: Tenant;
    let jobA: TenantJob;
    let jobB: TenantJob;
    const mindieId = `mindie-${rand()}`;
    const modifyPath = '/TrainingDataTrace/ModifyTrainingDataTraceSwitch';
    const getPath = '/TrainingDataTrace/GetTrainingDataTraceSwitch';

    beforeAll(async () => {
      a = await newTenant(admin, 'tgrpc-a');
      b = await newTenant(admin, 'tgrpc-b');
      jobA = await tenantJob(a);
      await podAt(a, admin, jobA, POD_A);
      jobB = await tenantJob(b, { jobID: mindieId, app: 'mindie-ms-server' });
      await podAt(b, admin, jobB, POD_B, true);
      await systemPodAt(admin, 'mindx-dl', SYSTEM_POD);
      await eventually(() => [jobA, jobB].every((j) => manager.recovery.lookup(j.uid) !== undefined), 15_000);
    }, 60_000);
    afterAll(async () => {
      await removeJobs(admin, [a?.ns, b?.ns].filter((x): x is string => x !== undefined));
      for (const p of (await admin.list<{ metadata?: { name?: string } }>(paths.pods('mindx-dl'))).items) {
        if (p.metadata?.name?.startsWith('system-agent-') === true) await admin.delete(`${paths.pods('mindx-dl')}/${p.metadata.name}`, { gracePeriodSeconds: 0 }).catch(() => undefined);
      }
    }, 30_000);

    it('TrainingDataTrace: a pod in A can neither switch nor read B\'s job (PERMISSION_DENIED, nothing written, counted); B\'s pod and a system pod can', async () => {
      const dataTrace = paths.configMap(b.ns, `data-trace-${jobB.name}`);
      const before = { modify: await refusedOf(metrics, modifyPath), get: await refusedOf(metrics, getPath) };
      const fromA = from(POD_A);
      expect(await code(unaryCall(fromA, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}`, profilingSwitch: ON }))).toBe('grpc PERMISSION_DENIED');
      expect(await code(unaryCall(fromA, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}` }))).toBe('grpc PERMISSION_DENIED');
      expect(await refusedOf(metrics, modifyPath)).toBe(before.modify + 1);
      expect(await refusedOf(metrics, getPath)).toBe(before.get + 1);
      expect(await admin.getOrUndefined(dataTrace)).toBeUndefined();

      // B's own pod: ClusterD's answers, and the switch is written to data-trace-<job> in B.
      const fromB = from(POD_B);
      expect(await eventually(async () => {
        const r = await code(unaryCall(fromB, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}`, profilingSwitch: ON }));
        return r === 'code 200' ? r : undefined;
      }, 15_000)).toBe('code 200');
      expect((await admin.get<ConfigMap>(dataTrace)).data?.profilingSwitch).toContain('"CommunicationOperator":"on"');
      expect(await unaryCall(fromB, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}` })).toMatchObject({ code: 200, profilingSwitch: ON });
      // A system component's pod (mindx-dl) may read and switch any namespace's job.
      const fromSystem = from(SYSTEM_POD);
      expect(await unaryCall(fromSystem, 'trainingDataTrace', 'GetTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}` })).toMatchObject({ code: 200, profilingSwitch: ON });
      expect(await code(unaryCall(fromSystem, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}`, profilingSwitch: { ...ON, FP: 'off' } }))).toBe('code 200');
      expect((await admin.get<ConfigMap>(dataTrace)).data?.profilingSwitch).toContain('"FP":"off"');
      // A still cannot, and B's ConfigMap is as the system pod left it.
      expect(await code(unaryCall(fromA, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}`, profilingSwitch: ON }))).toBe('grpc PERMISSION_DENIED');
      expect((await admin.get<ConfigMap>(dataTrace)).data?.profilingSwitch).toContain('"FP":"off"');
    }, 60_000);

    it('job.Job: a pod in A gets A\'s jobs only; a system pod gets A\'s and B\'s', async () => {
      const listFrom = async (ip: string): Promise<SignalList> => {
        const c = from(ip);
        const { clientId } = await unaryCall<{ clientId: string }>(c, 'job', 'Register', { role: 'FdAgent' });
        const s = openStream<SignalList>(c, 'job', 'SubscribeJobSummarySignalList', { role: 'FdAgent', clientId });
        await eventually(() => s.messages.length > 0, 10_000);
        s.cancel();
        return s.messages[0]!;
      };
      const jobsOf = (l: SignalList): string[] => l.jobSummarySignals.map((x) => x.jobId);
      await eventually(async () => jobsOf(await listFrom(SYSTEM_POD)).includes(jobB.uid) || undefined, 15_000);
      const tenantList = await listFrom(POD_A);
      expect(jobsOf(tenantList)).toContain(jobA.uid);
      expect(new Set(tenantList.jobSummarySignals.map((x) => x.namespace))).toEqual(new Set([a.ns]));
      expect(tenantList.JobTotalNum).toBe(tenantList.jobSummarySignals.length);
      const systemList = await listFrom(SYSTEM_POD);
      expect(jobsOf(systemList)).toEqual(expect.arrayContaining([jobA.uid, jobB.uid]));
    }, 60_000);

    it('config.Config: A cannot register or subscribe for B\'s MindIE job id; B\'s pod can', async () => {
      const who = { jobId: mindieId, role: 'mindie-ms-controller' };
      const path = '/config.Config/Register';
      const before = await refusedOf(metrics, path);
      expect(await code(unaryCall(from(POD_A), 'config', 'Register', who))).toBe('grpc PERMISSION_DENIED');
      expect(manager.grpc.server!.configRegistry.registered(mindieId)).toBe(false);
      expect(await refusedOf(metrics, path)).toBe(before + 1);
      expect(await code(unaryCall(from(POD_B), 'config', 'Register', who))).toBe('code 0');
      const stolen = openStream(from(POD_A), 'config', 'SubscribeRankTable', who);
      expect((await stolen.done).code).toBe(GrpcStatus.PERMISSION_DENIED);
      expect(manager.grpc.server!.configRegistry.registered(mindieId)).toBe(true);
    }, 60_000);
  });
});

describe('tenant gRPC with --grpc-caller-check=off: ClusterD\'s open port', () => {
  const admin = adminClient();
  let manager: Manager | undefined;
  let client: Client | undefined;
  const tenants: Tenant[] = [];
  afterAll(async () => {
    client?.close();
    await manager?.stop();
    await removeJobs(admin, tenants.map((t) => t.ns));
  }, 30_000);

  it('a pod in A switches B\'s data trace, and the controller writes data-trace-<job> in B', async () => {
    manager = new Manager({ clock: realClock, client: admin, metrics: new Metrics({ processMetrics: false }), log: silentLogger,
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--grpc-host=127.0.0.1', '--cluster-info-refresh-seconds=0', '--grpc-caller-check=off'], {}),
    });
    await manager.start();
    const server = await manager.grpc.ready();
    const a = await newTenant(admin, 'tgrpc-off-a');
    const b = await newTenant(admin, 'tgrpc-off-b');
    tenants.push(a, b);
    const jobA = await tenantJob(a);
    await podAt(a, admin, jobA, '127.0.0.71');
    const jobB = await tenantJob(b);
    await podAt(b, admin, jobB, '127.0.0.72', true);
    await eventually(() => manager!.recovery.lookup(jobB.uid) !== undefined, 15_000);
    client = new Client(fromTarget('127.0.0.71', `127.0.0.1:${server!.port}`), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    expect(await eventually(async () => {
      const r = await code(unaryCall(client!, 'trainingDataTrace', 'ModifyTrainingDataTraceSwitch', { jobNsName: `${b.ns}/${jobB.name}`, profilingSwitch: ON }));
      return r === 'code 200' ? r : undefined;
    }, 15_000)).toBe('code 200');
    expect((await admin.get<ConfigMap>(paths.configMap(b.ns, `data-trace-${jobB.name}`))).data?.profilingSwitch).toContain('"CommunicationOperator":"on"');
  }, 90_000);
});
