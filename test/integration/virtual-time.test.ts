/**
 * The assembled controller in virtual time: the Manager as main.ts builds it (every flow), on a
 * ManualClock, against the real apiserver. Watches and HTTP stay real; every timer and time read of
 * the controller is the clock's (runtime/clock.ts), so what takes seconds of real time happens when
 * the test advances the clock: the leader Lease's renewals (runtime/leader-election.ts), ClusterD's
 * scheduling-exception-report, first written one check interval (10 s) after the controller acts, and
 * a recovery FSM's report timeout (policy/recovery/, on the clock's RxJS scheduler).
 */
import { Manager, LEADER_LEASE_NAME } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS, SCHEDULING_EXCEPTION_CM_NAME } from '../../schemas/scheduling-exception/scheduling-exception.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, podPeer, rand, reportChipFault, startAgent, TEST_TIMINGS, watchPodGroupLabel } from './recovery-fixtures.ts';

/** A real pause: the apiserver's answers to what a step of virtual time started. */
const ioPause = (ms = 15): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Lease extends KubeObject { spec?: { holderIdentity?: string; renewTime?: string } }

describe('the assembled controller on a manual clock', () => {
  const client = adminClient();
  const clock = new ManualClock(Date.now());
  let ns = '';
  let manager: Manager;

  /** Moves virtual time forward `ms` in `stepMs` steps, letting real I/O answer after each. */
  async function advance(ms: number, stepMs = 500): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      await clock.run(Math.min(stepMs, ms - done));
      await ioPause();
    }
  }

  /**
   * Advances the clock in the background (`stepMs` of virtual time, then a real pause for I/O) until
   * stopped: for a flow whose every step waits on both the apiserver and the controller's timers.
   */
  function ticking(stepMs = 100): { stop(): Promise<void> } {
    let on = true;
    const loop = (async () => { while (on) { await clock.run(stepMs); await ioPause(10); } })();
    return { stop: async () => { on = false; await loop; } };
  }

  const lease = (): Promise<Lease | undefined> => client.getOrUndefined<Lease>(paths.lease(ns, LEADER_LEASE_NAME));
  const report = (): Promise<ConfigMap | undefined> => client.getOrUndefined<ConfigMap>(paths.configMap(ns, SCHEDULING_EXCEPTION_CM_NAME));
  /** The Lease's renewTime as ms (micro-second RFC 3339, runtime/leader-election.ts). */
  const renewedMs = async (): Promise<number> => Date.parse((await lease())?.spec?.renewTime ?? '') || 0;

  beforeAll(async () => {
    ns = await newNamespace(client, 'vt');
    manager = new Manager({
      clock, client, log: silentLogger, metrics: new Metrics({ processMetrics: false }),
      // The Lease and ClusterD's cluster-system reports in this test's own namespace. A 60 s lease
      // renews every 8 s (retry period = lease / 7.5).
      // The recovery tests' short waits (recovery-fixtures.ts) but a 60 s report timeout.
      options: parseOptions(['--http-port=0', '--grpc-port=0', '--grpc-host=127.0.0.1', '--cluster-info-refresh-seconds=0', '--grpc-caller-check=off',
        '--leader-elect', `--leader-election-namespace=${ns}`, '--lease-duration-seconds=60', `--cluster-system-namespace=${ns}`,
        ...TEST_TIMINGS, '--recovery-report-timeout-seconds=60'], {}),
    });
    await manager.start();
    // The first campaign runs at start (no timer): the Lease is taken over real I/O.
    await eventually(() => manager.isLeader || undefined, 10_000);
  }, 60_000);

  afterAll(async () => { await manager.stop(); });

  it('writes scheduling-exception-report one check interval (10 s) after acting: not at 9 s, at 10 s of virtual time', async () => {
    expect(SCHEDULING_EXCEPTION_CHECK_INTERVAL_MS).toBe(10_000);
    const realT0 = Date.now();
    await advance(9_000);
    await ioPause(300);
    expect(await report()).toBeUndefined();
    await advance(1_500);
    const written = await eventually(() => report(), 3_000);
    expect(written.data).toBeUndefined();
    expect(written.metadata?.labels).toBeUndefined();
    // Not by waiting: far less real time than the 10 s interval.
    expect(Date.now() - realT0).toBeLessThan(6_000);
  }, 20_000);

  it('renews the leader Lease on the clock: renewals 8 s apart in virtual time, stamped with it', async () => {
    const before = await renewedMs();
    expect(before).toBeGreaterThan(0);
    // The Lease's times are the clock's (virtual) ones.
    expect(before).toBeLessThanOrEqual(clock.now());
    const realT0 = Date.now();
    await advance(32_000);
    // Four retry periods passed on the clock (one renewal may still be in flight at the last step).
    await eventually(async () => ((await renewedMs()) >= before + 24_000 ? true : undefined), 5_000);
    expect(await renewedMs()).toBeLessThanOrEqual(clock.now());
    expect((await lease())?.spec?.holderIdentity).toBe(manager.leadership().identity);
    expect(manager.isLeader).toBe(true);
    // Not by waiting: far less real time than the 24 s of renewals.
    expect(Date.now() - realT0).toBeLessThan(12_000);
  }, 30_000);

  it('recovery FSM: the agent never answers, and the 60 s report timeout fires on the clock (label pause) in seconds of real time', async () => {
    const server = await manager.grpc.ready();
    if (server === undefined) throw new Error('gRPC server did not start');
    const nodes = await fakeNodes(client, `vt-${rand()}`, 8);
    const jobNs = await newNamespace(client, 'vtj');
    const job = await createJob(client, {
      ns: jobNs, nodes: nodes.slice(0, 4), labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': 'retry,recover' },
    });
    const peer = podPeer(client, job, nodes.slice(4));
    const labels = watchPodGroupLabel(client, job, 'process-recover-enable');
    const tick = ticking();
    let agent: ReturnType<typeof startAgent> | undefined;
    try {
      await eventually(() => manager.recovery.lookup(job.uid)?.entry.view.pods.length === 4 || undefined, 15_000);
      agent = startAgent(`127.0.0.1:${server.port}`, job.uid, { stopCode: null });
      const a = agent;
      await a.waitFor(() => (a.subscribed && manager.recovery.phase(job.uid) === 'INIT' ? true : undefined), 15_000, 'subscription');
      await a.reportProcessFault([{ rankId: '3', faultType: '0' }]); // MindIO's business-plane report: a step-retry UCE
      await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
      await a.waitForSignal((s) => s.signalType === 'stopTrain', 20_000);
      const virtualT0 = clock.now();
      const realT0 = Date.now();
      // The agent reports nothing: the FSM's report timeout (a timer on the clock's scheduler) ends
      // the wait, and the job is handed to rescheduling with label `pause`.
      await eventually(() => labels.values.includes('pause') || undefined, 40_000);
      const virtualMs = clock.now() - virtualT0;
      const realMs = Date.now() - realT0;
      process.stdout.write(`report timeout: pause after ${virtualMs} ms of virtual time, ${realMs} ms of real time\n`);
      expect(virtualMs).toBeGreaterThanOrEqual(50_000);
      expect(realMs).toBeLessThan(virtualMs / 2);
    } finally {
      await tick.stop();
      agent?.stop();
      peer.stop();
      labels.stop();
      await cleanUp(client, job, nodes);
    }
  }, 90_000);
});
