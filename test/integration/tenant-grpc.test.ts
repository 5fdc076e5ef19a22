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
import { fakeNodes, rand, reportChipFault } from './recovery-fixtures.ts';
import { realClock } from '../../runtime/clock.ts';

const POD_IP = '127.0.0.23';
const OTHER_POD_IP = '127.0.0.31';
/** Not a pod of any job. */
const STRANGER = '127.0.0.1';
const FAKE_JOBS = 4;

interface TenantJob { readonly name: string; readonly uid: string; readonly pg: string }

/** What a tenant creates for a job: a Volcano Job and its PodGroup (process recovery on). */
async function tenantJob(t: Tenant): Promise<TenantJob> {
  const name = `job-${rand()}`;
  const vc = await t.client.create<KubeObject>(paths.vcJobs(t.ns), {
    apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name, namespace: t.ns },
    spec: { minAvailable: 1, tasks: [{ name: 'worker', replicas: 1 }] },
  });
  const uid = vc.metadata!.uid!;
  const pg = `${name}-${uid}`;
  await t.client.create(paths.podGroups(t.ns), {
    apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
    metadata: { name: pg, namespace: t.ns, labels: { 'process-recover-enable': 'on' }, ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name, uid, controller: true }] },
    spec: { minMember: 1 },
  });
  return { name, uid, pg };
}

/**
 * A pod of the job (created by the tenant) that runs at `ip`: bound to a node nobody runs, so
 * neither the scheduler nor kwok touches it, and its status written by the admin as a kubelet would.
 */
async function podAt(t: Tenant, admin: KubeClient, job: TenantJob, ip: string): Promise<void> {
  const name = `${job.name}-worker-0`;
  await t.client.create(paths.pods(t.ns), {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: t.ns, annotations: { 'scheduling.k8s.io/group-name': job.pg, 'hccl/rankIndex': '0' },
      ownerReferences: [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: job.name, uid: job.uid, controller: true }],
    },
    spec: { nodeName: `tenant-grpc-host-${rand()}`, restartPolicy: 'Never', containers: [{ name: 'train', image: 'training:latest' }] },
  });
  await admin.patch(paths.podStatus(t.ns, name), { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] } });
}

const code = (p: Promise<{ code: number }>): Promise<string> =>
  p.then((r) => `code ${r.code}`, (e: { code: number }) => `grpc ${GrpcStatus[e.code] ?? e.code}`);

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
});
