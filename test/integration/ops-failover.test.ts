/**
 * High availability: two controllers in-process with `--leader-elect` and the
 * shortest lease `controllers/options.ts` allows, on the same control plane. A burst of faults hits
 * several jobs; the leader is killed in the middle of handling them; the standby (warm caches, no
 * writes while standby) takes over within one lease period and finishes the work, and no job is
 * restarted twice.
 *
 * The kill is a crash, not a shutdown: the leader's HttpKubeClient is severed (every request, in flight
 * or new, fails as if the connection were gone), so it neither releases the Lease nor finishes
 * anything, and it keeps running: its informers still deliver events and it keeps trying to renew
 * and to act until its renew deadline passes. That is the harsher case for split brain (a leader cut
 * off from the apiserver rather than one that vanished): every write it attempts after the kill must
 * fail, and the standby must not act before the old leader has stood down.
 *
 * The crash point is made deterministic with the jobs flow's test hook: the leader carries out the
 * first two jobs' decisions completely; the next two are decided and persisted (job state ConfigMap
 * with the pending decision) but their pod deletion is "in flight" when the leader dies. A fifth
 * job's fault arrives while there is no working leader.
 */
import { HttpKubeClient, paths, type KubeObject, type RequestOptions } from '../../runtime/kube-client.ts';
import { LEADER_LEASE_NAME, Manager, type ManagerDeps } from '../../controllers/manager.ts';
import { FLAGS, parseOptions } from '../../controllers/options.ts';
import type { ExecAction } from '../../schemas/job-state/job-state.ts';
import { Writable } from 'node:stream';
import { createLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { jobState, rescheduleReasonOf, sleep } from '../support/jobs-support.ts';
import { realClock } from '../../runtime/clock.ts';

const LEASE_S = FLAGS['lease-duration-seconds'].min; // 5 s: the shortest the controller accepts
const LEASE_MS = LEASE_S * 1000;
// The Manager's derivation (controllers/manager.ts): retry period = max(500, lease / 7.5).
const RETRY_MS = Math.max(500, Math.floor(LEASE_MS / 7.5));

/** A client whose connection can be cut: afterwards every request (in flight or new) fails with no answer. */
class SeverableClient extends HttpKubeClient {
  private readonly cut = new AbortController();
  /** Requests attempted after the cut (all failed). */
  attemptsAfterCut = 0;

  get severed(): boolean { return this.cut.signal.aborted; }

  sever(): void { this.cut.abort(new Error('connection severed (leader killed)')); }

  override async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (this.severed) {
      this.attemptsAfterCut++;
      this.onRequest?.(method, 0);
      throw new Error(`connect ECONNREFUSED (severed): ${method} ${path}`);
    }
    const signal = opts.signal === undefined ? this.cut.signal : AbortSignal.any([opts.signal, this.cut.signal]);
    return super.request<T>(method, path, { ...opts, signal });
  }
}

type Lease = KubeObject & { spec: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number } };

const uidOf = (p: PodObj): string => p.metadata?.uid ?? '';
const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);
interface CounterLike { get(): Promise<{ values: ReadonlyArray<{ value: number; labels: object }> }> }
const sum = async (c: CounterLike, keep: (labels: Record<string, string | number | undefined>) => boolean): Promise<number> =>
  (await c.get()).values.filter((v) => keep(v.labels as Record<string, string | number | undefined>)).reduce((n, v) => n + v.value, 0);

// Two real replicas, a real apiserver and a severed connection: once in the CI log this test timed
// out waiting for the burst to be held, which never happened in local runs. One retry keeps a rare
// stall from blocking everything; the failed attempt's state and replica logs are printed first.
(import.meta as unknown as { jest: typeof jest }).jest.retryTimes(1, { logErrorsBeforeRetry: true });

describe('HA: the leader is killed mid-burst, the standby finishes the work', () => {
  const admin = adminClient();
  let world: World | undefined;
  const managers: Manager[] = [];
  const logLines: string[] = [];
  /** Waits like `eventually`, and on a timeout says what the replicas logged and what the hook saw. */
  const waitFor = async <T,>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, state: () => object = () => ({}), intervalMs?: number): Promise<T> => {
    try {
      return await eventually(check, timeoutMs, intervalMs);
    } catch (e) {
      const tail = logLines.slice(-150).join('\n');
      throw new Error(`${what}: ${(e as Error).message}\nstate: ${JSON.stringify(state())}\nlast replica log lines:\n${tail}`);
    }
  };

  // After each attempt: a retry starts from scratch, and no replica of a failed attempt may act on it.
  afterEach(async () => {
    for (const m of managers.splice(0).reverse()) await m.stop().catch(() => undefined);
    await world?.stop();
    world = undefined;
    logLines.length = 0;
  }, 60_000);

  async function startReplica(client: HttpKubeClient, leaseNs: string, name: string, jobs?: ManagerDeps['jobs']): Promise<{ manager: Manager; metrics: Metrics }> {
    const metrics = new Metrics({ processMetrics: false });
    // Always recorded (printed when the test fails); OPS_TEST_LOG=1 streams it live as well.
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { logLines.push(chunk.toString().trimEnd()); if (process.env.OPS_TEST_LOG === '1') process.stderr.write(chunk); done(); } });
    const log = createLogger('info', sink).child({ replica: name });
    const options = parseOptions([
      '--http-port=0', '--http-host=127.0.0.1', '--grpc-port=0', '--grpc-host=127.0.0.1',
      '--cluster-info-refresh-seconds=0', '--burst-window-ms=200',
      '--leader-elect', `--leader-election-namespace=${leaseNs}`, `--lease-duration-seconds=${LEASE_S}`,
    ], {});
    const manager = new Manager({ clock: realClock, client, options, log, metrics, ...(jobs ? { jobs } : {}) });
    managers.push(manager);
    await manager.start();
    return { manager, metrics };
  }

  it('takes over within one lease period and restarts every job exactly once', async () => {
    const leaseNs = await newNamespace(admin, 'ofo-lease');
    world = await startWorld(admin, { nodes: 6, prefix: 'ofo' });
    const { ns } = world;
    const NAMES = ['j0', 'j1', 'j2', 'j3', 'j4'] as const;
    const uids = new Map<string, string>();
    for (const name of NAMES) {
      const job = await admin.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name, replicas: 2, npus: 2, labels: { 'fault-scheduling': 'force' } }));
      uids.set(name, job.metadata!.uid!);
    }
    const keyOf = (name: string): string => `${ns}/${name}-${uids.get(name)!}`;
    const nameOf = new Map(NAMES.map((n) => [keyOf(n), n]));
    const before = new Map<string, PodObj[]>();
    for (const name of NAMES) {
      before.set(name, await eventually(async () => { const ps = await jobPods(admin, ns, name); return ps.length === 2 && ps.every(runningWithNpus) ? ps : undefined; }, 30_000));
    }

    // Replica A (severable) leads. Its hook lets the first two jobs' pod deletions through and holds
    // the others: they are persisted and "in flight" when A dies.
    const passed = new Set<string>();
    const held = new Set<string>();
    const seen: string[] = [];
    const hold = (action: ExecAction, ctx: { readonly jobKey: string; readonly signal: AbortSignal }): Promise<void> => {
      seen.push(`${ctx.jobKey} ${action.type}`);
      if (action.type !== 'forceDeletePods' && action.type !== 'evictPods') return Promise.resolve();
      if (!ctx.jobKey.startsWith(`${ns}/`)) return Promise.resolve(); // another test's leftovers: not ours to hold
      if (passed.has(ctx.jobKey) || (passed.size < 2 && !held.has(ctx.jobKey))) { passed.add(ctx.jobKey); return Promise.resolve(); }
      held.add(ctx.jobKey);
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('killed')), { once: true }));
    };
    const aClient = new SeverableClient(adminClient().kc);
    const a = await startReplica(aClient, leaseNs, 'a', { hooks: { beforeAction: hold } });
    await eventually(() => a.manager.isLeader, 15_000);
    const b = await startReplica(adminClient(), leaseNs, 'b'); // resolves once its caches are synced
    await sleep(RETRY_MS * 2);
    expect(b.manager.isLeader).toBe(false);
    const leaseBefore = await admin.get<Lease>(paths.lease(leaseNs, LEADER_LEASE_NAME));

    // The burst: SeparateNPU on rank 1 of j0..j3 at once.
    const burst = ['j0', 'j1', 'j2', 'j3'];
    await Promise.all(burst.map((name) => {
      const p = before.get(name)![1]!;
      return world!.dp.injectChipFault({ node: p.spec!.nodeName!, npu: npusOf(p)[0]!, code: '80E18402', level: 'SeparateNPU' });
    }));
    // A finished two jobs (pods deleted, pending decision cleared) and holds the other two.
    await waitFor('A passes two jobs and holds two', () => passed.size === 2 && held.size === 2, 20_000,
      () => ({ passed: [...passed], held: [...held], seen: [...seen] }));
    const done = [...passed].map((k) => nameOf.get(k)!);
    const inFlight = [...held].map((k) => nameOf.get(k)!);
    for (const name of done) {
      await waitFor("A deleted the done jobs' pods", () => world!.peer.statsOf(name).deletedUids.size === 2, 15_000);
      await waitFor("done jobs' pending decisions cleared", async () => { const s = await jobState(admin, uids.get(name)!); return s !== undefined && s.pending === undefined; }, 15_000);
    }
    for (const name of inFlight) {
      expect((await jobState(admin, uids.get(name)!))?.pending?.actions.map((x) => x.type)).toEqual(['forceDeletePods', 'recordRescheduleReason']);
      expect(world.peer.statsOf(name).deletedUids.size).toBe(0);
    }
    // The standby has written nothing so far (only GETs: caches and the Lease).
    expect(await sum(b.metrics.apiRequests, (l) => l.method !== 'GET')).toBe(0);

    // Kill A mid-burst; a fifth job's fault arrives while no replica can act.
    aClient.sever();
    const killAt = Date.now();
    const leaseAtKill = await admin.get<Lease>(paths.lease(leaseNs, LEADER_LEASE_NAME)); // A's last renewal
    const late = before.get('j4')![1]!;
    await world.dp.injectChipFault({ node: late.spec!.nodeName!, npu: npusOf(late)[0]!, code: '80E18402', level: 'SeparateNPU' });

    let aStoodDownAt = 0;
    const takeoverAt = await waitFor('standby takes over', () => {
      if (aStoodDownAt === 0 && !a.manager.isLeader) aStoodDownAt = Date.now();
      return b.manager.isLeader ? Date.now() : undefined;
    }, LEASE_MS * 3, () => ({}), 10);
    if (aStoodDownAt === 0 && !a.manager.isLeader) aStoodDownAt = Date.now();
    const takeoverMs = takeoverAt - killAt;
    const lastRenewAt = Date.parse(leaseAtKill.spec.renewTime ?? '');
    const leaseAfter = await admin.get<Lease>(paths.lease(leaseNs, LEADER_LEASE_NAME));
    process.stdout.write(`[ops-failover] leader killed mid-burst (jobs ${done.join(',')} done, ${inFlight.join(',')} persisted and in flight, j4 faulted after the kill): `
      + `old leader stood down after ${aStoodDownAt - killAt} ms, standby took over ${takeoverMs} ms after the kill `
      + `and ${takeoverAt - lastRenewAt} ms after the dead leader's last renewal (lease ${LEASE_MS} ms, retry period ${RETRY_MS} ms)\n`);
    // Within one lease period as the standby observes it (client-go semantics: the Lease must stay
    // unrenewed for a full duration on the standby's own clock, which polls every retry period and
    // sees a renewal up to one retry period late), plus request latency and timer slack (500 ms).
    expect(Number.isNaN(lastRenewAt)).toBe(false);
    expect(lastRenewAt).toBeLessThanOrEqual(killAt);
    expect(takeoverAt - lastRenewAt).toBeLessThanOrEqual(LEASE_MS + 2 * RETRY_MS + 500);
    expect(takeoverMs).toBeGreaterThan(0);
    expect(aStoodDownAt).toBeGreaterThan(0);
    expect(aStoodDownAt).toBeLessThan(takeoverAt); // never two acting replicas
    expect(leaseAtKill.spec.holderIdentity).toBe(leaseBefore.spec.holderIdentity);
    expect(leaseAfter.spec.holderIdentity).not.toBe(leaseBefore.spec.holderIdentity);
    expect(leaseAfter.spec.leaseTransitions).toBe((leaseBefore.spec.leaseTransitions ?? 0) + 1);

    // B finishes the work: the two persisted decisions (replayed) and j4 (decided by B).
    for (const name of NAMES) {
      const old = new Set(before.get(name)!.map(uidOf));
      await waitFor('every job runs on new pods', async () => { const ps = await jobPods(admin, ns, name); return ps.length === 2 && ps.every((p) => !old.has(uidOf(p)) && runningWithNpus(p)); }, 30_000);
      await waitFor('pending decisions cleared after takeover', async () => (await jobState(admin, uids.get(name)!))?.pending === undefined, 15_000);
    }
    await sleep(2_000); // room for a duplicate to show
    await world.peer.idle();

    // No duplicate action: every job's pods deleted exactly once, one restart record each.
    for (const name of NAMES) {
      const stats = world.peer.statsOf(name);
      expect({ name, deleted: stats.deletedUids, restarts: stats.restarts }).toEqual({ name, deleted: new Set(before.get(name)!.map(uidOf)), restarts: 2 });
      const reason = await rescheduleReasonOf(admin, keyOf(name));
      expect({ name, total: reason?.TotalRescheduleTimes, records: reason?.RescheduleRecords?.length }).toEqual({ name, total: 1, records: 1 });
    }
    expect(world.peer.errors).toEqual([]);
    // Who did what: A restarted the two jobs it finished, B the other three; B replayed exactly the
    // two persisted decisions. Nothing A attempted after the kill reached the apiserver.
    expect(await sum(a.metrics.reschedules, (l) => l.job_namespace === ns)).toBe(2);
    expect(await sum(b.metrics.reschedules, (l) => l.job_namespace === ns)).toBe(3);
    expect(await sum(b.metrics.decisions, (l) => l.outcome === 'replayed')).toBe(2);
    expect(aClient.attemptsAfterCut).toBeGreaterThan(0);
    process.stdout.write(`[ops-failover] restarts: A ${done.join(',')}; B ${[...inFlight, 'j4'].join(',')} (2 replayed); `
      + `A's requests refused after the kill: ${aClient.attemptsAfterCut}; pods deleted per job: ${NAMES.map((n) => world!.peer.statsOf(n).deletedUids.size).join(',')}\n`);
  }, 120_000);
});
