/**
 * Recovery FSM timeouts (docs/grpc.md#fsm-timeouts) on the real apiserver, against the shipped
 * controller (`node main.ts`) with its waits made short by flags, and the real TaskD client
 * (tools/taskd-client) told not to answer the report awaited. Each case asserts what ClusterD's
 * transition table does after that timeout (component/clusterd/pkg/application/recover/rules.go):
 * - the stress test's result wait (WaitStressTestFinished + ReportTimeout -> NotifyStopTrain): `stopTrain[stop_train]`;
 * - the dump result wait (WaitReportDumpStatus + ReportTimeout -> FaultClear -> FaultRetry) and the
 *   recover result wait (WaitReportProcessRecoverStatus + ReportTimeout, same path): reset-config
 *   cleared, label `process-recover-enable=pause`, `exit dump_exit`, label `on` once the job runs (its
 *   fault pod was already replaced at pod level, so nothing widens; the job-level rescheduling after
 *   a timeout with the fault still on a running pod is test/integration/recovery-timeout.test.ts);
 * - fault retry's wait for the job to run again (FaultRetry + ScheduleTimeout -> NotifyKillJob): `killMaster`.
 * ClusterD's own waits are constants (no flag or config file sets them), so these paths are not
 * compared with it here; the listen-schedule wait it takes from the job (`wait-reschedule-timeout`,
 * 30 s) is compared in the conformance scenario elastic.
 */
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { paths } from '../../runtime/kube-client.ts';
import { cleanUp, createJob, fakeNodes, podGroup, podPeer, rand, reportChipFault, watchPodGroupLabel, type TestJob } from './recovery-fixtures.ts';
import { type ClientEvent, type GoTaskdClient, haveGo, observeRecovery, pollResetConfig, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-timeouts-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

const REPORT_S = 4;

describeGo('recovery FSM timeouts with the real TaskD client not answering', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'fsm-timeouts');

  /** 4 rank pods on 4 nodes; with `peer`, Volcano's job controller stand-in re-creates deleted pods on 2 spares. */
  async function setUp(strategies: string, peer = true, nodeCount = 6): Promise<{ job: TestJob; nodes: string[] }> {
    const nodes = await fakeNodes(client, `ft-${rand()}`, nodeCount);
    const job = await createJob(client, { ns: await newNamespace(client, 'ft'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    if (peer) {
      const p = podPeer(client, job, nodes.slice(4));
      cleanup(() => p.stop());
    }
    return { job, nodes };
  }
  const label = async (job: TestJob): Promise<string | undefined> => (await podGroup(client, job)).metadata?.labels?.['process-recover-enable'];

  /** After a report timeout: reset-config cleared, label pause, exit dump_exit, label on again once the job runs. */
  async function faultRetried(a: GoTaskdClient, waitedSince: number, poll: ReturnType<typeof pollResetConfig>, labels: ReturnType<typeof watchPodGroupLabel>): Promise<void> {
    await eventually(() => labels.values.includes('pause'), 30_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit' && s.t >= waitedSince, 15_000, 'exit dump_exit');
    expect(exit.t - waitedSince).toBeGreaterThanOrEqual(REPORT_S * 1000 - 500);
    expect(exit.extraParams).toBe('dump_exit');
    // FaultClear wrote a cleared reset-config after the timeout (a poller may miss the moment, not the version).
    await eventually(() => poll.seen.some((v) => v.atMs >= waitedSince + REPORT_S * 1000 - 500 && !v.info.FaultFlushing && (v.info.RankList ?? []).length === 0), 10_000);
    await eventually(() => labels.values.lastIndexOf('on') > labels.values.indexOf('pause'), 40_000);
  }

  it('stress test: no result within the report timeout -> stopTrain[stop_train]', async () => {
    const c = await startController('stress-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp('retry,recover', false, 2);
    const a = agent(c.target, job, ['-om-reply-delay=120s']);
    await a.waitFor((e) => e.event === 'subscribe', 60_000, 'subscription');
    await new Promise((r) => setTimeout(r, 2500)); // the notify streams open again after the subscription's reset
    const mark = a.events.length;
    a.stressTest(`${nodes[1]}:0`);
    await a.waitFor((e) => e.event === 'om' && e.rpc === 'StressTest' && e.code === 0, 15_000, 'StressTest accepted', mark);
    const paused = await a.waitForSignal((s) => s.signalType === 'pauseStartAgent', 20_000, 'pauseStartAgent');
    const stop = await a.waitForSignal((s) => s.signalType === 'stopTrain' && (s.actions ?? []).includes('stop_train'), 30_000, 'stopTrain[stop_train]');
    expect(stop.t - paused.t).toBeGreaterThanOrEqual(REPORT_S * 1000 - 500);
    expect(a.events.some((e) => e.event === 'report' && e.rpc === 'ReplyStressTestResult')).toBe(false);
  }, 120_000);

  /**
   * A strategy whose result never comes (the client withholds it): after the report timeout the
   * FSM clears the fault and retries (`faultRetried`), and the strategy's success is never annotated.
   */
  const strategyTimesOut = async (name: 'dump' | 'recover', withhold: string, waitSignal: (s: ClientEvent) => boolean, what: string): Promise<void> => {
    const c = await startController(`${name}-timeout`, [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp(`${name},exit`);
    const a = agent(c.target, job, [`-strategies=${name},exit`, withhold]);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const { poll, labels, stop } = observeRecovery(client, job);
    cleanup(stop);
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const sent = await a.waitForSignal(waitSignal, 60_000, what);
    await faultRetried(a, sent.t, poll, labels);
    expect((await podGroup(client, job)).metadata?.annotations?.ProcessRecoverStatus).not.toBe(`${name}-success`);
    process.stdout.write(`[fsm-timeouts] ${name} timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  };

  it('dump: no dump result within the report timeout -> fault clear and fault retry: reset-config cleared, label pause, dump_exit, label on', () =>
    strategyTimesOut('dump', '-dump-report=false', (s) => s.signalType === 'saveAndExit', 'saveAndExit'), 150_000);

  it('recover: no recover status within the report timeout -> fault clear and fault retry: reset-config cleared, label pause, dump_exit, label on', () =>
    strategyTimesOut('recover', '-recover-report=false', (s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'recover', 'changeStrategy recover'), 150_000);

  it('fault retry: the job does not run again within the wait (--recovery-timings retryRunning) -> killMaster', async () => {
    const c = await startController('retry-running-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`, '--recovery-timings=retryRunning=3000']);
    // Nobody re-creates the fault pod: Volcano keeps the PodGroup from Running (set below), the job never runs again.
    const { job, nodes } = await setUp('dump,exit', false);
    const a = agent(c.target, job, ['-strategies=dump,exit', '-dump-report=false']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    await a.waitForSignal((s) => s.signalType === 'saveAndExit', 30_000, 'saveAndExit');
    await eventually(async () => ((await label(job)) === 'pause' ? true : undefined), 30_000);
    const paused = Date.now();
    await client.patch(paths.podGroup(job.ns, job.pgName), { status: { phase: 'Pending' } }, 'merge');
    const kill = await a.waitForSignal((s) => s.signalType === 'killMaster', 30_000, 'killMaster');
    expect(kill.t - paused).toBeGreaterThanOrEqual(2_000);
    expect(await label(job)).toBe('pause');
  }, 120_000);
});
