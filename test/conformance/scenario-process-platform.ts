/**
 * Process-level recovery in AI platform mode (docs/rules.md#recover.platform-mode): the job of
 * scenario-process-recovery.ts (two rank pods, same objects and TaskD client) with `recover-strategy:
 * recover,exit` and the PodGroup annotation `ProcessRecoverStrategy=recover`. The scenario's steps play
 * the AI platform by patching the PodGroup on both sides. ClusterD reads the platform's strategy
 * before FaultFlushing (WaitPlatFormStrategyReady), writes the fault ranks to ProcessConfirmFault and
 * waits for ProcessResultFault (UpdateProcessConfirmFault, WaitProcessResultFault), confirms the
 * strategy, and before changeStrategy recover waits for RankTableReady; RankTableReady=false fails it
 * at once: the strategy is read again (still recover) and ClusterD falls back to exit
 * (handleDecidedStrategyAfterChoose, chooseForRecoverFail). After exit it skips the schedule waits
 * (handleListenScheduleResult, handleWaitRestartAllProcess in platform mode): RetryTime+1, clear,
 * fault retry (label pause, dump_exit, the job runs: label on), reset. Sources:
 * component/clusterd/pkg/application/recover/fault_recover_platform_plugin.go and controller.go.
 *
 * Neither side runs Volcano (`--rescheduling=false` as in process-recovery).
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import type { Write } from './world.ts';
import { chipFault, exchange, jobObjects, NS, PG, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';

/** The platform's answer: a merge patch of the PodGroup's annotations. */
const platform = (annotations: Record<string, string>): Write => ({
  op: 'patch', path: paths.podGroup(NS, PG), type: 'merge', body: { metadata: { annotations } },
});

const answered = (rpc: string) => (ev: readonly ClientEvent[]): boolean => ev.some((e) => e.event === 'report' && e.rpc === rpc);

export const PROCESS_PLATFORM: Scenario = {
  name: 'process-platform',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('recover,exit', { ProcessRecoverStrategy: 'recover' })],
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover,exit'], '-platform') },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    // preExitProcess, then (the platform's strategy is there) FaultFlushing and stopTrain.
    { name: 'exchange up to ReportStopComplete', perSide: (ctx) => exchange(ctx, answered('ReportStopComplete'), 60_000) },
    // 1 s flush, force release, then ProcessConfirmFault=3:1 and the wait for the platform: no globalFault.
    { name: 'nothing written for 25 s (ProcessConfirmFault written, waiting for ProcessResultFault)', ms: 25_000 },
    { name: 'the platform answers: ProcessResultFault empty, strategy still recover', writes: () => [platform({ ProcessResultFault: '' })] },
    { name: 'exchange up to ReportRecoverStrategy', perSide: (ctx) => exchange(ctx, answered('ReportRecoverStrategy'), 30_000) },
    // recover chosen: it waits for RankTableReady, no changeStrategy yet.
    { name: 'nothing written for 10 s (recover waits for RankTableReady)', ms: 10_000 },
    { name: 'the platform: RankTableReady=false', writes: () => [platform({ RankTableReady: 'false' })] },
    // The strategy is read again (recover): chooseForRecoverFail -> exit (no ProcessRecoverStatus); RetryTime+1,
    // clear, fault retry with no schedule waits; the job runs: label on, reset.
    { name: 'exchange up to the exit status', perSide: (ctx) => exchange(ctx, answered('ReportRecoverStatus'), 30_000) },
    { name: 'nothing written for 30 s (fault retry, the recovery ends)', ms: 30_000 },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
  ],
};
