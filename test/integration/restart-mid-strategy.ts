/**
 * Suite of the restart-in-the-middle tests (not a test file): every process-level strategy run three
 * times against the shipped controller (`node main.ts`) with the real TaskD client
 * (tools/taskd-client): straight; with the controller SIGKILLed and started again from the same
 * flags in the middle of the strategy; with two leader-elected replicas and the leader stopped in the
 * middle. Each run ("world") drives the jobs of all its strategies at once, so one disruption hits
 * every strategy at its middle step: each job's client holds its next report (or the test holds the
 * platform's answer / the replacement pod) until every job reached its middle, then the controller
 * goes, its successor takes over, and the jobs finish.
 *
 * Compared per strategy with the straight run: the signals the client got (type, change strategy,
 * actions, and which of them share a uuid), the report answer codes, the final reset-config, the
 * PodGroup's ProcessRecoverStatus / process-recover-enable, which rank pods were replaced. Not
 * compared, being what a client reconnecting after a lost connection necessarily sees
 * (docs/grpc.md#restart-survival): its own Init / Register / Subscribe and stream ends, keep-alives,
 * and an O&M result stream that ended with the connection (the operator subscribes again).
 */
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { parseResetConfigData } from '../../schemas/reset-config/reset-config.ts';
import { eventually, newNamespace } from '../support/cluster.ts';
import { chips, cleanUp, createJob, fakeNodes, podGroup, podObject, podPeer, podUid, rand, reportChipFault, type TestJob } from './recovery-fixtures.ts';
import type { ClientEvent, ControllerWorld, GoTaskdClient, RealClientHarness } from './recovery-real-client.ts';

/**
 * How long a client holds the report that follows its job's middle step: past the slowest job's
 * middle plus a controller's start on a loaded machine, so no report lands while nobody serves.
 */
export const HOLD_S = 45;
/** The straight run has nothing to wait for in the middle: a short hold keeps the file quick. */
const STRAIGHT_HOLD_S = 2;

/** One set of flags for every strategy (short waits; the hot switch stands in for the operator). */
export const RESTART_MID_FLAGS = [
  '--recovery-timings=preExitWait=1000,forceRelease=0,flush=200,inPlaceCheck=6000,scaleInWait=3000,scheduleCheck=3000,restartAll=5000',
  '--recovery-feed-window-ms=50', '--hot-switch-backup-pods',
];

export type Disruption = 'straight' | 'restart' | 'failover';

/** What a run of a strategy leaves, compared between the runs. */
export interface Outcome {
  /** `signalType[:changeStrategy][actions]#n`, n: the index of the signal's uuid among the uuids seen. */
  readonly signals: string[];
  /** `rpc:code` of each report, in order. */
  readonly reports: string[];
  readonly resetConfig: { ranks: number[]; retryTime: number; flushing: boolean; gracefulExit: number; restartFaultProcess: boolean } | undefined;
  readonly podGroup: { status: string | undefined; enable: string | undefined };
  /** Rank pods no longer the original ones. */
  readonly replaced: number[];
  /** The middle step not reached, or the strategy not finished: why. */
  readonly failed?: string;
}

interface Run {
  readonly client: KubeClient;
  readonly job: TestJob;
  readonly nodes: string[];
  readonly a: GoTaskdClient;
  /** The original rank pods' UIDs. */
  readonly uids: Array<string | undefined>;
}

export interface StrategyCase {
  readonly name: string;
  /** kwok nodes: the first `jobNodes` hold the job, the rest are spares (Volcano's job controller stand-in when `peer`). */
  readonly nodes: number;
  readonly jobNodes: number;
  readonly peer: boolean;
  readonly labels?: Record<string, string>;
  readonly annotations: Record<string, string>;
  /** The client's flags; `hold`: how long it holds the report after the middle step (a Go duration). */
  readonly clientFlags: (hold: string) => readonly string[];
  /** The straight run's first signals, so the comparison cannot pass on runs that did nothing. */
  readonly expect: readonly string[];
  readonly prepare?: (r: Run) => Promise<unknown>;
  /** The fault or the operation. */
  readonly start: (r: Run) => Promise<void>;
  /** Resolves once the strategy is in its middle (a signal out, the job's next answer held). */
  readonly middle: (r: Run) => Promise<unknown>;
  /** After the disruption (if any): whatever the test plays, then the end of the strategy. */
  readonly finish: (r: Run) => Promise<unknown>;
}

const T = 90_000;
const sig = (a: GoTaskdClient, pred: (e: ClientEvent) => boolean, what: string) => a.waitForSignal(pred, T, what);
const change = (strategy: string) => (e: ClientEvent) => e.signalType === 'changeStrategy' && e.changeStrategy === strategy;
const reportAfter = (a: GoTaskdClient, rpc: string, after: ClientEvent) =>
  a.waitFor((e) => e.event === 'report' && e.rpc === rpc && e.t >= after.t, T, `${rpc} after ${after.signalType}`);
const annotation = async (r: Run, key: string) => (await podGroup(r.client, r.job)).metadata?.annotations?.[key];
const label = async (r: Run, key: string) => (await podGroup(r.client, r.job)).metadata?.labels?.[key];
const chipFault = (r: Run, node = 1) => reportChipFault(r.client, r.nodes[node]!, 'Ascend910-1', '80E18402', 'SeparateNPU', true);

async function chipsHealthy(client: KubeClient, node: string, superPodId?: number): Promise<void> {
  const name = deviceInfoCmName(node);
  const data = encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000), ...(superPodId === undefined ? {} : { superPodId, serverIndex: 0 }) });
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap('kube-system', name));
  if (existing === undefined) await client.create(paths.configMaps('kube-system'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
  else await client.replace(paths.configMap('kube-system', name), { ...existing, data });
}

/** What a case does in the background, awaited by its finish. */
const later = new WeakMap<Run, Promise<unknown>>();
const UCE_CLEARED_MS = 27_000;

/** TaskD opens its notify streams 1 s after its subscription: let them open before an O&M request. */
const notifyStreamsOpen = () => new Promise((r) => setTimeout(r, 2_500));

/** The strategies, by name (docs/grpc.md#restart-survival has the table). */
export const STRATEGIES: readonly StrategyCase[] = [
  {
    name: 'retry', nodes: 6, jobNodes: 4, peer: true, annotations: { 'recover-strategy': 'retry,recover' },
    clientFlags: (hold) => [`-status-delay=${hold}`],
    expect: ['stopTrain[stop_train]', 'globalFault[on_global_rank]', 'changeStrategy:retry[change_strategy]'],
    // The UCE stays on the chip until 27 s after the report, inside the 30 s a step retry hides it
    // from the rescheduler (docs/rules.md#filter.step-retry): the restarted controller must hide it too.
    start: async (r) => {
      r.a.reportProcessFault([{ rankId: '3', faultType: '0' }]);
      await reportChipFault(r.client, r.nodes[1]!, 'Ascend910-1', '80E01801', 'RestartBusiness');
      later.set(r, new Promise((res) => setTimeout(res, UCE_CLEARED_MS)).then(() => chipsHealthy(r.client, r.nodes[1]!)));
    },
    middle: (r) => sig(r.a, change('retry'), 'changeStrategy retry'),
    finish: async (r) => {
      await eventually(async () => (await annotation(r, 'ProcessRecoverStatus')) === 'retry-success', T);
      await later.get(r);
    },
  },
  {
    name: 'recover', nodes: 6, jobNodes: 4, peer: true, annotations: { 'recover-strategy': 'retry,recover,dump,exit' },
    clientFlags: (hold) => [`-status-delay=${hold}`],
    expect: ['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]'],
    start: (r) => chipFault(r),
    middle: (r) => sig(r.a, change('recover'), 'changeStrategy recover'),
    finish: (r) => eventually(async () => (await annotation(r, 'ProcessRecoverStatus')) === 'recover-success', T),
  },
  {
    name: 'recover-in-place', nodes: 6, jobNodes: 4, peer: true, annotations: { 'recover-strategy': 'recover-in-place,recover,exit' },
    clientFlags: (hold) => ['-strategies=recover,exit', `-status-delay=${hold}`],
    expect: ['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy|fault_nodes_restart]'],
    start: async (r) => {
      await reportChipFault(r.client, r.nodes[1]!, 'Ascend910-1', '80C98008', 'RestartRequest');
      // The L2 fault clears inside the 6 s in-place check: the pod restarts in place.
      await r.a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportStopComplete', T, 'ReportStopComplete');
      await new Promise((res) => setTimeout(res, 1_500));
      await chipsHealthy(r.client, r.nodes[1]!);
    },
    middle: (r) => sig(r.a, change('recover'), 'changeStrategy recover (in place)'),
    // The 5 s wait after the status (a timer of the restored state) comes before recover-success.
    finish: (r) => eventually(async () => (await annotation(r, 'ProcessRecoverStatus')) === 'recover-success', T),
  },
  {
    name: 'dump', nodes: 6, jobNodes: 4, peer: true, annotations: { 'recover-strategy': 'dump,exit' },
    clientFlags: (hold) => ['-strategies=dump,exit', `-dump-delay=${hold}`],
    expect: ['preExitProcess[pre exit process]', 'saveAndExit[save_and_exit]', 'changeStrategy:exit[change_strategy]'],
    start: (r) => chipFault(r),
    middle: (r) => sig(r.a, (e) => e.signalType === 'saveAndExit', 'saveAndExit'),
    // dump-success, dump_exit, the schedule wait (RetryTime+1), the restart wait, fault retry: pause, then on.
    finish: async (r) => {
      await eventually(async () => (await annotation(r, 'ProcessRecoverStatus')) === 'dump-success', T);
      const exit = await sig(r.a, change('exit'), 'dump_exit');
      await eventually(async () => (await label(r, 'process-recover-enable')) === 'pause', T);
      await eventually(async () => (await label(r, 'process-recover-enable')) === 'on', T);
      return exit;
    },
  },
  {
    name: 'kill-job', nodes: 6, jobNodes: 4, peer: true, annotations: { 'recover-strategy': 'recover,exit' },
    clientFlags: (hold) => ['-strategies=recover,exit', '-stop-code=404', `-stop-train-delay=${hold}`],
    expect: ['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'killMaster[]'],
    start: (r) => chipFault(r),
    middle: (r) => sig(r.a, (e) => e.signalType === 'stopTrain', 'stopTrain'),
    // killMaster resets the job's controller: the stream ends and TaskD subscribes again.
    finish: async (r) => {
      const kill = await sig(r.a, (e) => e.signalType === 'killMaster', 'killMaster');
      const i = r.a.events.indexOf(kill);
      await r.a.waitFor((e) => e.event === 'subscribe', T, 'subscription after killMaster', i);
    },
  },
  {
    name: 'elastic', nodes: 5, jobNodes: 4, peer: false, annotations: { 'recover-strategy': 'elastic-training,dump,exit' },
    clientFlags: () => ['-strategies=downgrade,dump,exit', '-isolate-ranks=2,3'],
    expect: ['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]',
      'changeStrategy:downgrade[change_strategy]', 'faultNodesExit[fault_nodes_exit]', 'changeStrategy:upgrade[change_strategy]'],
    start: (r) => chipFault(r),
    // Scaled in (the final downgrade status taken), waiting for a replacement of the fault pod. Two
    // statuses follow the downgrade: 201 with the ranks to isolate, answered after the controller
    // sent faultNodesExit (so it may reach the client's log after that signal), then the scale-in's.
    // The second is sent at once and, as TaskD's, not retried past a lost server: the disruption
    // waits for its answer.
    middle: async (r) => {
      const down = await sig(r.a, change('downgrade'), 'changeStrategy downgrade');
      await sig(r.a, (e) => e.signalType === 'faultNodesExit', 'faultNodesExit');
      await eventually(() => r.a.events.filter((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus' && e.t >= down.t).length >= 2, T);
      await eventually(async () => (await podUid(r.client, r.job, 1)) === undefined, T);
    },
    finish: async (r) => {
      await r.client.create(paths.pods(r.job.ns), podObject(r.job, 1, r.nodes[4]!, chips(2)));
      const up = await sig(r.a, change('upgrade'), 'upgrade');
      await r.a.waitFor((e) => e.event === 'subscribe', T, 'subscription after the scale-out', r.a.events.indexOf(up));
    },
  },
  {
    name: 'hot-switch', nodes: 4, jobNodes: 4, peer: false, labels: { subHealthyStrategy: 'hotSwitch' }, annotations: { 'recover-strategy': 'recover' },
    clientFlags: (hold) => [`-status-delay=${hold}`],
    expect: ['hot-switch[hot switch]', 'hot-switch[new pod running]', 'changeStrategy:migration[change_strategy]'],
    start: (r) => reportChipFault(r.client, r.nodes[1]!, 'Ascend910-0', '81A3880C', 'SubHealthFault'),
    middle: (r) => sig(r.a, change('migration'), 'changeStrategy migration'),
    // The migration status, then the backup pod holds rank 1 (the old pod gone, the markers cleared).
    finish: async (r) => {
      const m = r.a.signals.find(change('migration'))!;
      await reportAfter(r.a, 'ReportRecoverStatus', m);
      await eventually(async () => {
        const pods = (await r.client.list<KubeObject>(paths.pods(r.job.ns))).items;
        return !pods.some((p) => p.metadata?.uid === r.uids[1])
          && pods.some((p) => p.metadata?.name?.startsWith(`${r.job.name}-worker-1-hot-`) && p.metadata?.annotations?.podType === undefined && p.metadata?.annotations?.inHotSwitchFlow === undefined);
      }, T);
    },
  },
  {
    name: 'platform', nodes: 6, jobNodes: 4, peer: true, annotations: { 'recover-strategy': 'recover,exit', ProcessRecoverStrategy: 'recover' },
    clientFlags: () => ['-strategies=recover,exit'],
    expect: ['preExitProcess[pre exit process]', 'stopTrain[stop_train]', 'globalFault[on_global_rank|fault_nodes_exit]', 'changeStrategy:recover[change_strategy]'],
    start: (r) => chipFault(r),
    // The controller wrote ProcessConfirmFault and waits for the platform.
    middle: (r) => eventually(async () => ((await annotation(r, 'ProcessConfirmFault')) ?? '') !== '', T),
    finish: async (r) => {
      const platform = (a: Record<string, string>) => r.client.patch(paths.podGroup(r.job.ns, r.job.pgName), { metadata: { annotations: a } }, 'merge');
      await platform({ ProcessResultFault: '5:1' });
      await r.a.waitFor((e) => e.event === 'report' && e.rpc === 'ReportRecoverStrategy', T, 'ReportRecoverStrategy');
      await platform({ RankTableReady: 'true' });
      await eventually(async () => (await annotation(r, 'ProcessRecoverStatus')) === 'recover-success', T);
    },
  },
  {
    name: 'stress-test', nodes: 2, jobNodes: 2, peer: false, annotations: { 'recover-strategy': 'retry,recover' },
    clientFlags: (hold) => [`-om-reply-delay=${hold}`],
    expect: ['stopTrain[pause_train]', 'pauseStartAgent[pause_start_agent]', 'continueStartAgent[continue_start_agent]', 'changeStrategy:continue[change_strategy]'],
    prepare: async () => notifyStreamsOpen(),
    start: async (r) => { r.a.stressTest(`${r.nodes[1]}:0,1`); },
    middle: async (r) => {
      await r.a.waitFor((e) => e.event === 'stress-notify', T, 'stress test notify');
      await sig(r.a, (e) => e.signalType === 'pauseStartAgent', 'pauseStartAgent');
    },
    finish: async (r) => reportAfter(r.a, 'ReportRecoverStatus', await sig(r.a, change('continue'), 'continue')),
  },
  {
    name: 'switch-nic', nodes: 2, jobNodes: 2, peer: false, annotations: { 'recover-strategy': 'retry,recover' },
    clientFlags: (hold) => [`-om-reply-delay=${hold}`],
    expect: ['stopTrain[pause_train]', 'changeStrategy:continue[change_strategy]'],
    prepare: async (r) => {
      for (const n of r.nodes) await chipsHealthy(r.client, n, 0); // a SuperPodID: a NIC switch is possible
      await notifyStreamsOpen();
    },
    start: async (r) => { r.a.switchNic(`${r.nodes[0]}:1=true`); },
    middle: (r) => r.a.waitFor((e) => e.event === 'switch-notify', T, 'switch notify'),
    finish: async (r) => reportAfter(r.a, 'ReportRecoverStatus', await sig(r.a, change('continue'), 'continue')),
  },
];

async function outcome(r: Run, failed: string | undefined): Promise<Outcome> {
  const uuids: string[] = [];
  const idx = (u: string | undefined): number => {
    const i = uuids.indexOf(u ?? '');
    return i >= 0 ? i : uuids.push(u ?? '') - 1;
  };
  const signals = r.a.signals.map((s) => `${s.signalType}${s.changeStrategy ? `:${s.changeStrategy}` : ''}[${(s.actions ?? []).join('|')}]#${idx(s.uuid)}`);
  const reports = r.a.events.filter((e) => e.event === 'report').map((e) => `${e.rpc}:${e.error === undefined || e.error === '' ? e.code ?? 0 : 'error'}`);
  const cm = await r.client.getOrUndefined<ConfigMap>(paths.configMap(r.job.ns, `reset-config-${r.job.name}`));
  const parsed = cm === undefined ? undefined : parseResetConfigData(cm.data);
  const info = parsed?.ok === true ? parsed.value.info : undefined;
  const pg = (await podGroup(r.client, r.job)).metadata;
  const now = await Promise.all(r.uids.map((_, i) => podUid(r.client, r.job, i)));
  return {
    signals, reports,
    resetConfig: info === undefined ? undefined : {
      ranks: (info.RankList ?? []).map((x) => x.RankId).sort((a, b) => a - b), retryTime: info.RetryTime, flushing: info.FaultFlushing,
      gracefulExit: info.GracefulExit, restartFaultProcess: info.RestartFaultProcess,
    },
    podGroup: { status: pg?.annotations?.ProcessRecoverStatus, enable: pg?.labels?.['process-recover-enable'] },
    replaced: now.flatMap((u, i) => (u === r.uids[i] ? [] : [i])),
    ...(failed === undefined ? {} : { failed }),
  };
}

/** Quiet time after the last job finished, so a doubled late signal would be seen. */
const SETTLE_MS = 4_000;

/**
 * One run of `cases` with the given disruption (none for `straight`) in the middle: every job set up,
 * subscribed and started at once; the disruption once every job is in its middle.
 */
export async function runWorld(h: RealClientHarness, client: KubeClient, cases: readonly StrategyCase[], how: Disruption): Promise<Map<string, Outcome>> {
  const name = `${how}-${rand()}`;
  let world: ControllerWorld;
  if (how === 'failover') {
    const r = await h.startReplicas(name, await newNamespace(client, 'rml'), RESTART_MID_FLAGS);
    world = { name, args: RESTART_MID_FLAGS, target: r.leader.target, current: r.leader, standby: r.standby };
  } else {
    const c = await h.startController(name, RESTART_MID_FLAGS);
    world = { name, args: RESTART_MID_FLAGS, target: c.target, current: c };
  }
  const runs = await Promise.all(cases.map(async (s): Promise<Run> => {
    const nodes = await fakeNodes(client, `rm-${rand()}`, s.nodes);
    const job = await createJob(client, {
      ns: await newNamespace(client, 'rm'), nodes: nodes.slice(0, s.jobNodes),
      labels: { framework: 'pytorch', 'process-recover-enable': 'on', ...s.labels }, annotations: s.annotations,
    });
    h.cleanup(() => cleanUp(client, job, nodes));
    if (s.peer) {
      const p = podPeer(client, job, nodes.slice(s.jobNodes));
      h.cleanup(() => p.stop());
    }
    const a = h.agent(world.target, job, s.clientFlags(`${how === 'straight' ? STRAIGHT_HOLD_S : HOLD_S}s`));
    await a.waitFor((e) => e.event === 'subscribe', T, `${s.name}: subscription`);
    const uids = await Promise.all(nodes.slice(0, s.jobNodes).map((_, i) => podUid(client, job, i)));
    const r: Run = { client, job, nodes, a, uids };
    await s.prepare?.(r);
    return r;
  }));
  const t0 = Date.now();
  // A strategy that fails is recorded (its comparison says why), the others go on.
  const failed = new Map<string, string>();
  const note = (s: StrategyCase, step: string) => (e: unknown) => { failed.set(s.name, `${step}: ${String(e).slice(0, 600)}`); };
  await Promise.all(cases.map((s, i) => s.start(runs[i]!).then(() => s.middle(runs[i]!)).catch(note(s, 'middle not reached'))));
  const tMid = Date.now();
  if (how !== 'straight') await h.disrupt(world, how);
  const tBack = Date.now();
  await Promise.all(cases.map((s, i) => (failed.has(s.name) ? Promise.resolve() : s.finish(runs[i]!).then(() => undefined, note(s, 'not finished')))));
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const out = new Map<string, Outcome>();
  for (const [i, s] of cases.entries()) out.set(s.name, await outcome(runs[i]!, failed.get(s.name)));
  process.stdout.write(`[restart-mid] ${how}: all in the middle ${tMid - t0} ms after the start, successor serving after ${tBack - tMid} ms, done after ${Date.now() - t0} ms\n`);
  return out;
}

/**
 * The table-driven suite over `names` (a subset of STRATEGIES): three runs, then per strategy the
 * straight run's signals expected, and the disrupted runs equal to it.
 */
export function restartMidStrategySuite(h: RealClientHarness, client: KubeClient, names: readonly string[]): void {
  const cases = names.map((n) => STRATEGIES.find((s) => s.name === n)!);
  const runs = new Map<Disruption, Map<string, Outcome>>();
  for (const how of ['straight', 'restart', 'failover'] as const) {
    it(`${how} run of ${names.join(', ')}`, async () => {
      runs.set(how, await runWorld(h, client, cases, how));
    }, 300_000);
  }
  it.each(cases.map((s) => [s.name, s] as const))('%s: the same signals, answers and final state after a restart and after a failover', (_, s) => {
    const straight = runs.get('straight')?.get(s.name);
    expect(straight).toBeDefined();
    expect(straight!.failed).toBeUndefined();
    expect(straight!.signals.map((x) => x.replace(/#\d+$/, '')).slice(0, s.expect.length)).toEqual(s.expect);
    expect(straight!.reports.every((x) => !x.endsWith(':error'))).toBe(true);
    for (const how of ['restart', 'failover'] as const) {
      const got = runs.get(how)?.get(s.name);
      expect({ how, ...got }).toEqual({ how, ...straight });
    }
  });
}
