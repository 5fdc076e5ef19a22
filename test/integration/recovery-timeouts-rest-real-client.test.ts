/**
 * The rest of the recovery FSM timeouts (docs/grpc.md#fsm-timeouts) on the real apiserver, against the
 * shipped controller (`node main.ts`) with the report timeout made short
 * (`--recovery-report-timeout-seconds`), and the real TaskD client (tools/taskd-client) told not to send
 * the one report awaited (`-withhold`, `-om-reply-delay`). Each case asserts what ClusterD does after
 * that wait (component/clusterd/pkg/application/recover/rules.go, getDPScaleStrategyRules and
 * getHotSwitchRules):
 * - hot switch, no restart result after `migration` (WaitReportRestartTrainResult + ReportTimeout ->
 *   NotifyStopJob, component/clusterd/pkg/application/recover/hot_switch_controller.go): no further
 *   signal, the rank-0 pod marked `fault-type=SubHealth` + `needVolcanoOpe=delete`, the whole job
 *   restarted by the rescheduler (docs/rules.md#hotswitch.stop-job);
 * - scale-in, no final status after faultNodesExit (WaitReportScaleInStatus + ReportTimeout ->
 *   FaultClear -> FaultRetry): reset-config cleared, label `process-recover-enable=pause`, `exit dump_exit`;
 * - scale-out, no status for `upgrade` (WaitReportScaleOutStatus + ReportTimeout -> FaultClear ->
 *   FaultRetry): the same, and label `on` once the job runs again;
 * - the O&M result stream (component/clusterd/pkg/application/recover/om_controller.go,
 *   selectSendStressTestResponseChan): a stream given no message within the report timeout ends
 *   empty, and the next one reads `report stress test result timeout, please check manually`;
 * - HCCL routing convergence (controller.go, waitHCCLRoutingConvergence): a step retry of an HCCL
 *   fault sends `changeStrategy retry` 3 s after the agents chose it (ClusterD's constant, our default).
 * ClusterD configures none of these waits (docs/grpc.md#fsm-timeouts), so they are not compared with it.
 */
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { Pod } from '../../runtime/kube-objects.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { realClock } from '../../runtime/clock.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { chips, cleanUp, createJob, fakeNodes, podObject, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import { type GoTaskdClient, haveGo, observeRecovery, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-timeouts-rest-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

const REPORT_S = 4;
const SLACK_MS = 500;
const ELASTIC_TIMINGS = '--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,scaleInWait=3000';

/** Every state of one pod as a watch sees it, its deletion's last state included (a restart may follow a mark at once). */
function watchPod(client: KubeClient, ns: string, name: string): { seen: Array<{ t: number; uid?: string; faultType?: string; ope?: string; deleted: boolean }>; stop(): void } {
  const seen: Array<{ t: number; uid?: string; faultType?: string; ope?: string; deleted: boolean }> = [];
  const r = new Reflector<Pod>(client, { clock: realClock, name: `pod-${name}`, path: paths.pods(ns), fieldSelector: `metadata.name=${name}` });
  const sub = r.events$.subscribe({
    next: (ev) => {
      const m = ev.obj.metadata;
      seen.push({ t: Date.now(), uid: m?.uid, faultType: m?.labels?.['fault-type'], ope: m?.annotations?.['needVolcanoOpe'], deleted: ev.type === 'delete' || m?.deletionTimestamp !== undefined });
    },
    error: () => undefined,
  });
  r.start();
  return { seen, stop: () => { sub.unsubscribe(); r.stop(); } };
}

describeGo('the rest of the recovery FSM timeouts with the real TaskD client not answering', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'fsm-timeouts-rest');

  /** 4 rank pods (2 NPUs each: pod r holds ranks 2r, 2r+1) on 4 of `nodeCount` nodes; nobody re-creates a deleted pod. */
  async function setUp(strategies: string, opts: { nodeCount?: number; labels?: Record<string, string> } = {}): Promise<{ job: TestJob; nodes: string[] }> {
    const { nodeCount = 5, labels = {} } = opts;
    const nodes = await fakeNodes(client, `ftr-${rand()}`, nodeCount);
    const job = await createJob(client, { ns: await newNamespace(client, 'ftr'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on', ...labels }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    return { job, nodes };
  }

  function observe(job: TestJob): ReturnType<typeof observeRecovery> {
    const o = observeRecovery(client, job);
    cleanup(() => o.stop());
    return o;
  }

  /** FaultClear then FaultRetry after a report timeout: reset-config cleared, label pause, exit dump_exit, none of them before the timeout. */
  async function faultRetried(a: GoTaskdClient, waitedSince: number, { poll, labels }: ReturnType<typeof observe>): Promise<void> {
    await eventually(() => labels.values.includes('pause'), 30_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit' && s.t >= waitedSince, 15_000, 'exit dump_exit');
    expect(exit.t - waitedSince).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    expect(exit.extraParams).toBe('dump_exit');
    await eventually(() => poll.seen.some((v) => v.atMs >= waitedSince + REPORT_S * 1000 - SLACK_MS && !v.info.FaultFlushing && (v.info.RankList ?? []).length === 0), 10_000);
  }

  it('hot switch: no restart result after migration within the report timeout -> stop job: rank 0 marked, the job restarted, no further signal', async () => {
    const c = await startController('hot-switch-restart-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`, '--hot-switch-backup-pods', '--hot-switch-new-pod-timeout-seconds=30']);
    const { job, nodes } = await setUp('recover', { nodeCount: 4, labels: { subHealthyStrategy: 'hotSwitch' } });
    const a = agent(c.target, job, ['-withhold=migration']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const rank0 = `${job.name}-worker-0`;
    const w = watchPod(client, job.ns, rank0);
    cleanup(() => w.stop());
    const original = new Map((await client.list<Pod>(paths.pods(job.ns))).items.map((p) => [p.metadata!.name!, p.metadata!.uid!]));
    expect(original.size).toBe(4);
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-0', '81A3880C', 'SubHealthFault');
    const migrate = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'migration', 60_000, 'changeStrategy migration');
    const marked = await eventually(() => w.seen.find((v) => v.uid === original.get(rank0) && v.faultType === 'SubHealth' && v.ope === 'delete' && !v.deleted), 30_000)
      .catch(() => { throw new Error(`rank-0 pod never marked: ${JSON.stringify(w.seen)}`); });
    expect(marked.t - migrate.t).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    // The job restarted: every pod it had is gone (the hot switch deleted the old worker-1 itself; nobody re-creates them here).
    const left = async (): Promise<string[]> => (await client.list<Pod>(paths.pods(job.ns))).items
      .filter((p) => p.metadata?.deletionTimestamp === undefined && original.get(p.metadata?.name ?? '') === p.metadata?.uid).map((p) => p.metadata!.name!);
    await eventually(async () => (await left()).length === 0, 20_000).catch(async () => { throw new Error(`job not restarted, pods left: ${(await left()).join(', ')}`); });
    expect(a.summary).toEqual(['hot-switch[hot switch]', 'hot-switch[new pod running]', 'changeStrategy:migration[change_strategy]']);
    expect(a.events.some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus')).toBe(false);
    process.stdout.write(`[fsm-timeouts-rest] hot switch restart timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);

  it('scale-in: no final status after faultNodesExit within the report timeout -> fault clear and fault retry: reset-config cleared, label pause, dump_exit', async () => {
    const c = await startController('scale-in-status-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`, ELASTIC_TIMINGS]);
    const { job, nodes } = await setUp('elastic-training,dump,exit');
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit', '-isolate-ranks=2,3', '-withhold=scale-in-status']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const seen = observe(job);
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    await a.waitForSignal((s) => s.changeStrategy === 'downgrade', 60_000, 'downgrade');
    const exit = await a.waitForSignal((s) => s.signalType === 'faultNodesExit', 15_000, 'faultNodesExit');
    await faultRetried(a, exit.t, seen);
    // Only MindIO's first answer (201, isolate ranks) was sent; the scale-in never succeeded.
    expect(a.events.filter((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus')).toHaveLength(1);
    expect(a.summary.slice(3)).toEqual(['changeStrategy:downgrade[change_strategy]', 'faultNodesExit[fault_nodes_exit]', 'changeStrategy:exit[change_strategy]']);
    process.stdout.write(`[fsm-timeouts-rest] scale-in status timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);

  it('scale-out: no status for upgrade within the report timeout -> fault clear and fault retry: reset-config cleared, label pause, dump_exit, label on', async () => {
    const c = await startController('scale-out-status-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`, ELASTIC_TIMINGS]);
    const { job, nodes } = await setUp('elastic-training,dump,exit');
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit', '-isolate-ranks=2,3', '-withhold=upgrade']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const seen = observe(job);
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const exit = await a.waitForSignal((s) => s.signalType === 'faultNodesExit', 60_000, 'faultNodesExit');
    await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus' && e.t >= exit.t, 10_000, 'final downgrade status');
    await eventually(async () => (await client.getOrUndefined<Pod>(paths.pod(job.ns, `${job.name}-worker-1`)))?.metadata === undefined, 10_000);
    // The replacement: a new pod at rank 1 with its chips allocated.
    await client.create(paths.pods(job.ns), podObject(job, 1, nodes[4]!, chips(2)));
    const up = await a.waitForSignal((s) => s.changeStrategy === 'upgrade', 20_000, 'upgrade');
    await faultRetried(a, up.t, seen);
    await eventually(() => seen.labels.values.lastIndexOf('on') > seen.labels.values.indexOf('pause'), 40_000);
    expect(a.summary.slice(3)).toEqual(['changeStrategy:downgrade[change_strategy]', 'faultNodesExit[fault_nodes_exit]', 'changeStrategy:upgrade[change_strategy]', 'changeStrategy:exit[change_strategy]']);
    process.stdout.write(`[fsm-timeouts-rest] scale-out status timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 120_000);

  it('O&M result stream: no message within the report timeout -> the stream ends empty, the next one reads the timeout note', async () => {
    const c = await startController('om-stream-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp('retry,recover', { nodeCount: 2 });
    const a = agent(c.target, job, ['-om-reply-delay=120s']);
    await a.waitFor((e) => e.event === 'subscribe', 60_000, 'subscription');
    await new Promise((r) => setTimeout(r, 2500)); // the notify streams open again after the subscription's reset
    const mark = a.events.length;
    a.stressTest(`${nodes[1]}:0`);
    const accepted = await a.waitFor((e) => e.event === 'om' && e.rpc === 'StressTest' && e.code === 0, 15_000, 'StressTest accepted', mark);
    const empty = await a.waitFor((e) => e.event === 'om-result' && e.rpc === 'StressTest', 20_000, 'the first result stream ends', mark);
    expect(empty).toMatchObject({ end: 'EOF' });
    expect(empty.t - accepted.t).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    const note = await a.waitFor((e) => e.event === 'om-result' && e.msg !== undefined, 10_000, 'a result message', a.events.indexOf(empty));
    expect(note.msg).toBe('report stress test result timeout, please check manually');
  }, 120_000);

  it('HCCL retry fault: changeStrategy retry comes 3 s (routing convergence) after the agents chose retry', async () => {
    const c = await startController('hccl-converge', [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp('retry,recover', { nodeCount: 4 });
    const a = agent(c.target, job, ['-strategies=retry,recover']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const t0 = Date.now();
    a.reportProcessFault([{ rankId: '3', faultType: '2' }]); // an HCCL fault the business plane will retry
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '8C1F860B', 'RestartBusiness');
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 60_000, 'globalFault');
    const chose = await a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStrategy' && e.t >= global.t, 10_000, 'ReportRecoverStrategy');
    const retry = await a.waitForSignal((s) => s.changeStrategy === 'retry', 15_000, 'changeStrategy retry');
    process.stdout.write(`[fsm-timeouts-rest] HCCL retry: strategy reported at ${chose.t - t0} ms, retry at ${retry.t - t0} ms (${timeline(a, t0)})\n`);
    expect(retry.t - chose.t).toBeGreaterThanOrEqual(3_000 - SLACK_MS);
    expect(retry.t - chose.t).toBeLessThan(3_000 + 2_000);
    expect(global.faultRanks).toEqual([{ rankId: '3', faultType: '2' }]);
  }, 120_000);
});
