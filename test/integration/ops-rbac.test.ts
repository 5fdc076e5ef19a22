/**
 * RBAC proven end to end (the chart's least privilege is enough): `helm install` the chart into a fresh release namespace,
 * run the whole controller (the Manager, with the Deployment's own arguments and leader election)
 * in-process under a token of the chart's ServiceAccount, and drive a fault-to-reschedule scenario
 * on the real control plane: SeparateNPU on a pod's NPU of a `fault-scheduling=force` job -> all
 * pods deleted and recreated, vcjob-fault-npu-cm and job-reschedule-reason written, an Event on the
 * PodGroup, and the controller's own state ConfigMap deleted when the job goes. Every request the
 * controller makes goes through that token; none may be answered 403 (metrics and logs), and verbs
 * it does not need stay denied for the same token.
 *
 * Only the controller runs as the ServiceAccount. The rest of the world (the user creating the job,
 * the device plugin simulator, the NPU allocator, the job peer standing in for Volcano's job
 * controller) uses the admin client, as those are other components with their own RBAC.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ApiError, HttpKubeClient, paths, type KubeObject, type RequestOptions } from '../../runtime/kube-client.ts';
import { LEADER_LEASE_NAME, Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { JOB_STATE_NAMESPACE, journalCmName } from '../../schemas/job-state/job-state.ts';
import { createLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { helmRunner } from '../support/helm.ts';
import { adminClient, controlPlaneInfo, ensureNamespace, eventually, serviceAccountClient } from '../support/cluster.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { podGroupEvents, readCm, rescheduleReasonOf, vcjobFaultNpu } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const CHART = join(fileURLToPath(new URL('../../', import.meta.url)), 'charts', 'clusterd-ts');
const suffix = randomBytes(3).toString('hex');
const RELEASE = `ops-${suffix}`;
const FULLNAME = `${RELEASE}-clusterd-ts`;
const SA = 'clusterd';

// ---- helm ---------------------------------------------------------------------------------------

const helmRun = helmRunner('ops');
const helm = (args: readonly string[]) => helmRun.run(args);

// ---- a client that remembers every answer ---------------------------------------------------------

interface Call { readonly method: string; readonly path: string; readonly status: number }

/** The ServiceAccount's client, recording method, path and status of every request (watches excepted). */
class RecordingClient extends HttpKubeClient {
  readonly calls: Call[] = [];

  override async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    try {
      const out = await super.request<T>(method, path, opts);
      this.calls.push({ method, path, status: 200 });
      return out;
    } catch (e) {
      this.calls.push({ method, path, status: e instanceof ApiError ? e.statusCode : 0 });
      throw e;
    }
  }
}

/** `DELETE pods`, `PUT configmaps mindx-dl`, ... (namespace only for namespaced writes). */
function describeCall(c: Call): string {
  const parts = c.path.split('/').filter(Boolean); // api/v1/... or apis/<group>/<version>/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  const group = parts[0] === 'api' ? '' : `${parts[1]}/`;
  const ns = rest[0] === 'namespaces' && rest.length > 2 ? rest[1] : undefined;
  const resource = ns === undefined ? rest[0] : rest[2];
  const write = c.method !== 'GET';
  return `${c.method} ${group}${resource}${write && ns !== undefined ? ` ${ns.startsWith('orb-') ? '<job ns>' : ns}` : ''}`;
}

async function statusOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof ApiError) return e.statusCode;
    throw e;
  }
}

const uidOf = (p: PodObj): string => p.metadata?.uid ?? '';
const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);

describe('RBAC: the controller under the chart\'s ServiceAccount through a fault-to-reschedule scenario', () => {
  const admin = adminClient();
  const info = controlPlaneInfo();
  const releaseNs = `ops-rbac-${suffix}`;
  let world: World | undefined;
  let manager: Manager | undefined;
  let installed = false;

  afterAll(async () => {
    await manager?.stop().catch(() => undefined);
    await world?.stop().catch(() => undefined);
    if (installed) await helm(['uninstall', RELEASE, '-n', releaseNs, '--kubeconfig', info.kubeconfig, '--timeout', '60s']);
    helmRun.dispose();
  }, 90_000);

  it('reschedules a job with no 403, and the token is denied what the controller does not need', async () => {
    // 1. The chart, as an operator installs it (the state Role needs mindx-dl to exist).
    await ensureNamespace(admin, JOB_STATE_NAMESPACE);
    const inst = await helm(['install', RELEASE, CHART, '-n', releaseNs, '--create-namespace', '--kubeconfig', info.kubeconfig, '--timeout', '60s']);
    expect({ code: inst.code, stderr: inst.stderr }).toEqual(expect.objectContaining({ code: 0 }));
    installed = true;
    const dep = await admin.get<KubeObject & { spec: { template: { spec: { serviceAccountName: string; containers: Array<{ args: string[] }> } } } }>(`/apis/apps/v1/namespaces/${releaseNs}/deployments/${FULLNAME}`);
    expect(dep.spec.template.spec.serviceAccountName).toBe(SA);
    const chartArgs = dep.spec.template.spec.containers[0]!.args;
    expect(chartArgs).toEqual(expect.arrayContaining(['--leader-elect=true', `--leader-election-namespace=${releaseNs}`, '--rescheduling=true', '--hot-switch-backup-pods=false', '--dry-run=false']));

    // 2. The world (other components: admin) and the controller (the ServiceAccount's token).
    world = await startWorld(admin, { nodes: 3, prefix: 'orb' });
    const { ns } = world;
    const sa = new RecordingClient((await serviceAccountClient(admin, releaseNs, SA)).kc);
    const logLines: string[] = [];
    const logSink = new Writable({ write(chunk: Buffer, _enc, done) { logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean)); done(); } });
    const metrics = new Metrics({ processMetrics: false });
    // The Deployment's arguments, with free local ports instead of the pod's fixed ones.
    const options = parseOptions([...chartArgs, '--http-port=0', '--http-host=127.0.0.1', '--grpc-port=0', '--grpc-host=127.0.0.1'], {});
    expect(options.leaderElectionNamespace).toBe(releaseNs);
    manager = new Manager({ clock: realClock, client: sa, options, log: createLogger('info', logSink), metrics });
    await manager.start();
    await eventually(() => manager!.isLeader, 20_000);
    type Lease = KubeObject & { spec: { holderIdentity: string; renewTime: string } };
    const lease = await admin.get<Lease>(paths.lease(releaseNs, LEADER_LEASE_NAME));
    expect(lease.spec.holderIdentity).not.toBe('');

    // 3. The scenario: a force job, SeparateNPU on rank 1's first NPU.
    const job = await admin.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'rbac', replicas: 2, npus: 4, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '2' } }));
    const uid = job.metadata!.uid!;
    const jobKey = `${ns}/rbac-${uid}`;
    const before = await eventually(async () => { const ps = await jobPods(admin, ns, 'rbac'); return ps.length === 2 && ps.every(runningWithNpus) ? ps : undefined; }, 30_000);
    await eventually(async () => (await vcjobFaultNpu(admin)).remainRetryTimes.get(jobKey)?.Times === 2, 15_000);
    const victim = before[1]!;
    const node = victim.spec!.nodeName!;
    const npu = npusOf(victim)[0]!;
    await world.dp.injectChipFault({ node, npu, code: '80E18402', level: 'SeparateNPU' });

    const old = new Set(before.map(uidOf));
    await eventually(async () => { const ps = await jobPods(admin, ns, 'rbac'); return ps.length === 2 && ps.every((p) => !old.has(uidOf(p)) && runningWithNpus(p)); }, 30_000);
    expect(world.peer.statsOf('rbac').deletedUids).toEqual(old);
    const reason = await eventually(async () => rescheduleReasonOf(admin, jobKey), 15_000);
    expect(reason.TotalRescheduleTimes).toBe(1);
    expect(reason.RescheduleRecords?.[0]?.ReasonOfTask).toEqual([{ RescheduleReason: 'CardUnhealthy', PodName: victim.metadata!.name!, NodeName: node, NodeRankIndex: '1' }]);
    const faultNode = await eventually(async () => (await vcjobFaultNpu(admin)).faultNodes.find((n) => n.NodeName === node), 15_000);
    expect(faultNode.UnhealthyNPU).toEqual([npu]);
    await eventually(async () => (await podGroupEvents(admin, ns, `rbac-${uid}`)).some((e) => e.reason === 'FaultRescheduling'), 15_000);
    expect(await readCm(admin, JOB_STATE_NAMESPACE, journalCmName(0))).toBeDefined();

    // 4. The job goes away: the controller removes its state from the journal and, the journal then
    // empty, deletes the journal ConfigMap (the mindx-dl state Role).
    await world.stop();
    world = undefined;
    await eventually(async () => (await readCm(admin, JOB_STATE_NAMESPACE, journalCmName(0))) === undefined, 20_000);

    // ... and the leader has renewed its Lease at least once (get + update on the named Lease).
    const leasePath = paths.lease(releaseNs, LEADER_LEASE_NAME);
    await eventually(() => sa.calls.some((c) => c.method === 'PUT' && c.path === leasePath && c.status === 200), 20_000);
    expect((await admin.get<Lease>(leasePath)).spec.renewTime).not.toBe(lease.spec.renewTime);

    // 5. Not one request was refused: metrics, the recorded calls and the logs agree.
    const forbiddenMetric = (await metrics.apiRequests.get()).values.filter((v) => v.labels.code === '403').reduce((n, v) => n + v.value, 0);
    expect(forbiddenMetric).toBe(0);
    expect(sa.calls.filter((c) => c.status === 403).map((c) => `${c.method} ${c.path}`)).toEqual([]);
    expect(logLines.filter((l) => /\b403\b|forbidden/i.test(l))).toEqual([]);
    const used = new Map<string, number>();
    for (const c of sa.calls.filter((x) => x.status >= 200 && x.status < 300)) used.set(describeCall(c), (used.get(describeCall(c)) ?? 0) + 1);
    process.stdout.write(`[ops-rbac] requests by the chart's ServiceAccount (2xx): ${[...used].sort().map(([k, n]) => `${k} x${n}`).join(', ')}; 403: ${forbiddenMetric}\n`);
    // The writes the scenario needs, all made by the ServiceAccount.
    expect([...used.keys()]).toEqual(expect.arrayContaining([
      'DELETE pods <job ns>', 'POST events <job ns>', 'DELETE configmaps mindx-dl',
      'POST coordination.k8s.io/leases ' + releaseNs, 'PUT coordination.k8s.io/leases ' + releaseNs,
    ]));
    expect([...used.keys()].some((k) => /^(POST|PUT) configmaps volcano-system$/.test(k))).toBe(true);
    expect([...used.keys()].some((k) => /^(POST|PUT) configmaps mindx-dl$/.test(k))).toBe(true);

    // 6. What the controller does not need stays denied for the same token (a separate client, so
    // these refusals are not counted in the controller's metrics above).
    const probe = await serviceAccountClient(admin, releaseNs, SA);
    const someNode = node;
    const denied: Array<[string, Promise<unknown>]> = [
      ['get secrets (release namespace)', probe.list(`/api/v1/namespaces/${releaseNs}/secrets`)],
      ['get secret kube-system/x', probe.get(`/api/v1/namespaces/kube-system/secrets/x`)],
      ['list secrets (all namespaces)', probe.list('/api/v1/secrets')],
      ['delete node', probe.delete(paths.node(someNode))],
      ['update node', probe.replace(paths.node(someNode), await admin.get(paths.node(someNode)))],
      ['create pod (hot-switch backup pods off)', probe.create(paths.pods(ns), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'backup-x' }, spec: { containers: [{ name: 'c', image: 'x' }] } })],
      ['delete podgroup', probe.delete(paths.podGroup(ns, `rbac-${uid}`))],
      ['delete vcjob', probe.delete(paths.vcJob(ns, 'rbac'))],
      ['get services', probe.get(`/api/v1/namespaces/${releaseNs}/services/clusterd-grpc-svc`)],
      ['delete the leader Lease', probe.delete(paths.lease(releaseNs, LEADER_LEASE_NAME))],
    ];
    const answers: Record<string, number> = {};
    for (const [what, p] of denied) answers[what] = await statusOf(p);
    expect(answers).toEqual(Object.fromEntries(denied.map(([what]) => [what, 403])));
    // The node is still there (403 is authorization, before any lookup).
    await expect(admin.get(paths.node(someNode))).resolves.toBeDefined();
  }, 120_000);
});
