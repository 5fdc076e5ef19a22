/**
 * Dump after a failed recover: the job of scenario-process-recovery.ts with `recover,dump,exit`, whose
 * MindIO fails every changeStrategy (ReportRecoverStatus code 1). A chip fault on rank 3: stopTrain,
 * globalFault, strategy recover; the job still runs (nobody replaces the pod: neither side runs
 * Volcano), so the listen-schedule takes it as scheduled and sends changeStrategy recover; MindIO
 * answers 1, so ClusterD marks recover-failed and takes the next strategy, dump (changeStrategy
 * dump, component/clusterd/pkg/application/recover/controller.go handleCheckRecoverResult,
 * handleDecideDumpStrategy); MindIO fails it too: dump-failed, then exit. Every signal, answer,
 * reset-config version and the PodGroup's ProcessRecoverStatus are compared after each step.
 */
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import { chipFault, exchange, jobObjects, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';

/** A changeStrategy dump came and was answered. */
const dumpAnswered = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'changeStrategy' && e.changeStrategy === 'dump');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus');
};

export const DUMP_AFTER_RECOVER: Scenario = {
  name: 'dump-after-recover',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('recover,dump,exit')],
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=recover,dump,exit', '-status-code=1'], '-dump-after-recover') },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    { name: 'exchange until the dump is answered', perSide: (ctx) => exchange(ctx, dumpAnswered, 120_000) },
    { name: 'nothing written for 30 s (after the failed dump)', ms: 30_000 },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
  ],
};
