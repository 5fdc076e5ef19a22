/**
 * More recovery FSM timeouts (docs/grpc.md#fsm-timeouts) on the real apiserver, against the shipped
 * controller (`node main.ts`) with the report timeout made short (`--recovery-report-timeout-seconds`),
 * and the real TaskD client (tools/taskd-client) told not to send the one report awaited (`-withhold`,
 * `-om-reply-delay`). Each case asserts what ClusterD's transition tables do after that timeout
 * (component/clusterd/pkg/application/recover/rules.go):
 * - globalFault, no ReportRecoverStrategy (WaitReportRecoverStrategy + ReportTimeout -> FaultClear ->
 *   FaultRetry): reset-config cleared, label `process-recover-enable=pause`, `exit dump_exit`, label `on`;
 * - step retry, no retry status (WaitReportStepRetryStatus + ReportTimeout -> FaultRetry): label pause,
 *   `exit dump_exit`, label on, never retry-success;
 * - scale-in, no answer to `downgrade` (WaitReportScaleInIsolateRanks + ReportTimeout -> NotifyDecidedStrategy):
 *   ClusterD chooses again from the status reports received, none, so `downgrade` again, no dump;
 * - NIC switch, no ReplySwitchNicResult (WaitSwitchNicFinished + ReportTimeout -> NotifyStopTrain):
 *   `stopTrain[stop_train]`;
 * - hot switch, no pause result (WaitReportPauseResult + ReportTimeout -> NotifyStopJob,
 *   component/clusterd/pkg/application/recover/hot_switch_controller.go): no migration and no further
 *   signal, the rank-0 pod labelled `fault-type=SubHealth` and annotated `needVolcanoOpe=delete`, the
 *   backup pod removed, and the whole job restarted by the rescheduler (Volcano's part, ours here:
 *   docs/rules.md#hotswitch.stop-job).
 */
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { ConfigMap, Pod } from '../../runtime/kube-objects.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { realClock } from '../../runtime/clock.ts';
import { cleanUp, createJob, fakeNodes, podGroup, podPeer, rand, reportChipFault, watchPodGroupLabel, type TestJob } from './recovery-fixtures.ts';
import { type GoTaskdClient, haveGo, observeRecovery, realClientHarness, timeline } from './recovery-real-client.ts';

if (!haveGo()) process.stdout.write('recovery-timeouts-more-real-client: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

const REPORT_S = 4;
const SLACK_MS = 500;

/** The device plugin's device-info of a healthy node with 8 chips and a SuperPodID (a NIC switch needs one). */
async function superPod(client: KubeClient, node: string): Promise<void> {
  const data = encodeDeviceInfoData({ available: Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`), updateTimeS: Math.floor(Date.now() / 1000), superPodId: 0, serverIndex: 0 });
  const name = deviceInfoCmName(node);
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
  if (existing === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
  else await client.replace(paths.configMap('kube-system', name), { ...existing, data });
}

describeGo('more recovery FSM timeouts with the real TaskD client not answering', () => {
  const client = adminClient();
  const { cleanup, startController, agent } = realClientHarness(client, 'fsm-timeouts-more');

  /** 4 rank pods on 4 nodes; with `peer`, Volcano's job controller stand-in re-creates deleted pods on 2 spares. */
  async function setUp(strategies: string, opts: { peer?: boolean; nodeCount?: number; labels?: Record<string, string> } = {}): Promise<{ job: TestJob; nodes: string[] }> {
    const { peer = true, nodeCount = 6, labels = {} } = opts;
    const nodes = await fakeNodes(client, `ftm-${rand()}`, nodeCount);
    const job = await createJob(client, { ns: await newNamespace(client, 'ftm'), nodes: nodes.slice(0, 4), labels: { framework: 'pytorch', 'process-recover-enable': 'on', ...labels }, annotations: { 'recover-strategy': strategies } });
    cleanup(() => cleanUp(client, job, nodes));
    if (peer) {
      const p = podPeer(client, job, nodes.slice(4));
      cleanup(() => p.stop());
    }
    return { job, nodes };
  }

  function observe(job: TestJob): ReturnType<typeof observeRecovery> {
    const o = observeRecovery(client, job);
    cleanup(() => o.stop());
    return o;
  }

  /** FaultRetry after a report timeout: label pause, exit dump_exit (not before the timeout), label on again once the job runs. */
  async function faultRetried(a: GoTaskdClient, waitedSince: number, labels: ReturnType<typeof watchPodGroupLabel>): Promise<void> {
    await eventually(() => labels.values.includes('pause'), 30_000);
    const exit = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'exit' && s.t >= waitedSince, 15_000, 'exit dump_exit');
    expect(exit.t - waitedSince).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    expect(exit.extraParams).toBe('dump_exit');
    await eventually(() => labels.values.lastIndexOf('on') > labels.values.indexOf('pause'), 40_000);
  }

  it('globalFault: no ReportRecoverStrategy within the report timeout -> fault clear and fault retry: reset-config cleared, label pause, dump_exit, label on', async () => {
    const c = await startController('strategy-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp('recover,dump,exit');
    const a = agent(c.target, job, ['-strategies=recover,dump,exit', '-withhold=strategy']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const { poll, labels } = observe(job);
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const global = await a.waitForSignal((s) => s.signalType === 'globalFault', 60_000, 'globalFault');
    await faultRetried(a, global.t, labels);
    // FaultClear wrote a cleared reset-config after the timeout (a poller may miss the moment, not the version).
    await eventually(() => poll.seen.some((v) => v.atMs >= global.t + REPORT_S * 1000 - SLACK_MS && !v.info.FaultFlushing && (v.info.RankList ?? []).length === 0), 10_000);
    // No strategy was ever decided: no changeStrategy but the fault retry's exit.
    expect(a.signals.filter((s) => s.signalType === 'changeStrategy').map((s) => s.changeStrategy)).toEqual(['exit']);
    expect(a.events.some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStrategy')).toBe(false);
    process.stdout.write(`[fsm-timeouts-more] strategy timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 150_000);

  it('step retry: no retry status within the report timeout -> fault retry: label pause, dump_exit, label on, never retry-success', async () => {
    const c = await startController('retry-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp('retry,recover');
    const a = agent(c.target, job, ['-withhold=retry']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const { labels } = observe(job);
    const t0 = Date.now();
    a.reportProcessFault([{ rankId: '3', faultType: '0' }]); // a step-retry UCE (ClusterD CanDoStepRetry)
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
    const retry = await a.waitForSignal((s) => s.signalType === 'changeStrategy' && s.changeStrategy === 'retry', 60_000, 'changeStrategy retry');
    await faultRetried(a, retry.t, labels);
    expect(a.summary.slice(0, 4)).toEqual(['stopTrain[stop_train]', 'globalFault[on_global_rank]', 'changeStrategy:retry[change_strategy]', 'changeStrategy:exit[change_strategy]']);
    expect((await podGroup(client, job)).metadata?.annotations?.ProcessRecoverStatus).not.toBe('retry-success');
    process.stdout.write(`[fsm-timeouts-more] step retry timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 150_000);

  it('scale-in: no answer to downgrade within the report timeout -> the strategy chosen again from the reports received (none): downgrade again, no dump', async () => {
    const c = await startController('scale-in-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`, '--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,scaleInWait=3000']);
    // Nobody re-creates the fault pod (no capacity): elastic training is the first choice.
    const { job, nodes } = await setUp('elastic-training,dump,exit', { peer: false, nodeCount: 5 });
    const a = agent(c.target, job, ['-strategies=downgrade,dump,exit', '-withhold=downgrade']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const t0 = Date.now();
    await reportChipFault(client, nodes[1]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);
    const down = await a.waitForSignal((s) => s.changeStrategy === 'downgrade', 60_000, 'downgrade');
    // ClusterD's choice after the timeout (chooseStrategy) looks at the status reports received in this
    // recovery, none: the first choice again (docs/rules.md#recover.strategy-choice), not the fallback after a failed scale-in.
    const again = await a.waitForSignal((s) => s.changeStrategy === 'downgrade' && s.t > down.t, 30_000, 'downgrade again after the timeout');
    expect(again.t - down.t).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    expect(again).toMatchObject({ uuid: down.uuid, extraParams: down.extraParams });
    expect(a.signals.some((s) => s.changeStrategy === 'dump' || s.signalType === 'faultNodesExit')).toBe(false);
    expect(a.events.some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus')).toBe(false);
    process.stdout.write(`[fsm-timeouts-more] scale-in timeout timeline (ms from fault): ${timeline(a, t0)}\n`);
  }, 150_000);

  it('NIC switch: no ReplySwitchNicResult within the report timeout -> stopTrain[stop_train]', async () => {
    const c = await startController('nic-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`]);
    const { job, nodes } = await setUp('retry,recover', { peer: false, nodeCount: 4 });
    for (const n of nodes) await superPod(client, n);
    const a = agent(c.target, job, ['-om-reply-delay=120s']);
    await a.waitFor((e) => e.event === 'subscribe', 60_000, 'subscription');
    await new Promise((r) => setTimeout(r, 2500)); // the notify streams open again after the subscription's reset
    const mark = a.events.length;
    a.switchNic(`${nodes[0]}:1=true`);
    await a.waitFor((e) => e.event === 'om' && e.rpc === 'SwitchNicTrack' && e.code === 0, 15_000, 'SwitchNicTrack accepted', mark);
    const notify = await a.waitFor((e) => e.event === 'switch-notify', 20_000, 'switch notify', mark);
    const stop = await a.waitForSignal((s) => s.signalType === 'stopTrain' && (s.actions ?? []).includes('stop_train'), 30_000, 'stopTrain[stop_train]');
    expect(stop.t - notify.t).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    expect(a.summary[0]).toBe('stopTrain[pause_train]');
    expect(a.signals.some((s) => s.changeStrategy === 'continue')).toBe(false);
    expect(a.events.some((e) => e.event === 'report' && e.rpc === 'ReplySwitchNicResult')).toBe(false);
    expect(a.events.some((e) => e.event === 'om-result' && e.msg === 'switch nic finish')).toBe(false);
  }, 120_000);

  it('hot switch: no pause result within the report timeout -> stop job: rank-0 pod marked SubHealth + needVolcanoOpe=delete, backup pod removed, the job restarted, no migration', async () => {
    const c = await startController('hot-switch-timeout', [`--recovery-report-timeout-seconds=${REPORT_S}`, '--hot-switch-backup-pods', '--hot-switch-new-pod-timeout-seconds=30']);
    const { job, nodes } = await setUp('recover', { peer: false, nodeCount: 4, labels: { subHealthyStrategy: 'hotSwitch' } });
    const a = agent(c.target, job, ['-withhold=hot-switch']);
    await a.waitFor((e) => e.event === 'subscribe', 30_000, 'subscription');
    const rank0 = `${job.name}-worker-0`;
    // Every state of the rank-0 pod (its deletion's last state included: the restart may follow the marks at once).
    const seen: Array<{ t: number; uid?: string; faultType?: string; ope?: string; deleted?: boolean }> = [];
    const r = new Reflector<Pod>(client, { clock: realClock, name: `pod-${rank0}`, path: paths.pods(job.ns), fieldSelector: `metadata.name=${rank0}` });
    const sub = r.events$.subscribe({
      next: (ev) => {
        const m = ev.obj.metadata;
        const cur = { t: Date.now(), uid: m?.uid, faultType: m?.labels?.['fault-type'], ope: m?.annotations?.['needVolcanoOpe'], deleted: ev.type === 'delete' || m?.deletionTimestamp !== undefined };
        const last = seen.at(-1);
        if (last?.uid !== cur.uid || last?.faultType !== cur.faultType || last?.ope !== cur.ope || last?.deleted !== cur.deleted) seen.push(cur);
      },
      error: () => undefined,
    });
    r.start();
    cleanup(() => { sub.unsubscribe(); r.stop(); });
    const original = new Map((await client.list<Pod>(paths.pods(job.ns))).items.map((p) => [p.metadata!.name!, p.metadata!.uid!]));
    expect(original.size).toBe(4);
    await reportChipFault(client, nodes[1]!, 'Ascend910-0', '81A3880C', 'SubHealthFault');
    await a.waitForSignal((s) => s.signalType === 'hot-switch' && (s.actions ?? []).includes('hot switch'), 30_000, 'hot switch');
    const running = await a.waitForSignal((s) => s.signalType === 'hot-switch' && (s.actions ?? []).includes('new pod running'), 40_000, 'new pod running');
    const labelled = await eventually(() => seen.find((v) => v.faultType === 'SubHealth'), 30_000).catch(() => { throw new Error(`rank-0 pod never labelled fault-type=SubHealth: ${JSON.stringify(seen)}`); });
    process.stdout.write(`[fsm-timeouts-more] hot switch: rank-0 pod ${JSON.stringify(seen)}, new pod running at ${running.t}\n`);
    expect(labelled.t - running.t).toBeGreaterThanOrEqual(REPORT_S * 1000 - SLACK_MS);
    // The backup pod goes (rollback).
    await eventually(async () => !(await client.list<Pod>(paths.pods(job.ns))).items.some((p) => p.metadata?.deletionTimestamp === undefined && p.metadata?.name?.startsWith(`${job.name}-worker-1-hot-`)), 15_000);
    // Marked as ClusterD marks it before anything deletes it.
    expect(seen.some((v) => v.uid === original.get(rank0) && v.faultType === 'SubHealth' && v.ope === 'delete' && !v.deleted)).toBe(true);
    // The job restarted: every pod it had is gone (nobody re-creates them here), not only the rank-0 pod.
    const left = async (): Promise<string[]> => (await client.list<Pod>(paths.pods(job.ns))).items
      .filter((p) => p.metadata?.deletionTimestamp === undefined && original.get(p.metadata?.name ?? '') === p.metadata?.uid).map((p) => p.metadata!.name!);
    await eventually(async () => (await left()).length === 0, 20_000).catch(async () => { throw new Error(`job not restarted, pods left: ${(await left()).join(', ')}`); });
    expect(a.signals.some((s) => s.changeStrategy === 'migration')).toBe(false);
    // ClusterD's stop job sends the agents nothing: the last signal is still `new pod running`.
    expect(a.signals.filter((s) => s.t > running.t)).toEqual([]);
  }, 150_000);
});
