/**
 * Process-level recovery's kill-job path over gRPC: the job of scenario-process-recovery.ts, whose
 * MindIO answers stopTrain with code 404 (its processes are not ready to stop). ClusterD then leaves
 * the recovery for killMaster (WaitReportStopComplete -ProcessNotReadyEvent-> NotifyKillJob,
 * handleWaitReportStopComplete / handleKillJob in pkg/application/recover/controller.go, rules.go)
 * and resets the job's controller; TaskD's job-rescheduling plugin stops the training, nothing is
 * reported back.
 *
 * Neither side runs Volcano (`--rescheduling=false` as in process-recovery).
 */
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import { chipFault, exchange, jobObjects, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';

const killed = (ev: readonly ClientEvent[]): boolean => ev.some((e) => e.event === 'signal' && e.signalType === 'killMaster');

export const PROCESS_KILL_JOB: Scenario = {
  name: 'process-kill-job',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('recover,exit')],
  steps: [
    // ReportStopComplete code 404: ClusterD's ProcessNotReady (pkg/domain/common/code.go).
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover,exit', '-stop-code=404'], '-kill-job') },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    { name: 'exchange after the chip fault', perSide: (ctx) => exchange(ctx, killed, 60_000) },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
  ],
};
