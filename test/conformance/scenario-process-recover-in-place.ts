/**
 * Process-level recovery's recover-in-place strategy over gRPC: the job of
 * scenario-process-recovery.ts with `recover-strategy: recover-in-place,recover,exit`, and a chip
 * fault of level RestartRequest (L2, 80C98008) on rank 3. ClusterD flags such a fault as one the pod
 * may restart in place (pkg/application/faultmanager/cmprocess/recoverinplace), waits up to 15 s
 * after the force-release wait for it to clear (waitNormalFaultRecovery,
 * pkg/application/recover/controller.go), and, cleared, sends changeStrategy recover with
 * extraParams recover-in-place to the fault pod instead of replacing it. The fault is recovered in
 * device-info inside that window.
 *
 * Neither side runs Volcano (`--rescheduling=false` as in process-recovery).
 */
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import { chipFault, exchange, jobObjects, recoverChip, sleep, startTaskdClient } from './scenario-process-recovery.ts';

const stopAnswered = (ev: readonly ClientEvent[]): boolean => ev.some((e) => e.event === 'report' && e.rpc === 'ReportStopComplete');
/** A changeStrategy came and its ReportRecoverStatus was answered. */
const strategyAnswered = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'changeStrategy');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus');
};

export const PROCESS_RECOVER_IN_PLACE: Scenario = {
  name: 'process-recover-in-place',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('recover-in-place,recover,exit')],
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover,exit'], '-in-place') },
    { name: 'chip fault 80C98008 (RestartRequest) on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80C98008', now)] },
    // stopTrain answered, then 1 s flush and 10 s force release: the in-place check runs from there for 15 s.
    { name: 'exchange until stopTrain is answered, then 11 s', perSide: async (ctx) => { await exchange(ctx, stopAnswered, 60_000); await sleep(11_000); } },
    { name: 'chip fault recovered inside the in-place check', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
    { name: 'exchange after the recovery', perSide: (ctx) => exchange(ctx, strategyAnswered, 60_000) },
  ],
};
