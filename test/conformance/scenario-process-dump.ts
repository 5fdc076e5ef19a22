/**
 * Process-level recovery's dump strategy over gRPC: the job of scenario-process-recovery.ts (two rank
 * pods, same objects and TaskD client), but its PodGroup allows only `dump,exit`. ClusterD then
 * skips stopTrain / globalFault: with dump the first configured strategy and the job unhealthy it
 * writes the fault ranks to reset-config and sends saveAndExit to the fault pods
 * (handleNotifyWaitFaultFlushing -> handleNotifyElagantDump, pkg/application/recover/controller.go);
 * MindIO dumps and reports ReportRecoverStatus `dump`; ClusterD marks the PodGroup dump-success or
 * dump-failed and sends changeStrategy exit with extraParams dump_exit (sendDumpExit). Then 4 looks
 * 5 s apart for the job rescheduled; nobody replaces the pod here, but the job still runs, which
 * counts as scheduled after the last look (handleListenScheduleResult): RetryTime+1, 1 min, clear,
 * fault retry (label pause, dump_exit again, the job runs at the first look: label on), reset.
 *
 * Neither side runs Volcano, so nobody replaces a fault pod (`--rescheduling=false` as in
 * process-recovery).
 */
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import { chipFault, exchange, jobObjects, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';

/** A saveAndExit came, its ReportRecoverStatus was answered, and the dump-exit changeStrategy followed. */
const dumpExited = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'saveAndExit');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'signal' && e.signalType === 'changeStrategy' && e.changeStrategy === 'exit');
};

export const PROCESS_DUMP: Scenario = {
  name: 'process-dump',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('dump,exit')],
  steps: [
    // MindIO supports what the job allows; its dump succeeds (code 0).
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=dump,exit'], '-dump') },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    // The whole dump path: saveAndExit, report, dump_exit, then ClusterD's 20 s listen-schedule and
    // its fault-retry wait for the job to run again.
    { name: 'exchange after the chip fault', perSide: (ctx) => exchange(ctx, dumpExited, 90_000) },
    // 20 s after dump_exit the job still runs: ClusterD takes it as scheduled and writes RetryTime+1
    // (handleListenScheduleResult, handleRestartAllProcess), then waits 1 min.
    { name: 'nothing written until 45 s after the fault (restart all processes)', waitSince: 'chip fault 80E18402 on node-b chip 1 (rank 3)', ms: 45_000 },
    // Then clear, label pause, dump_exit again, the job runs at the first look: label on, reset.
    { name: 'nothing written for 55 s (fault retry, the recovery ends)', ms: 55_000 },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
  ],
};
