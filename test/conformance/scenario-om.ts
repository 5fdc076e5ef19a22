/**
 * The O&M operations over gRPC (docs/rules.md#recover.stress-test, #recover.switch-nic): the process-recovery
 * scenario's job (two rank pods on node-a and node-b, 2 chips each), its TaskD played by the Go
 * client (tools/taskd-client), which also plays the O&M platform: it calls StressTest /
 * SwitchNicTrack, reads the operation's result stream until the operation is over, and as TaskD
 * answers the notify messages (ReplyStressTestResult / ReplySwitchNicResult) and the pause and
 * continue signals. The client's whole exchange is compared (grpc-inputs.ts), and what both sides
 * wrote (reset-config, node annotations) after every step.
 *
 * - stress-test: refused requests (unknown op, node outside the job), then a stress test of node-b
 *   that passes: pause (15 min timeout), the per-rank ops, pauseStartAgent + FaultFlushing; while
 *   the agents test (they answer after 30 s) the device plugin reports the stress code 80818C05 on
 *   node-b (hidden from cluster-info on both sides) and clears it; then the result,
 *   continueStartAgent, `continue`, reset.
 * - stress-test-fault: rank 2 finds a fault (code "2"): node-b is annotated
 *   `NodeHealthyStatus=UnHealthy` and its ranks are stopped (stopTrain) for the recovery path. MindIO
 *   does not answer that stopTrain within the scenario: what ClusterD does once it is answered
 *   races (continueStartAgent's send result, an unawaited notifySuccess, is taken by
 *   NotifyStopTrainState on some runs, and the real stopTrain's then resets the controller with 401
 *   once the report is in; on other runs it is dropped and the recovery goes on, as ours always does).
 * - switch-nic: the nodes' device-info carries a SuperPodID (the check ClusterD makes); a refused
 *   request (unknown device), then a switch of node-a's chips that succeeds. The agents answer the
 *   switch after 3 s: ClusterD refuses a result subscription once the switch is over
 *   (om_service.go SubscribeSwitchNicSignal, isSwitchingNic), so a switch that finishes before the
 *   operator's subscription lands would end its stream with "is not swtiching nic" on ClusterD's
 *   side only, a race of the harness, not a behaviour.
 * - switch-nic-fail: the agents report the switch failed: `switch nic failed, ...` and stopTrain
 *   (its report held back, as in stress-test-fault, so the step ends at the same point on both sides).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTaskdClient, GoTaskdClient, type ClientEvent } from '../integration/recovery-real-client.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { exchangeRecord } from './grpc-inputs.ts';
import { chipFault, CLIENT, client, exchange, JOB, jobObjects, NS, podIp, recoverChip } from './scenario-process-recovery.ts';
import type { Scenario, SideContext, Step as ScenarioStep } from './runner.ts';

let taskdBin: string | undefined;

function startClient(scenario: string, flags: readonly string[]): ScenarioStep {
  return {
    name: 'TaskD client inits, registers, subscribes (signals and O&M notify streams)',
    perSide: async (ctx: SideContext) => {
      taskdBin ??= buildTaskdClient();
      const jobUid = (await ctx.admin.get<KubeObject>(paths.vcJob(NS, JOB))).metadata!.uid!;
      const c = new GoTaskdClient(taskdBin, ctx.grpcTarget, jobUid, ['-strategies=retry,recover,dump,exit', `-local-addr=${podIp(0)}`, ...flags]);
      ctx.state.set(CLIENT, c);
      ctx.cleanups.push(async () => {
        await c.stop();
        // The raw exchange, for reading a divergence (times included).
        writeFileSync(join(process.env.CONFORMANCE_REPORT_DIR ?? tmpdir(), `clusterd-ts-conformance-taskd-${scenario}-${ctx.side}.jsonl`), c.events.map((e) => JSON.stringify(e)).join('\n'));
      });
      ctx.records.set(`gRPC Recover TaskD ${NS}/${JOB}`, () => exchangeRecord(c.events));
      // The subscription resets the controller, which ends notify streams opened before it: TaskD
      // subscribes them again 1 s later. Give both a few seconds to settle.
      await exchange(ctx, (ev) => ev.some((e) => e.event === 'subscribe'), 30_000);
      await new Promise((r) => setTimeout(r, 3000));
    },
  };
}

const omAnswered = (rpc: string) => (ev: readonly ClientEvent[]): boolean => ev.some((e) => e.event === 'om' && e.rpc === rpc);
/** The operation is over: its result stream was refused after the last message. */
const omOver = (rpc: string) => (ev: readonly ClientEvent[]): boolean =>
  ev.some((e) => e.event === 'om' && e.rpc === rpc && e.code !== 0) || ev.some((e) => e.event === 'om-result' && e.rpc === rpc && (e.error !== undefined || (e.end !== undefined && e.end !== 'EOF')));
/** The stress test failed into the recovery path: its stopTrain came. */
const stoppedForRecovery = (ev: readonly ClientEvent[]): boolean => ev.some((e) => e.event === 'signal' && (e.actions ?? []).includes('stop_train'));

const request = (name: string, send: (c: GoTaskdClient) => void, done: (ev: readonly ClientEvent[]) => boolean, maxMs: number): ScenarioStep => ({
  name,
  perSide: async (ctx) => {
    send(client(ctx));
    await exchange(ctx, done, maxMs);
  },
});

export const STRESS_TEST: Scenario = {
  name: 'stress-test',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    startClient('stress-test', ['-om-reply-delay=30s']),
    request('StressTest with op 2 (not supported): 413', (c) => c.stressTest('node-b:2'), omAnswered('StressTest'), 15_000),
    request('StressTest on node-c (not in the job): 413', (c) => c.stressTest('node-c:0'), omAnswered('StressTest'), 15_000),
    request('StressTest on node-b ops 0,1: pause, the ops to TaskD', (c) => c.stressTest('node-b:0,1'), (ev) => ev.some((e) => e.event === 'stress-notify'), 30_000),
    { name: 'while testing: stress code 80818C05 on node-b chip 0 (hidden)', writes: (w, now) => [chipFault(w, 'node-b', 0, '80818C05', now)] },
    { name: 'while testing: the stress code cleared', writes: (w, now) => [recoverChip(w, 'node-b', 0, now)] },
    { name: 'the agents\' result: continueStartAgent, continue, reset', perSide: (ctx) => exchange(ctx, omOver('StressTest'), 60_000) },
  ],
};

export const STRESS_TEST_FAULT: Scenario = {
  name: 'stress-test-fault',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    startClient('stress-test-fault', ['-stress-codes=2:2', '-stop-train-delay=10m']),
    request('StressTest on all nodes op 0; rank 2 finds a fault: node-b UnHealthy, stopTrain', (c) => c.stressTest('all:0'), stoppedForRecovery, 60_000),
  ],
};

export const SWITCH_NIC: Scenario = {
  name: 'switch-nic',
  nodes: [{ name: 'node-a', superPodId: 0, serverIndex: 0 }, { name: 'node-b', superPodId: 0, serverIndex: 1 }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    startClient('switch-nic', ['-om-reply-delay=3s']),
    request('SwitchNicTrack with device 7 (not on node-a): 413', (c) => c.switchNic('node-a:7=true'), omAnswered('SwitchNicTrack'), 15_000),
    request('SwitchNicTrack node-a chips 0,1: pause, switch, continue', (c) => c.switchNic('node-a:0=true,1=true'), omOver('SwitchNicTrack'), 60_000),
  ],
};

export const SWITCH_NIC_FAIL: Scenario = {
  name: 'switch-nic-fail',
  nodes: [{ name: 'node-a', superPodId: 0, serverIndex: 0 }, { name: 'node-b', superPodId: 0, serverIndex: 1 }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    startClient('switch-nic-fail', ['-switch-result=false', '-stop-train-delay=10m']),
    request('SwitchNicTrack node-b chip 1; the switch fails: stopTrain', (c) => c.switchNic('node-b:1=false'), stoppedForRecovery, 60_000),
  ],
};
