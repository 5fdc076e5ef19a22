/**
 * gRPC routing follows the leader (only the leader acts), and `--dry-run` posts no Events.
 *
 * `helm install` the chart with `controller.dryRun=true` (so the ClusterRole is read only and the
 * leader label can only be written through the chart's `-leader-label` Role), create the pods of
 * its Deployment by hand (no kube-controller-manager here), and run two Managers in-process, each
 * as one of those pods (`pod`, as POD_NAME / POD_NAMESPACE would give it) under its own token of
 * the chart's ServiceAccount, with the shortest lease. The endpoints controller is not running
 * either, so "the Service routes to" is checked the way it selects: listing pods with the Service's
 * selector.
 *
 * 1. Only the leader's pod carries `clusterd-ts.io/leader=true`: the gRPC Service selects it alone,
 *    the metrics Service selects every replica; a stale label of a former leader of the release is
 *    cleared, another release's pod is left alone. Both replicas are Ready; /leaderz tells them apart.
 * 2. Dry run: a SeparateNPU fault on a job is decided (`decisions_total{outcome="dry_run"}`) and no
 *    Event is posted, and not one request of either replica is refused by the read-only ClusterRole
 *    (an Event attempt would be: docs/rbac.md and the chart grant no events verbs in dry run).
 * 3. The leader crashes (its connection is cut, so it can neither renew nor remove its label): the
 *    standby takes the Lease, labels its pod and clears the old pod's label.
 * 4. The old pod's container restarts (a fresh Manager for the same pod) as a standby; the leader
 *    stops gracefully: it removes its own label and releases the Lease, the standby takes over.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpKubeClient, paths, type KubeObject, type RequestOptions } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { FLAGS, parseOptions } from '../../controllers/options.ts';
import { LEADER_LABEL, LEADER_LABEL_VALUE } from '../../actions/leader-label.action.ts';
import { createLogger, silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { helmRunner } from '../support/helm.ts';
import { adminClient, controlPlaneInfo, eventually, serviceAccountClient } from '../support/cluster.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { podGroupEvents, sleep } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const CHART = join(fileURLToPath(new URL('../../', import.meta.url)), 'charts', 'clusterd-ts');
const suffix = randomBytes(3).toString('hex');
const RELEASE = `ldr-${suffix}`;
const FULLNAME = `${RELEASE}-clusterd-ts`;
const LEASE_S = FLAGS['lease-duration-seconds'].min;

const helmRun = helmRunner('ldr');
const helm = (args: readonly string[]) => helmRun.run(args);

/** A client whose connection can be cut: afterwards every request fails with no answer (a crash). */
class SeverableClient extends HttpKubeClient {
  private readonly cut = new AbortController();
  sever(): void { this.cut.abort(new Error('connection severed (leader killed)')); }
  override async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (this.cut.signal.aborted) {
      this.onRequest?.(method, 0);
      throw new Error(`connect ECONNREFUSED (severed): ${method} ${path}`);
    }
    const signal = opts.signal === undefined ? this.cut.signal : AbortSignal.any([opts.signal, this.cut.signal]);
    return super.request<T>(method, path, { ...opts, signal });
  }
}

type Service = KubeObject & { spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number }> } };
type Deployment = KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { containers: Array<{ args: string[] }> } } } };

interface Replica {
  readonly pod: string;
  readonly manager: Manager;
  readonly metrics: Metrics;
  readonly client: SeverableClient;
}

const selectorOf = (m: Record<string, string>): string => Object.entries(m).map(([k, v]) => `${k}=${v}`).join(',');
type Counted = { get(): Promise<{ values: ReadonlyArray<{ value: number; labels: Record<string, string | number | undefined> }> }> };
const count = async (c: Counted, keep: (l: Record<string, string | number | undefined>) => boolean): Promise<number> =>
  (await c.get()).values.filter((v) => keep(v.labels)).reduce((n, v) => n + v.value, 0);
const labelWrites = (r: Replica, change: string): Promise<number> => count(r.metrics.leaderLabelChanges, (l) => l.change === change && l.result === 'success');
const forbidden = (r: Replica): Promise<number> => count(r.metrics.apiRequests, (l) => l.code === '403');
const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);

async function http(r: Replica, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${r.manager.httpPort}${path}`);
  return { status: res.status, body: await res.text() };
}

describe('HA routing: the gRPC Service selects the leader\'s pod only', () => {
  const admin = adminClient();
  const info = controlPlaneInfo();
  const ns = `ops-ldr-${suffix}`;
  const replicas: Replica[] = [];
  let world: World | undefined;
  let installed = false;
  let grpcSelector = '';
  let metricsSelector = '';
  let chartArgs: string[] = [];
  let podLabels: Record<string, string> = {};
  const podA = `${FULLNAME}-7d9f-aaaaa`;
  const podB = `${FULLNAME}-7d9f-bbbbb`;
  const podStale = `${FULLNAME}-6c4e-stale`;
  const podOther = `other-release-0`;

  afterAll(async () => {
    for (const r of replicas.splice(0).reverse()) await r.manager.stop().catch(() => undefined);
    await world?.stop().catch(() => undefined);
    if (installed) await helm(['uninstall', RELEASE, '-n', ns, '--kubeconfig', info.kubeconfig, '--timeout', '60s']);
    helmRun.dispose();
  }, 90_000);

  const routed = async (selector: string): Promise<string[]> =>
    (await admin.list<KubeObject>(paths.pods(ns), { labelSelector: selector })).items.map((p) => p.metadata!.name!).sort();
  const labelled = async (pod: string): Promise<boolean> =>
    (await admin.get<KubeObject>(paths.pod(ns, pod))).metadata?.labels?.[LEADER_LABEL] === LEADER_LABEL_VALUE;

  async function startReplica(pod: string): Promise<Replica> {
    const client = new SeverableClient((await serviceAccountClient(admin, ns, 'clusterd')).kc);
    const metrics = new Metrics({ processMetrics: false });
    const log = process.env.OPS_TEST_LOG === '1' ? createLogger('info', process.stderr).child({ replica: pod }) : silentLogger;
    // The Deployment's own arguments; local ports, the shortest lease.
    const options = parseOptions([...chartArgs, '--http-port=0', '--http-host=127.0.0.1', '--grpc-port=0', '--grpc-host=127.0.0.1', `--lease-duration-seconds=${LEASE_S}`], {});
    const manager = new Manager({ clock: realClock, client, options, log, metrics, pod: { name: pod, namespace: ns } });
    const r = { pod, manager, metrics, client };
    replicas.push(r);
    await manager.start();
    return r;
  }

  it('installs the chart in dry run: the gRPC Service selects the leader label, the metrics Service every replica', async () => {
    const inst = await helm(['install', RELEASE, CHART, '-n', ns, '--create-namespace', '--set', 'controller.dryRun=true', '--kubeconfig', info.kubeconfig, '--timeout', '60s']);
    expect({ code: inst.code, stderr: inst.stderr }).toEqual(expect.objectContaining({ code: 0 }));
    installed = true;
    const dep = await admin.get<Deployment>(`/apis/apps/v1/namespaces/${ns}/deployments/${FULLNAME}`);
    chartArgs = dep.spec.template.spec.containers[0]!.args;
    expect(chartArgs).toEqual(expect.arrayContaining(['--dry-run=true', '--leader-elect=true', `--leader-election-namespace=${ns}`]));
    podLabels = dep.spec.template.metadata.labels;
    const grpc = await admin.get<Service>(`/api/v1/namespaces/${ns}/services/clusterd-grpc-svc`);
    const metrics = await admin.get<Service>(`/api/v1/namespaces/${ns}/services/${FULLNAME}-metrics`);
    expect(grpc.spec.selector).toEqual({ ...dep.spec.selector.matchLabels, [LEADER_LABEL]: LEADER_LABEL_VALUE });
    expect(grpc.spec.ports.map((p) => [p.name, p.port])).toEqual([['grpc', 8899]]);
    expect(metrics.spec.selector).toEqual(dep.spec.selector.matchLabels);
    expect(metrics.spec.ports.map((p) => [p.name, p.port])).toEqual([['http-metrics', 11253]]);
    grpcSelector = selectorOf(grpc.spec.selector);
    metricsSelector = selectorOf(metrics.spec.selector);
  }, 90_000);

  it('labels only the leader\'s pod; clears a former leader\'s stale label; both replicas are Ready', async () => {
    // The Deployment's pods as the ReplicaSet would create them (never scheduled: no such scheduler).
    const pod = (name: string, labels: Record<string, string>): KubeObject => ({
      apiVersion: 'v1', kind: 'Pod', metadata: { name, labels },
      spec: { schedulerName: 'not-scheduled', containers: [{ name: 'clusterd', image: 'clusterd-ts:0.1.0' }] },
    });
    for (const name of [podA, podB]) await admin.create(paths.pods(ns), pod(name, podLabels));
    await admin.create(paths.pods(ns), pod(podStale, { ...podLabels, [LEADER_LABEL]: LEADER_LABEL_VALUE }));
    await admin.create(paths.pods(ns), pod(podOther, { 'app.kubernetes.io/name': 'clusterd-ts', 'app.kubernetes.io/instance': 'other', [LEADER_LABEL]: LEADER_LABEL_VALUE }));

    const [a, b] = [await startReplica(podA), await startReplica(podB)];
    const leader = await eventually(() => replicas.find((r) => r.manager.isLeader), 20_000);
    const standby = leader === a ? b : a;
    await eventually(async () => (await routed(grpcSelector)).join() === leader.pod, 15_000);
    expect(await routed(grpcSelector)).toEqual([leader.pod]);
    expect(await routed(metricsSelector)).toEqual([podA, podB, podStale].sort());
    expect(await labelled(podOther)).toBe(true); // another release's pod: not ours to clear
    expect(standby.manager.isLeader).toBe(false);
    expect(await labelWrites(leader, 'set')).toBe(1);
    expect(await labelWrites(leader, 'clear')).toBe(1);

    // Both Ready (the PDB and rolling updates need the standby Ready); /leaderz tells them apart.
    for (const r of [leader, standby]) expect((await http(r, '/readyz')).status).toBe(200);
    expect(await http(leader, '/leaderz')).toEqual({ status: 200, body: expect.stringContaining('"podLabel":"set"') });
    const sb = await http(standby, '/leaderz');
    expect(sb.status).toBe(503);
    expect(JSON.parse(sb.body)).toEqual(expect.objectContaining({ leader: false, holder: leader.pod, pod: `${ns}/${standby.pod}`, podLabel: 'absent' }));
    expect((await http(standby, '/readyz?verbose')).body).toContain(`leadership: standby (identity ${standby.pod}, lease holder ${leader.pod}`);
    const scrape = (await http(leader, '/metrics')).body;
    expect(scrape).toMatch(/^clusterd_leader 1$/m);
    expect(scrape).toMatch(/^clusterd_leader_label_changes_total\{change="set",result="success"\} 1$/m);
  }, 60_000);

  it('dry run: decides on a fault, posts no Event, and the read-only ClusterRole refuses nothing', async () => {
    world = await startWorld(admin, { nodes: 2, prefix: 'ldr' });
    const w = world;
    const leader = replicas.find((r) => r.manager.isLeader)!;
    const job = await admin.create(paths.vcJobs(w.ns), vcJob(w.ns, { nodeSelector: w.nodeSelector, name: 'shadow', replicas: 2, npus: 4, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '2' } }));
    const uid = job.metadata!.uid!;
    const before = await eventually(async () => { const ps = await jobPods(admin, w.ns, 'shadow'); return ps.length === 2 && ps.every(runningWithNpus) ? ps : undefined; }, 30_000);
    const victim = before[1]!;
    await w.dp.injectChipFault({ node: victim.spec!.nodeName!, npu: npusOf(victim)[0]!, code: '80E18402', level: 'SeparateNPU' });
    await eventually(async () => (await count(leader.metrics.decisions, (l) => l.outcome === 'dry_run')) >= 1, 20_000);
    await sleep(1_000); // an Event would be posted right after the decision
    expect(await podGroupEvents(admin, w.ns, `shadow-${uid}`)).toEqual([]);
    expect(await count(leader.metrics.apiWrites, (l) => l.kind === 'event')).toBe(0);
    expect((await jobPods(admin, w.ns, 'shadow')).map((p) => p.metadata?.uid)).toEqual(before.map((p) => p.metadata?.uid));
    for (const r of replicas) expect({ pod: r.pod, forbidden: await forbidden(r) }).toEqual({ pod: r.pod, forbidden: 0 });
  }, 90_000);

  it('the leader crashes: the standby takes the Lease and the label, the old pod loses it', async () => {
    const old = replicas.find((r) => r.manager.isLeader)!;
    const next = replicas.find((r) => r !== old)!;
    old.client.sever();
    const t0 = Date.now();
    await eventually(() => next.manager.isLeader, 5 * LEASE_S * 1000, 50);
    await eventually(async () => (await routed(grpcSelector)).join() === next.pod, 10_000);
    process.stdout.write(`[ops-leader-routing] gRPC Service selects the new leader ${Date.now() - t0} ms after the crash (lease ${LEASE_S} s)\n`);
    expect(await labelled(old.pod)).toBe(false);
    expect(await labelWrites(next, 'clear')).toBe(1); // the dead leader could not remove its own label
    expect(await labelWrites(old, 'remove')).toBe(0);
    expect(old.manager.isLeader).toBe(false);
    expect(await forbidden(next)).toBe(0);
  }, 60_000);

  it('a restarted replica stands by; the leader stops gracefully, removes its own label, the standby takes over', async () => {
    const crashed = replicas.find((r) => !r.manager.isLeader)!;
    await crashed.manager.stop().catch(() => undefined);
    replicas.splice(replicas.indexOf(crashed), 1);
    const leader = replicas.find((r) => r.manager.isLeader)!;
    const restarted = await startReplica(crashed.pod); // the same pod, a new container
    await eventually(async () => (await http(restarted, '/readyz')).status === 200, 20_000);
    expect(restarted.manager.isLeader).toBe(false);
    expect(await routed(grpcSelector)).toEqual([leader.pod]);

    await leader.manager.stop();
    replicas.splice(replicas.indexOf(leader), 1);
    expect(await labelWrites(leader, 'remove')).toBe(1);
    expect(await labelled(leader.pod)).toBe(false);
    await eventually(() => restarted.manager.isLeader, 10_000, 50);
    await eventually(async () => (await routed(grpcSelector)).join() === restarted.pod, 10_000);
    expect(await labelWrites(restarted, 'clear')).toBe(0); // nothing stale: the old leader cleaned up
    expect(await routed(metricsSelector)).toEqual([podA, podB, podStale].sort());
    for (const r of [leader, restarted]) expect({ pod: r.pod, forbidden: await forbidden(r) }).toEqual({ pod: r.pod, forbidden: 0 });
  }, 60_000);
});
